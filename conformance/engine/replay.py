"""Replay a trace's ops and judge the target again (docs/traces.md): the protocol-neutral part.

Verdicts: FAILED (an invariant is violated again; exit 1), FIXED (the recorded violation no longer
happens; exit 0), KNOWN DEVIATION (what is violated is a known deviation of Apache Kafka the model
keeps, `model.deviations`; exit 0), PASSED (a passing trace still passes; exit 0), ERROR (the trace
cannot be replayed; exit 2). On the model with the recorded variants the replay must be exact: every event
and every response equal to the recording, or the trace is stale and the verdict is ERROR.

`replay` merges the variants and hands the trace to its kit's ``replay``, which rebuilds the
simulator and applies the ops; the helpers here compare, judge and give the verdict for every kit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.engine.checker import Checker, Violation
from conformance.engine.kit import ProtocolKit, resolve
from conformance.engine.windows import DEFAULT_OWNERLESS_BOUND_MS, replayed_window_violations
from conformance.formats.codec import dumps, encode
from conformance.formats.trace_file import Trace

VERDICT_EXIT = {"PASSED": 0, "FIXED": 0, "KNOWN DEVIATION": 0, "FAILED": 1, "ERROR": 2}


@dataclass
class ReplayResult:
    trace: Trace
    target: str
    variants: dict[str, str]
    verdict: str = "ERROR"
    violations: list[Violation] = field(default_factory=list)
    exact: bool = True
    difference: str | None = None
    error: str | None = None
    observations: list[Any] = field(default_factory=list)
    sim: Any = None
    #: ids of the known deviations of Apache Kafka the replay met (`model.deviations`)
    deviations: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT[self.verdict]


def replay(
    trace: Trace,
    kit: ProtocolKit | str | None = None,
    *,
    target: str = "model",
    variants: dict[str, str | None] | None = None,
    port_factory: Any = None,
    coverage: Any = None,
    real: dict[str, Any] | None = None,
    exact: bool = True,
) -> ReplayResult:
    """Replay ``trace`` on ``target`` (the model unless a port factory for a real one is given),
    through ``kit`` (default: the installed kit of the trace's protocol).

    ``real`` (a kit's ``replay_on_target``) carries what a real target needs: ``sim_class``,
    ``config`` (the target's settings, over the trace's), ``request_timeout_ms`` and ``settle_ms`` (time
    that passes after the last op, so late answers are judged); the oracle's findings then count as
    violations, as in `check`. ``exact=False`` drops the demand that the model reproduce the
    recording exactly (minimisation removes ops, so later events legitimately differ)."""
    kit = resolve(trace.protocol if kit is None else kit)
    merged = {**trace.header["variants"], **(variants or {})}
    merged = {k: v for k, v in merged.items() if v is not None}  # None drops a variant (e.g. a mutant)
    result = ReplayResult(trace, target, merged)
    if coverage is not None:
        coverage.require(trace.protocol)
    return kit.require("replay")(  # type: ignore[no-any-return]
        trace, result, port_factory=port_factory, exact=exact, coverage=coverage, real=real
    )


def recorded_exactly(trace: Trace, result: ReplayResult) -> bool:
    """The replay runs on the model with the recorded variants: it must then reproduce the trace."""
    return result.target == "model" and result.variants == trace.header["variants"]


def sim_from_trace(
    trace: Trace,
    make: Callable[..., Any],
    variants: dict[str, Any],
    where: str,
    extra_config: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """The simulator a trace's header sets up (topics, clients, config, seed), built by `make`
    (the protocol's simulator builder); one place for replay and the BFS polish."""
    setup = trace.header["setup"]
    return make(
        {str(k): int(v) for k, v in setup.get("topics", {}).items()},
        list(setup.get("clients", [])),
        {**dict(setup.get("config", {})), **(extra_config or {})},
        variants,
        seed=int(trace.header["seed"]),
        where=where,
        **kwargs,
    )


def _sent(event: Any) -> Any:
    """The event without its outcome fields (``compare=False``, such as `HeartbeatEvent.heard`): a
    trace written before such a field existed still replays exactly."""
    if not dataclasses.is_dataclass(event) or isinstance(event, type):
        return event
    outcomes = {f.name: f.default for f in dataclasses.fields(event) if not f.compare}
    return dataclasses.replace(event, **outcomes) if outcomes else event


def difference(step: Any, obs: Any) -> str | None:
    """How the replayed step differs from the recorded one (None: identical)."""
    if step.event is None:
        return None if obs is None else "an event happened where the recording has none"
    if obs is None:
        return "the recorded event did not happen (the member had nothing to send)"
    if dumps(encode(_sent(obs.event))) != dumps(encode(_sent(step.event))):
        return f"event differs: recorded {_short(step.event)}, replayed {_short(obs.event)}"
    got = dumps(encode(tuple(obs.deliveries)))
    if step.actual is not None and got != dumps(encode(step.actual)):
        return "responses differ from the recorded ones"
    return None


def _short(event: Any) -> str:
    request = getattr(event, "request", None)
    name = type(event).__name__
    return f"{name}({type(request).__name__})" if request is not None else name


def take_port_findings(result: ReplayResult, sim: Any, n: int) -> None:
    """A real target's oracle findings (protocol level) are violations, as in `check`."""
    take = getattr(sim.port, "take_findings", None)
    result.violations += [Violation(f.rule, f.message, n) for f in (take() if take else [])]


def op_groups(trace: Trace, result: ReplayResult) -> list[tuple[Any, list[Any]]] | None:
    """Each op's step with the ``cont`` steps after it (the observations that op produced)."""
    groups: list[tuple[Any, list[Any]]] = []
    for step in trace.steps:
        if step.action.get("op") == "cont":
            if not groups:
                result.error = f"{trace.path}:{step.line}: 'cont' step before any action"
                return None
            groups[-1][1].append(step)
        else:
            groups.append((step, [step]))
    return groups


def judge(
    trace: Trace,
    result: ReplayResult,
    checker: Checker,
    sim: Any,
    recorded: list[Any],
    observations: list[Any],
) -> None:
    """Compare one op's replayed observations with its recorded steps, then check them."""
    where = f"{trace.path}:{recorded[0].line}"
    with_events = [s for s in recorded if s.event is not None]
    if result.exact and len(observations) != len(with_events):
        result.exact = False
        result.difference = f"{where}: {len(with_events)} recorded observations, {len(observations)} replayed"
    for step, obs in zip(with_events, observations, strict=False):
        if result.exact:
            diff = difference(step, obs)
            if diff is not None:
                result.exact = False
                result.difference = f"{trace.path}:{step.line}: step {step.n}: {diff}"
    for i, obs in enumerate(observations):
        result.observations.append(obs)
        # numbered as the trace's step lines (a replay that diverged counts on from the last)
        n = with_events[i].n if i < len(with_events) else recorded[-1].n
        found = checker.check(obs, n)
        sim.note_checks(
            obs, checker.last_checked, [(v.invariant, v.message) for v in found], checker.last_sometimes
        )
        result.violations.extend(found)
    result.deviations = sorted(checker.deviations)


def verdict(result: ReplayResult, strict: bool, lake_row: Callable[..., Any] | None = None) -> ReplayResult:
    """The verdict of a finished replay; ``lake_row`` (the kit's swarm row) lets a pipeline
    counterexample's `window.*` checks be judged again."""
    if strict and not result.exact:
        result.error = f"the model no longer reproduces the recording exactly ({result.difference})"
        return result
    if lake_row is not None:
        _window_checks(result.trace, result, lake_row)
    if result.violations:
        result.verdict = "FAILED"
    elif result.deviations:
        result.verdict = "KNOWN DEVIATION"
    else:
        result.verdict = "FIXED" if result.trace.verdict == "FAILED" else "PASSED"
    return result


def _window_checks(trace: Trace, result: ReplayResult, lake_row: Callable[..., Any]) -> None:
    """A Spark-pipeline counterexample may name `window.*` checks (spans of steps, not one
    observation): judge those again over the replayed observations (`conformance.engine.windows`)."""
    if not any(i.startswith("window.") for i in trace.violated):
        return
    bound = int(trace.header["origin"].get("ownerless_bound_ms", DEFAULT_OWNERLESS_BOUND_MS))
    for inv, msg, k in replayed_window_violations(lake_row, trace.protocol, result.observations, bound):
        result.violations.append(Violation(inv, f"{msg} (observation {k} of the replay)", k))
