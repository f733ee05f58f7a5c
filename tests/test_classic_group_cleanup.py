"""Kafka's periodic metadata cleanup deletes an Empty group without offsets; its next join starts over.

Every ``offsets.retention.check.interval.ms`` (10 min by default) Apache Kafka deletes each Empty
group whose offsets have all expired or that has none (GroupCoordinatorShard
``cleanupGroupMetadata``, apache/kafka 1eb7644). The next JoinGroup creates the group anew, so it
is answered generation 1 where a model that kept the group expects the next generation. Seen in a
25-minute run of 32 groups on Apache Kafka 4.4.0 ("Generated 922 tombstone records while cleaning
up group metadata" in the broker's log, then a group at generation 3 answered a join at generation
1). The oracle cannot see the cleanup's phase, so an Empty group without offsets may have been
deleted before any operation. No broker: the scripted port of `test_classic_lineage_switch`.
"""

from __future__ import annotations

from typing import Any

from test_classic_lineage_switch import scripted_sim

from model.classic.records import GroupDeleted
from model.classic.state import ClassicState, GroupState


def _empty_group(port: Any, sim: Any) -> None:
    for _ in range(8):
        sim.client_step("c1")
        port.sleep_until(port.clock() + 20)
    assert port.hypos[0].state.groups["g"].state == GroupState.STABLE
    assert sim.leave("c1") is not None
    port.sleep_until(port.clock() + 20)
    assert port.hypos[0].state.groups["g"].state == GroupState.EMPTY


def _rejoin(port: Any, sim: Any) -> int:
    """c1 comes back as a new process; the generation it is given."""
    sim.restart("c1")
    for _ in range(6):
        sim.client_step("c1")
        sim.advance(20)
    return int(sim.clients["c1"].generation)


def _run(cleanup_in_target: bool, candidates: bool = True) -> tuple[list[str], Any]:
    sim, port = scripted_sim(("c1",), partitions=2)
    if not candidates:
        port._cleaned = lambda h, t, op, timings: []  # type: ignore[method-assign]
    _empty_group(port, sim)
    generation = port.hypos[0].state.groups["g"].generation
    if cleanup_in_target:
        result = port.reference.cleanup_group_metadata(port.reference_state)
        assert result.records == [GroupDeleted("g")]
    joined = _rejoin(port, sim)
    assert joined == (1 if cleanup_in_target else generation + 1), (joined, generation)
    return [f.rule for f in port.take_findings()], port


def test_a_group_the_cleanup_deleted_starts_over_without_a_divergence() -> None:
    found, port = _run(cleanup_in_target=True)
    assert found == []
    assert port.hypos[0].state.groups["g"].generation == 1


def test_without_cleanup_candidates_it_is_a_divergence() -> None:
    found, _port = _run(cleanup_in_target=True, candidates=False)
    assert "oracle.JoinGroup" in found


def test_a_group_kept_by_the_target_is_still_judged_as_kept() -> None:
    found, port = _run(cleanup_in_target=False)
    assert found == []
    assert port.hypos[0].state.groups["g"].generation > 1


def test_the_cleanup_keeps_groups_with_members_or_offsets() -> None:
    from model.classic.coordinator import ClassicCoordinator
    from model.classic.records import GroupCreated, OffsetCommitRecord
    from model.classic.state import ClassicConfig
    from model.classic.tx import Tx

    coordinator = ClassicCoordinator(ClassicConfig())
    state = ClassicState()
    tx = Tx(state)
    for gid in ("empty", "committed", "busy"):
        tx.emit(GroupCreated(gid))
    tx.emit(OffsetCommitRecord("committed", "t", 0, 5, ""))
    state.groups["busy"].state = GroupState.STABLE
    assert coordinator.deletable_groups(state) == ["empty"]
    assert coordinator.cleanup_group_metadata(state).records == [GroupDeleted("empty")]
    assert sorted(state.groups) == ["busy", "committed"]


def test_a_deleted_groups_generations_start_over_for_the_consumer_view() -> None:
    """c1 owns every partition in generation 1, leaves; the cleanup deletes the group; c2 alone
    forms generation 1 anew. `classic.single_owner_consumer` keys deliveries by generation: the
    deleted group's generation 1 is another round, not a second owner."""
    from conformance.engine.checker import Checker
    from conformance.protocols.build import make_classic_sim, settle_round

    sim = make_classic_sim({"t": 2}, [{"name": "c1"}, {"name": "c2"}], {"initial_rebalance_delay_ms": 0}, {})
    checker = Checker("classic")
    found: list[str] = []
    seen: list[Any] = []

    def observe(obs: Any) -> None:
        if obs is not None:
            seen.append(obs)
            found.extend(v.invariant for v in checker.check(obs, len(seen)))

    for _ in range(10):
        settle_round(sim, ["c1"], observe)
    assert sim.clients["c1"].generation == 1
    owned = set(sim.clients["c1"].owned)
    assert len(owned) == 2
    observe(sim.leave("c1"))
    sim.port.cleanup_group_metadata()
    assert sim.port.durable[-1] == GroupDeleted("g")
    observe(sim.advance(10))
    assert sim.world.group is None and sim.world.delivered == ()
    for _ in range(10):
        settle_round(sim, ["c2"], observe)
    assert sim.clients["c2"].generation == 1 and set(sim.clients["c2"].owned) == owned
    assert found == []
