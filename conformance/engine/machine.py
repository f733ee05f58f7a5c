"""What every protocol's Hypothesis state machine shares: settings, verdicts, binding to one run.

A protocol's machine is a module-level `GroupMachine` subclass whose constructor takes the run's
`MachineSettings` (the target under test is ``settings.port_factory``; none means the model) and
the `Checker` that judges every observation. Hypothesis instantiates a machine with no arguments,
so `bind` returns a small subclass that fixes both, adds the optional rule mixins the settings ask
for, and turns the `per_run` rules (argument ranges that depend on the settings, e.g. a real
clock's shorter time steps) into Hypothesis rules. Hypothesis orders rules by name, not by where
they are declared (hypothesis.stateful.RuleStrategy), so a rule's home does not change any draw.
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from hypothesis.strategies import SearchStrategy

from conformance.engine.checker import Checker, Violation
from model.observation import Observation


class InvariantViolation(AssertionError):
    """A conformance failure: carries the violated invariant ids and the steps that led there."""

    def __init__(
        self,
        violations: list[Violation],
        steps: list[str],
        observations: list[Observation[Any]],
        sim: Any = None,
    ):
        self.violations = violations
        self.steps = steps
        self.observations = observations
        self.sim = sim  # its log is the counterexample trace (conformance.trace)
        ids = sorted({v.invariant for v in violations})
        super().__init__(f"violated {', '.join(ids)}: {violations[0].message}")


@dataclass
class MachineSettings:
    """What the CLI passes in: variants, the checker to count `sometimes`, an optional port factory."""

    variants: dict[str, str] = field(default_factory=dict)
    checker: Checker | None = None
    port_factory: Callable[..., Any] | None = None
    max_members: int = 3
    #: model config overrides (a real target's broker settings)
    config: dict[str, int] = field(default_factory=dict)
    #: real-time runs: member timeouts, time steps, the simulator class (each protocol's realtime.py)
    real_time: bool = False
    #: the first violation raised in this run (a real target cannot replay it exactly: Hypothesis's
    #: final re-run may pass, so the run's verdict keeps what was first seen)
    first: list[InvariantViolation] = field(default_factory=list)

    coverage: Any = None  # conformance.trace.coverage.Coverage: abstract states reached (classic)
    #: the wire-fault rules (cut a connection, duplicate a request): the `faults` profile
    wire_faults: bool = False
    #: ``--keep-going``: every violation is recorded here and the run goes on
    #: (`conformance.engine.divergences.DivergenceLog`); None: the first one ends the run
    keep_going: Any = None
    #: this run's group among ``--groups N`` (0 without), and the examples started so far
    group: int = 0
    examples: int = 0
    #: a time budget (``time.monotonic()``), for throughput measurements on a real target: the
    #: first example to end after it ends the run (`BudgetSpent`); None: the examples asked for
    stop_at: float | None = None


class BudgetSpent(BaseException):  # noqa: N818 - a stop, not an error: Hypothesis must not catch it
    """The run's time budget (`MachineSettings.stop_at`) is spent: no example starts after this
    one (a BaseException, like `conformance.engine.divergences.FindingsLimit`, so Hypothesis lets
    it through)."""


def port_findings(sim: Any, step: int) -> list[Violation]:
    """Findings a real-target port recorded at this step (divergences, wire problems), as violations."""
    take = getattr(getattr(sim, "port", None), "take_findings", None)
    if take is None:
        return []
    return [Violation(f.rule, f.message, step) for f in take()]


class GroupMachine(RuleBasedStateMachine):
    """The plumbing of every machine: its settings, its checker, the steps taken and the
    observations judged; a violation raises `InvariantViolation` and is kept in ``settings.first``."""

    #: the protocol's checker name (`Checker(protocol)`) when the settings bring none
    protocol = ""

    @staticmethod
    def timing_of(settings: MachineSettings) -> Any:
        """The run's member timeouts, time steps and round bounds (a real clock's are shorter)."""
        return None

    def __init__(self, settings: MachineSettings, checker: Checker | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.timing = self.timing_of(settings)
        self.checker = checker or settings.checker or Checker(self.protocol)
        self.steps: list[str] = []
        self.observations: list[Observation[Any]] = []
        settings.examples += 1
        self.example = settings.examples
        #: an earlier deviation of this example was adopted (``--keep-going``)
        self.tainted = False

    def note(self, text: str) -> None:
        self.steps.append(text)

    def judge(self, obs: Observation[Any], step: int, log: Any) -> None:
        """Check ``obs`` (observation ``step``), note the verdicts in the trace ``log``, raise on a violation."""
        checker = self.checker
        violations = checker.check(obs, step)
        violations += port_findings(log, step)
        note_checks = getattr(log, "note_checks", None)  # a traced sim or run: its log is the trace
        if note_checks is not None:
            note_checks(
                obs,
                checker.last_checked,
                [(v.invariant, v.message) for v in violations],
                checker.last_sometimes,
            )
        if violations and self.settings.keep_going is not None:
            self._keep_going(violations, step, log)
        elif violations:
            exc = InvariantViolation(violations, list(self.steps), list(self.observations), log)
            if not self.settings.first:
                self.settings.first.append(exc)
            raise exc

    def _keep_going(self, violations: list[Violation], step: int, log: Any) -> None:
        """Record each violation and go on; what follows in this example is tainted."""
        from conformance.engine.divergences import Occurrence

        for v in violations:
            occurrence = Occurrence(self.settings.group, self.example, step, v.message, self.tainted)
            self.settings.keep_going.record(v, occurrence, log)
        self.tainted = True


# ---------------------------------------------------------------------------------------------------
# Rules whose argument strategies depend on the run's settings.
PER_RUN = "groupcheck_per_run_rule"
#: ``strategies(settings, timing)``: the rule's argument strategies, in the order they are drawn
Strategies = Callable[[MachineSettings, Any], dict[str, SearchStrategy[Any]]]
Decorator = Callable[[Callable[..., None]], Callable[..., None]]


@dataclass(frozen=True)
class PerRun:
    strategies: Strategies
    precondition: Callable[[Any], bool] | None
    initialize: bool


def per_run(
    strategies: Strategies,
    *,
    precondition: Callable[[Any], bool] | None = None,
    initialize: bool = False,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Mark a method as a rule (or, with ``initialize``, the set-up) whose argument strategies
    ``strategies(settings, timing)`` gives (`GroupMachine.timing_of`); `bind` makes it a
    Hypothesis rule. Hypothesis draws the arguments in the order of the returned dict."""

    def mark(f: Callable[..., None]) -> Callable[..., None]:
        setattr(f, PER_RUN, PerRun(strategies, precondition, initialize))
        return f

    return mark


G = TypeVar("G", bound=GroupMachine)


def bind(machine: type[G], settings: MachineSettings, *mixins: type) -> type[G]:
    """``machine`` for one run: a subclass Hypothesis instantiates with no arguments, with the rule
    ``mixins`` the settings ask for and the `per_run` rules made Hypothesis rules. Its one checker
    (``settings.checker`` or a fresh one) counts `sometimes` across all of the run's examples."""
    checker = settings.checker or Checker(machine.protocol)
    timing = machine.timing_of(settings)

    def __init__(self: G) -> None:
        machine.__init__(self, settings, checker)

    def teardown(self: G) -> None:
        super(bound, self).teardown()
        # an example ended as it would have (raised at the next example's start, Hypothesis would
        # see that example stop drawing where the same prefix drew on before: FlakyStrategyDefinition)
        if (
            settings.stop_at is not None
            and sys.exc_info()[0] is None
            and time.monotonic() >= settings.stop_at
        ):
            raise BudgetSpent

    namespace = {
        "__init__": __init__,
        "teardown": teardown,
        "__module__": machine.__module__,
        "__qualname__": machine.__qualname__,
    }
    bound: type[G] = type(machine.__name__, (machine, *mixins), namespace)
    for name, f in inspect.getmembers(bound):
        mark: PerRun | None = getattr(f, PER_RUN, None)
        if mark is None:
            continue
        setattr(bound, name, _hypothesis_rule(f, mark, mark.strategies(settings, timing)))
    return bound


def _hypothesis_rule(f: Callable[..., None], mark: PerRun, strategies: dict[str, Any]) -> Callable[..., None]:
    """``f`` decorated as its `per_run` mark says, as ``@precondition(p) @rule(...)`` would."""
    decorate = cast(Decorator, initialize(**strategies) if mark.initialize else rule(**strategies))
    made = decorate(f)
    if mark.precondition is not None:
        made = precondition(mark.precondition)(made)
    return made
