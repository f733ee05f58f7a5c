"""docs/bug-catalogue.md#row-4 and #row-18 as mutants, the kill matrix's ddmin and BFS columns, and
explore against a mutant (its copies of the simulator keep the mutant's classes)."""

from __future__ import annotations

from pathlib import Path

from conformance.engine.profiles import get_profile
from conformance.mutants import MUTANTS, UNMODELLED_ROWS
from conformance.power.bfs import BOUNDS, Bound, bfs_minimal
from conformance.power.matrix import KillRow, render_markdown, run_mutant
from conformance.protocols.build import make_classic_sim
from conformance.protocols.classic.explore import clone, explore_classic


def test_unbalanced_sticky_and_split_brain_have_mutants() -> None:
    assert MUTANTS["kafka-15106"].row == 4 and MUTANTS["split-brain"].row == 18
    assert 4 not in UNMODELLED_ROWS and 18 not in UNMODELLED_ROWS


def test_split_brain_port_runs_two_groups() -> None:
    sim = make_classic_sim({"t": 2}, [{"name": "c1"}, {"name": "c2"}], {}, {"mutant": "split-brain"})
    for _ in range(8):
        for name in ("c1", "c2"):
            sim.client_step(name)
        sim.advance(0)
    port = sim.port
    assert type(port).__name__ == "SplitBrainPort"
    first, second = port.state.groups["g"], port.other.groups["g"]  # type: ignore[attr-defined]
    assert len(first.members) == 1 and len(second.members) == 1
    assert set(first.members) != set(second.members)
    owned = [set(sim.clients[n].owned) for n in ("c1", "c2")]
    assert owned[0] == owned[1] == {("t", 0), ("t", 1)}  # both consumers hold every partition


def test_split_brain_is_caught_from_scratch(tmp_path: Path) -> None:
    row = run_mutant(
        "split-brain", profile=get_profile("dev"), max_examples=10, seed=0, budget_s=1, run_dir=tmp_path
    )
    assert row.caught and row.expected_hit, row.invariants
    assert row.trace_path is not None and row.shrunk_steps is not None and row.hypothesis_steps is not None
    assert row.shrunk_steps <= row.hypothesis_steps


def test_explore_keeps_the_mutant_in_its_copies() -> None:
    sim = make_classic_sim({"t": 1}, [{"name": "c1"}], {}, {"mutant": "answer-twice"})
    copy = clone(sim)
    assert type(copy.port.coordinator).__name__ == "AnswerTwice" and type(copy) is type(sim)
    result = explore_classic(
        2, 1, depth=8, variants={"mutant": "member-list-to-followers", "assignor": "range"}, budget_s=30
    )
    assert "classic.followers_get_no_member_list" in result.found
    plain = explore_classic(2, 1, depth=8, variants={"assignor": "range"}, budget_s=30)
    assert "classic.followers_get_no_member_list" not in plain.found


def test_bfs_minimal_and_ratio_column(monkeypatch: object) -> None:
    BOUNDS_BEFORE = dict(BOUNDS)
    try:
        BOUNDS["member-list-to-followers"] = Bound(2, 1, 8)
        length, note = bfs_minimal("member-list-to-followers", budget_s=30)
        assert length is not None and 1 <= length <= 8 and "2 members x 1 partitions" in note
        BOUNDS["kafka-8500"] = "outside the explore alphabet: static members"
        assert bfs_minimal("kafka-8500") == (None, "outside the explore alphabet: static members")
    finally:
        BOUNDS.clear()
        BOUNDS.update(BOUNDS_BEFORE)
    row = KillRow("member-list-to-followers", "classic", "generic", None, ("x",), caught=True)
    row.shrunk_steps, row.hypothesis_steps, row.bfs_minimal = 6, 9, 5
    assert row.ratio == 1.2
    text = render_markdown([row], command="test", machine="test")
    assert "| 9 | 6 | 5 | 1.20 |" in text and "median 1.20, max 1.20" in text
