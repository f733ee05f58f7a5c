"""`groupcheck replay`: re-run a trace's ops and judge the target again (docs/traces.md).

The work is protocol-neutral (`conformance.engine.replay`: variants, comparison, verdicts) plus
the trace's kit (`ProtocolKit.replay` on the model, ``replay_on_target`` on a real coordinator).
Verdicts: FAILED (exit 1), FIXED or PASSED (exit 0), ERROR (exit 2).
"""

from __future__ import annotations

from typing import Any

from conformance.engine.replay import VERDICT_EXIT, ReplayResult, replay, sim_from_trace
from conformance.formats.trace_file import Trace
from conformance.protocols import get_kit


def replay_on_target(trace: Trace, spec: str, variants: dict[str, str | None]) -> tuple[ReplayResult, Any]:
    """Replay ``trace`` on the real target ``spec`` through its protocol's kit; (result, notes)."""
    return get_kit(trace.protocol).require("replay_on_target")(trace, spec, variants)  # type: ignore[no-any-return]


__all__ = ["VERDICT_EXIT", "ReplayResult", "replay", "replay_on_target", "sim_from_trace"]
