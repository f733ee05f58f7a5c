"""Tests of KIP-848 mixed groups (docs/protocol-reference.md#b13; model/mixed/coordinator.py): classic JoinGroup /
SyncGroup / Heartbeat / LeaveGroup served by the consumer-group engine, online upgrade and downgrade
under each migration policy, replay and failover, a rolling upgrade and a rolling downgrade with
every consumer and mixed invariant checked after every step, and a mutant per mixed rule."""

from __future__ import annotations

import random
import re
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.errors import SpecError
from conformance.mutants.mixed import (
    ClassicRebalanceTimer,
    DowngradeIgnoresPolicy,
    EmptyReplacementHonoursPolicy,
    GenerationOffByOne,
    HeartbeatNeverRejoins,
    NeverDowngrades,
    NoReplacementDowngrade,
    SyncGivesTarget,
    UpgradeIgnoresPolicy,
    UpgradeKeepsClassicGroup,
)
from conformance.specs import load_scenario
from conformance.trace.scenario import run_scenario
from model.choice import SeededChooser
from model.classic.client import ClassicClient
from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.classic.state import ClassicConfig
from model.classic.state import GroupState as ClassicGroupState
from model.classic.tx import Tx
from model.consumer.client import ClientState
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartition,
    to_topic_partitions,
)
from model.consumer.records import ConsumerGroupTombstone
from model.consumer.state import JOIN, REBALANCE, SESSION, SYNC, ConsumerGroup, ConsumerMember, MemberState
from model.consumer.txn import ConsumerCoordinatorConfig
from model.consumer.world import AdvanceEvent, HeartbeatEvent
from model.embedded import Assignment, Subscription, decode_assignment, encode_assignment, encode_subscription
from model.errors import ErrorCode
from model.invariants import REGISTRY, Invariant, for_protocol, load_all
from model.mixed.consumer_group import Downgrade, MixedConfig
from model.mixed.coordinator import MixedCoordinator
from model.mixed.state import (
    ClassicGroupTombstone,
    MigrationPolicy,
    MixedState,
    rebuild,
    replay,
)
from model.mixed.world import (
    CLASSIC_STATE_INVARIANTS,
    ClassicRequestEvent,
    MixedRun,
    MixedWorld,
    capture_mixed_world,
    check_invariant,
)
from model.observation import Observation
from model.result import Result

E = ErrorCode
load_all()
INVARIANTS: tuple[Invariant, ...] = (
    tuple(for_protocol("consumer"))
    + tuple(for_protocol("mixed"))
    + tuple(REGISTRY[i] for i in CLASSIC_STATE_INVARIANTS)
)


def P(topic: str, *parts: int) -> frozenset[TopicPartition]:
    return frozenset((topic, p) for p in parts)


def jg(
    member_id: str = "",
    *,
    topics: tuple[str, ...] = ("t",),
    owned: tuple[TopicPartition, ...] = (),
    version: int = 9,
    instance: str | None = None,
    protocols: tuple[str, ...] = ("range",),
    protocol_type: str = "consumer",
    session: int = 10_000,
    rebalance: int = 30_000,
    group: str = "g",
) -> JoinGroupRequest:
    sub = encode_subscription(Subscription(topics, owned_partitions=owned))
    return JoinGroupRequest(
        group,
        member_id,
        protocol_type,
        tuple((p, sub) for p in protocols),
        session,
        rebalance,
        instance,
        None,
        "client",
        version,
    )


def join(member_id: str, topics: tuple[str, ...] = ("t",), **kw: object) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id=member_id,
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=topics,
        topic_partitions=(),
        **kw,  # type: ignore[arg-type]
    )


def beat(
    member_id: str, epoch: int, owned: frozenset[TopicPartition] | None = None
) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id=member_id,
        member_epoch=epoch,
        topic_partitions=None if owned is None else to_topic_partitions(owned),
    )


class Harness:
    """Requests sent one by one to a mixed coordinator; every invariant checked after every step."""

    def __init__(self, coordinator: MixedCoordinator | None = None, partitions: int = 4) -> None:
        self.coord = coordinator or MixedCoordinator()
        self.state = MixedState()
        self.now = 0
        self.ref = 0
        self.records: list[object] = []
        self.violations: list[tuple[str, str]] = []
        self._step(AdvanceEvent(0), lambda: self.coord.create_topic(self.state, "t", partitions))

    def world(self) -> MixedWorld:
        return capture_mixed_world(self.state, self.coord)

    def _step(self, event: object, call) -> Result:  # type: ignore[no-untyped-def]
        before = self.world()
        result: Result = call()
        self.records.extend(result.records)
        obs = Observation(before, event, tuple(result.deliveries), self.world(), self.now)
        for inv in INVARIANTS:
            if inv.kind != "sometimes":
                self.violations.extend((inv.id, m) for m in check_invariant(inv, obs))
        return result

    def send(self, request: object) -> object:
        self.ref += 1
        ref = self.ref
        event = (
            HeartbeatEvent(ref, request)
            if isinstance(request, ConsumerGroupHeartbeatRequest)
            else ClassicRequestEvent(ref, request)
        )  # type: ignore[arg-type]
        result = self._step(event, lambda: self.coord.handle(self.state, request, ref, self.now))
        self.last = result
        mine = [d.response for d in result.deliveries if d.ref == ref]
        return mine[0] if mine else None

    def advance(self, to: int) -> Result:
        self.now = to
        return self._step(AdvanceEvent(to), lambda: self.coord.advance(self.state, to))

    @property
    def group(self) -> ConsumerGroup:
        return self.state.consumer.groups["g"]

    def member(self, member_id: str) -> ConsumerMember:
        return self.group.members[member_id]


def ok(response: object) -> object:
    assert getattr(response, "error", getattr(response, "error_code", None)) == E.NONE, response
    return response


def consumer_group_with_classic(h: Harness) -> str:
    """Consumer member A (all of t), then classic member B joins; returns B's id."""
    ok(h.send(join("A")))
    required = h.send(jg())
    assert isinstance(required, JoinGroupResponse) and required.error == E.MEMBER_ID_REQUIRED
    ok(h.send(jg(required.member_id)))
    return required.member_id


# ------------------------------------------------------------------------------ classic JoinGroup


def test_join_v4_dynamic_gets_member_id_required_and_nothing_is_stored() -> None:
    """docs/protocol-reference.md#b13: JoinGroup v4+ dynamic gets MEMBER_ID_REQUIRED (GMM classicGroupJoinToConsumerGroup,
    ``requiresKnownMemberId``); the consumer engine keeps no pending set, so no record is written."""
    h = Harness()
    ok(h.send(join("A")))
    before = len(h.records)
    resp = h.send(jg())
    assert isinstance(resp, JoinGroupResponse) and resp.error == E.MEMBER_ID_REQUIRED and resp.member_id
    assert len(h.records) == before and set(h.group.members) == {"A"}
    assert not h.violations


def test_join_generation_is_member_epoch_and_timers_follow_the_classic_rules() -> None:
    """docs/protocol-reference.md#b13: generation = member epoch, protocol type consumer, protocol name = the member's first
    protocol, no leader, no member list; join timer cancelled, session timer = the JoinGroup session
    timeout, sync timer = its rebalance timeout; no rebalance timer (GMM maybeReconcile)."""
    h = Harness()
    ok(h.send(join("A")))
    required = h.send(jg(protocols=("roundrobin", "range")))
    assert isinstance(required, JoinGroupResponse)
    h.now = 100
    resp = h.send(jg(required.member_id, protocols=("roundrobin", "range"), session=12_000, rebalance=20_000))
    assert isinstance(resp, JoinGroupResponse) and resp.error == E.NONE
    b = h.member(resp.member_id)
    assert resp.generation_id == b.member_epoch == h.group.assignment_epoch
    assert (resp.protocol_type, resp.protocol_name, resp.leader, resp.members) == (
        "consumer",
        "roundrobin",
        "",
        (),
    )
    assert (
        b.classic is not None and b.classic.session_timeout_ms == 12_000 and b.subscribed_topic_names == {"t"}
    )
    timers = h.group.timers
    assert timers[(SESSION, b.member_id)].deadline == 100 + 12_000
    assert timers[(SYNC, b.member_id)].deadline == 100 + 20_000
    assert (REBALANCE, b.member_id) not in timers and (JOIN, b.member_id) not in timers
    assert not h.violations


def test_join_v3_dynamic_member_is_added_at_once() -> None:
    """JoinGroup v<4 without member id: a fresh id and the member at once (no MEMBER_ID_REQUIRED)."""
    h = Harness()
    ok(h.send(join("A")))
    resp = h.send(jg(version=3))
    assert isinstance(resp, JoinGroupResponse) and resp.error == E.NONE and resp.member_id in h.group.members


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (jg("x", protocol_type="connect"), E.INCONSISTENT_GROUP_PROTOCOL),
        (jg("x", session=1), E.INVALID_SESSION_TIMEOUT),
        (jg("x", instance="i-unknown"), E.UNKNOWN_MEMBER_ID),
    ],
)
def test_join_errors(request_: JoinGroupRequest, code: ErrorCode) -> None:
    """docs/protocol-reference.md#b13 / #a3: protocol type must be ``consumer`` (CoG supportsClassicProtocols), the session
    timeout range is checked first (GCS), a known member id with an unknown instance is unknown."""
    h = Harness()
    ok(h.send(join("A")))
    before = h.state.copy()
    resp = h.send(request_)
    assert isinstance(resp, JoinGroupResponse) and resp.error == code
    assert h.state.consumer.groups == before.consumer.groups


def test_join_protocol_must_be_shared_by_every_classic_member_and_group_full() -> None:
    """CoG supportsClassicProtocols: one name supported by all classic members; GMM
    throwIfConsumerGroupIsFull: GROUP_MAX_SIZE_REACHED for a new member of a full group."""
    h = Harness(MixedCoordinator(MixedConfig(consumer=ConsumerCoordinatorConfig(max_size=3))))
    b = consumer_group_with_classic(h)
    resp = h.send(jg("y", protocols=("roundrobin",)))
    assert isinstance(resp, JoinGroupResponse) and resp.error == E.INCONSISTENT_GROUP_PROTOCOL
    ok(h.send(jg("y", protocols=("roundrobin", "range"))))
    full = h.send(jg("z"))
    assert isinstance(full, JoinGroupResponse) and full.error == E.GROUP_MAX_SIZE_REACHED
    checked_first = h.send(jg("z", protocol_type="connect"))  # capacity is checked before protocols
    assert isinstance(checked_first, JoinGroupResponse) and checked_first.error == E.GROUP_MAX_SIZE_REACHED
    again = h.send(jg(b))  # an existing member may rejoin a full group
    assert isinstance(again, JoinGroupResponse) and again.error == E.NONE


def test_static_classic_join_takes_over_the_instance_and_checks_known_ids() -> None:
    """GMM getOrMaybeSubscribeStaticConsumerGroupMember with useClassicProtocol: an unknown member id
    takes over the instance (no -2 needed); a known id must hold it (FENCED_INSTANCE_ID). (Policy
    ``upgrade``: with downgrades allowed, replacing the only consumer-protocol member downgrades.)"""
    h = Harness(MixedCoordinator(MixedConfig(policy=MigrationPolicy.UPGRADE)))
    ok(h.send(join("A", instance_id="i1")))
    first = h.send(jg(instance="i1", version=9))
    assert isinstance(first, JoinGroupResponse) and first.error == E.NONE
    assert "A" not in h.group.members and h.group.static_members["i1"] == first.member_id
    fenced = h.send(jg("other", instance="i1"))
    assert isinstance(fenced, JoinGroupResponse) and fenced.error == E.FENCED_INSTANCE_ID
    assert not h.violations


# ------------------------------------------------------------------------------ SyncGroup / Heartbeat


def test_sync_rules() -> None:
    """GMM classicGroupSyncToConsumerGroup: validation order, REBALANCE_IN_PROGRESS when behind,
    success = the assigned partitions serialised, sync timer cancelled."""
    h = Harness()
    b = consumer_group_with_classic(h)
    epoch = h.member(b).member_epoch
    for request_, code in [
        (SyncGroupRequest("g", epoch, "nobody"), E.UNKNOWN_MEMBER_ID),
        (SyncGroupRequest("g", 1, "A"), E.UNKNOWN_MEMBER_ID),  # a consumer-protocol member
        (SyncGroupRequest("g", epoch + 7, b), E.ILLEGAL_GENERATION),
        (
            SyncGroupRequest("g", epoch, b, protocol_type="consumer", protocol_name="sticky"),
            E.INCONSISTENT_GROUP_PROTOCOL,
        ),
    ]:
        resp = h.send(request_)
        assert isinstance(resp, SyncGroupResponse) and resp.error == code, request_
    resp = h.send(SyncGroupRequest("g", epoch, b, protocol_type="consumer", protocol_name="range"))
    assert isinstance(resp, SyncGroupResponse) and resp.error == E.NONE
    assert frozenset(decode_assignment(resp.assignment).partitions) == h.member(b).assigned
    assert (SYNC, b) not in h.group.timers
    ok(h.send(join("C")))  # the group epoch moves past b's epoch
    behind = h.send(SyncGroupRequest("g", epoch, b))
    assert isinstance(behind, SyncGroupResponse) and behind.error == E.REBALANCE_IN_PROGRESS
    assert h.group.timers[(JOIN, b)].deadline == h.now + 30_000
    assert not h.violations


def test_heartbeat_rule_unreleased_then_free_then_behind() -> None:
    """Reference L6038: UNRELEASED waiting → NONE; UNRELEASED with everything free → REBALANCE_IN_PROGRESS;
    a rejoin then takes the partitions; epoch behind the group epoch → REBALANCE_IN_PROGRESS."""
    h = Harness()
    resp = h.send(join("A"))
    assert isinstance(resp, ConsumerGroupHeartbeatResponse)
    ok(h.send(beat("A", resp.member_epoch, P("t", 0, 1, 2, 3))))
    b = consumer_group_with_classic(h)
    mb = h.member(b)
    assert mb.state == MemberState.UNRELEASED_PARTITIONS and not mb.assigned
    hb = h.send(HeartbeatRequest("g", mb.member_epoch, b))
    assert isinstance(hb, HeartbeatResponse) and hb.error == E.NONE
    ok(h.send(beat("A", h.member("A").member_epoch, P("t", 0, 1, 2, 3))))  # A learns what to revoke
    a = h.member("A")
    assert a.state == MemberState.UNREVOKED_PARTITIONS
    ok(h.send(beat("A", a.member_epoch, a.assigned)))  # A acknowledges the revocation
    hb = h.send(HeartbeatRequest("g", mb.member_epoch, b))
    assert isinstance(hb, HeartbeatResponse) and hb.error == E.REBALANCE_IN_PROGRESS
    assert (JOIN, b) in h.group.timers
    rejoin = h.send(jg(b))
    assert isinstance(rejoin, JoinGroupResponse) and rejoin.error == E.NONE
    assert h.member(b).state == MemberState.STABLE and len(h.member(b).assigned) == 2
    assert (JOIN, b) not in h.group.timers
    ok(h.send(join("C")))
    hb = h.send(HeartbeatRequest("g", h.member(b).member_epoch, b))
    assert isinstance(hb, HeartbeatResponse) and hb.error == E.REBALANCE_IN_PROGRESS
    stale = h.send(HeartbeatRequest("g", 99, b))
    assert isinstance(stale, HeartbeatResponse) and stale.error == E.ILLEGAL_GENERATION
    assert not h.violations


def classic_holds_everything(h: Harness) -> str:
    """Consumer member A subscribed elsewhere, classic member B owning all of t, then C joins for t."""
    ok(h.send(join("A", topics=("u",))))
    b = h.send(jg(version=3))
    assert isinstance(b, JoinGroupResponse) and b.error == E.NONE
    assert h.member(b.member_id).assigned == P("t", 0, 1, 2, 3)
    ok(h.send(join("C")))
    return b.member_id


def test_heartbeat_rule_unrevoked_member() -> None:
    """A classic member that rejoins still owning partitions it must give up stays UNREVOKED at its
    old epoch (CAB, docs/protocol-reference.md#b5, with the JoinGroup's owned partitions); its heartbeat says REBALANCE_IN_PROGRESS,
    its SyncGroup still succeeds with the kept partitions; a rejoin without the revoked ones advances it."""
    h = Harness()
    b = classic_holds_everything(h)
    old = h.member(b).member_epoch
    hb = h.send(HeartbeatRequest("g", old, b))
    assert isinstance(hb, HeartbeatResponse) and hb.error == E.REBALANCE_IN_PROGRESS  # epoch behind
    resp = h.send(jg(b, owned=tuple(sorted(P("t", 0, 1, 2, 3)))))
    assert isinstance(resp, JoinGroupResponse) and resp.error == E.NONE
    mb = h.member(b)
    assert mb.state == MemberState.UNREVOKED_PARTITIONS and len(mb.pending_revocation) == 2
    assert resp.generation_id == mb.member_epoch == old < h.group.group_epoch
    assert (REBALANCE, b) not in h.group.timers
    hb = h.send(HeartbeatRequest("g", old, b))
    assert isinstance(hb, HeartbeatResponse) and hb.error == E.REBALANCE_IN_PROGRESS  # must revoke
    sync = h.send(SyncGroupRequest("g", old, b))
    assert isinstance(sync, SyncGroupResponse) and sync.error == E.NONE  # UNREVOKED may sync
    kept = frozenset(decode_assignment(sync.assignment).partitions)
    assert kept == mb.assigned and not kept & mb.pending_revocation
    ok(h.send(jg(b, owned=tuple(sorted(kept)))))
    assert h.member(b).member_epoch == h.group.group_epoch
    assert not h.violations


def keep_alive(h: Harness, *members: str) -> None:
    """Consumer-protocol members heartbeat and acknowledge whatever they were asked to revoke."""
    for mid in members:
        ok(h.send(beat(mid, h.member(mid).member_epoch, h.member(mid).assigned)))


def test_join_and_sync_timers_fence_the_classic_member() -> None:
    """GMM scheduleConsumerGroupSyncTimeout / JoinTimeoutIfAbsent: both fence (remove + bump)."""
    h = Harness()
    b = consumer_group_with_classic(h)
    epoch = h.group.group_epoch
    for t in range(5_000, 30_000, 5_000):  # heartbeats keep the session alive, not the sync timer
        h.advance(t)
        hb = h.send(HeartbeatRequest("g", h.member(b).member_epoch, b))
        assert isinstance(hb, HeartbeatResponse) and hb.error in (E.NONE, E.REBALANCE_IN_PROGRESS)
        keep_alive(h, "A")
    h.advance(29_999)
    assert b in h.group.members
    h.advance(30_000)  # b never sent SyncGroup
    assert b not in h.group.members and h.group.group_epoch == epoch + 1
    c = h.send(jg(version=3))
    assert isinstance(c, JoinGroupResponse)
    ok(h.send(SyncGroupRequest("g", h.member(c.member_id).member_epoch, c.member_id)))
    ok(h.send(join("D")))
    hb = h.send(HeartbeatRequest("g", h.member(c.member_id).member_epoch, c.member_id))
    assert isinstance(hb, HeartbeatResponse) and hb.error == E.REBALANCE_IN_PROGRESS
    deadline = h.group.timers[(JOIN, c.member_id)].deadline
    assert deadline == h.now + 30_000
    for t in range(h.now + 5_000, deadline, 5_000):
        h.advance(t)
        again = h.send(HeartbeatRequest("g", h.member(c.member_id).member_epoch, c.member_id))
        assert isinstance(again, HeartbeatResponse) and again.error == E.REBALANCE_IN_PROGRESS
        assert h.group.timers[(JOIN, c.member_id)].deadline == deadline  # armed only if absent
        keep_alive(h, "A", "D")
    h.advance(deadline)
    assert c.member_id not in h.group.members
    assert not h.violations


def test_leave_group_batch_in_a_consumer_group() -> None:
    """GMM classicGroupLeaveToConsumerGroup: per-member errors, one bump for the batch; v0-2 collapse."""
    h = Harness()
    b = consumer_group_with_classic(h)
    epoch = h.group.group_epoch
    resp = h.send(
        LeaveGroupRequest("g", (MemberIdentity(b), MemberIdentity("A"), MemberIdentity("ghost")), version=5)
    )
    assert isinstance(resp, LeaveGroupResponse) and resp.error == E.NONE
    assert [m.error for m in resp.members] == [E.NONE, E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID]
    assert b not in h.group.members and h.group.group_epoch == epoch + 1
    v0 = h.send(LeaveGroupRequest("g", (MemberIdentity("ghost"),), version=0))
    assert isinstance(v0, LeaveGroupResponse) and v0.error == E.UNKNOWN_MEMBER_ID and v0.members == ()
    assert not h.violations


def test_offset_commit_of_a_classic_member_in_a_consumer_group() -> None:
    """docs/protocol-reference.md#b12 / CoG validateOffsetCommit L816: a classic member commits with any version and a wrong
    generation is ILLEGAL_GENERATION; a consumer-protocol member needs v9 and gets STALE_MEMBER_EPOCH."""
    h = Harness()
    b = consumer_group_with_classic(h)
    epoch = h.member(b).member_epoch
    part = (OffsetCommitPartition("t", 0, 42),)
    for member_id, generation, code in [
        (b, epoch, E.NONE),
        (b, epoch - 1, E.ILLEGAL_GENERATION),
        ("A", 1, E.UNSUPPORTED_VERSION),
    ]:
        resp = h.send(OffsetCommitRequest("g", generation, member_id, part, version=8))
        assert isinstance(resp, OffsetCommitResponse) and resp.partitions == (("t", 0, code),), member_id
    assert h.state.consumer.offsets["g"][("t", 0)].offset == 42
    stale = h.send(OffsetCommitRequest("g", 0, "A", part, version=9))
    assert isinstance(stale, OffsetCommitResponse) and stale.partitions == (("t", 0, E.STALE_MEMBER_EPOCH),)


# ------------------------------------------------------------------------------ upgrade


def classic_group(h: Harness, members: int = 2, protocol_type: str = "consumer") -> list[str]:
    """A Stable classic group built through the classic coordinator (range assignor run by hand)."""
    ids = []
    for _ in range(members):
        r = h.send(jg(protocol_type=protocol_type))
        assert isinstance(r, JoinGroupResponse)
        ids.append(r.member_id)
        h.send(jg(r.member_id, protocol_type=protocol_type))
    while h.state.classic.groups["g"].state == ClassicGroupState.PREPARING_REBALANCE:
        h.advance(h.now + 500)  # the initial rebalance delay, extended while members were added
    group = h.state.classic.groups["g"]
    assert group.state == ClassicGroupState.COMPLETING_REBALANCE
    ordered = sorted(ids)
    parts = {mid: tuple(("t", p) for p in range(4) if p % len(ordered) == i) for i, mid in enumerate(ordered)}
    leader = group.leader
    assert leader is not None
    assignments = tuple((mid, encode_assignment(Assignment(parts[mid]))) for mid in ordered)
    for mid in ordered:
        if mid != leader:
            h.send(SyncGroupRequest("g", group.generation, mid, (), None, "consumer", group.protocol))
    h.send(SyncGroupRequest("g", group.generation, leader, assignments, None, "consumer", group.protocol))
    assert h.state.classic.groups["g"].state == ClassicGroupState.STABLE
    return ordered


def test_upgrade_converts_a_classic_group_keeping_generation_and_assignments() -> None:
    """GMM L1073 validateOnlineUpgrade + convertToConsumerGroup, CoG fromClassicGroup: members keep
    their assignment as assigned and target at epoch = generation; then the join bumps the epoch."""
    h = Harness()
    ids = classic_group(h)
    generation = h.state.classic.groups["g"].generation
    before = {
        mid: frozenset(decode_assignment(m.assignment).partitions)
        for mid, m in h.state.classic.groups["g"].members.items()
    }
    resp = h.send(join("K"))
    assert isinstance(resp, ConsumerGroupHeartbeatResponse) and resp.error_code == E.NONE
    assert "g" not in h.state.classic.groups and h.state.group_type("g") == "consumer"
    assert isinstance(h.records[-len(h.last.records)], ClassicGroupTombstone)
    g = h.group
    assert g.group_epoch == generation + 1
    for mid in ids:
        m = g.members[mid]
        assert m.classic is not None and m.member_epoch == generation and m.assigned == before[mid]
        assert g.timers[(SESSION, mid)].deadline == h.now + 10_000
    hb = h.send(HeartbeatRequest("g", generation, ids[0]))
    assert isinstance(hb, HeartbeatResponse) and hb.error == E.REBALANCE_IN_PROGRESS
    assert not h.violations


def test_upgrade_answers_parked_joins_rebalance_in_progress() -> None:
    """convertToConsumerGroup: completeAllJoinFutures / completeAllSyncFutures(REBALANCE_IN_PROGRESS)."""
    h = Harness()
    ids = classic_group(h)
    h.ref += 1
    parked_ref = h.ref
    h.coord.handle(h.state, jg(ids[0]), parked_ref, h.now)  # the leader rejoins: parked in PreparingRebalance
    assert h.state.classic.groups["g"].members[ids[0]].awaiting_join == parked_ref
    h.send(join("K"))
    parked = [d.response for d in h.last.deliveries if d.ref == parked_ref]
    assert parked == [JoinGroupResponse(E.REBALANCE_IN_PROGRESS, member_id=ids[0])]


@pytest.mark.parametrize(
    ("policy", "protocol_type", "consumer_max", "why"),
    [
        (MigrationPolicy.DISABLED, "consumer", 10, "policy"),
        (MigrationPolicy.DOWNGRADE, "consumer", 10, "policy"),
        (MigrationPolicy.BIDIRECTIONAL, "connect", 10, "protocol type"),
        (MigrationPolicy.UPGRADE, "consumer", 1, "size"),
    ],
)
def test_upgrade_refused_with_group_id_not_found(
    policy: MigrationPolicy, protocol_type: str, consumer_max: int, why: str
) -> None:
    """docs/protocol-reference.md#b6 row 8 / #b13: no upgrade → GROUP_ID_NOT_FOUND, the classic group stays as it was."""
    config = MixedConfig(policy=policy, consumer=ConsumerCoordinatorConfig(max_size=consumer_max))
    h = Harness(MixedCoordinator(config))
    if protocol_type == "consumer":
        classic_group(h)
    else:
        r = h.send(jg(protocol_type=protocol_type))
        assert isinstance(r, JoinGroupResponse)
        h.send(jg(r.member_id, protocol_type=protocol_type))
    before = h.state.copy()
    resp = h.send(join("K"))
    assert isinstance(resp, ConsumerGroupHeartbeatResponse) and resp.error_code == E.GROUP_ID_NOT_FOUND, why
    assert h.state == before
    assert not h.violations


def test_upgrade_of_a_group_in_its_first_rebalance_is_an_unknown_server_error() -> None:
    """No protocol is selected before the first join phase ends: CoG fromClassicGroup's
    ``protocolName().get()`` throws and the runtime answers UNKNOWN_SERVER_ERROR; nothing changes."""
    h = Harness()
    assert h.send(jg(version=3)) is None  # parked in the initial rebalance
    before = h.state.copy()
    resp = h.send(join("K"))
    assert isinstance(resp, ConsumerGroupHeartbeatResponse) and resp.error_code == E.UNKNOWN_SERVER_ERROR
    assert h.state == before and not h.violations


def test_upgrade_errors_in_order_and_failed_join_rolls_the_conversion_back() -> None:
    """Row-6 validation precedes group resolution; epoch ≠ 0 on a classic group → GROUP_ID_NOT_FOUND;
    a join that fails after the conversion (the converted group is full) leaves the classic group."""
    h = Harness(MixedCoordinator(MixedConfig(consumer=ConsumerCoordinatorConfig(max_size=2))))
    classic_group(h)
    before = h.state.copy()
    bad = h.send(replace(join("K"), rebalance_timeout_ms=-1))
    assert isinstance(bad, ConsumerGroupHeartbeatResponse) and bad.error_code == E.INVALID_REQUEST
    stale = h.send(beat("K", 3))
    assert isinstance(stale, ConsumerGroupHeartbeatResponse) and stale.error_code == E.GROUP_ID_NOT_FOUND
    full = h.send(join("K"))
    assert isinstance(full, ConsumerGroupHeartbeatResponse) and full.error_code == E.GROUP_MAX_SIZE_REACHED
    assert h.state == before and not h.last.records


def empty_classic_group(h: Harness) -> None:
    """A classic group whose only member joined (parked) and left: Empty."""
    assert h.send(jg(version=3)) is None
    (mid,) = h.state.classic.groups["g"].members
    h.send(LeaveGroupRequest("g", (MemberIdentity(mid),)))
    h.advance(h.now + 30_000)
    assert h.state.classic.groups["g"].state == ClassicGroupState.EMPTY


def test_empty_groups_of_the_other_type_are_replaced_whatever_the_policy() -> None:
    """GMM maybeDeleteEmptyClassicGroup / maybeDeleteEmptyConsumerGroup."""
    h = Harness(MixedCoordinator(MixedConfig(policy=MigrationPolicy.DISABLED)))
    empty_classic_group(h)
    ok(h.send(join("K")))
    assert h.state.group_type("g") == "consumer"
    ok(h.send(replace(beat("K", -1))))
    assert h.state.group_type("g") == "consumer" and not h.group.members
    unknown = h.send(jg("someone"))
    assert isinstance(unknown, JoinGroupResponse) and unknown.error == E.UNKNOWN_MEMBER_ID
    # the rejected join removed the empty consumer group from memory, no tombstone written
    # (`ConsumerGroupDropped`; tests/test_mixed_empty_group_drop.py)
    assert h.state.group_type("g") is None
    assert h.send(jg(version=3)) is None  # parked in the new classic group's initial rebalance
    assert h.state.group_type("g") == "classic"
    assert not any(isinstance(rec, ConsumerGroupTombstone) for rec in h.records)
    assert not h.violations
    h2 = Harness(MixedCoordinator(MixedConfig(policy=MigrationPolicy.DISABLED)))
    ok(h2.send(join("K")))
    ok(h2.send(replace(beat("K", -1))))
    assert h2.send(jg(version=3)) is None  # a join without member id replaces it durably
    assert h2.state.group_type("g") == "classic"
    assert any(isinstance(rec, ConsumerGroupTombstone) for rec in h2.records)
    assert not h2.violations


# ------------------------------------------------------------------------------ downgrade


def mixed_group(h: Harness) -> list[str]:
    """Consumer member A plus two synced classic members."""
    ok(h.send(join("A")))
    ids = []
    for _ in range(2):
        r = h.send(jg(version=3))
        assert isinstance(r, JoinGroupResponse)
        ids.append(r.member_id)
    for mid in ids:
        h.send(jg(mid))
        h.send(SyncGroupRequest("g", h.member(mid).member_epoch, mid))
    return sorted(ids)


@pytest.mark.parametrize(
    ("policy", "classic_max", "downgraded"),
    [
        (MigrationPolicy.BIDIRECTIONAL, 10, True),
        (MigrationPolicy.DOWNGRADE, 10, True),
        (MigrationPolicy.UPGRADE, 10, False),
        (MigrationPolicy.DISABLED, 10, False),
        (MigrationPolicy.BIDIRECTIONAL, 1, False),
    ],
)
def test_downgrade_when_the_last_consumer_member_leaves(
    policy: MigrationPolicy, classic_max: int, downgraded: bool
) -> None:
    """GMM L960 validateOnlineDowngradeWithFencedMember + convertToClassicGroup, CG fromConsumerGroup:
    Stable at generation = group epoch with each target as assignment, GroupMetadata written, then a
    rebalance (PreparingRebalance)."""
    config = MixedConfig(policy=policy, classic=ClassicConfig(max_size=classic_max))
    h = Harness(MixedCoordinator(config))
    ids = mixed_group(h)
    targets = {mid: h.group.target_of(mid) for mid in ids}
    epoch = h.group.group_epoch
    ok(h.send(beat("A", -1)))
    if not downgraded:
        assert h.state.group_type("g") == "consumer" and set(h.group.members) == set(ids)
        assert h.group.group_epoch == epoch + 1
    else:
        assert h.state.group_type("g") == "classic"
        cg = h.state.classic.groups["g"]
        assert cg.generation == epoch and cg.state == ClassicGroupState.PREPARING_REBALANCE
        assert cg.previous_state == ClassicGroupState.STABLE and cg.protocol == "range" and cg.leader in ids
        for mid in ids:
            assert frozenset(decode_assignment(cg.members[mid].assignment).partitions) == targets[mid]
        hb = h.send(HeartbeatRequest("g", epoch, ids[0]))
        assert isinstance(hb, HeartbeatResponse) and hb.error == E.REBALANCE_IN_PROGRESS
    assert not h.violations


def test_downgrade_by_session_timeout_of_the_last_consumer_member() -> None:
    """consumerGroupFenceMember is also the session-timeout path (GMM L3281)."""
    h = Harness()
    ids = mixed_group(h)
    for t in range(5_000, 46_000, 5_000):
        h.now = t
        for mid in ids:
            h.send(
                HeartbeatRequest("g", h.member(mid).member_epoch, mid) if mid in h.group.members else jg(mid)
            )
        h.advance(t)
    h.advance(60_000)
    assert h.state.group_type("g") == "classic"
    assert not h.violations


@pytest.mark.parametrize("policy", [MigrationPolicy.BIDIRECTIONAL, MigrationPolicy.UPGRADE])
def test_downgrade_when_a_classic_static_member_replaces_the_last_consumer_member(
    policy: MigrationPolicy,
) -> None:
    """@1eb7644 L1078 validateOnlineDowngradeWithReplacedMemberId + convertToClassicGroup with a
    joining member: it takes the replaced member's target, the group stays Stable (no rebalance) at
    the group epoch before the join; its SyncGroup at that generation gets the assignment."""
    h = Harness(MixedCoordinator(MixedConfig(policy=policy)))
    ok(h.send(join("A", instance_id="i1")))
    b = h.send(jg(version=3))
    assert isinstance(b, JoinGroupResponse)
    ok(h.send(SyncGroupRequest("g", h.member(b.member_id).member_epoch, b.member_id)))
    target_a = h.group.target_of("A")
    epoch = h.group.group_epoch
    resp = h.send(jg(instance="i1"))
    assert isinstance(resp, JoinGroupResponse) and resp.error == E.NONE
    if policy == MigrationPolicy.UPGRADE:
        assert h.state.group_type("g") == "consumer" and "A" not in h.group.members
        assert h.member(resp.member_id).classic is not None
    else:
        assert h.state.group_type("g") == "classic"
        cg = h.state.classic.groups["g"]
        assert cg.state == ClassicGroupState.STABLE and cg.generation == epoch == resp.generation_id
        assert set(cg.members) == {b.member_id, resp.member_id}
        assert frozenset(decode_assignment(cg.members[resp.member_id].assignment).partitions) == target_a
        sync = h.send(
            SyncGroupRequest(
                "g",
                resp.generation_id,
                resp.member_id,
                group_instance_id="i1",
                protocol_type="consumer",
                protocol_name=resp.protocol_name,
            )
        )
        assert isinstance(sync, SyncGroupResponse) and sync.error == E.NONE
        assert frozenset(decode_assignment(sync.assignment).partitions) == target_a
    assert not h.violations


def test_downgrade_after_two_consumer_members_expire_in_one_advance() -> None:
    """Found by `check --protocol mixed` (300 examples): two consumer-protocol members' session
    timers fire at the same deadline; the first fence only removes, the second downgrades."""
    h = Harness()
    ok(h.send(join("A")))
    ok(h.send(join("B")))
    c = h.send(jg(version=3))
    assert isinstance(c, JoinGroupResponse)
    for t in range(5_000, 45_000, 5_000):
        h.advance(t)
        m = h.member(c.member_id)
        if (SYNC, m.member_id) in h.group.timers:
            ok(h.send(SyncGroupRequest("g", m.member_epoch, m.member_id)))
        hb = h.send(HeartbeatRequest("g", m.member_epoch, m.member_id))
        if isinstance(hb, HeartbeatResponse) and hb.error == E.REBALANCE_IN_PROGRESS:
            ok(h.send(jg(m.member_id)))
    epoch = h.group.group_epoch
    h.advance(45_000)  # A and B expire together
    assert h.state.group_type("g") == "classic"
    cg = h.state.classic.groups["g"]
    assert set(cg.members) == {c.member_id} and cg.generation == epoch + 1
    assert not h.violations


# ------------------------------------------------------------------------------ replay, failover


def test_replay_rebuilds_the_same_state_and_failover_loads_both_group_types() -> None:
    """State changes only by records (docs/model.md); a new coordinator loads the durable ones."""
    h = Harness()
    classic_group(h)
    h.send(join("K"))
    other = jg(group="h", version=3)
    h.send(other)
    assert replay(h.records) == h.state
    loaded = rebuild(h.records, h.now)
    # "h" is in its first rebalance, never persisted: a new coordinator does not know it (docs/protocol-reference.md#a8)
    assert loaded.group_type("g") == "consumer" and h.state.group_type("h") == "classic"
    assert loaded.group_type("h") is None
    assert loaded.consumer.groups["g"].members.keys() == h.group.members.keys()
    for mid, m in h.group.members.items():
        assert loaded.consumer.groups["g"].members[mid].classic == m.classic
    ok(h.send(beat("K", -1)))  # downgrade: consumer tombstone + GroupMetadata
    loaded = rebuild(h.records, h.now)
    assert loaded.group_type("g") == "classic" and "g" not in loaded.consumer.groups
    assert replay(h.records) == h.state
    state, result = h.coord.failover(h.records, h.now)
    assert state.group_type("g") == "classic" and not result.deliveries


def test_load_arms_consumer_session_and_rebalance_timers_for_classic_members_too() -> None:
    """GMM onLoaded (@1eb7644 L3811-3826): every member gets the consumer-group session timeout and
    every UNREVOKED_PARTITIONS member a rebalance timer, whatever protocol it speaks."""
    h = Harness()
    b = classic_holds_everything(h)
    h.send(jg(b, owned=tuple(sorted(P("t", 0, 1, 2, 3)))))
    assert h.member(b).state == MemberState.UNREVOKED_PARTITIONS
    assert (REBALANCE, b) not in h.group.timers
    h.now = 1_000
    state, _ = h.coord.failover(h.records, h.now)
    timers = state.consumer.groups["g"].timers
    assert timers[(SESSION, b)].deadline == 1_000 + 45_000
    assert timers[(REBALANCE, b)].deadline == 1_000 + 30_000


# ------------------------------------------------------------------------------ whole runs


def rolling(run: MixedRun, old: list[str], make_new, settle: int = 30_000) -> None:  # type: ignore[no-untyped-def]
    for i, name in enumerate(old):
        run.stop(name)
        make_new(i)
        run.run_for(settle)


def classic_config(**kw: object) -> dict[str, object]:
    return {
        "topics": ("t",),
        "assignors": ("range",),
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 20_000,
        **kw,
    }


def assert_converged(run: MixedRun, names: list[str], partitions: int) -> None:
    owned = run.owned()
    union = [tp for n in names for tp in owned[n]]
    assert sorted(union) == [("t", p) for p in range(partitions)], owned


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_rolling_upgrade_then_rolling_downgrade(assignor: str) -> None:
    """'Rolling Upgrades' (docs/protocol-reference.md#client-side-assignment) for KIP-848: classic members replaced one by one by
    consumer-protocol members (first join upgrades the group), then back (the last consumer member's
    leave downgrades it); every consumer and mixed invariant holds after every step."""
    run = MixedRun(MixedCoordinator(), INVARIANTS)
    run.topic("t", 6)
    old = ["c1", "c2", "c3"]
    for name in old:
        run.add_classic(name, **classic_config(assignors=(assignor,)))
    run.run_for(20_000)
    assert run.group_type() == "classic"
    assert_converged(run, old, 6)
    rolling(run, old, lambda i: run.add_consumer(f"k{i}", topics=("t",)))
    assert run.group_type() == "consumer"
    assert_converged(run, ["k0", "k1", "k2"], 6)
    assert all(m.classic is None for m in run.state.consumer.groups["g"].members.values())
    rolling(
        run,
        ["k0", "k1", "k2"],
        lambda i: run.add_classic(f"d{i}", **classic_config(assignors=(assignor,))),
        40_000,
    )
    assert run.group_type() == "classic"
    assert_converged(run, ["d0", "d1", "d2"], 6)
    assert run.violations == []
    assert {
        "mixed.sometimes_upgrade",
        "mixed.sometimes_downgrade",
        "mixed.sometimes_classic_rejoin",
    } <= run.sometimes
    assert replay(run.records) == run.state


def test_failover_in_a_mixed_group_then_convergence() -> None:
    run = MixedRun(MixedCoordinator(), INVARIANTS)
    run.topic("t", 4)
    run.add_classic("c1", **classic_config())
    run.add_consumer("k1", topics=("t",))
    run.run_for(20_000)
    run.add_classic("c2", **classic_config())
    run.run_for(3_000)
    run.failover()
    run.run_for(40_000)
    assert run.group_type() == "consumer"
    assert_converged(run, ["c1", "c2", "k1"], 4)
    assert run.violations == []


# ------------------------------------------------------------------------------ mutants


class DowngradeForgetsLeader(MixedCoordinator):
    """A downgrade whose classic group has no leader (CG ``fromConsumerGroup`` adds members, and the
    first added leads)."""

    def convert_to_classic_group(self, state: MixedState, plan: Downgrade) -> Result:
        result = super().convert_to_classic_group(state, plan)
        tx = Tx(state.classic)
        tx.set(state.classic.groups[plan.group_id], leader=None)
        result.extend(tx.result)
        return result


def upgrade_script(h: Harness) -> None:
    classic_group(h)
    h.send(join("K"))


def downgrade_script(h: Harness) -> None:
    mixed_group(h)
    h.send(beat("A", -1))


def replacement_script(h: Harness) -> None:
    ok(h.send(join("A", instance_id="i1")))
    h.send(jg(version=3))
    h.send(jg(instance="i1"))


def empty_script(h: Harness) -> None:
    empty_classic_group(h)
    h.send(join("K"))


def rejoin_script(h: Harness) -> None:
    b = consumer_group_with_classic(h)
    h.send(SyncGroupRequest("g", h.member(b).member_epoch, b))
    h.send(join("C"))
    h.send(HeartbeatRequest("g", h.member(b).member_epoch, b))


def revocation_script(h: Harness) -> None:
    resp = h.send(join("A"))
    assert isinstance(resp, ConsumerGroupHeartbeatResponse)
    h.send(beat("A", resp.member_epoch, P("t", 0, 1, 2, 3)))
    b = consumer_group_with_classic(h)
    h.send(SyncGroupRequest("g", h.member(b).member_epoch, b))


def cooperative_revocation_script(h: Harness) -> None:
    b = classic_holds_everything(h)
    h.send(jg(b, owned=tuple(sorted(P("t", 0, 1, 2, 3)))))


@pytest.mark.parametrize(
    ("mutant", "config", "script", "caught_by"),
    [
        (
            UpgradeIgnoresPolicy,
            MixedConfig(policy=MigrationPolicy.DISABLED),
            upgrade_script,
            "mixed.upgrade_rules",
        ),
        (
            UpgradeIgnoresPolicy,
            MixedConfig(policy=MigrationPolicy.DISABLED),
            upgrade_script,
            "mixed.upgrade_refused",
        ),
        (UpgradeKeepsClassicGroup, MixedConfig(), upgrade_script, "mixed.one_group_type"),
        (
            EmptyReplacementHonoursPolicy,
            MixedConfig(policy=MigrationPolicy.DISABLED),
            empty_script,
            "mixed.empty_group_replaced",
        ),
        (
            DowngradeIgnoresPolicy,
            MixedConfig(policy=MigrationPolicy.UPGRADE),
            downgrade_script,
            "mixed.downgrade_rules",
        ),
        (NeverDowngrades, MixedConfig(), downgrade_script, "mixed.downgrade_rules"),
        (DowngradeForgetsLeader, MixedConfig(), downgrade_script, "classic.leader_is_member"),
        (NoReplacementDowngrade, MixedConfig(), replacement_script, "mixed.downgrade_rules"),
        (HeartbeatNeverRejoins, MixedConfig(), rejoin_script, "mixed.classic_heartbeat_rule"),
        (GenerationOffByOne, MixedConfig(), rejoin_script, "mixed.classic_generation_is_member_epoch"),
        (SyncGivesTarget, MixedConfig(), revocation_script, "mixed.classic_sync_gives_assigned"),
        (ClassicRebalanceTimer, MixedConfig(), cooperative_revocation_script, "mixed.classic_member_timers"),
    ],
)
def test_mutant_is_caught(
    mutant: type[MixedCoordinator], config: MixedConfig, script, caught_by: str
) -> None:  # type: ignore[no-untyped-def]
    """Each mixed rule has teeth: breaking it is reported by its invariant, and the unbroken model
    runs the same script cleanly."""
    clean = Harness(MixedCoordinator(config))
    script(clean)
    assert not clean.violations, clean.violations
    broken = Harness(mutant(config))
    script(broken)
    assert caught_by in {inv for inv, _ in broken.violations}, broken.violations


def test_sync_gives_target_mutant_makes_two_clients_own_a_partition() -> None:
    """The consumer view: handing a classic member partitions still held elsewhere (KAFKA-16147's
    shape) lets two current members own one partition (consumer.no_double_client_assignment)."""
    run = MixedRun(SyncGivesTarget(), INVARIANTS)
    run.topic("t", 4)
    run.add_consumer("k1", topics=("t",), auto_reconcile=False)
    run.run_for(3_000)
    run.clients["k1"].complete_reconciliation()  # type: ignore[union-attr]
    run.run_for(3_000)
    run.add_classic("c1", **classic_config())
    run.run_for(3_000)
    assert "consumer.no_double_client_assignment" in {inv for inv, _ in run.violations}


# ------------------------------------------------------------------------------ random walks


def instance_of(client: object) -> str | None:
    if isinstance(client, ClassicClient):
        return client.config.instance_id
    return getattr(client, "instance_id", None)


def random_walk(seed: int, steps: int = 120) -> tuple[MixedRun, bool]:
    """Classic and consumer-protocol clients come and go, crash, and the coordinator fails over,
    under a random migration policy; returns the run and whether a failover happened."""
    rng = random.Random(seed)
    policy = rng.choice(list(MigrationPolicy))
    assignor = rng.choice(["range", "roundrobin", "cooperative-sticky"])  # one protocol per run
    run = MixedRun(MixedCoordinator(MixedConfig(policy=policy), SeededChooser(seed)), INVARIANTS)
    run.topic("t", rng.randint(2, 6))
    failed_over = False
    for n in range(steps):
        live = [k for k in sorted(run.clients) if k not in run.stopped]
        roll = rng.random()
        if roll < 0.15 and len(live) < 5:
            used = {instance_of(run.clients[k]) for k in live}
            free = [i for i in ("i1", "i2") if i not in used]
            inst = rng.choice(free) if free and rng.random() < 0.4 else None  # static, maybe a replacement
            if rng.random() < 0.5:
                config = classic_config(
                    assignors=(assignor,), join_version=rng.choice([3, 4, 9]), instance_id=inst
                )
                run.add_classic(f"c{n}", **config)
            else:
                run.add_consumer(f"k{n}", topics=("t",), instance_id=inst)
        elif roll < 0.25 and live:
            run.stop(rng.choice(live))
        elif roll < 0.28 and live:
            run.crash(rng.choice(live))
        elif roll < 0.30:
            run.failover()
            failed_over = True
        else:
            run.run_for(rng.choice([1_000, 3_000, 10_000]))
    return run, failed_over


def is_fatal(run: MixedRun, name: str) -> bool:
    """A consumer that failed for good; only the upgrade of a classic group still in its first
    rebalance may do that to it (UNKNOWN_SERVER_ERROR, see ``validate_online_upgrade``)."""
    client = run.clients[name]
    if isinstance(client, ClassicClient) or client.state != ClientState.FATAL:
        return False
    last = [r for n, r in run.responses if n == name][-1]
    assert isinstance(last, ConsumerGroupHeartbeatResponse) and last.error_code == E.UNKNOWN_SERVER_ERROR
    return True


@pytest.mark.parametrize("seed", [*range(6), 22])
def test_random_walk_holds_every_invariant_replays_and_converges(seed: int) -> None:
    run, failed_over = random_walk(seed)
    assert run.violations == []
    if not failed_over:
        assert replay(run.records) == run.state
    run.run_for(120_000)  # quiet: every live client ends with one share of the partitions
    live = [k for k in sorted(run.clients) if k not in run.stopped and not is_fatal(run, k)]
    if live:
        assert_converged(run, live, run.state.consumer.topics["t"])
    assert run.violations == []


@pytest.mark.slow
def test_random_walks_exercise_upgrades_and_downgrades() -> None:
    """Over many walks the sometimes-checks fire: upgrades, downgrades and classic rejoins happen."""
    seen: set[str] = set()
    for seed in range(100, 110):
        run, _ = random_walk(seed)
        assert run.violations == [], seed
        seen |= run.sometimes
    assert {"mixed.sometimes_upgrade", "mixed.sometimes_downgrade", "mixed.sometimes_classic_rejoin"} <= seen


# ------------------------------------------------------------------------------ scenarios (CLI)


def test_rolling_upgrade_scenario_cli(capsys: pytest.CaptureFixture[str]) -> None:
    """`groupcheck scenario run kip-848-rolling-upgrade` passes on the model and exits 1 against
    the mutant that never tells classic members to rejoin, naming the invariant."""
    assert main(["scenario", "run", "kip-848-rolling-upgrade"]) == 0
    assert "PASSED" in capsys.readouterr().out
    assert (
        main(
            [
                "scenario",
                "run",
                "kip-848-rolling-upgrade",
                "--variant",
                "mixed_mutant=heartbeat-never-rejoins",
            ]
        )
        == 1
    )
    assert "mixed.classic_heartbeat_rule" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("clients: [{name: c1, protocol: classic, colour: red}]", "colour"),
        ("clients: [{name: c1}]", "protocol"),
        ("config: {policy: sideways}", "sideways"),
        ("steps: [{dance: c1}]", "dance"),
        ("steps: [{stop: nobody}]", "nobody"),
    ],
)
def test_mixed_scenario_errors_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    body = {
        "clients": "clients: [{name: c1, protocol: classic, topics: [t]}]",
        "config": "config: {policy: bidirectional}",
        "steps": "steps: [{run_for: 1000}]",
    }
    key = text.split(":", 1)[0]
    body[key] = text
    path = tmp_path / "bad.yaml"
    path.write_text(
        "id: bad\ntitle: t\nsource: s\nprotocol: mixed\ntopics: {t: 2}\n" + "\n".join(body.values()) + "\n"
    )
    # the strict loader rejects what its schema can see; the runner what only a run can
    with pytest.raises(SpecError, match=re.escape(message)) as err:
        run_scenario(load_scenario(path), {})
    assert str(path) in str(err.value)


# ------------------------------------------------------------------------------ stateful suite


def test_check_protocol_mixed_passes_on_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    """`groupcheck check --protocol mixed`: the Hypothesis machine (conformance/protocols/mixed/machine.py)
    upgrades, downgrades and rolls members without a violation, and is not vacuous."""
    assert main(["check", "--protocol", "mixed", "--profile", "dev"]) == 0
    assert "mixed on model: PASSED" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("mutant", "invariant"),
    [
        ("sync-gives-target", "mixed.classic_sync_gives_assigned"),
        ("generation-off-by-one", "mixed.classic_generation_is_member_epoch"),
    ],
)
def test_check_protocol_mixed_finds_mutants_from_scratch(
    mutant: str, invariant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check", "--protocol", "mixed", "--max-examples", "100", "--variant", f"mixed_mutant={mutant}"]
    assert main(args) == 1
    assert invariant in capsys.readouterr().out


# ---------------------------------------------------------------- classic_rejoin_epoch (Kafka 4.4.0)
def _two_classic_members(h: Harness) -> tuple[str, str]:
    ok(h.send(join("A")))
    ids = []
    for _ in range(2):
        required = h.send(jg())
        assert isinstance(required, JoinGroupResponse) and required.error == E.MEMBER_ID_REQUIRED
        ok(h.send(jg(required.member_id)))
        ids.append(required.member_id)
    return ids[0], ids[1]


@pytest.mark.parametrize(("rejoin", "expected"), [("group", E.REBALANCE_IN_PROGRESS), ("assignment", E.NONE)])
def test_classic_rejoin_epoch_after_a_classic_leave(rejoin: str, expected: E) -> None:
    """A classic LeaveGroup bumps the group epoch; until a request computes the new target the
    assignment epoch lags. Kafka @1eb7644 compares the group epoch (rejoin now); Kafka 4.4.0 the
    target assignment epoch (rejoin once the new target exists). The invariant follows the setting."""
    h = Harness(MixedCoordinator(MixedConfig(classic_rejoin_epoch=rejoin)))
    b, c = _two_classic_members(h)
    for member in ("A", b, c):  # everyone catches up with the last epoch
        m = h.member(member)
        if member == "A":
            ok(h.send(beat("A", m.member_epoch, m.assigned)))
        else:
            h.send(jg(member))
    ok(h.send(LeaveGroupRequest("g", (MemberIdentity(c),))))
    g = h.group
    assert g.group_epoch > g.assignment_epoch  # the leave bumped the group epoch only
    mb = h.member(b)
    assert mb.member_epoch == g.assignment_epoch
    hb = h.send(HeartbeatRequest("g", mb.member_epoch, b))
    assert isinstance(hb, HeartbeatResponse) and hb.error == expected
    ok(h.send(beat("A", h.member("A").member_epoch, h.member("A").assigned)))  # computes the target
    hb = h.send(HeartbeatRequest("g", mb.member_epoch, b))
    assert isinstance(hb, HeartbeatResponse) and hb.error == E.REBALANCE_IN_PROGRESS
    assert not h.violations, h.violations


def test_classic_rejoin_epoch_invariant_still_has_teeth() -> None:
    """A coordinator that never says REBALANCE_IN_PROGRESS is caught under either setting."""
    from conformance.mutants.mixed import HeartbeatNeverRejoins

    for rejoin in ("group", "assignment"):
        h = Harness(HeartbeatNeverRejoins(MixedConfig(classic_rejoin_epoch=rejoin)))
        b, _c = _two_classic_members(h)
        ok(h.send(join("D")))  # bumps the group epoch and computes a new target
        h.send(HeartbeatRequest("g", h.member(b).member_epoch, b))
        assert any(i == "mixed.classic_heartbeat_rule" for i, _ in h.violations), rejoin
