"""Every design runs the common workload; handlers are pure (responses, records); runs are deterministic."""

from __future__ import annotations

import copy

import pytest

from model.designs import DESIGNS, make_engine
from model.designs import joinall as ja
from model.designs import ops as o
from model.designs import sync_join as sj
from model.designs.driver import run
from model.designs.net import DesignError

RUNNABLE = [name for name, spec in DESIGNS.items() if spec.factory is not None]
SIMPLE = [o.Join("A"), o.Join("B"), o.Join("C"), o.Settle(30_000), o.Crash("C"), o.Settle(30_000)]


@pytest.mark.parametrize("design", RUNNABLE)
def test_a_join_and_a_crash_converge_everywhere(design: str) -> None:
    result = run(make_engine(design, {"t": 4}, {}, 0), SIMPLE)
    assert result.findings == []
    last = result.views[-1]
    held = sorted(tp for m in last.members if m.alive for tp in m.holds)
    assert held == [("t", p) for p in range(4)]
    assert not any(m.holds for m in last.members if m.name == "C")


@pytest.mark.parametrize("design", ["independent-hash", "broker-coordinator", "sync-in-join", "shipped"])
def test_same_ops_same_views(design: str) -> None:
    ops = [*SIMPLE, o.SetTopic("t", 6), o.Failover(), o.Settle(30_000)]
    first = run(make_engine(design, {"t": 4}, {}, 3), ops).views
    assert first == run(make_engine(design, {"t": 4}, {}, 3), ops).views


def test_join_all_handlers_change_state_only_through_their_records() -> None:
    live = ja.JoinAllState()
    steps = [("A", ""), ("B", ""), ("A", "A-0")]  # A forms generation 1; B's join needs A back for 2
    for k, (name, mid) in enumerate(steps):
        before = copy.deepcopy(live)
        out, records = ja.handle_join(live, name, ja.JoinReq(mid, (("range", b"m"),), 6000), k)
        rebuilt = before
        for rec in records:
            ja.apply(rebuilt, rec, k)
        assert rebuilt == live
        assert all(m.src == ja.COORDINATOR for m in out)
    assert live.generation == 2 and sorted(live.members) == ["A-0", "B-1"]
    assert {m.dst for m in out} == {"A", "B"} and all(len(m.body.members) == 2 for m in out)
    persisted = ja.load([r for r in records if getattr(r, "durable", False)], 100)
    assert persisted.generation == 2 and set(persisted.members) == set(live.members)


def test_sync_join_soft_failure_reaches_every_parked_member() -> None:
    state = sj.SyncJoinState()
    (synchronize,), _ = sj.handle_join(state, "A", sj.SJoin("", b"\x00\x01", 6000), 0, "random", 5000)
    assert synchronize.body.phase == "synchronize" and state.synchronizer == "A-1"
    sj.handle_synced(state, "A", sj.SSynced("A-1", state.round, "NONE", (("A-1", b""),), "range"), 1)
    assert state.phase == "Stable" and state.generation == 1
    sj.handle_join(state, "B", sj.SJoin("", b"\x00\x02", 6000), 2, "last", 5000)
    out, _ = sj.handle_join(state, "A", sj.SJoin("A-1", b"\x00\x01", 6000), 3, "last", 5000)
    assert state.phase == "Synchronizing" and state.synchronizer == "A-1"  # the last to join
    out, records = sj.handle_synced(state, "A", sj.SSynced("A-1", state.round, sj.METADATA_UNREADABLE), 4)
    assert {m.dst for m in out} == {"A", "B"} and all(m.body.error == sj.METADATA_UNREADABLE for m in out)
    assert state.phase == "Empty" and records


def test_bad_options_are_named() -> None:
    with pytest.raises(DesignError, match="option scope"):
        make_engine("independent-hash", {"t": 1}, {"scope": "galaxy"})
    with pytest.raises(DesignError, match="unknown option"):
        make_engine("shipped", {"t": 1}, {"nope": "1"})
    with pytest.raises(DesignError, match="size model only"):
        make_engine("compressed", {"t": 1})
