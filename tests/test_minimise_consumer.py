"""Consumer counterexamples shrink in explore's units (docs/mutants.md#shrinking): `flatten_consumer` rewrites a settle
into primitive ops, so ddmin can cut inside it and every op left is one BFS edge."""

from __future__ import annotations

from pathlib import Path

from conformance.engine.minimise import minimise
from conformance.formats.trace_file import read_trace
from conformance.protocols.consumer.trace import flatten_consumer

REGRESSIONS = Path(__file__).parent / "regressions"


def test_a_settle_is_flattened_into_primitive_ops() -> None:
    trace = read_trace(REGRESSIONS / "consumer.responses_well_formed_b7f80ec86a2e.ndjson")
    assert trace.steps[0].action["op"] == "settle" and len(trace.steps) == 48
    flat = flatten_consumer(trace)
    ops = {s.action["op"] for s in flat.steps}
    assert ops <= {"reconcile", "client_step", "advance"} and "cont" not in ops


def test_consumer_counterexamples_shrink_to_the_bfs_length() -> None:
    # kfake-d2 (BFS-minimal 1) and kafka-20066: one settle each, formerly not shrinkable at all
    d2 = minimise(read_trace(REGRESSIONS / "consumer.responses_well_formed_b7f80ec86a2e.ndjson"))
    assert [s.action["op"] for s in d2.steps] == ["client_step"]
    exact = read_trace(REGRESSIONS / "consumer.offset_commit_exact_epoch_d53658d3d56a.ndjson")
    small = minimise(exact, "consumer.offset_commit_exact_epoch")
    assert [s.action["op"] for s in small.steps] == ["client_step", "commit"]
    assert "consumer.offset_commit_exact_epoch" in small.violated
