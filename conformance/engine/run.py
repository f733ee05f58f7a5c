"""Run the stateful suite for one protocol against one target and return a verdict (used by CLI and plugin).

The protocol is a kit (`conformance.engine.kit.ProtocolKit`) or the name of an installed one: its
machine is what Hypothesis drives, its trace recorder writes the counterexample."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.errors import Flaky
from hypothesis.stateful import get_state_machine_test

from conformance.engine.checker import Checker, Violation
from conformance.engine.divergences import DivergenceLog, FindingsLimit, Occurrence
from conformance.engine.draws import seed_only_draws
from conformance.engine.kit import ProtocolKit, resolve
from conformance.engine.machine import BudgetSpent, InvariantViolation, MachineSettings
from conformance.engine.profiles import Profile
from conformance.engine.progress import WATCHER
from conformance.formats.trace_file import groupcheck_version


@dataclass
class CheckResult:
    protocol: str
    target: str
    seed: int
    max_examples: int
    variants: dict[str, str]
    violations: list[Violation] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    observations: list[Any] = field(default_factory=list)
    vacuous: list[str] = field(default_factory=list)
    sometimes: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None
    trace: Any = None  # conformance.formats.trace_file.Trace of the shrunk counterexample
    #: kafka-compat findings (Apache Kafka's exact choices) from a real target's oracle
    compat: list[Any] = field(default_factory=list)
    level: str = "protocol"
    target_version: str = ""
    #: ``--keep-going``: every distinct divergence (`conformance.engine.divergences.Divergence`)
    divergences: list[Any] = field(default_factory=list)
    #: ``--keep-going``: the run stopped at ``--max-findings``
    stopped_at_limit: bool = False
    #: rounds of more examples run because a `sometimes` goal was unmet (`Profile.top_up`)
    top_up_rounds: int = 0
    #: rounds restarted on a derived seed after the target answered a replayed prefix otherwise
    restarts: int = 0
    #: ``--groups`` on a real target: each group's (seconds, answers, top-up rounds, restarts); the
    #: run's wall time is its slowest group's
    group_runs: list[tuple[float, int, int, int]] = field(default_factory=list)
    #: known deviations of Apache Kafka met (`conformance.engine.checker.Deviation`): reported, not
    #: failed, unless the run was strict about them
    deviations: list[Any] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.error:
            return "ERROR"
        if self.violations or (self.level == "kafka-compat" and self.compat):
            return "FAILED"
        if self.vacuous:
            return "INCONCLUSIVE"
        return "PASSED"


def run_check(
    protocol: str | ProtocolKit,
    *,
    target: str = "model",
    target_version: str = "",
    profile: Profile,
    max_examples: int | None = None,
    seed_value: int = 0,
    variants: dict[str, str] | None = None,
    port_factory: Any = None,
    config: dict[str, int] | None = None,
    real_time: bool = False,
    level: str = "protocol",
    coverage: Any = None,
    shrink: bool = True,
    keep_going: DivergenceLog | None = None,
    group: int = 0,
    restarts: int | None = None,
    stop_at: float | None = None,
    strict_deviations: bool = False,
) -> CheckResult:
    kit = resolve(protocol)
    seed_only_draws()  # the same seed draws the same run in every process (conformance/engine/draws.py)
    variants = dict(variants or {})
    checker = Checker(kit, strict=strict_deviations)
    n = max_examples if max_examples is not None else profile.max_examples
    result = CheckResult(kit.name, target, seed_value, n, variants, level=level)
    result.target_version = target_version  # written into a counterexample's trace header
    machine_settings = MachineSettings(
        variants, checker, port_factory, config=dict(config or {}), real_time=real_time, coverage=coverage
    )
    machine_settings.wire_faults = (
        profile.wire_faults
    )  # the `faults` profile (conformance/engine/profiles.py)
    machine_settings.group = group
    # a time budget (benchmarks/groups_throughput.py): rounds of n examples on derived seeds, each
    # drawn as a run of n examples is, until no example may start
    machine_settings.stop_at = stop_at
    if keep_going is not None:
        machine_settings.keep_going = keep_going
        if keep_going.snapshot is None:
            keep_going.snapshot = _snapshotter(kit, result, n, profile, seed_value)
        if port_factory is not None:
            machine_settings.port_factory = _adopting(port_factory)
    machine = kit.make_machine(machine_settings)
    watcher = WATCHER.get()
    if watcher is not None:  # examples, steps and findings for a terminal's progress bar
        machine = watcher.watch(machine, checker, n)
    test_settings = settings(
        max_examples=n,
        stateful_step_count=profile.step_count,
        deadline=None,
        database=None,
        derandomize=False,
        print_blob=False,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        # against a real target a shrink would re-run on a clock that has moved on: report as found
        phases=[Phase.generate, Phase.shrink] if shrink and not real_time else [Phase.generate],
    )
    start = time.perf_counter()
    k = 0
    restarts_left = (MAX_RESTARTS if real_time else 0) if restarts is None else restarts
    while True:
        round_seed = top_up_seed(seed_value, k)
        test = seed(round_seed)(get_state_machine_test(machine, settings=test_settings))
        try:
            test()
        except FindingsLimit:
            result.stopped_at_limit = True
        except BudgetSpent:
            break
        except InvariantViolation as exc:
            first = machine_settings.first[0] if real_time and machine_settings.first else exc
            _take_violation(kit, result, first, target, n, profile, round_seed)
        except (
            Flaky,
            BaseExceptionGroup,
        ) as exc:  # FlakyFailure, FlakyStrategyDefinition (a real clock re-run)
            if real_time and machine_settings.first:
                # the re-run against the real target went another way: keep what was first seen
                _take_violation(kit, result, machine_settings.first[0], target, n, profile, round_seed)
            elif restarts_left:
                # Hypothesis replayed a prefix it had drawn and the target answered it otherwise,
                # so the same draws met other rules: a new round on the next derived seed
                restarts_left -= 1
                result.restarts += 1
                k += 1
                continue
            elif real_time:
                # restarts spent: this group's own tool error, not an end of the groups beside it
                result.error = (
                    f"the target answered replayed prefixes otherwise {MAX_RESTARTS + 1} times: {exc!r}"[:500]
                )
            else:
                raise
        k += 1
        if stop_at is not None and not (result.violations or result.stopped_at_limit or result.error):
            continue  # a time budget: rounds of n more examples, as a top-up, until `BudgetSpent`
        if result.violations or result.stopped_at_limit or not checker.vacuous():
            break
        if k > profile.top_up + result.restarts:
            break
        result.top_up_rounds += 1  # a `sometimes` goal still unmet: n more examples
    result.seconds = time.perf_counter() - start
    result.sometimes = dict(checker.hits)
    result.vacuous = checker.vacuous()
    result.deviations = sorted(checker.deviations.values(), key=lambda d: d.id)
    if keep_going is not None:
        _take_divergences(result, keep_going)
    return result


def top_up_seed(seed_value: int, k: int) -> int:
    """The Hypothesis seed of round ``k`` of a run on ``seed_value`` (round 0 is the run's own seed;
    fixed: same seed, same run)."""
    return seed_value + 1_000_003 * k


#: rounds a real-target run restarts on a derived seed when Hypothesis finds the target answered a
#: replayed prefix otherwise (FlakyStrategyDefinition); then it is a tool error
MAX_RESTARTS = 3


def _adopting(port_factory: Any) -> Any:
    """The ports ``port_factory`` makes, told to adopt a divergent answer and go on."""

    def make(*args: Any, **kwargs: Any) -> Any:
        port = port_factory(*args, **kwargs)
        port.keep_going = True
        return port

    return make


def _snapshotter(kit: ProtocolKit, result: CheckResult, n: int, profile: Profile, seed_value: int) -> Any:
    """Records an occurrence's trace: the example up to the observation that diverged."""

    def snapshot(sim: Any, violation: Violation, occurrence: Occurrence, sig: str) -> Any:
        if sim is None:
            return None
        target = result.target
        return kit.to_trace(
            sim,
            target=target,
            target_version=groupcheck_version()
            if target == "model"
            else (result.target_version or "unknown"),
            origin={
                "kind": "keep-going",
                "max_examples": n,
                "profile": profile.name,
                "seed": seed_value,
                "group": occurrence.group,
                "example": occurrence.example,
                "signature": sig,
                "tainted": occurrence.tainted,
            },
            violations=[(violation.invariant, violation.message, violation.step)],
        )

    return snapshot


def _take_divergences(result: CheckResult, log: DivergenceLog) -> None:
    """The verdict of a keep-going run: one violation per distinct divergence (its first
    occurrence), the smallest occurrence's trace as the run's trace."""
    result.divergences = log.distinct()
    if not result.violations:
        result.violations = [Violation(d.rule, d.first.message, d.first.step) for d in result.divergences]
    if result.trace is None and result.divergences:
        result.trace = result.divergences[0].trace


def _take_violation(
    kit: ProtocolKit, result: CheckResult, exc: Any, target: str, n: int, profile: Profile, seed_value: int
) -> None:
    result.violations = exc.violations
    result.steps = exc.steps
    result.observations = exc.observations
    if exc.sim is not None:
        result.trace = kit.to_trace(
            exc.sim,
            target=target,
            target_version=groupcheck_version()
            if target == "model"
            else (result.target_version or "unknown"),
            origin={"kind": "check", "max_examples": n, "profile": profile.name, "seed": seed_value},
            violations=[(v.invariant, v.message, v.step) for v in exc.violations],
        )
