"""What every protocol's scenario runner shares: the step log, the result and the step loop.

A runner (`ProtocolKit.run_scenario`) owns its simulator and verbs; `run_steps` walks the
scenario file's steps through the runner's ``do`` and logs each with its file line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.engine.checker import Violation
from conformance.errors import SpecError
from conformance.specs import Scenario
from model.observation import Observation


@dataclass
class StepLog:
    index: int
    line: int
    verb: str
    detail: str


@dataclass
class ScenarioResult:
    scenario: Scenario
    variants: dict[str, str]
    violations: list[Violation] = field(default_factory=list)
    failed_expectations: list[str] = field(default_factory=list)
    log: list[StepLog] = field(default_factory=list)
    observations: list[Observation[Any]] = field(default_factory=list)
    sim: Any = None  # the traced simulator: its log is the run's trace

    @property
    def passed(self) -> bool:
        return not self.violations and not self.failed_expectations


def run_steps(runner: Any) -> ScenarioResult:
    """Every runner's loop: each step's verb goes to ``runner.do`` with its file:line, and is logged
    with the number of observations it made (classic, consumer and mixed runners share it)."""
    sc = runner.scenario
    result: ScenarioResult = runner.result
    for index, (step, line) in enumerate(zip(sc.steps, sc.step_lines or [1] * len(sc.steps), strict=False)):
        verb, arg = next(iter(step.items()))
        before = len(result.observations)
        where = f"{sc.path}:{line}"
        try:
            runner.do(verb, arg, where)
        except (ValueError, KeyError, TypeError) as exc:  # the model refuses the step (a topic that
            # exists, a client it does not know): the scenario asks for something impossible
            raise SpecError(
                f"{where}: steps[{index}].{verb}: cannot be done: {type(exc).__name__}: {exc}"
            ) from None
        result.log.append(StepLog(index, line, verb, f"{arg!r} -> {len(result.observations) - before} steps"))
    return result
