"""A late incremental heartbeat copy leaves a member unconverged: reports/findings/stale-heartbeat-copy.md.

The model answers as Apache Kafka 4.4.0 does (the probe's shape 3, reports/pipeline/duplicate-join-probe.md);
these tests pin that behaviour so a change to it is a decision, not an accident.
"""

from __future__ import annotations

from pathlib import Path

from conformance.formats.trace_file import read_trace
from conformance.pipeline.probe_duplicate import stale_copy
from conformance.protocols.consumer.build import make_consumer_sim
from conformance.trace.replay import replay

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "reports/findings/consumer.eventual_convergence_7ace519098b6.ndjson"


def test_the_acknowledgement_after_a_stale_copy_carries_no_assignment() -> None:
    clients = [{"name": "c1", "topics": ["t3"]}, {"name": "c2", "topics": ["t3"]}]
    config = {"heartbeat_interval_ms": 500, "session_timeout_ms": 2000}
    sim = make_consumer_sim({"t3": 2}, clients, config, {"heartbeat_version": "1"})
    steps = {s["step"]: s for s in stale_copy(sim, 600)}
    copy = steps["3. a late copy of c2's last heartbeat"]
    assert copy["assignment"] == ["t3-0", "t3-1"] and copy["client_owns"] == ["t3-1"]
    ack = steps["3. c2 acknowledges (previous epoch, owns a subset)"]
    assert ack["error"] == "NONE" and ack["assignment"] is None
    assert ack["member_epoch"] == copy["member_epoch"]
    last = steps["3. c2 heartbeats (3)"]
    assert last["client_owns"] == ["t3-1"]
    world = sim.snapshot()
    member = world.groups["g"].members[sim.clients["c2"].member_id]
    assert member.assigned == {("t3", 0), ("t3", 1)}
    assert ("stale-heartbeat-copy", "c2") in world.deviations


def test_the_thorough_trace_replays_as_a_known_deviation_exactly() -> None:
    """The promise is still broken (strictly judged, tests/test_known_deviations.py), and reported as
    the known deviation docs/known-deviations.md#stale-heartbeat-copy."""
    result = replay(read_trace(TRACE))
    assert result.exact and result.verdict == "KNOWN DEVIATION", (
        result.verdict,
        result.difference,
        result.error,
    )
    assert result.deviations == ["stale-heartbeat-copy"]
