"""Classic counterexamples shrink below their converges (docs/mutants.md#shrinking): Hypothesis
reaches a Stable group most cheaply through one ``converge`` op of about a hundred observations,
which delta debugging could only keep or drop whole; `flatten_classic` rewrites it as single ops.
The two traces are Hypothesis-shrunk counterexamples of the kill matrix (mutants kafka-7026, BFS-
minimal 15 ops, and heartbeat-hides-rebalance, BFS-minimal 7), which ddmin left at 136 and 99."""

from __future__ import annotations

from pathlib import Path

import conformance.protocols  # noqa: F401  (installs the kits)
from conformance.engine.minimise import minimise
from conformance.formats.trace_file import read_trace
from conformance.protocols.classic.flatten import flatten_classic

HERE = Path(__file__).parent / "minimise"
STICKY = HERE / "client.assignment_single_owner_7e9aa1e63015.ndjson"
HEARTBEAT = HERE / "classic.heartbeat_signals_rebalance_a66bd5e7bf0c.ndjson"


def test_a_converge_is_flattened_into_single_ops() -> None:
    trace = read_trace(STICKY)
    assert [s.action["op"] for s in trace.steps].count("converge") == 2 and len(trace.steps) == 136
    flat = flatten_classic(trace)
    ops = [s.action["op"] for s in flat.steps]
    assert "converge" not in ops and "cont" not in ops
    assert set(ops) <= {"step", "advance", "resume", "lose_response", "commit"}
    assert [s.n for s in flat.steps] == list(range(1, len(flat.steps) + 1))
    assert flatten_classic(flat) is flat  # nothing left to rewrite


def test_classic_counterexamples_shrink_to_about_the_bfs_length() -> None:
    sticky = minimise(read_trace(STICKY), "client.assignment_single_owner")
    assert len(sticky.steps) <= 15 * 1.25 and "client.assignment_single_owner" in sticky.violated
    beat = minimise(read_trace(HEARTBEAT), "classic.heartbeat_signals_rebalance")
    assert len(beat.steps) <= 7 * 1.25 and "classic.heartbeat_signals_rebalance" in beat.violated
    assert "converge" not in {s.action["op"] for s in sticky.steps + beat.steps}
