"""The classic coordinator model: rule tables, records, replay, failover, and the stateful suite's teeth."""

from __future__ import annotations

import copy

from conformance.engine.profiles import get_profile
from conformance.engine.run import run_check
from conformance.protocols.build import make_classic_sim, settle_round
from model.choice import SeededChooser
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from model.classic.port import ModelPort
from model.classic.records import apply, load
from model.classic.state import ClassicConfig, ClassicState, GroupState
from model.errors import ErrorCode

E = ErrorCode
CFG = ClassicConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=500)


def join(c: ClassicCoordinator, st: ClassicState, ref: int, member_id: str = "", **kw):  # type: ignore[no-untyped-def]
    req = JoinGroupRequest(
        "g", member_id, "consumer", kw.pop("protocols", (("range", b"m"),)), 6000, 10_000, **kw
    )
    return c.handle(st, req, ref, 0)


def formed_group():  # type: ignore[no-untyped-def]
    c = ClassicCoordinator(CFG, SeededChooser(1))
    st = ClassicState()
    mid = join(c, st, 1).deliveries[0].response.member_id
    join(c, st, 2, mid)
    c.advance(st, 0)
    return c, st, mid


def test_kip394_then_join_completes_as_leader() -> None:
    c, st, mid = formed_group()
    g = st.groups["g"]
    assert g.state == GroupState.COMPLETING_REBALANCE and g.generation == 1 and g.leader == mid


def test_join_v3_adds_member_directly() -> None:
    c = ClassicCoordinator(CFG, SeededChooser(1))
    st = ClassicState()
    res = join(c, st, 1, version=3)
    assert res.deliveries == [] and len(st.groups["g"].members) == 1


def test_sync_validation_order() -> None:
    c, st, mid = formed_group()
    no_proto = c.handle(st, SyncGroupRequest("g", 1, mid), 2, 0).deliveries[0].response
    assert no_proto.error == E.INCONSISTENT_GROUP_PROTOCOL  # v5 without protocol type/name (KafkaApis L1328)
    bad_member = c.handle(st, SyncGroupRequest("g", 1, "nobody", version=4), 3, 0).deliveries[0].response
    assert bad_member.error == E.UNKNOWN_MEMBER_ID
    bad_gen = c.handle(st, SyncGroupRequest("g", 7, mid, version=4), 4, 0).deliveries[0].response
    assert bad_gen.error == E.ILLEGAL_GENERATION
    wrong_proto = (
        c.handle(st, SyncGroupRequest("g", 1, mid, protocol_type="consumer", protocol_name="other"), 5, 0)
        .deliveries[0]
        .response
    )
    assert wrong_proto.error == E.INCONSISTENT_GROUP_PROTOCOL
    ok = c.handle(st, SyncGroupRequest("g", 1, mid, ((mid, b"a"), ("ghost", b"x")), version=4), 6, 0)
    assert ok.deliveries[0].response.error == E.NONE and ok.deliveries[0].response.assignment == b"a"
    assert st.groups["g"].state == GroupState.STABLE and "ghost" not in st.groups["g"].members


def test_heartbeat_rows() -> None:
    c, st, mid = formed_group()
    hb = c.handle(st, HeartbeatRequest("g", 1, mid), 3, 0).deliveries[0].response
    assert hb.error == E.NONE  # CompletingRebalance answers NONE (docs/protocol-reference.md#a5)
    assert (
        c.handle(st, HeartbeatRequest("g", 0, mid), 4, 0).deliveries[0].response.error == E.ILLEGAL_GENERATION
    )
    assert (
        c.handle(st, HeartbeatRequest("h", 0, mid), 5, 0).deliveries[0].response.error == E.UNKNOWN_MEMBER_ID
    )


def test_commit_rejected_while_completing_and_unknown_topic() -> None:
    c, st, mid = formed_group()
    c.create_topic(st, "t", 1)
    req = OffsetCommitRequest(
        "g", 1, mid, (OffsetCommitPartition("t", 0, 5), OffsetCommitPartition("x", 0, 5))
    )
    resp = c.handle(st, req, 3, 0).deliveries[0].response
    assert resp.partitions == (("t", 0, E.REBALANCE_IN_PROGRESS), ("x", 0, E.UNKNOWN_TOPIC_OR_PARTITION))


def test_leave_v0_collapses_and_empties_group() -> None:
    c, st, mid = formed_group()
    resp = (
        c.handle(st, LeaveGroupRequest("g", (MemberIdentity(mid),), version=1), 3, 0).deliveries[0].response
    )
    assert resp.error == E.NONE and resp.members == ()
    g = st.groups["g"]
    assert g.state == GroupState.EMPTY and g.generation == 2 and g.leader is None


def test_static_replacement_fences_parked_join() -> None:
    c = ClassicCoordinator(CFG, SeededChooser(1))
    st = ClassicState()
    join(c, st, 1, group_instance_id="i1")
    res = join(c, st, 2, group_instance_id="i1")
    fenced = [d for d in res.deliveries if d.ref == 1]
    assert fenced and fenced[0].response.error == E.FENCED_INSTANCE_ID


def test_group_max_size() -> None:
    c = ClassicCoordinator(
        ClassicConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=500, max_size=1)
    )
    st = ClassicState()
    join(c, st, 1, version=3)
    c.advance(st, 0)
    join(c, st, 2, version=3)
    assert len(st.groups["g"].members) == 1


def test_replaying_records_rebuilds_state_and_failover_loads_durable() -> None:
    sim = make_classic_sim({"t": 3}, [{"name": "a"}, {"name": "b"}, {"name": "c"}], {}, {})
    for _ in range(30):
        settle_round(sim, ["a", "b", "c"], lambda obs: None)
    port = sim.port
    assert isinstance(port, ModelPort)
    rebuilt = ClassicState()
    for rec in port.records:
        apply(rebuilt, rec)
    assert rebuilt == port.state
    loaded = load(port.durable, sim.now)
    live, back = port.state.groups["g"], loaded.groups["g"]
    assert back.generation == live.generation and back.state == GroupState.STABLE
    assert {m: x.assignment for m, x in back.members.items()} == {
        m: x.assignment for m, x in live.members.items()
    }


def test_same_seed_same_run() -> None:
    a = run_check("classic", profile=get_profile("dev"), max_examples=15, seed_value=7)
    b = run_check("classic", profile=get_profile("dev"), max_examples=15, seed_value=7)
    assert a.sometimes == b.sometimes and a.verdict == b.verdict


def test_check_passes_on_the_model() -> None:
    result = run_check("classic", profile=get_profile("ci"), max_examples=120, seed_value=0)
    assert result.verdict == "PASSED", (result.violations[:3], result.vacuous)


def test_check_finds_kafka_7026_from_scratch_with_sticky_v0() -> None:
    result = run_check(
        "classic",
        profile=get_profile("ci"),
        max_examples=300,
        seed_value=0,
        variants={"sticky": "v0", "assignor": "sticky"},
    )
    ids = {v.invariant for v in result.violations}
    assert ids & {
        "client.assignment_single_owner",
        "classic.single_owner_consumer",
        "classic.single_owner_coordinator",
    }


class SkipGenerationCheck(ClassicCoordinator):
    """A mutant: heartbeats are not checked against the generation."""

    def handle_heartbeat(self, state, req, ref, now):  # type: ignore[no-untyped-def]
        group = state.groups.get(req.group_id)
        if group is not None:
            req = (
                copy.replace(req, generation_id=group.generation)
                if hasattr(copy, "replace")
                else type(req)(
                    req.group_id, group.generation, req.member_id, req.group_instance_id, req.version
                )
            )
        return super().handle_heartbeat(state, req, ref, now)


def test_stateful_suite_catches_a_mutant() -> None:
    def port(coord: ClassicCoordinator) -> ModelPort:
        return ModelPort(SkipGenerationCheck(coord.config, coord.chooser))

    result = run_check(
        "classic", profile=get_profile("ci"), max_examples=200, seed_value=0, port_factory=port
    )
    assert "classic.stale_generation_rejected" in {v.invariant for v in result.violations}


def _two_member_group() -> tuple[ClassicCoordinator, ClassicState, str, str]:
    """Two members joined at t=0 (session timeout 6000 ms): CompletingRebalance, (leader, follower)."""
    c = ClassicCoordinator(CFG, SeededChooser(1))
    st = ClassicState()
    a = join(c, st, 1).deliveries[0].response.member_id
    b = join(c, st, 2).deliveries[0].response.member_id
    join(c, st, 3, a)
    join(c, st, 4, b)
    c.advance(st, 0)
    leader = st.groups["g"].leader
    return c, st, leader, b if leader == a else a


def _sync(c: ClassicCoordinator, st: ClassicState, member: str, ref: int, now: int, assignments=()):  # type: ignore[no-untyped-def]
    req = SyncGroupRequest(
        "g", st.groups["g"].generation, member, assignments, protocol_type="consumer", protocol_name="range"
    )
    return c.handle(st, req, ref, now)


def test_leader_sync_rearms_only_the_members_it_answers() -> None:
    """GMM `propagateAssignment` re-arms a member's heartbeat only when `completeSyncFuture` answered
    its parked SyncGroup: a follower that has not synced keeps the session its join completion began
    (seen against Apache Kafka 4.4.0: the follower expired 1.5 s after the join, not after the sync)."""
    c, st, leader, follower = _two_member_group()
    g = st.groups["g"]
    assert g.timers[f"expire:{leader}"].deadline == g.timers[f"expire:{follower}"].deadline == 6000
    _sync(c, st, leader, 5, 1000, ((leader, b"x"), (follower, b"y")))
    g = st.groups["g"]
    assert g.state == GroupState.STABLE
    assert g.timers[f"expire:{leader}"].deadline == 7000
    assert g.timers[f"expire:{follower}"].deadline == 6000


def test_sync_answered_with_an_error_rearms_the_session() -> None:
    """`resetAndPropagateAssignmentWithError` goes through `propagateAssignment`: a parked SyncGroup
    answered REBALANCE_IN_PROGRESS re-arms that member's heartbeat (the others keep theirs)."""
    c, st, leader, follower = _two_member_group()
    assert _sync(c, st, follower, 5, 500).deliveries == []  # parked until the leader's assignment
    res = c.handle(  # a new member joins: back to PreparingRebalance
        st, JoinGroupRequest("g", "", "consumer", (("range", b"m"),), 6000, 10_000, version=3), 7, 1000
    )
    answered = {d.ref: d.response.error for d in res.deliveries}
    g = st.groups["g"]
    assert g.state == GroupState.PREPARING_REBALANCE
    assert answered.get(5) == E.REBALANCE_IN_PROGRESS
    assert g.timers[f"expire:{follower}"].deadline == 7000
    assert g.timers[f"expire:{leader}"].deadline == 6000
