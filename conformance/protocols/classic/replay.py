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

from conformance.formats.trace_file import Trace
from conformance.trace.replay import ReplayResult, replay

#: real time after the last op: the oracle's late tolerance (500 ms) plus a margin, so an answer the
#: target gave at the very end is explained or is a divergence, not left pending
SETTLE_MS = 700
#: variants that change the coordinator (the target replaces it), not the virtual members
COORDINATOR_VARIANTS = ("mutant",)


def replay_on_target(trace: Trace, spec: str, variants: dict[str, str | None]) -> tuple[ReplayResult, Any]:
    """Replay ``trace`` on the real target ``spec``; (result, notes about the target)."""
    from conformance.protocols.classic.realtime import MODEL_TIMING, REAL_TIMING, RealTimeSim
    from conformance.targets.open import open_target

    merged: dict[str, str | None] = dict(variants)
    dropped = [k for k in COORDINATOR_VARIANTS if k in trace.header["variants"] and k not in variants]
    for k in dropped:
        merged[k] = None
    if trace.protocol != "classic":  # consumer and mixed traces (docs/faults.md#replay-on-real-targets)
        from conformance.protocols.consumer.replay import replay_group_on_target

        return replay_group_on_target(trace, spec, variants)
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
        result = replay(
            trace,
            target=handle.name,
            variants=merged,
            port_factory=handle.port_factory(),
            real={
                "sim_class": RealTimeSim,
                "config": handle.model_config,
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
