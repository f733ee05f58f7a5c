"""The BFS polish of minimised traces (conformance/engine/polish.py): it finds a shorter tail
that ddmin, which only drops ops, cannot; every result still fails on replay; a trace that is
already shortest is returned as it is."""

from __future__ import annotations

from conformance.engine.checker import Checker
from conformance.engine.minimise import fails, minimise
from conformance.engine.polish import polish
from conformance.formats.trace_file import Trace
from conformance.protocols.build import make_classic_sim
from conformance.protocols.classic.trace import apply_op, to_trace

GEN = "classic.generation_bump_once"
CLIENT = {"assignors": ["range"], "session_timeout_ms": 6000, "rebalance_timeout_ms": 10000, "topics": ["t"]}


def _trace(ops: list[dict[str, object]], mutant: str) -> Trace:
    sim = make_classic_sim(
        {"t": 1}, [{"name": "c1", **CLIENT}, {"name": "c2", **CLIENT}], {}, {"mutant": mutant}
    )
    checker = Checker("classic")
    violations = []
    for n, op in enumerate(ops, 1):
        obs = apply_op(sim, op, "test")
        if obs is not None:
            vs = checker.check(obs, n)
            sim.note_checks(obs, checker.last_checked, [(v.invariant, v.message) for v in vs], ())
            violations += [(v.invariant, v.message, len(sim.log)) for v in vs]
    return to_trace(sim, target="model", target_version="0", origin={"kind": "test"}, violations=violations)


# the kill matrix's seed-0 counterexample for skip-generation-bump after ddmin (7 ops; BFS needs 5)
SEVEN = [
    {"op": "step", "client": "c2"},
    {"op": "step", "client": "c1"},
    {"op": "step", "client": "c2"},
    {"op": "advance", "ms": 0},
    {"op": "step", "client": "c1"},
    {"op": "step", "client": "c2"},
    {"op": "step", "client": "c2"},
]


def test_polish_finds_a_shorter_tail_than_ddmin() -> None:
    trace = _trace(SEVEN, "skip-generation-bump")
    assert GEN in trace.violated
    assert len(minimise(trace, GEN).steps) == 7  # 1-minimal for dropping ops
    polished = polish(trace, GEN, budget_s=20)
    assert len(polished.steps) <= 5
    assert fails(polished, list(polished.steps), GEN)
    assert len(minimise(polished, GEN).steps) <= len(polished.steps)


def test_polish_keeps_a_trace_that_is_already_shortest() -> None:
    ops = [{"op": "step", "client": "c1"}, {"op": "step", "client": "c1"}, {"op": "advance", "ms": 6000}]
    trace = _trace(ops, "skip-generation-bump")
    assert GEN in trace.violated
    polished = polish(trace, GEN, budget_s=20)
    assert [s.action for s in polished.steps] == [s.action for s in trace.steps]


def test_polish_leaves_the_reference_model_alone() -> None:
    """On the model without the fault nothing fails, so no tail is ever accepted."""
    trace = _trace(SEVEN, "skip-generation-bump")
    header = {**trace.header, "variants": {}}
    plain = Trace(header, trace.steps, trace.verdict, trace.violated, trace.violations, trace.path)
    assert [s.action for s in polish(plain, GEN, budget_s=5).steps] == SEVEN


def test_polish_runs_on_consumer_traces_and_keeps_them_failing() -> None:
    """The consumer path (consumer explore's ops, no symmetry): the committed KAFKA-16251
    counterexample is already shortest (3 ops), so it comes back unchanged and still failing."""
    from pathlib import Path

    from conformance.formats.trace_file import read_trace

    trace = read_trace(
        Path(__file__).parent / "regressions" / "consumer.fenced_member_releases_first_64158d835280.ndjson"
    )
    inv = "consumer.fenced_member_releases_first"
    polished = polish(trace, inv, budget_s=5)
    assert [s.action for s in polished.steps] == [s.action for s in trace.steps]
    assert fails(polished, list(polished.steps), inv)
