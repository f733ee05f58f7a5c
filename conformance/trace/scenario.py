"""The trace of a named scenario run (the header's origin names the scenario file)."""

from __future__ import annotations

from typing import Any

from conformance.formats.trace_file import Trace, groupcheck_version
from conformance.protocols.classic.trace import to_trace


def scenario_trace(result: Any, *, target: str = "model") -> Trace:
    sc = result.scenario
    if sc.protocol in ("consumer", "mixed"):
        from conformance.protocols.consumer import trace as consumer
        from conformance.protocols.mixed import trace as mixed

        return (consumer.to_trace if sc.protocol == "consumer" else mixed.to_trace)(  # type: ignore[operator]
            result.sim,
            target=target,
            target_version=groupcheck_version() if target == "model" else "unknown",
            origin={"kind": "scenario", "id": sc.id, "source": sc.source},
            violations=[(v.invariant, v.message, v.step) for v in result.violations],
        )
    return to_trace(
        result.sim,
        target=target,
        target_version=groupcheck_version() if target == "model" else "unknown",
        origin={"kind": "scenario", "id": sc.id, "source": sc.source},
        violations=[(v.invariant, v.message, v.step) for v in result.violations],
    )
