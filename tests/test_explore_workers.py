"""`explore --workers N` (conformance/engine/frontier.py): the frontier expanded by forked
processes gives the graph, the representatives and the counterexample paths of the search on
one core, moves states between workers without losing any, and reports a failing worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.engine import frontier
from conformance.formats.trace_file import read_trace
from conformance.protocols.classic.explore import explore_classic, found_trace
from conformance.protocols.consumer.explore import explore_consumer

REGRESSIONS = Path(__file__).parent / "regressions"


def _same(a: Any, b: Any) -> None:
    assert (a.states, a.transitions, a.levels_done, a.complete) == (
        b.states,
        b.transitions,
        b.levels_done,
        b.complete,
    )
    assert sorted(a.graph.nodes(data=True)) == sorted(b.graph.nodes(data=True))
    assert sorted(a.graph.edges(data=True)) == sorted(b.graph.edges(data=True))
    assert {k: (f.message, f.path) for k, f in a.found.items()} == {
        k: (f.message, f.path) for k, f in b.found.items()
    }


@pytest.mark.parametrize("workers", [2, 3])
def test_classic_graph_is_the_one_core_graph(workers: int) -> None:
    one = explore_classic(2, 1, depth=12, budget_s=300)
    many = explore_classic(2, 1, depth=12, budget_s=300, workers=workers)
    assert many.workers == workers and one.workers == 1
    _same(one, many)


def test_consumer_graph_is_the_one_core_graph() -> None:
    ops = ("client_step", "leave", "restart")
    one = explore_consumer(1, 1, depth=1000, budget_s=300, ops=ops, perturbations=1)
    many = explore_consumer(1, 1, depth=1000, budget_s=300, ops=ops, perturbations=1, workers=2)
    assert one.complete
    _same(one, many)


def test_a_counterexample_is_found_by_the_same_path() -> None:
    """KAFKA-7026 with V0 sticky user data from the committed regression's prefix
    (tests/test_trace_explore.py): the same shortest path, and it replays."""
    regression = read_trace(next(REGRESSIONS.glob("classic.single_owner_consumer_*.ndjson")))
    ops = [s.action for s in regression.steps]
    back = next(i for i, op in enumerate(ops) if i > 8 and op == {"op": "step", "client": "c1"})
    variants = {"sticky": "v0", "assignor": "sticky"}
    one = explore_classic(2, 2, depth=8, variants=variants, prefix=tuple(ops[:back]))
    many = explore_classic(2, 2, depth=8, variants=variants, prefix=tuple(ops[:back]), workers=2)
    assert "client.assignment_single_owner" in many.found
    _same(one, many)
    trace = found_trace(many, many.found["client.assignment_single_owner"])
    assert "client.assignment_single_owner" in trace.violated


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_states_move_to_the_idle_worker(protocol: str) -> None:
    """Every state starts in worker 0; after each level's hand-out the workers hold shares that
    differ by at most one (a KIP-848 state, whose snapshots hold read-only mapping views, travels
    too)."""
    seen: list[list[int]] = []
    real = frontier._rebalance

    def watching(pool: Any, keep: Any, nxt: Any, movable: bool) -> bool:
        out = real(pool, keep, nxt, movable)
        seen.append([sum(1 for _, o in nxt if o == w) for w in range(len(keep))])
        return out

    frontier._rebalance = watching
    try:
        if protocol == "classic":
            explore_classic(2, 1, depth=10, budget_s=300, workers=2)
        else:
            explore_consumer(2, 1, depth=10, budget_s=300, workers=2)
    finally:
        frontier._rebalance = real
    big = [counts for counts in seen if sum(counts) >= 20]
    assert big and all(max(c) - min(c) <= 1 for c in big)


def test_a_state_that_does_not_pickle_stays_where_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mutant's class made at run time cannot travel: its states stay with the worker that made
    them and the search is still the one-core search."""
    import pickle

    real = frontier._dumps

    def refuse(obj: Any) -> bytes:
        if type(obj).__name__ == "TracedClassicSim":
            raise pickle.PicklingError("not here")
        return real(obj)

    monkeypatch.setattr(frontier, "_dumps", refuse)
    one = explore_classic(2, 1, depth=10, budget_s=300)
    many = explore_classic(2, 1, depth=10, budget_s=300, workers=2)
    _same(one, many)


def test_a_failing_worker_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.protocols.classic import explore as classic

    def broken(sim: Any, op: Any, where: str) -> Any:
        raise ValueError("model broke")

    monkeypatch.setattr(classic, "apply_op", broken)
    with pytest.raises(frontier.WorkerError, match="model broke"):
        explore_classic(2, 1, depth=3, budget_s=60, workers=2)


def test_the_budget_stops_every_worker() -> None:
    r = explore_classic(2, 2, depth=200, budget_s=1.0, cpu_clock=True, workers=2)
    assert r.budget_hit and not r.complete and r.levels_done < 200
