"""Seed 001's broker-side coordinator: the zombie coordinator, offsets in ping answers, per-thread
ownership (seed 001 sections 5, 9, 10 and 11)."""

from __future__ import annotations

from model.designs import make_engine
from model.designs import ops as o
from model.designs.broker_coordinator import BrokerCoordinator

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
