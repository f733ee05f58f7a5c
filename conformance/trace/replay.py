"""`groupcheck replay`: re-run a trace's ops and judge the target again (docs/traces.md).

Verdicts: FAILED (an invariant is violated again; exit 1), FIXED (the recorded violation no longer
happens; exit 0), PASSED (a passing trace still passes; exit 0), ERROR (the trace cannot be
replayed; exit 2). On the model with the recorded variants the replay must be exact: every event
and every response equal to the recording, or the trace is stale and the verdict is ERROR.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.engine.checker import Checker, Violation
from conformance.errors import ToolError
from conformance.formats.codec import dumps, encode
from conformance.formats.trace_file import Trace

VERDICT_EXIT = {"PASSED": 0, "FIXED": 0, "FAILED": 1, "ERROR": 2}


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

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT[self.verdict]


def sim_from_trace(
    trace: Trace,
    make: Callable[..., Any],
    variants: dict[str, Any],
    where: str,
    extra_config: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """The simulator a trace's header sets up (topics, clients, config, seed), built by `make`
    (`make_classic_sim` or `make_consumer_sim`); one place for replay and the BFS polish."""
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


def replay(
    trace: Trace,
    *,
    target: str = "model",
    variants: dict[str, str | None] | None = None,
    port_factory: Any = None,
    coverage: Any = None,
    real: dict[str, Any] | None = None,
    exact: bool = True,
) -> ReplayResult:
    """Replay ``trace`` on ``target`` (the model unless a port factory for a real one is given).

    ``real`` (conformance/protocols/classic/replay.py) carries what a real target needs: ``sim_class``,
    ``config`` (the target's settings, over the trace's), ``request_timeout_ms`` and ``settle_ms`` (time
    that passes after the last op, so late answers are judged); the oracle's findings then count as
    violations, as in `check`. ``exact=False`` drops the demand that the model reproduce the
    recording exactly (minimisation removes ops, so later events legitimately differ)."""
    merged = {**trace.header["variants"], **(variants or {})}
    merged = {k: v for k, v in merged.items() if v is not None}  # None drops a variant (e.g. a mutant)
    result = ReplayResult(trace, target, merged)
    if coverage is not None:
        coverage.require(trace.protocol)
    if trace.protocol == "mixed":
        return _replay_mixed(
            trace, result, port_factory, target == "model" and merged == trace.header["variants"]
        )
    if trace.protocol == "consumer":
        return _replay_consumer(
            trace,
            result,
            port_factory,
            exact and target == "model" and merged == trace.header["variants"],
            coverage,
            real,
        )
    from conformance.protocols.build import make_classic_sim
    from conformance.protocols.classic.trace import apply_op

    where = f"{trace.path}:1"
    try:
        sim = sim_from_trace(
            trace,
            make_classic_sim,
            merged,
            where,
            (real or {}).get("config"),
            port_factory=port_factory,
            **{k: v for k, v in (real or {}).items() if k in ("sim_class", "request_timeout_ms")},
        )
    except ToolError as exc:
        result.error = str(exc)
        return result
    result.sim = sim
    if coverage is not None:
        coverage.start(sim)
    checker = Checker("classic")
    strict = exact and target == "model" and merged == trace.header["variants"]
    for step in trace.steps:
        where = f"{trace.path}:{step.line}"
        try:
            obs = apply_op(sim, step.action, where)
        except ToolError as exc:
            result.error = str(exc)
            return result
        except Exception as exc:  # the target (or an adapter) broke: not a conformance verdict
            result.error = f"{where}: replaying {step.action.get('op')!r} raised {type(exc).__name__}: {exc}"
            return result
        if coverage is not None:
            coverage.visit(sim)
        if result.exact:
            diff = _difference(step, obs)
            if diff is not None:
                result.exact = False
                result.difference = f"{where}: step {step.n}: {diff}"
        if obs is None:
            continue
        result.observations.append(obs)
        found = checker.check(obs, step.n)
        take = getattr(sim.port, "take_findings", None) if real is not None else None
        found += [Violation(f.rule, f.message, step.n) for f in (take() if take else [])]
        sim.note_checks(
            obs, checker.last_checked, [(v.invariant, v.message) for v in found], checker.last_sometimes
        )
        result.violations.extend(found)
    take = getattr(sim.port, "take_findings", None) if real is not None else None
    last = trace.steps[-1].n if trace.steps else 0
    if real is not None and real.get("settle_ms"):
        # real time: answers the target gave near the end are judged once no timer can explain them
        obs = sim.advance(int(real["settle_ms"]))
        result.observations.append(obs)
        result.violations += checker.check(obs, last + 1)
        last += 1
    result.violations += [Violation(f.rule, f.message, last) for f in (take() if take else [])]
    return _verdict(result, strict)


def _window_checks(trace: Trace, result: ReplayResult) -> None:
    """A Spark-pipeline counterexample may name `window.*` checks (spans of steps, not one
    observation): judge those again over the replayed observations (`conformance.pipeline.windows`)."""
    if not any(i.startswith("window.") for i in trace.violated):
        return
    from conformance.pipeline.windows import DEFAULT_OWNERLESS_BOUND_MS, replayed_window_violations

    bound = int(trace.header["origin"].get("ownerless_bound_ms", DEFAULT_OWNERLESS_BOUND_MS))
    for inv, msg, k in replayed_window_violations(trace.protocol, result.observations, bound):
        result.violations.append(Violation(inv, f"{msg} (observation {k} of the replay)", k))


def _difference(step: Any, obs: Any) -> str | None:
    """How the replayed step differs from the recorded one (None: identical)."""
    if step.event is None:
        return None if obs is None else "an event happened where the recording has none"
    if obs is None:
        return "the recorded event did not happen (the member had nothing to send)"
    if dumps(encode(obs.event)) != dumps(encode(step.event)):
        return f"event differs: recorded {_short(step.event)}, replayed {_short(obs.event)}"
    got = dumps(encode(tuple(obs.deliveries)))
    if step.actual is not None and got != dumps(encode(step.actual)):
        return "responses differ from the recorded ones"
    return None


def _short(event: Any) -> str:
    request = getattr(event, "request", None)
    name = type(event).__name__
    return f"{name}({type(request).__name__})" if request is not None else name


def _replay_consumer(
    trace: Trace,
    result: ReplayResult,
    port_factory: Any,
    strict: bool,
    coverage: Any = None,
    real: dict[str, Any] | None = None,
) -> ReplayResult:
    """Consumer traces: call each recorded action again; its observations must match the step
    lines it produced (the action's own line and the ``cont`` lines after it). With ``real``
    (conformance/protocols/consumer/replay.py) the port is the consumer oracle on a real clock: the
    target's settings replace the recording's and the oracle's findings count as violations."""
    from conformance.protocols.build import make_consumer_sim
    from conformance.protocols.consumer.trace import action_of

    try:
        sim = sim_from_trace(
            trace,
            make_consumer_sim,
            result.variants,
            f"{trace.path}:1",
            (real or {}).get("config"),
            port_factory=port_factory,
            sim_class=(real or {}).get("sim_class"),
        )
    except ToolError as exc:
        result.error = str(exc)
        return result
    result.sim = sim
    if coverage is not None:
        coverage.start(sim)
    checker = Checker("consumer")
    groups = _op_groups(trace, result)
    if groups is None:
        return result
    for first, recorded in groups:
        where = f"{trace.path}:{first.line}"
        try:
            observations = sim.replay([action_of(first.action, where)])
        except ToolError as exc:
            result.error = str(exc)
            return result
        except Exception as exc:
            result.error = f"{where}: replaying {first.action.get('op')!r} raised {type(exc).__name__}: {exc}"
            return result
        if coverage is not None:
            coverage.visit(sim)
        _judge(trace, result, checker, sim, recorded, observations)
        if real is not None:
            _take_port_findings(result, sim, recorded[-1].n)
    if real is not None and real.get("settle_ms") and groups:
        last = trace.steps[-1].n + 1
        obs = sim.advance(int(real["settle_ms"]))
        result.observations.append(obs)
        result.violations += checker.check(obs, last)
        _take_port_findings(result, sim, last)
    return _verdict(result, strict)


def _take_port_findings(result: ReplayResult, sim: Any, n: int) -> None:
    """A real target's oracle findings (protocol level) are violations, as in `check`."""
    take = getattr(sim.port, "take_findings", None)
    result.violations += [Violation(f.rule, f.message, n) for f in (take() if take else [])]


def _op_groups(trace: Trace, result: ReplayResult) -> list[tuple[Any, list[Any]]] | None:
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


def _judge(
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
            diff = _difference(step, obs)
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


def _verdict(result: ReplayResult, strict: bool) -> ReplayResult:
    if strict and not result.exact:
        result.error = f"the model no longer reproduces the recording exactly ({result.difference})"
        return result
    _window_checks(result.trace, result)
    if result.violations:
        result.verdict = "FAILED"
    else:
        result.verdict = "FIXED" if result.trace.verdict == "FAILED" else "PASSED"
    return result


def _replay_mixed(trace: Trace, result: ReplayResult, port_factory: Any, strict: bool) -> ReplayResult:
    """Mixed-group traces (docs/protocol-reference.md#b13): each recorded `MixedRun` op again on a rebuilt coordinator."""
    from conformance.protocols.mixed.trace import make_mixed_run

    if port_factory is not None:
        result.error = "mixed-group traces replay on the model only"
        return result
    try:
        run = make_mixed_run(dict(trace.header["setup"]), result.variants, f"{trace.path}:1")
    except ToolError as exc:
        result.error = str(exc)
        return result
    result.sim = run
    if not replay_mixed_ops(trace, result, run):
        return result
    return _verdict(result, strict)


def replay_mixed_ops(
    trace: Trace, result: ReplayResult, run: Any, after_group: Callable[[list[Any]], None] | None = None
) -> bool:
    """Apply a mixed trace's op groups to ``run`` (the model's or a real target's) and judge each;
    ``after_group`` sees each group's recorded steps. False when an op could not be replayed
    (``result.error`` says where)."""
    from conformance.protocols.mixed.trace import apply_op

    checker = Checker("mixed")
    groups = _op_groups(trace, result)
    if groups is None:
        return False
    for first, recorded in groups:
        where = f"{trace.path}:{first.line}"
        mark = len(run.observations)
        try:
            apply_op(run, first.action, where)
        except ToolError as exc:
            result.error = str(exc)
            return False
        except Exception as exc:  # the target (or an adapter) broke: not a conformance verdict
            result.error = f"{where}: replaying {first.action.get('op')!r} raised {type(exc).__name__}: {exc}"
            return False
        _judge(trace, result, checker, run, recorded, run.observations[mark:])
        if after_group is not None:
            after_group(recorded)
    return True
