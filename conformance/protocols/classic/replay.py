"""`groupcheck replay FILE --target NAME|host:port`: a recorded trace's ops against a real coordinator.

The trace's ops (member steps, raw requests, time passing, faults) are driven again through the
adapter and the oracle on the target's clock (`RealTimeSim`), with the target's own settings for
the model beside it, and judged as `check` judges: invariants plus the oracle's findings. Verdicts
as on the model: FAILED (exit 1), FIXED or PASSED (exit 0), ERROR (exit 2).

What a real target changes: the coordinator under test is the target, so coordinator variants of
the trace (``mutant=...``) are dropped from the model beside it (a mutant's bug is then FIXED when
the target does not have it); client variants (assignors, sticky user data) stay, since the
virtual members are ours. A trace that needs a coordinator restart replays only on a target that
can restart (`faults.restart`); one that injects a metadata append failure cannot replay on a real
target at all (ERROR naming the line). Timing is real: an ``advance`` op sleeps that long, and the
replay ends with `SETTLE_MS` of time passing so the last answers are judged too.
"""

from __future__ import annotations

from typing import Any

from conformance.engine.checker import Checker, Violation
from conformance.engine.replay import (
    ReplayResult,
    difference,
    judge,
    op_groups,
    recorded_exactly,
    replay,
    sim_from_trace,
    take_port_findings,
    verdict,
)
from conformance.errors import ToolError
from conformance.formats.trace_file import Trace
from conformance.protocols.classic.build import make_classic_sim
from conformance.protocols.classic.swarm import observation_row
from conformance.protocols.classic.trace import apply_ops

#: real time after the last op: the oracle's late tolerance (500 ms) plus a margin, so an answer the
#: target gave at the very end is explained or is a divergence, not left pending
SETTLE_MS = 700
#: variants that change the coordinator (the target replaces it), not the virtual members
COORDINATOR_VARIANTS = ("mutant",)


def replay_on_target(trace: Trace, spec: str, variants: dict[str, str | None]) -> tuple[ReplayResult, Any]:
    """Replay ``trace`` on the real target ``spec``; (result, notes about the target)."""
    from conformance.engine.profiles import real_profile
    from conformance.protocols.classic.realtime import MODEL_TIMING, REAL_TIMING, RealTimeSim
    from conformance.protocols.classic.setup import classic_setup
    from conformance.targets.open import open_target

    merged: dict[str, str | None] = dict(variants)
    dropped = [k for k in COORDINATOR_VARIANTS if k in trace.header["variants"] and k not in variants]
    for k in dropped:
        merged[k] = None
    failovers = [s for s in trace.steps if s.action.get("op") == "failover"]
    for step in trace.steps:
        if step.action.get("op") == "append_failure":
            result = ReplayResult(trace, spec, {})
            result.error = (
                f"{trace.path}:{step.line}: a metadata append failure cannot be injected into a real target"
            )
            return result, []
    with open_target(spec) as handle:
        notes = [f"{handle.name} {handle.version}"] + [
            f"coordinator variant {k}={trace.header['variants'][k]} dropped: the target is the coordinator"
            for k in dropped
        ]
        launcher = handle.launcher
        if failovers:
            if launcher is None or "restart" not in launcher.capabilities:
                result = ReplayResult(trace, handle.name, {})
                result.error = (
                    f"{trace.path}:{failovers[0].line}: the trace restarts the coordinator; "
                    f"{handle.name} cannot be restarted on its own state"
                )
                return result, notes
            handle.session.max_restarts = len(failovers)
        recorded_on = trace.header["target"]["name"]
        timing = MODEL_TIMING if recorded_on == "model" else REAL_TIMING
        timeout = int(trace.header["setup"].get("request_timeout_ms", timing.request_timeout_ms))
        port_factory, config, _ = classic_setup(handle, real_profile("ci"))
        result = replay(
            trace,
            "classic",
            target=handle.name,
            variants=merged,
            port_factory=port_factory,
            real={
                "sim_class": RealTimeSim,
                "config": config,
                "request_timeout_ms": timeout,
                "settle_ms": SETTLE_MS,
            },
        )
        if result.sim is not None:
            close = getattr(result.sim.port, "close", None)
            if close is not None:
                close()
        result.target_version = handle.version  # type: ignore[attr-defined]
    return result, notes


def replay_classic(
    trace: Trace,
    result: ReplayResult,
    *,
    port_factory: Any = None,
    exact: bool = True,
    coverage: Any = None,
    real: dict[str, Any] | None = None,
) -> ReplayResult:
    """Classic traces: apply each recorded op again on a rebuilt `TracedClassicSim` and check every
    observation (the kit's ``replay``; `conformance.engine.replay.replay` merges the variants)."""
    where = f"{trace.path}:1"
    try:
        sim = sim_from_trace(
            trace,
            make_classic_sim,
            result.variants,
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
    strict = exact and recorded_exactly(trace, result)
    groups = op_groups(trace, result)
    if groups is None:
        return result
    for first, recorded in groups:
        where = f"{trace.path}:{first.line}"
        try:
            observations = apply_ops(sim, first.action, where)
        except ToolError as exc:
            result.error = str(exc)
            return result
        except Exception as exc:  # the target (or an adapter) broke: not a conformance verdict
            result.error = f"{where}: replaying {first.action.get('op')!r} raised {type(exc).__name__}: {exc}"
            return result
        if coverage is not None:
            coverage.visit(sim)
        if not observations and result.exact:
            diff = difference(first, None)
            if diff is not None:
                result.exact = False
                result.difference = f"{where}: step {first.n}: {diff}"
        judge(trace, result, checker, sim, recorded, observations)
        if real is not None:
            take_port_findings(result, sim, recorded[-1].n)
    take = getattr(sim.port, "take_findings", None) if real is not None else None
    last = trace.steps[-1].n if trace.steps else 0
    if real is not None and real.get("settle_ms"):
        # real time: answers the target gave near the end are judged once no timer can explain them
        obs = sim.advance(int(real["settle_ms"]))
        result.observations.append(obs)
        result.violations += checker.check(obs, last + 1)
        last += 1
    result.violations += [Violation(f.rule, f.message, last) for f in (take() if take else [])]
    return verdict(result, strict, observation_row)
