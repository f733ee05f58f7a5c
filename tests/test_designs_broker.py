"""Seed 001's broker-side coordinator: the zombie coordinator, offsets in ping answers, per-thread
ownership (seed 001 sections 5, 9, 10 and 11)."""

from __future__ import annotations

from model.designs import make_engine
from model.designs import ops as o
from model.designs.broker_coordinator import BrokerCoordinator, plan

SETTLED = [o.Join("A"), o.Join("B"), o.Settle(30_000)]


def coordinators(engine: object) -> dict[str, BrokerCoordinator]:
    actors = engine.net.actors  # type: ignore[attr-defined]
    return {n: a for n, a in actors.items() if isinstance(a, BrokerCoordinator)}


def test_a_zombie_keeps_its_consumers_writes_nothing_and_resets_on_reconnect() -> None:
    engine = make_engine("broker-coordinator", {"t": 4}, {"failover": "zombie", "zombie_ms": "20000"})
    for op in SETTLED:
        engine.apply(op)
    old = engine.zk["owner"]
    engine.apply(o.Failover())
    zombie = coordinators(engine)[old]
    assert zombie.deposed and zombie.s.active
    engine.apply(o.Advance(15_000))
    new = engine.zk["owner"]
    assert new and new != old
    # A and B still hear the zombie's pings, so they stay with it and keep their partitions
    assert engine.members["A"].phase == "registered" and engine.members["A"].coordinator == old
    assert engine.view().member("A").holds  # type: ignore[union-attr]
    assert set(zombie.s.consumers) == {"A", "B"}
    engine.apply(o.Advance(6_000))  # its ZooKeeper client reconnects: handleNewSession
    assert not zombie.deposed and not zombie.s.active and not zombie.s.consumers
    engine.apply(o.Settle(30_000))
    assert {engine.members[m].coordinator for m in ("A", "B")} == {new}


def test_a_zombie_rebalances_on_but_its_zookeeper_writes_fail() -> None:
    options = {"failover": "zombie", "zk_session_ms": "15000", "zombie_ms": "20000"}
    engine = make_engine("broker-coordinator", {"t": 4}, options)
    for op in [*SETTLED, o.Join("C"), o.Settle(30_000)]:
        engine.apply(op)
    old = engine.zk["owner"]
    engine.apply(o.Failover())
    zombie, logged = coordinators(engine)[old], len(engine.zk["log"])
    before = zombie.s.rebalances
    engine.apply(o.Crash("C"))
    engine.apply(o.Advance(12_000))  # C's pings fail; the zombie rebalances A and B
    assert zombie.s.rebalances > before and "C" not in zombie.s.consumers
    assert len(engine.zk["log"]) == logged and not engine.zk["owner"]


def test_a_dead_coordinator_leaves_no_zombie() -> None:
    engine = make_engine("broker-coordinator", {"t": 4})
    for op in SETTLED:
        engine.apply(op)
    old = engine.zk["owner"]
    engine.apply(o.Failover())
    assert not coordinators(engine)[old].s.active


def settled(options: dict[str, str] | None = None, topics: dict[str, int] | None = None) -> object:
    engine = make_engine("broker-coordinator", topics or {"t": 4}, options or {})
    for op in SETTLED:
        engine.apply(op)
    return engine


def active(engine: object) -> BrokerCoordinator:
    return coordinators(engine)[engine.zk["owner"]]  # type: ignore[attr-defined]


def test_ping_answers_carry_the_offsets_the_coordinator_keeps() -> None:
    engine = settled()
    a = engine.members["A"]  # type: ignore[attr-defined]
    now = engine.net.now  # type: ignore[attr-defined]
    committed = active(engine).s.committed
    assert set(committed) == {("t", p) for p in range(4)}
    for tp, pos in zip(a.held, a.positions(now), strict=True):
        assert 0 < pos - committed[tp] <= 2_000 + 2  # at most one ping interval behind


def test_a_crash_rereads_at_most_a_ping_interval_and_a_clean_leave_nothing() -> None:
    crashed = settled()
    crashed.apply(o.Crash("B"))  # type: ignore[attr-defined]
    crashed.apply(o.Settle(30_000))  # type: ignore[attr-defined]
    assert 0 < crashed.reread_ms <= 2 * (2_000 + 2)  # type: ignore[attr-defined]  # B had 2 partitions
    left = settled()
    left.apply(o.Leave("B"))  # type: ignore[attr-defined]
    b = left.members["B"]  # type: ignore[attr-defined]
    assert b.phase == "leaving" and not b.held
    answered = closed = 0
    for step in range(1, 60):  # 100 ms steps: it answers one ping with its final offsets, closes at the next
        left.apply(o.Advance(100))  # type: ignore[attr-defined]
        answered = answered or (step if b.final_sent else 0)
        closed = closed or (step if b.phase == "left" else 0)
    assert answered > 0 and closed - answered >= 19
    left.apply(o.Settle(30_000))  # type: ignore[attr-defined]
    assert b.phase == "left" and left.reread_ms == 0  # type: ignore[attr-defined]
    assert left.view(checkpoint=True).member("A").holds == frozenset(("t", p) for p in range(4))  # type: ignore[attr-defined]


def test_a_failover_rereads_what_the_committer_had_not_written() -> None:
    reread = {}
    for commit_ms in (2_000, 10_000):
        engine = settled({"commit_ms": str(commit_ms)})
        engine.apply(o.Advance(8_000))  # type: ignore[attr-defined]
        before = engine.reread_ms  # type: ignore[attr-defined]
        engine.apply(o.Failover())  # type: ignore[attr-defined]
        engine.apply(o.Settle(30_000))  # type: ignore[attr-defined]
        reread[commit_ms] = engine.reread_ms - before  # type: ignore[attr-defined]
    assert 0 < reread[2_000] < reread[10_000]


def test_a_paused_consumer_consumes_nothing() -> None:
    engine = settled()
    a = engine.members["A"]  # type: ignore[attr-defined]
    start = a.positions(engine.net.now)  # type: ignore[attr-defined]
    engine.apply(o.Pause("A"))  # type: ignore[attr-defined]
    engine.apply(o.Advance(1_000))  # type: ignore[attr-defined]
    engine.apply(o.Resume("A"))  # type: ignore[attr-defined]
    engine.apply(o.Advance(500))  # type: ignore[attr-defined]
    assert [p - s for p, s in zip(a.positions(engine.net.now), start, strict=True)] == [500] * len(start)  # type: ignore[attr-defined]


def test_ownership_is_computed_per_consumer_thread() -> None:
    engine = settled({"threads": "2"})
    union, split = plan(active(engine).s, {"t": 4}, "range")
    assert union == {"A": (("t", 0), ("t", 1)), "B": (("t", 2), ("t", 3))}
    assert split == {
        "A": (("A-0", (("t", 0),)), ("A-1", (("t", 1),))),
        "B": (("B-0", (("t", 2),)), ("B-1", (("t", 3),))),
    }
    engine.apply(o.Join("C"))  # type: ignore[attr-defined]
    engine.apply(o.Settle(30_000))  # type: ignore[attr-defined]
    view = engine.view()  # type: ignore[attr-defined]
    assert not view.member("C").holds  # 6 threads, 4 partitions: the newest consumer's threads idle
    assert view.member("A").holds and view.member("B").holds


def test_bad_thread_counts_and_committer_periods_are_named() -> None:
    import pytest

    from model.designs.net import DesignError

    for options, word in (
        ({"threads": "0"}, "threads"),
        ({"threads": "65"}, "threads"),
        ({"commit_ms": "0"}, "commit_ms"),
    ):
        with pytest.raises(DesignError, match=word):
            make_engine("broker-coordinator", {"t": 4}, options)
