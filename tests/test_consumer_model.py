"""Tests of the KIP-848 consumer-protocol model (model/consumer): docs/protocol-reference.md#b6 error rows, reconciliation,
leave/static membership, timers, replay and failover, KIP-1082 ghosts, mutants and a random walk
that checks every invariant after every step."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from types import MappingProxyType

import pytest

from model.choice import SeededChooser
from model.consumer.assignors import AssignmentMember, AssignorError, GroupAssignment
from model.consumer.client import ClientState, ClientView, VirtualConsumer
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.ids import is_valid_member_uuid, kafka_uuid_string, new_member_id
from model.consumer.invariants import ConsumerWorld
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    TopicPartition,
    TopicPartitions,
    to_topic_partitions,
)
from model.consumer.reconcile import CurrentAssignment, reconcile
from model.consumer.records import (
    CurrentAssignmentRecord,
    GroupEpochRecord,
    TimerCancelled,
    TimerScheduled,
    is_durable,
    rebuild,
    replay,
)
from model.consumer.state import (
    REBALANCE,
    SESSION,
    ConsumerCoordinatorState,
    ConsumerGroup,
    GroupState,
    MemberState,
)
from model.consumer.txn import ConsumerCoordinatorConfig
from model.consumer.world import (
    AdvanceEvent,
    ClientEvent,
    FailoverEvent,
    GroupView,
    HeartbeatEvent,
    OffsetCommitEvent,
    TopicEvent,
    capture_world,
    observe,
)
from model.errors import ErrorCode
from model.invariants import REGISTRY, for_protocol
from model.observation import Observation
from model.result import Delivery, Result

E = ErrorCode
ALL_IDS = sorted(inv.id for inv in for_protocol("consumer"))
CHECKED = [inv for inv in for_protocol("consumer") if inv.kind != "sometimes"]


def tps(*pairs: TopicPartition) -> tuple[TopicPartitions, ...]:
    return to_topic_partitions(pairs)


def join(member_id: str = "m1", **kw: object) -> ConsumerGroupHeartbeatRequest:
    fields: dict[str, object] = dict(
        group_id="g",
        member_id=member_id,
        member_epoch=0,
        rebalance_timeout_ms=1000,
        subscribed_topic_names=("t",),
        topic_partitions=(),
    )
    fields.update(kw)
    return ConsumerGroupHeartbeatRequest(**fields)  # type: ignore[arg-type]


def beat(member_id: str, epoch: int, owned: frozenset[TopicPartition] | None = None, **kw: object):
    fields: dict[str, object] = dict(
        group_id="g",
        member_id=member_id,
        member_epoch=epoch,
        topic_partitions=None if owned is None else to_topic_partitions(owned),
    )
    fields.update(kw)
    return ConsumerGroupHeartbeatRequest(**fields)  # type: ignore[arg-type]


def P(topic: str, *parts: int) -> frozenset[TopicPartition]:
    return frozenset((topic, p) for p in parts)


class Harness:
    """Coordinator + state + record log; every step is checked against every invariant."""

    def __init__(
        self,
        coordinator: ConsumerCoordinator | None = None,
        topics: dict[str, int] | None = None,
        check: bool = True,
    ) -> None:
        self.coord = coordinator or ConsumerCoordinator(ConsumerCoordinatorConfig(), SeededChooser(1))
        self.state = ConsumerCoordinatorState()
        self.records: list[object] = []
        self.now = 0
        self.ref = 0
        self.check = check
        self.violations: list[tuple[str, str]] = []
        self.clients: list[VirtualConsumer] = []
        for name, count in (topics if topics is not None else {"t": 4}).items():
            self.records += self.coord.create_topic(self.state, name, count).records

    def world(self) -> ConsumerWorld:
        return capture_world(self.state, self.clients, config=self.coord.config)

    def _checked(self, event: object, run) -> Result:  # type: ignore[no-untyped-def]
        before = self.world()
        result: Result = run()
        self.records += result.records
        after = self.world()
        obs = observe(before, event, result, after, self.now)
        for inv in CHECKED:
            for message in inv.check(obs):
                self.violations.append((inv.id, message))
        if self.check:
            assert not self.violations, self.violations
        return result

    def hb(self, request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        self.ref += 1
        ref = self.ref
        result = self._checked(
            HeartbeatEvent(ref, request),
            lambda: self.coord.handle_consumer_group_heartbeat(self.state, request, ref, self.now),
        )
        (delivery,) = result.deliveries
        assert delivery.ref == ref
        response = delivery.response
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        return response

    def exchange(self, client: VirtualConsumer) -> ConsumerGroupHeartbeatResponse:
        """The client's next request and its response, delivered, as one checked step."""
        request = client.next_request(self.now)
        assert request is not None
        self.ref += 1
        ref = self.ref

        def run() -> Result:
            result = self.coord.handle_consumer_group_heartbeat(self.state, request, ref, self.now)
            response = result.deliveries[0].response
            assert isinstance(response, ConsumerGroupHeartbeatResponse)
            client.on_response(response, self.now)
            return result

        response = self._checked(HeartbeatEvent(ref, request, client.name), run).deliveries[0].response
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        return response

    def commit(self, request: OffsetCommitRequest) -> OffsetCommitResponse:
        self.ref += 1
        ref = self.ref
        result = self._checked(
            OffsetCommitEvent(ref, request),
            lambda: self.coord.handle_offset_commit(self.state, request, ref, self.now),
        )
        response = result.deliveries[0].response
        assert isinstance(response, OffsetCommitResponse)
        return response

    def advance(self, now: int) -> Result:
        self.now = now
        return self._checked(AdvanceEvent(now), lambda: self.coord.advance(self.state, now))

    def topic(self, action: str, name: str, count: int = 0) -> None:
        def run() -> Result:
            if action == "create":
                return self.coord.create_topic(self.state, name, count)
            if action == "delete":
                return self.coord.delete_topic(self.state, name)
            return self.coord.add_partitions(self.state, name, count)

        self._checked(TopicEvent(action, name, count), run)

    @property
    def group(self) -> ConsumerGroup:
        return self.state.groups["g"]

    def member(self, member_id: str):  # type: ignore[no-untyped-def]
        return self.group.members[member_id]


def ok(response: ConsumerGroupHeartbeatResponse) -> ConsumerGroupHeartbeatResponse:
    assert response.error_code == E.NONE, response
    return response


# ============================================================================ error rows (docs/protocol-reference.md#b6)


def cfg(**kw: object) -> ConsumerCoordinator:
    return ConsumerCoordinator(ConsumerCoordinatorConfig(**kw), SeededChooser(3))  # type: ignore[arg-type]


def assert_rejected(h: Harness, request: ConsumerGroupHeartbeatRequest, code: ErrorCode) -> None:
    before = h.state.copy()
    n = len(h.records)
    response = h.hb(request)
    assert response.error_code == code, response
    assert response.member_id is None and response.member_epoch == 0 and response.assignment is None
    assert len(h.records) == n and h.state == before


@pytest.mark.parametrize(
    ("config", "request_kw", "code"),
    [
        ({"consumer_protocol_enabled": False}, {}, E.UNSUPPORTED_VERSION),
        ({"heartbeat_version": 0}, {"version": 1}, E.UNSUPPORTED_VERSION),
        ({}, {"version": 2}, E.UNSUPPORTED_VERSION),
        ({"group_read_denied": frozenset({"g"})}, {}, E.GROUP_AUTHORIZATION_FAILED),
        ({"topic_describe_denied": frozenset({"t"})}, {}, E.TOPIC_AUTHORIZATION_FAILED),
        ({"availability": "inactive"}, {}, E.COORDINATOR_NOT_AVAILABLE),
        ({"availability": "not_coordinator"}, {}, E.NOT_COORDINATOR),
        ({"availability": "loading"}, {}, E.COORDINATOR_LOAD_IN_PROGRESS),
    ],
    ids=["api-off", "v1-on-v0-broker", "v2", "group-acl", "topic-acl", "inactive", "not-hosted", "loading"],
)
def test_b6_rows_1_to_5_environment(
    config: dict[str, object], request_kw: dict[str, object], code: ErrorCode
) -> None:
    assert_rejected(Harness(cfg(**config)), join(**request_kw), code)


def test_b6_row_5_vs_6_order_differs_between_4_0_and_4_1() -> None:
    bad = join(rebalance_timeout_ms=-1)
    assert_rejected(Harness(cfg(availability="loading")), bad, E.COORDINATOR_LOAD_IN_PROGRESS)
    assert_rejected(
        Harness(cfg(availability="loading", validate_before_runtime=True)), bad, E.INVALID_REQUEST
    )


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (join(member_id=""), E.INVALID_REQUEST),
        (join(member_id="  \t"), E.INVALID_REQUEST),
        (beat("", 1, version=0), E.INVALID_REQUEST),
        (beat("", -1, version=0), E.INVALID_REQUEST),
        (join(group_id=" "), E.INVALID_REQUEST),
        (join(instance_id=""), E.INVALID_REQUEST),
        (join(rack_id=" "), E.INVALID_REQUEST),
        (join(rebalance_timeout_ms=-1), E.INVALID_REQUEST),
        (join(topic_partitions=None), E.INVALID_REQUEST),
        (join(topic_partitions=tps(("t", 0))), E.INVALID_REQUEST),
        (join(subscribed_topic_names=None), E.INVALID_REQUEST),
        (beat("m1", -2), E.INVALID_REQUEST),
        (beat("m1", -3), E.INVALID_REQUEST),
        (join(version=0, subscribed_topic_regex="t.*"), E.INVALID_REQUEST),
        (join(server_assignor="sticky"), E.UNSUPPORTED_ASSIGNOR),
    ],
    ids=[
        "v1-empty-id",
        "v1-blank-id",
        "v0-empty-id-epoch>0",
        "v0-empty-id-leave",
        "blank-group",
        "empty-instance",
        "blank-rack",
        "join-no-timeout",
        "join-owned-null",
        "join-owned-nonempty",
        "join-no-subscription",
        "static-leave-no-instance",
        "epoch<-2",
        "v0-regex",
        "unknown-assignor",
    ],
)
def test_b6_row_6_request_validation(request_: ConsumerGroupHeartbeatRequest, code: ErrorCode) -> None:
    assert_rejected(Harness(), request_, code)


def test_b6_row_6_accepts_v0_empty_id_join_and_empty_subscriptions() -> None:
    h = Harness()
    r = ok(h.hb(join(member_id="", version=0)))
    assert r.member_id and len(r.member_id) == 22 and is_valid_member_uuid(r.member_id)
    ok(h.hb(join("m2", subscribed_topic_names=None, subscribed_topic_regex="")))
    ok(h.hb(join("m3", subscribed_topic_names=())))


def test_kip1082_member_id_validation_variant() -> None:
    """KIP-1082 proposes a server-side UUID check; Kafka 4.0 uses any non-blank id verbatim (docs/protocol-reference.md#b9)."""
    assert ok(Harness().hb(join("not-a-uuid"))).member_id == "not-a-uuid"
    assert_rejected(Harness(cfg(member_id_validation="kip")), join("not-a-uuid"), E.INVALID_REQUEST)
    good = new_member_id(SeededChooser(5))
    assert ok(Harness(cfg(member_id_validation="kip")).hb(join(good))).member_id == good
    canonical = SeededChooser(6).new_uuid()
    assert is_valid_member_uuid(canonical) and is_valid_member_uuid(kafka_uuid_string(canonical))
    assert not is_valid_member_uuid("AAAAAAAAAAAAAAAAAAAAAA")  # the reserved zero uuid
    # v0 requests are not subject to it (ids are coordinator-generated there)
    ok(Harness(cfg(member_id_validation="kip")).hb(join("", version=0)))


def test_b6_row_7_leave_errors() -> None:
    assert_rejected(Harness(), beat("m1", -1), E.GROUP_ID_NOT_FOUND)
    h = Harness()
    ok(h.hb(join("m1")))
    ok(h.hb(join("s1", instance_id="i1")))
    assert_rejected(h, beat("nope", -1), E.UNKNOWN_MEMBER_ID)
    assert_rejected(h, beat("nope", -2, instance_id="i9"), E.UNKNOWN_MEMBER_ID)
    assert_rejected(h, beat("m1", -2, instance_id="i1"), E.FENCED_INSTANCE_ID)
    assert_rejected(h, beat("m1", -1, instance_id="i1"), E.FENCED_INSTANCE_ID)


def test_b6_row_8_unknown_group() -> None:
    assert_rejected(Harness(), beat("m1", 1, frozenset()), E.GROUP_ID_NOT_FOUND)


def test_b6_row_9_group_max_size() -> None:
    h = Harness(cfg(max_size=1))
    r = ok(h.hb(join("m1")))
    assert_rejected(h, join("m2"), E.GROUP_MAX_SIZE_REACHED)
    assert_rejected(h, beat("m2", 1, frozenset()), E.GROUP_MAX_SIZE_REACHED)  # row 9 before row 10
    ok(h.hb(beat("m1", r.member_epoch)))  # members keep heartbeating


def test_b6_row_10_unknown_dynamic_member() -> None:
    h = Harness()
    ok(h.hb(join("m1")))
    assert_rejected(h, beat("m2", 1, frozenset()), E.UNKNOWN_MEMBER_ID)


def test_b6_row_11_static_membership_errors() -> None:
    h = Harness()
    ok(h.hb(join("s1", instance_id="i1")))
    assert_rejected(h, join("s2", instance_id="i1"), E.UNRELEASED_INSTANCE_ID)
    assert_rejected(h, beat("s1", 1, instance_id="i9"), E.UNKNOWN_MEMBER_ID)
    assert_rejected(h, beat("s2", 1, instance_id="i1"), E.FENCED_INSTANCE_ID)


def test_b6_row_12_member_epoch_fencing() -> None:
    h = Harness(topics={"t": 2})
    r1 = ok(h.hb(join("m1")))
    assert r1.member_epoch == 1 and r1.assigned() == P("t", 0, 1)
    ok(h.hb(join("m2")))  # epoch 2, m1 must revoke one partition
    r = ok(h.hb(beat("m1", 1, P("t", 0, 1))))
    assert h.member("m1").state == MemberState.UNREVOKED_PARTITIONS and r.member_epoch == 1
    keep = h.member("m1").assigned
    r = ok(h.hb(beat("m1", 1, keep)))  # acknowledged: epoch 2
    assert r.member_epoch == 2 and h.member("m1").previous_member_epoch == 1
    assert_rejected(h, beat("m1", 3, keep), E.FENCED_MEMBER_EPOCH)  # ahead
    assert_rejected(h, beat("m1", 1), E.FENCED_MEMBER_EPOCH)  # previous epoch, owned null
    assert_rejected(h, beat("m1", 1, P("t", 0, 1)), E.FENCED_MEMBER_EPOCH)  # previous, owned ⊄ assigned
    assert ok(h.hb(beat("m1", 1, keep))).member_epoch == 2  # previous epoch, owned ⊆ assigned: lost response


def _fenced_member_rejoins(epoch_zero_rejoin: bool) -> tuple[Harness, ConsumerGroupHeartbeatRequest]:
    config = ConsumerCoordinatorConfig(epoch_zero_rejoin=epoch_zero_rejoin)
    h = Harness(ConsumerCoordinator(config, SeededChooser(1)), topics={"t": 2}, check=epoch_zero_rejoin)
    ok(h.hb(join("m1")))
    ok(h.hb(join("m2")))
    ok(h.hb(beat("m1", 1, P("t", 0, 1))))
    ok(h.hb(beat("m1", 1, h.member("m1").assigned)))  # revocation acknowledged: epoch 2, previous 1
    assert h.member("m1").member_epoch == 2 and h.member("m1").assigned
    return h, beat("m1", 0, frozenset(), rebalance_timeout_ms=1, subscribed_topic_names=("t",))


def test_b6_row_12_epoch_zero_rejoin_of_a_known_member_kafka_19233() -> None:
    """KAFKA-19233 (apache/kafka PR #21305): since the fix (Kafka 4.4.0, our target) an epoch-0
    heartbeat of a member the coordinator still holds at a higher epoch is a rejoin; Kafka 4.0
    answered FENCED_MEMBER_EPOCH until the session expired (docs/protocol-reference.md#b6 row 12 note)."""
    h, rejoin = _fenced_member_rejoins(True)
    r = ok(h.hb(rejoin))
    assert r.member_epoch == 2 and r.assigned() == h.member("m1").assigned  # full assignment again
    h, rejoin = _fenced_member_rejoins(False)
    assert_rejected(h, rejoin, E.FENCED_MEMBER_EPOCH)


def test_b6_row_12_retried_join_is_idempotent_with_the_same_id() -> None:
    h = Harness()
    first = ok(h.hb(join("m1")))
    again = ok(h.hb(join("m1")))  # the first response was lost: previous epoch is 0
    assert again.member_epoch == first.member_epoch and len(h.group.members) == 1
    assert again.assigned() == first.assigned()


def test_b6_row_13_invalid_regex() -> None:
    assert_rejected(
        Harness(),
        join(subscribed_topic_regex="t[", subscribed_topic_names=None),
        E.INVALID_REGULAR_EXPRESSION,
    )


class ThrowingAssignor(ConsumerCoordinator):
    def run_assignor(
        self, name: str, members: dict[str, AssignmentMember], topics: dict[str, int], homogeneous: bool
    ) -> GroupAssignment:
        raise AssignorError("boom")


def test_b6_row_14_assignor_failure_rolls_back() -> None:
    h = Harness(ThrowingAssignor(ConsumerCoordinatorConfig(), SeededChooser(1)))
    assert_rejected(h, join("m1"), E.UNKNOWN_SERVER_ERROR)
    assert "g" not in h.state.groups


# ============================================================================ reconciliation (docs/protocol-reference.md#b5)


def ca(
    state: MemberState, epoch: int, assigned=frozenset(), pending=frozenset(), prev: int = -1
) -> CurrentAssignment:  # type: ignore[no-untyped-def]
    return CurrentAssignment(state, epoch, prev, frozenset(assigned), frozenset(pending))


FREE = lambda tp: -1  # noqa: E731


def held_by(epochs: dict[TopicPartition, int]):  # type: ignore[no-untyped-def]
    return lambda tp: epochs.get(tp, -1)


S, UR, UL, UK = (
    MemberState.STABLE,
    MemberState.UNREVOKED_PARTITIONS,
    MemberState.UNRELEASED_PARTITIONS,
    MemberState.UNKNOWN,
)


def test_reconcile_reconciled_member_is_unchanged() -> None:
    cur = ca(S, 3, P("t", 0))
    assert reconcile(cur, 3, P("t", 1), FREE, None) is cur


def test_reconcile_revocation_waits_for_acknowledgement() -> None:
    cur = ca(S, 3, P("t", 0, 1), prev=2)
    nxt = reconcile(cur, 5, P("t", 1, 2), FREE, None)
    assert nxt == ca(UR, 3, P("t", 1), P("t", 0), prev=3)  # epoch kept; previous := epoch before update
    assert reconcile(nxt, 5, P("t", 1, 2), FREE, None) is nxt  # owned null: no progress
    assert reconcile(nxt, 5, P("t", 1, 2), FREE, P("t", 0, 1)) is nxt  # still owns a revoked one
    done = reconcile(nxt, 5, P("t", 1, 2), FREE, P("t", 1))
    assert done == ca(S, 5, P("t", 1, 2), prev=3)


def test_reconcile_revocation_skipped_when_owned_already_lacks_it() -> None:
    cur = ca(S, 3, P("t", 0, 1))
    assert reconcile(cur, 5, P("t", 1), FREE, P("t", 1)) == ca(S, 5, P("t", 1), prev=3)


def test_reconcile_unrevoked_moves_to_epoch_plus_one_if_more_to_revoke() -> None:
    cur = ca(UR, 3, P("t", 1, 2), P("t", 0))
    nxt = reconcile(cur, 7, P("t", 9), FREE, P("t", 1, 2))
    assert nxt == ca(UR, 4, frozenset(), P("t", 1, 2), prev=3)


def test_reconcile_unreleased_partitions_wait_for_their_holder() -> None:
    cur = ca(S, 1, P("t", 0))
    nxt = reconcile(cur, 2, P("t", 0, 1, 2), held_by({("t", 1): 1}), frozenset())
    assert nxt == ca(UL, 2, P("t", 0, 2), prev=1)
    nxt2 = reconcile(nxt, 2, P("t", 0, 1, 2), held_by({("t", 1): 1}), None)
    assert nxt2 == ca(UL, 2, P("t", 0, 2), prev=2)
    assert reconcile(nxt2, 2, P("t", 0, 1, 2), FREE, None) == ca(S, 2, P("t", 0, 1, 2), prev=2)
    only_unreleased = reconcile(ca(S, 1), 2, P("t", 1), held_by({("t", 1): 1}), None)
    assert only_unreleased == ca(UL, 2, prev=1)


def test_reconcile_own_pending_revocation_counts_as_held_in_4_0_but_not_with_kafka_19449_fix() -> None:
    cur = ca(UR, 3, P("t", 1), P("t", 0))
    epochs = held_by({("t", 0): 3, ("t", 1): 3})
    assert reconcile(cur, 5, P("t", 0, 1), epochs, P("t", 1)) == ca(UL, 5, P("t", 1), prev=3)
    fixed = reconcile(cur, 5, P("t", 0, 1), epochs, P("t", 1), own_pending_is_free=True)
    assert fixed == ca(S, 5, P("t", 0, 1), prev=3)


def test_reconcile_unknown_state_fences_unless_owned_is_empty() -> None:
    cur = ca(UK, 3, P("t", 0))
    assert reconcile(cur, 5, P("t", 0), FREE, None) is None
    assert reconcile(cur, 5, P("t", 0), FREE, P("t", 0)) is None
    assert reconcile(cur, 5, P("t", 0, 1), FREE, frozenset()) == ca(S, 5, P("t", 0, 1), prev=3)


def test_unknown_member_state_is_fenced_through_the_coordinator() -> None:
    h = Harness()
    r = ok(h.hb(join("m1")))
    h.group.members["m1"] = replace(h.member("m1"), state=MemberState.UNKNOWN)  # downgrade artefact
    h.group.state = h.group.derived_state()
    assert_rejected(h, beat("m1", r.member_epoch), E.FENCED_MEMBER_EPOCH)


def test_partition_moves_only_after_acknowledged_revocation() -> None:
    h = Harness(topics={"t": 4})
    ok(h.hb(join("m1")))
    r2 = ok(h.hb(join("m2")))
    assert r2.member_epoch == 2 and r2.assigned() == frozenset()  # all held by m1
    assert h.member("m2").state == MemberState.UNRELEASED_PARTITIONS
    r1 = ok(h.hb(beat("m1", 1)))
    assert h.member("m1").state == MemberState.UNREVOKED_PARTITIONS
    assert r1.assigned() == h.group.target["m1"] and len(r1.assigned() or ()) == 2
    assert h.group.timers[(REBALANCE, "m1")].epoch == 1
    ok(h.hb(beat("m2", 2)))
    assert h.member("m2").assigned == frozenset()  # still held by m1 (pending revocation)
    r1 = ok(h.hb(beat("m1", 1, r1.assigned())))
    assert r1.member_epoch == 2 and (REBALANCE, "m1") not in h.group.timers
    r2 = ok(h.hb(beat("m2", 2)))
    assert r2.assigned() == h.group.target["m2"] and h.group.state == GroupState.STABLE


# ============================================================================ epoch bumps and responses (docs/protocol-reference.md#b4, #b10)


def test_b4_bump_triggers() -> None:
    h = Harness(topics={"t": 2, "u": 2})
    assert ok(h.hb(join("m1"))).member_epoch == 1  # new group
    e = h.group.group_epoch
    ok(h.hb(join("m2", subscribed_topic_names=())))  # newcomer subscribing to nothing: no bump
    assert h.group.group_epoch == e
    ok(h.hb(beat("m1", 1, rack_id="r1", server_assignor="range", rebalance_timeout_ms=5)))
    assert h.group.group_epoch == e  # rack, assignor, timeout: persisted, no bump
    ok(h.hb(beat("m1", 1, subscribed_topic_names=("t", "u"))))
    assert h.group.group_epoch == e + 1 and h.group.assignment_epoch == e + 1
    h.topic("add_partitions", "u", 3)
    assert h.group.group_epoch == e + 1 and h.group.metadata_refresh_due  # lazily, at the next heartbeat
    ok(h.hb(beat("m2", h.member("m2").member_epoch)))
    assert h.group.group_epoch == e + 2 and h.group.subscription_metadata == {"t": 2, "u": 3}
    h.topic("delete", "t")
    ok(h.hb(beat("m2", h.member("m2").member_epoch)))
    assert h.group.group_epoch == e + 3 and h.group.subscription_metadata == {"u": 3}
    h.topic("create", "t", 1)
    ok(h.hb(beat("m2", h.member("m2").member_epoch)))
    assert h.group.group_epoch == e + 4
    h.topic("create", "x", 1)  # nobody subscribes: no refresh, no bump
    assert not h.group.metadata_refresh_due


def test_regex_subscription_resolved_synchronously_when_configured() -> None:
    sync = ConsumerCoordinatorConfig(regex_resolution="sync")
    h = Harness(ConsumerCoordinator(sync, SeededChooser(1)), topics={"a1": 1, "a2": 1, "b": 1})
    r = ok(h.hb(join("m1", subscribed_topic_names=None, subscribed_topic_regex="a.*")))
    assert r.assigned() == {("a1", 0), ("a2", 0)}
    h.topic("create", "a3", 2)
    r = ok(h.hb(beat("m1", r.member_epoch)))
    assert r.assigned() == {("a1", 0), ("a2", 0), ("a3", 0), ("a3", 1)} and r.member_epoch == 2
    r = ok(h.hb(beat("m1", 2, subscribed_topic_regex="b")))
    assert h.group.group_epoch == 3 and h.member("m1").state == MemberState.UNREVOKED_PARTITIONS


def test_b10_assignment_only_on_join_full_request_or_change() -> None:
    h = Harness()
    r = ok(h.hb(join("m1")))
    assert r.assignment is not None and r.heartbeat_interval_ms == 5000
    assert ok(h.hb(beat("m1", 1))).assignment is None  # incremental, unchanged
    assert ok(h.hb(beat("m1", 1, P("t", 0, 1, 2, 3)))).assignment is None  # owned alone is not full
    full = beat("m1", 1, P("t", 0, 1, 2, 3), rebalance_timeout_ms=1000, subscribed_topic_names=("t",))
    assert ok(h.hb(full)).assigned() == P("t", 0, 1, 2, 3)
    ok(h.hb(join("m2")))
    assert ok(h.hb(beat("m1", 1))).assignment is not None  # assigned set changed


def test_target_is_computed_lazily_and_only_changed_members_written() -> None:
    h = Harness(topics={"t": 4})
    ok(h.hb(join("m1")))
    ok(h.hb(join("m2")))
    h.records.clear()
    h.advance(h.now)  # nothing due
    ok(h.hb(beat("m2", 2, None, subscribed_topic_names=("t",))))  # unchanged subscription: no bump
    assert not any(isinstance(r, GroupEpochRecord) for r in h.records)


# ============================================================================ leave / static (docs/protocol-reference.md#b7)


def test_dynamic_leave_removes_member_and_bumps() -> None:
    h = Harness()
    ok(h.hb(join("m1")))
    ok(h.hb(join("m2")))
    e = h.group.group_epoch
    r = ok(h.hb(beat("m2", -1)))
    assert (r.member_id, r.member_epoch, r.assignment, r.heartbeat_interval_ms) == ("m2", -1, None, 0)
    assert "m2" not in h.group.members and "m2" not in h.group.target
    assert h.group.group_epoch == e + 1 and not [k for k in h.group.timers if k[1] == "m2"]


def test_static_temporary_leave_keeps_assignment_then_rejoin_takes_it_over() -> None:
    h = Harness(topics={"t": 4})
    ok(h.hb(join("s1", instance_id="i1")))
    ok(h.hb(join("m2")))
    ok(h.hb(beat("s1", 1, instance_id="i1")))  # s1 must revoke two partitions
    assert h.member("s1").pending_revocation
    e = h.group.group_epoch
    r = ok(h.hb(beat("s1", -2, instance_id="i1")))
    assert (r.member_id, r.member_epoch) == ("s1", -2)
    s1 = h.member("s1")
    assert s1.member_epoch == -2 and s1.assigned and not s1.pending_revocation and h.group.group_epoch == e
    assert all(h.group.partition_epochs[tp] == -2 for tp in s1.assigned)
    assert h.group.state == GroupState.RECONCILING and (SESSION, "s1") in h.group.timers
    r = ok(h.hb(join("s1b", instance_id="i1")))  # static rejoin with a new member id
    assert "s1" not in h.group.members and h.group.static_members == {"i1": "s1b"}
    assert h.group.group_epoch == e and r.member_epoch == e
    assert r.assigned() == h.group.target["s1b"] == h.member("s1b").assigned


def test_static_member_that_does_not_return_expires_with_a_bump() -> None:
    h = Harness()
    ok(h.hb(join("s1", instance_id="i1")))
    ok(h.hb(beat("s1", -2, instance_id="i1")))
    e = h.group.group_epoch
    h.advance(44_999)
    assert "s1" in h.group.members
    h.advance(45_000)
    assert "s1" not in h.group.members and h.group.group_epoch == e + 1 and h.group.state == GroupState.EMPTY


def test_static_leave_with_minus_one_removes() -> None:
    h = Harness()
    ok(h.hb(join("s1", instance_id="i1")))
    ok(h.hb(beat("s1", -1, instance_id="i1")))
    assert not h.group.members and not h.group.static_members


# ============================================================================ timers (docs/protocol-reference.md#b8)


def test_session_timeout_removes_silent_member_and_failed_heartbeats_do_not_rearm() -> None:
    h = Harness(cfg(session_timeout_ms=1000))
    ok(h.hb(join("m1")))
    ok(h.hb(join("m2")))
    h.advance(600)
    ok(h.hb(beat("m1", 1)))  # m1 re-armed to 1600
    h.hb(beat("m2", 99))  # fenced: no re-arm
    e = h.group.group_epoch
    h.advance(1000)
    assert set(h.group.members) == {"m1"} and h.group.group_epoch == e + 1
    h.advance(1599)
    assert "m1" in h.group.members
    h.advance(1600)
    assert not h.group.members


def test_rebalance_timeout_fences_only_if_epoch_unchanged() -> None:
    h = Harness(topics={"t": 2})
    ok(h.hb(join("m1", rebalance_timeout_ms=300)))
    ok(h.hb(join("m2")))
    ok(h.hb(beat("m1", 1)))
    assert h.group.timers[(REBALANCE, "m1")].deadline == 300
    h.advance(300)
    assert "m1" not in h.group.members
    # acknowledged in time: timer cancelled, no fence
    h2 = Harness(topics={"t": 2})
    ok(h2.hb(join("m1", rebalance_timeout_ms=300)))
    ok(h2.hb(join("m2")))
    r = ok(h2.hb(beat("m1", 1)))
    ok(h2.hb(beat("m1", 1, r.assigned())))
    h2.advance(1000)
    assert "m1" in h2.group.members


def test_timers_fire_in_deadline_order_with_deterministic_ties() -> None:
    h = Harness(cfg(session_timeout_ms=100))
    for m in ("m3", "m1", "m2"):
        ok(h.hb(join(m)))
    res = h.advance(100)
    fired = [r.member_id for r in res.records if isinstance(r, TimerCancelled) and r.kind == SESSION]
    assert fired == ["m1", "m2", "m3"]
    epochs = [r.epoch for r in res.records if isinstance(r, GroupEpochRecord)]
    assert epochs == sorted(epochs) and len(epochs) == 3


# ============================================================================ offsets (docs/protocol-reference.md#b12)


def commit_req(member: str, epoch: int, version: int = 9, **kw: object) -> OffsetCommitRequest:
    fields: dict[str, object] = dict(
        group_id="g",
        topics=(OffsetCommitRequestTopic("t", (OffsetCommitRequestPartition(0, 42),)),),
        generation_id_or_member_epoch=epoch,
        member_id=member,
        version=version,
    )
    fields.update(kw)
    return OffsetCommitRequest(**fields)  # type: ignore[arg-type]


def test_b12_offset_commit_rules() -> None:
    h = Harness()
    assert h.commit(commit_req("", -1)).errors() == {("t", 0): E.NONE}  # no group, epoch < 0
    assert h.commit(commit_req("m1", 3)).errors() == {("t", 0): E.GROUP_ID_NOT_FOUND}
    assert h.commit(commit_req("m1", 3, version=8)).errors() == {("t", 0): E.ILLEGAL_GENERATION}
    ok(h.hb(join("m1")))
    assert h.commit(commit_req("m1", 1)).errors() == {("t", 0): E.NONE}
    assert h.state.offsets["g"][("t", 0)].offset == 42
    assert h.commit(commit_req("m1", 0)).errors() == {("t", 0): E.STALE_MEMBER_EPOCH}
    assert h.commit(commit_req("zz", 1)).errors() == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert h.commit(commit_req("", -1)).errors() == {("t", 0): E.UNKNOWN_MEMBER_ID}  # group not empty
    assert h.commit(commit_req("m1", 1, version=8)).errors() == {("t", 0): E.UNSUPPORTED_VERSION}
    unknown = (OffsetCommitRequestTopic("t", (OffsetCommitRequestPartition(9, 1),)),)
    assert h.commit(commit_req("m1", 1, topics=unknown)).errors() == {("t", 9): E.UNKNOWN_TOPIC_OR_PARTITION}
    big = (OffsetCommitRequestTopic("t", (OffsetCommitRequestPartition(1, 1, -1, "x" * 5000),)),)
    assert h.commit(commit_req("m1", 1, topics=big)).errors() == {("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    ok(h.hb(beat("m1", -1)))
    assert h.commit(commit_req("", -1)).errors() == {("t", 0): E.NONE}  # empty group again


# ============================================================================ replay and failover


def test_replay_of_records_rebuilds_the_same_state_and_failover_keeps_durable_state() -> None:
    sim = Simulation(seed=11)
    sim.run(400)
    assert replay(sim.records) == sim.state
    loaded = rebuild(sim.records)
    for gid, g in sim.state.groups.items():
        lg = loaded.groups[gid]
        for attr in (
            "group_epoch",
            "assignment_epoch",
            "members",
            "target",
            "partition_epochs",
            "subscription_metadata",
            "static_members",
            "state",
        ):
            assert getattr(lg, attr) == getattr(g, attr), attr
        assert lg.timers == {}
    assert loaded.offsets == sim.state.offsets and loaded.topics == sim.state.topics
    state, armed = sim.coord.failover(sim.records, sim.now)
    for g in state.groups.values():
        assert {k for k in g.timers if k[0] == SESSION} == {(SESSION, m) for m in g.members}
        revoking = {m for m, mm in g.members.items() if mm.state == MemberState.UNREVOKED_PARTITIONS}
        assert {k[1] for k in g.timers if k[0] == REBALANCE} == revoking
    assert all(not is_durable(r) for r in armed.records)


def test_failover_mid_rebalance_then_clients_converge() -> None:
    sim = Simulation(seed=5, lost=0.0, perturb=0.0)
    sim.run(200)
    sim.failover()
    sim.settle()
    sim.assert_clean()


# ============================================================================ KIP-1082 ghosts


def ghost_run(version: int) -> Harness:
    config = ConsumerCoordinatorConfig(heartbeat_version=1)
    h = Harness(ConsumerCoordinator(config, SeededChooser(2)), topics={"t": 4})
    client = VirtualConsumer("c", "g", SeededChooser(9), topics=("t",), version=version)
    h.clients.append(client)
    for attempt in range(3):  # the join's response is lost twice, then arrives
        request = client.next_request(h.now)
        assert request is not None and request.member_epoch == 0
        response = h.hb(request)
        if attempt < 2:
            client.on_request_lost(h.now)
            h.now += 100
        else:
            client.on_response(response, h.now)
    for _ in range(5):
        h.now += 5000
        h.exchange(client)
    return h


def test_kip1082_ghost_members_with_v0_none_with_v1() -> None:
    v0 = ghost_run(0)
    client = v0.clients[0]
    assert len(v0.group.members) == 3  # two ghosts
    ghosts = [m for mid, m in v0.group.members.items() if mid != client.member_id]
    assert ghosts and any(g.assigned for g in ghosts)  # a ghost holds partitions
    assert client.owned != P("t", 0, 1, 2, 3)
    v1 = ghost_run(1)
    assert list(v1.group.members) == [v1.clients[0].member_id]
    assert v1.clients[0].owned == P("t", 0, 1, 2, 3) == v1.member(v1.clients[0].member_id).assigned


def test_kip1082_leave_before_join_response() -> None:
    for version, members_left in ((0, 1), (1, 0)):
        h = Harness(topics={"t": 2})
        client = VirtualConsumer("c", "g", SeededChooser(9), topics=("t",), version=version)
        h.clients.append(client)
        request = client.next_request(0)
        assert request is not None
        h.hb(request)
        client.on_request_lost(0)
        client.leave()
        leave = client.next_request(0)
        if version == 0:
            assert leave is None  # no member id to leave with
        else:
            assert leave is not None and leave.member_epoch == -1
            client.on_response(h.hb(leave), 0)
        assert len(h.group.members) == members_left


# ============================================================================ mutants


class PendingRevocationIsFree(ConsumerCoordinator):
    """KAFKA-16147: a partition pending revocation loses its partition epoch and can be re-assigned."""

    def current_partition_epoch(self, group: ConsumerGroup, tp: TopicPartition) -> int:
        if any(tp in m.assigned for m in group.members.values()):
            return group.current_partition_epoch(tp)
        return -1


def two_member_revocation(coord: ConsumerCoordinator, manual: bool = False) -> Harness:
    h = Harness(coord, topics={"t": 2}, check=False)
    c1 = VirtualConsumer("c1", "g", SeededChooser(1), topics=("t",))
    c2 = VirtualConsumer("c2", "g", SeededChooser(2), topics=("t",))
    h.clients += [c1, c2]

    send = h.exchange
    send(c1)  # joins and owns both partitions
    c1.auto_reconcile = not manual  # from now on c1's revocation callbacks may be slow
    send(c2)
    h.now += 5000
    send(c1)  # c1 learns it must give up a partition
    h.now += 1
    send(c2)  # mutant: c2 is given the partition c1 still holds
    return h


def test_kafka_16147_mutant_violates_single_partition_holder() -> None:
    clean = two_member_revocation(
        ConsumerCoordinator(ConsumerCoordinatorConfig(), SeededChooser(1)), manual=True
    )
    assert clean.violations == []
    h = two_member_revocation(
        PendingRevocationIsFree(ConsumerCoordinatorConfig(), SeededChooser(1)), manual=True
    )
    ids = {v[0] for v in h.violations}
    assert "consumer.single_partition_holder" in ids
    assert {
        "consumer.assign_only_free",
        "consumer.no_double_client_assignment",
        "consumer.valid_partition_epoch",
    } <= ids


# ============================================================================ every invariant can fail


def violations(inv_id: str, obs: Observation[ConsumerWorld]) -> list[str]:
    return REGISTRY[inv_id].check(obs)


def mutant_run(coord_cls: type[ConsumerCoordinator], script, **config: object) -> set[str]:  # type: ignore[no-untyped-def]
    h = Harness(
        coord_cls(ConsumerCoordinatorConfig(**config), SeededChooser(1)), topics={"t": 2}, check=False
    )  # type: ignore[arg-type]
    script(h)
    return {v[0] for v in h.violations}


def revoking_script(h: Harness) -> None:
    ok(h.hb(join("m1")))
    ok(h.hb(join("m2")))
    h.hb(beat("m1", 1))
    h.hb(beat("m1", 1))


class AcksEverything(ConsumerCoordinator):
    def reconcile_member(self, txn, member, owned, now, changed=False):  # type: ignore[no-untyped-def]
        return super().reconcile_member(txn, member, frozenset(), now, changed)


class NoEpochCheck(ConsumerCoordinator):
    def validate_member_epoch(self, member, request) -> None:  # type: ignore[no-untyped-def]
        return None


class NoReleaseCheck(ConsumerCoordinator):
    def check_instance_released(self, existing) -> None:  # type: ignore[no-untyped-def]
        return None


class NoCapacityCheck(ConsumerCoordinator):
    def check_group_capacity(self, group, member_id) -> None:  # type: ignore[no-untyped-def]
        return None


class LaxCommits(ConsumerCoordinator):
    def offset_commit_group_error(self, state, request):  # type: ignore[no-untyped-def]
        return None


class StrictCommits(ConsumerCoordinator):
    def offset_commit_group_error(self, state, request):  # type: ignore[no-untyped-def]
        return E.STALE_MEMBER_EPOCH


class Lopsided(ConsumerCoordinator):
    def run_assignor(self, name, members, topics, homogeneous):  # type: ignore[no-untyped-def]
        first = min(members)
        every = frozenset((t, p) for t, n in topics.items() for p in range(n))
        return {m: every if m == first else frozenset() for m in members}


class Duplicating(ConsumerCoordinator):
    def run_assignor(self, name, members, topics, homogeneous):  # type: ignore[no-untyped-def]
        every = frozenset((t, p) for t, n in topics.items() for p in range(n))
        return {m: every for m in members}


class NeverExpires(ConsumerCoordinator):
    def on_session_timeout(self, txn, timer) -> None:  # type: ignore[no-untyped-def]
        return None


class NoRebalanceTimer(ConsumerCoordinator):
    def schedule_rebalance_timeout(self, txn, member, now) -> None:  # type: ignore[no-untyped-def]
        return None


class StaticLeaveCancelsTimers(ConsumerCoordinator):
    def static_temporary_leave(self, txn, member) -> None:  # type: ignore[no-untyped-def]
        super().static_temporary_leave(txn, member)
        self.cancel_timer(txn, SESSION, member.member_id)


class NoLazyTarget(ConsumerCoordinator):
    def target_assignment_due(self, group) -> bool:  # type: ignore[no-untyped-def]
        return group.assignment_epoch == 0


def world_with(**group_kw: object) -> ConsumerWorld:
    h = Harness(topics={"t": 2})
    ok(h.hb(join("m1")))
    g = h.group.clone()
    for k, v in group_kw.items():
        setattr(g, k, v)
    return ConsumerWorld(groups=MappingProxyType({"g": GroupView.of(g)}), topics=MappingProxyType({"t": 2}))


def obs_of(
    after: ConsumerWorld, before: ConsumerWorld | None = None, now: int = 0
) -> Observation[ConsumerWorld]:
    return Observation(before=before, event=None, deliveries=(), after=after, now=now)


def test_every_invariant_can_fail() -> None:
    seen: set[str] = set()

    def expect(inv_id: str, found: set[str] | list[str] | bool) -> None:
        assert found if isinstance(found, bool | list) else inv_id in found, inv_id
        seen.add(inv_id)

    # mutants driven through the coordinator
    expect("consumer.epoch_advance_after_revocation", mutant_run(AcksEverything, revoking_script))
    expect(
        "consumer.epoch_fencing",
        mutant_run(NoEpochCheck, lambda h: (ok(h.hb(join("m1"))), h.hb(beat("m1", 7)))),
    )
    expect(
        "consumer.static_instance_unique",
        mutant_run(
            NoReleaseCheck, lambda h: (ok(h.hb(join("a", instance_id="i"))), h.hb(join("b", instance_id="i")))
        ),
    )
    expect(
        "consumer.max_size",
        mutant_run(NoCapacityCheck, lambda h: (h.hb(join("a")), h.hb(join("b"))), max_size=1),
    )
    commit_script = lambda h: (ok(h.hb(join("m1"))), h.commit(commit_req("m1", 0)))  # noqa: E731
    expect("consumer.offset_commit_exact_epoch", mutant_run(LaxCommits, commit_script))
    exact_script = lambda h: (ok(h.hb(join("m1"))), h.commit(commit_req("m1", 1)))  # noqa: E731
    expect("consumer.offset_commit_exact_epoch", mutant_run(StrictCommits, exact_script))
    two = lambda h: (ok(h.hb(join("m1"))), ok(h.hb(join("m2"))))  # noqa: E731
    expect("consumer.uniform_balanced", mutant_run(Lopsided, two))
    expect("consumer.legal_target_assignment", mutant_run(Duplicating, two))
    expire = lambda h: (ok(h.hb(join("m1"))), h.advance(50_000))  # noqa: E731
    expect("consumer.session_timeout_removes", mutant_run(NeverExpires, expire))
    expect("consumer.rebalance_timeout_fences", mutant_run(NoRebalanceTimer, revoking_script))
    static_leave = lambda h: (ok(h.hb(join("s", instance_id="i"))), h.hb(beat("s", -2, instance_id="i")))  # noqa: E731
    expect("consumer.static_leave_expires", mutant_run(StaticLeaveCancelsTimers, static_leave))
    expect("consumer.target_computed_on_next_heartbeat", mutant_run(NoLazyTarget, two))

    def give_back(h: Harness) -> None:  # KAFKA-19449: c2 leaves while m1 revokes for it
        ok(h.hb(join("m1")))
        ok(h.hb(join("m2")))
        ok(h.hb(beat("m1", 1, P("t", 0, 1))))
        ok(h.hb(beat("m2", -1)))
        h.hb(beat("m1", 1, h.member("m1").assigned))

    expect(
        "consumer.reconciliation_progress",
        mutant_run(ConsumerCoordinator, give_back, own_pending_is_free=False),
    )
    assert "consumer.reconciliation_progress" not in mutant_run(ConsumerCoordinator, give_back)

    def rejoin(h: Harness) -> None:  # KAFKA-19233: epoch 0 while the coordinator holds m1 at epoch 2
        ok(h.hb(join("m1")))
        ok(h.hb(join("m2")))
        ok(h.hb(beat("m1", 1, P("t", 0, 1))))
        ok(h.hb(beat("m1", 1, h.member("m1").assigned)))
        h.hb(beat("m1", 0, frozenset(), rebalance_timeout_ms=1, subscribed_topic_names=("t",)))

    expect(
        "consumer.rejoin_always_possible", mutant_run(ConsumerCoordinator, rejoin, epoch_zero_rejoin=False)
    )
    assert "consumer.rejoin_always_possible" not in mutant_run(ConsumerCoordinator, rejoin)
    h16147 = two_member_revocation(
        PendingRevocationIsFree(ConsumerCoordinatorConfig(), SeededChooser(1)), True
    )
    for inv_id in (
        "consumer.single_partition_holder",
        "consumer.assign_only_free",
        "consumer.no_double_client_assignment",
    ):
        expect(inv_id, {v[0] for v in h16147.violations})

    # hand-made worlds
    good = world_with()
    assert all(not violations(i, obs_of(good, good)) for i in ALL_IDS if REGISTRY[i].kind != "sometimes")
    expect("consumer.epoch_order", violations("consumer.epoch_order", obs_of(world_with(assignment_epoch=5))))
    expect(
        "consumer.epoch_order", violations("consumer.epoch_order", obs_of(good, world_with(group_epoch=9)))
    )
    expect(
        "consumer.group_state_derived",
        violations("consumer.group_state_derived", obs_of(world_with(state=GroupState.ASSIGNING))),
    )
    base = Harness(topics={"t": 2})
    ok(base.hb(join("m1")))
    m1 = base.member("m1")
    bad_assigned = {"m1": replace(m1, assigned=P("t", 0))}
    expect(
        "consumer.valid_stable_group_state",
        violations("consumer.valid_stable_group_state", obs_of(world_with(members=bad_assigned))),
    )
    expect(
        "consumer.valid_partition_epoch",
        violations("consumer.valid_partition_epoch", obs_of(world_with(partition_epochs={("t", 0): 1}))),
    )
    stolen = {"m1": m1, "m2": replace(m1, member_id="m2", assigned=frozenset())}
    moved_target = {"m1": frozenset(), "m2": P("t", 0, 1)}
    expect(
        "consumer.valid_member_epoch",
        violations("consumer.valid_member_epoch", obs_of(world_with(members=stolen, target=moved_target))),
    )
    older = world_with(members={"m1": replace(m1, member_epoch=1)}, group_epoch=3, assignment_epoch=3)
    newer = world_with(members={"m1": replace(m1, member_epoch=3)}, group_epoch=3, assignment_epoch=3)
    expect(
        "consumer.member_epoch_monotonic", violations("consumer.member_epoch_monotonic", obs_of(older, newer))
    )
    c1 = ClientView("c1", "g", "m1", 1, P("t", 0), "STABLE", None, True)
    c2 = ClientView("c2", "g", "m2", 1, P("t", 0), "STABLE", None, True)
    doubled = replace(world_with(members=stolen), clients=(c1, c2))
    expect(
        "consumer.no_double_client_assignment",
        violations("consumer.no_double_client_assignment", obs_of(doubled)),
    )
    lagging = replace(
        good, clients=(replace(c1, owned=frozenset()),), quiet_since=0, convergence_bound_ms=100
    )
    expect(
        "consumer.eventual_convergence", violations("consumer.eventual_convergence", obs_of(lagging, now=500))
    )
    assert not violations("consumer.eventual_convergence", obs_of(lagging, now=50))
    converged = replace(lagging, clients=(replace(c1, owned=P("t", 0, 1)),))
    assert not violations("consumer.eventual_convergence", obs_of(converged, now=500))

    # sometimes entries fire
    h = Harness(topics={"t": 2})
    ok(h.hb(join("m1")))
    ok(h.hb(join("s", instance_id="i")))
    w0 = h.world()
    h.hb(beat("m1", 1))
    w1 = h.world()
    expect("consumer.sometimes_revocation", violations("consumer.sometimes_revocation", obs_of(w1, w0)))
    assert not violations("consumer.sometimes_revocation", obs_of(w1, w1))
    ok(h.hb(beat("s", -2, instance_id="i")))
    w2 = h.world()
    ok(h.hb(join("s2", instance_id="i")))
    expect(
        "consumer.sometimes_static_rejoin",
        violations("consumer.sometimes_static_rejoin", obs_of(h.world(), w2)),
    )

    # KIP-1082 ghosts: a v0 join whose response is lost leaves a member no client knows
    ghosts = ghost_run(0)
    known = frozenset(c.member_id for c in ghosts.clients)
    ghost_world = replace(ghosts.world(), known_member_ids=known)
    expect("consumer.no_ghost_member", violations("consumer.no_ghost_member", obs_of(ghost_world)))
    clean = ghost_run(1)
    clean_world = replace(clean.world(), known_member_ids=frozenset(c.member_id for c in clean.clients))
    assert not violations("consumer.no_ghost_member", obs_of(clean_world))
    assert not violations("consumer.no_ghost_member", obs_of(ghosts.world()))  # untracked: not checked

    # added by the kill matrix: response shape and the virtual consumers (model/consumer/client_invariants.py)
    bad = ConsumerGroupHeartbeatResponse(
        member_id="m1", member_epoch=1, assignment=(TopicPartitions("t", (0, 0)),)
    )
    hb_obs = Observation(good, HeartbeatEvent(1, beat("m1", 1), "c1"), (Delivery(1, bad),), good, 0)
    expect("consumer.responses_well_formed", violations("consumer.responses_well_formed", hb_obs))
    fine = replace(bad, assignment=(TopicPartitions("t", (0, 1)),))
    assert not violations("consumer.responses_well_formed", replace(hb_obs, deliveries=(Delivery(1, fine),)))
    joining = replace(good, clients=(replace(c1, state="JOINING"),))
    expect(
        "consumer.fenced_member_releases_first",
        violations("consumer.fenced_member_releases_first", obs_of(joining)),
    )
    released = replace(good, clients=(replace(c1, state="JOINING", owned=frozenset()),))
    assert not violations("consumer.fenced_member_releases_first", obs_of(released))
    static_leave = HeartbeatEvent(2, beat("s", -1, instance_id="i"), "c1")
    expect(
        "consumer.static_close_is_temporary",
        violations("consumer.static_close_is_temporary", Observation(good, static_leave, (), good, 0)),
    )
    temporary = HeartbeatEvent(2, beat("s", -2, instance_id="i"), "c1")
    assert not violations("consumer.static_close_is_temporary", Observation(good, temporary, (), good, 0))

    # promises (model/consumer/promise_invariants.py)
    held = replace(good, clients=(c1,))
    fenced = (Delivery(3, ConsumerGroupHeartbeatResponse(ErrorCode.FENCED_MEMBER_EPOCH)),)
    told = Observation(held, HeartbeatEvent(3, beat("m1", 1), "c1"), fenced, held, 0)
    expect("consumer.ended_membership_rejoins", violations("consumer.ended_membership_rejoins", told))
    rejoined = replace(held, clients=(replace(c1, member_epoch=0, owned=frozenset(), state="JOINING"),))
    assert not violations("consumer.ended_membership_rejoins", replace(told, after=rejoined))
    wider = {"m1": replace(m1, subscribed_topic_names=frozenset({"t", "u"}))}
    change = HeartbeatEvent(4, beat("m1", 1, subscribed_topic_names=("t", "u")), "c1")
    kept_epoch = Observation(good, change, (), world_with(members=wider), 0)
    expect(
        "consumer.subscription_change_bumps_epoch",
        violations("consumer.subscription_change_bumps_epoch", kept_epoch),
    )
    bumped = world_with(members=wider, group_epoch=m1.member_epoch + 1)
    assert not violations("consumer.subscription_change_bumps_epoch", replace(kept_epoch, after=bumped))
    between = world_with(members={"m1": replace(m1, member_epoch=2)}, group_epoch=3, assignment_epoch=3)
    expect(
        "consumer.member_epoch_is_assignment_epoch",
        violations("consumer.member_epoch_is_assignment_epoch", obs_of(between, older)),
    )
    assert not violations("consumer.member_epoch_is_assignment_epoch", obs_of(newer, older))
    from tests.test_consumer_regex import _sync_rule_observation  # it imports this module

    expect("consumer.regex_resolved_off_heartbeat", _sync_rule_observation())
    from tests.test_reconcile_to_subscription import _checked_change

    expect(
        "consumer.assignment_within_subscription",
        _checked_change(False, world_rule=True, subscribed_topic_names=("t",)),
    )

    hb_ok = (Delivery(5, ConsumerGroupHeartbeatResponse(member_id="m1", member_epoch=1)),)
    said_more = replace(held, clients=(replace(c1, declared=(frozenset({"t", "u"}), None, None)),))
    dropped = Observation(held, HeartbeatEvent(5, beat("m1", 1), "c1"), hb_ok, said_more, 0)
    expect(
        "consumer.member_record_matches_client", violations("consumer.member_record_matches_client", dropped)
    )
    as_said = replace(held, clients=(replace(c1, declared=(m1.subscribed_topic_names, None, None)),))
    assert not violations("consumer.member_record_matches_client", replace(dropped, after=as_said))

    from tests.test_delete_groups import deletion_violations

    expect("consumer.deleted_group_is_gone", deletion_violations())
    owned = frozenset({("t", 0), ("t", 1)})
    early = Observation(
        held,
        HeartbeatEvent(5, beat("m1", 1), "c1"),
        hb_ok,
        replace(held, reports=(("c1", owned, owned - {("t", 1)}),)),
        0,
    )
    expect("consumer.reports_what_it_holds", violations("consumer.reports_what_it_holds", early))
    honest = replace(held, reports=(("c1", owned - {("t", 1)}, owned),))  # more reported than held: waits
    assert not violations("consumer.reports_what_it_holds", replace(early, after=honest))

    assert seen == set(ALL_IDS), sorted(set(ALL_IDS) - seen)


def test_invariant_registry_entries() -> None:
    expected = {
        "consumer.single_partition_holder",
        "consumer.assign_only_free",
        "consumer.epoch_advance_after_revocation",
        "consumer.epoch_order",
        "consumer.epoch_fencing",
        "consumer.static_instance_unique",
        "consumer.max_size",
        "consumer.offset_commit_exact_epoch",
        "consumer.group_state_derived",
        "consumer.uniform_balanced",
        "consumer.session_timeout_removes",
        "consumer.rebalance_timeout_fences",
        "consumer.static_leave_expires",
        "consumer.target_computed_on_next_heartbeat",
        "consumer.regex_resolved_off_heartbeat",
        "consumer.reconciliation_progress",
        "consumer.rejoin_always_possible",
        "consumer.no_double_client_assignment",
        "consumer.legal_target_assignment",
        "consumer.valid_member_epoch",
        "consumer.valid_stable_group_state",
        "consumer.valid_partition_epoch",
        "consumer.member_epoch_monotonic",
        "consumer.eventual_convergence",
        "consumer.no_ghost_member",
        "consumer.sometimes_revocation",
        "consumer.sometimes_static_rejoin",
        # added by the kill matrix: model/consumer/client_invariants.py
        "consumer.responses_well_formed",
        "consumer.fenced_member_releases_first",
        "consumer.static_close_is_temporary",
        # promises from the protocol documents: model/consumer/promise_invariants.py
        "consumer.ended_membership_rejoins",
        "consumer.subscription_change_bumps_epoch",
        "consumer.member_epoch_is_assignment_epoch",
        "consumer.deleted_group_is_gone",
        "consumer.member_record_matches_client",
        "consumer.reports_what_it_holds",
        # a Kafka 4.1+ rule restated: model/consumer/subscription_invariants.py
        "consumer.assignment_within_subscription",
    }
    assert set(ALL_IDS) == expected
    for inv_id in expected:
        inv = REGISTRY[inv_id]
        assert inv.protocol == "consumer" and inv.summary and inv.summary.endswith(".")
        doc = inv.predicate.__doc__ or ""
        assert any(s in doc for s in ("docs/protocol-reference.md", "Vanlightly", "docs/invariants.md")), (
            inv_id
        )


# ============================================================================ client


def test_client_full_then_incremental_heartbeats_and_rejoin_after_fencing() -> None:
    h = Harness(topics={"t": 2})
    c = VirtualConsumer("c", "g", SeededChooser(4), topics=("t",), server_assignor="uniform")
    h.clients.append(c)
    first = c.next_request(0)
    assert first is not None and first.member_epoch == 0 and first.topic_partitions == ()
    assert first.rebalance_timeout_ms != -1 and first.subscribed_topic_names == ("t",)
    c.on_response(h.hb(first), 0)
    ack = c.next_request(0)  # acknowledges the new owned set at once
    assert ack is not None and ack.owned() == P("t", 0, 1) and ack.rebalance_timeout_ms == -1
    assert ack.subscribed_topic_names is None and ack.server_assignor is None
    c.on_response(h.hb(ack), 0)
    assert c.next_request(100) is None  # waits for the interval
    plain = c.next_request(5000)
    assert plain is not None and plain.topic_partitions is None and plain.subscribed_topic_names is None
    c.on_request_lost(5000)
    full = c.next_request(5100)
    assert full is not None and h.coord.is_full_request(full)
    c.on_response(h.hb(full), 5100)
    h.now = 100_000
    h.advance(100_000)  # session expired
    assert not h.group.members
    stale = c.next_request(100_000)
    assert stale is not None
    c.on_response(h.hb(stale), 100_000)
    assert c.state == ClientState.JOINING and c.owned == frozenset()
    rejoin = c.next_request(100_000)
    assert rejoin is not None and rejoin.member_epoch == 0 and rejoin.member_id == first.member_id


def test_client_static_leave_uses_minus_two_and_releases() -> None:
    h = Harness()
    c = VirtualConsumer("c", "g", SeededChooser(4), topics=("t",), instance_id="i")
    h.clients.append(c)
    for _ in range(2):
        r = c.next_request(0)
        assert r is not None
        c.on_response(h.hb(r), 0)
    assert c.owned
    c.leave()
    r = c.next_request(0)
    assert r is not None and r.member_epoch == -2 and r.instance_id == "i" and c.owned == frozenset()
    c.on_response(h.hb(r), 0)
    assert c.state == ClientState.UNSUBSCRIBED and h.member(c.member_id).member_epoch == -2


# ============================================================================ random walk


class Simulation:
    """Several virtual clients, a seeded random scheduler, lost and delayed responses, crashes,
    restarts, subscription and topic changes, coordinator failover; every invariant after every step."""

    def __init__(
        self,
        seed: int,
        coordinator_cls: type[ConsumerCoordinator] = ConsumerCoordinator,
        lost: float = 0.05,
        perturb: float = 0.04,
        clients: int = 5,
    ) -> None:
        self.rng = random.Random(seed)
        self.config = ConsumerCoordinatorConfig(session_timeout_ms=3000, heartbeat_interval_ms=500)
        self.coord = coordinator_cls(self.config, SeededChooser(seed))
        self.client_chooser = SeededChooser(seed + 1000)
        self.state = ConsumerCoordinatorState()
        self.records: list[object] = []
        self.now = 0
        self.ref = 0
        self.lost = lost
        self.perturb = perturb
        self.pending: dict[str, ConsumerGroupHeartbeatResponse] = {}
        self.violations: list[tuple[str, str]] = []
        self.fired: Counter[str] = Counter()
        self.quiet_since: int | None = None
        self.bound: int | None = None
        self.restarts = 0
        self.steps = 0
        for name, count in (("a", 3), ("b", 2), ("c", 1)):
            self.records += self.coord.create_topic(self.state, name, count).records
        self.clients = [self._new_client(i) for i in range(clients)]

    def _new_client(self, i: int) -> VirtualConsumer:
        static = i % 3 == 2
        topics = self.rng.choice([("a", "b"), ("a",), ("a", "b", "c"), ("b", "zz")])
        return VirtualConsumer(
            f"c{i}",
            "g",
            self.client_chooser,
            topics=topics,
            instance_id=f"inst{i}" if static else None,
            version=1 if i != 1 else 0,
            rebalance_timeout_ms=1500,
            server_assignor="range" if i == 4 else None,
            auto_reconcile=i % 2 == 0,
        )

    def world(self) -> ConsumerWorld:
        return capture_world(
            self.state,
            self.clients,
            config=self.config,
            quiet_since=self.quiet_since,
            convergence_bound_ms=self.bound,
        )

    def step(self, event: object, run) -> Result | None:  # type: ignore[no-untyped-def]
        self.steps += 1
        before = self.world()
        result = run()
        if isinstance(result, Result):
            self.records += result.records
        after = self.world()
        obs = observe(before, event, result if isinstance(result, Result) else None, after, self.now)
        for inv in for_protocol("consumer"):
            found = inv.check(obs)
            if inv.kind == "sometimes":
                if found:
                    self.fired[inv.id] += 1
            else:
                self.violations += [(inv.id, m) for m in found]
        return result if isinstance(result, Result) else None

    # -- actions

    def tick(self, dt: int) -> None:
        self.now += dt
        self.step(AdvanceEvent(self.now), lambda: self.coord.advance(self.state, self.now))

    def send(self, c: VirtualConsumer, lost: float, delay: float) -> None:
        request = c.next_request(self.now)
        if request is None:
            return
        self.ref += 1
        ref = self.ref
        roll = self.rng.random()

        def run() -> Result:
            result = self.coord.handle_consumer_group_heartbeat(self.state, request, ref, self.now)
            response = result.deliveries[0].response
            if roll < lost:
                c.on_request_lost(self.now)
                self._perturbed()
            elif roll < lost + delay:
                self.pending[c.name] = response
            else:
                c.on_response(response, self.now)
            return result

        self.step(HeartbeatEvent(ref, request, c.name, heard=roll >= lost + delay), run)

    def deliver(self, c: VirtualConsumer) -> None:
        response = self.pending.pop(c.name, None)
        if response is not None:
            self.step(ClientEvent(c.name, "response"), lambda: c.on_response(response, self.now))

    def commit(self, c: VirtualConsumer) -> None:
        request = c.commit_request(self.now)
        if request is None:
            return
        self.ref += 1
        ref = self.ref
        self.step(
            OffsetCommitEvent(ref, request, c.name),
            lambda: self.coord.handle_offset_commit(self.state, request, ref, self.now),
        )

    def failover(self) -> None:
        def run() -> Result:
            durable = [r for r in self.records if is_durable(r)]
            self.state, armed = self.coord.failover(durable, self.now)
            self.records = durable + list(armed.records)
            return Result()

        self._perturbed()
        self.step(FailoverEvent(), run)

    def _perturbed(self) -> None:
        if self.quiet_since is not None:
            self.quiet_since = self.now

    def perturbation(self) -> None:
        self._perturbed()
        rng = self.rng
        i = rng.randrange(len(self.clients))
        c = self.clients[i]
        if c.crashed:
            kind = rng.choice(["resume", "resume", "restart"])
        elif c.state in (ClientState.FATAL, ClientState.UNSUBSCRIBED):
            kind = rng.choice(["restart", "rejoin"])
        else:
            kind = rng.choice(
                ["leave", "crash", "restart", "subscribe", "subscribe", "topic", "topic", "failover"]
            )
        if kind == "leave":
            self.step(ClientEvent(c.name, "leave"), c.leave)
        elif kind == "crash":
            self.step(ClientEvent(c.name, "crash"), c.crash)
        elif kind == "resume":
            self.step(ClientEvent(c.name, "resume"), c.resume)
        elif kind == "restart":
            self.pending.pop(c.name, None)
            self.restarts += 1

            def restart() -> None:
                self.clients[i] = self._new_client(i)

            self.step(ClientEvent(c.name, "restart"), restart)
        elif kind == "subscribe":
            topics = rng.choice([("a",), ("a", "b"), ("b", "c"), ("a", "b", "c")])
            regex = rng.choice([None, None, "[ab]"]) if c.version >= 1 else None
            self.step(ClientEvent(c.name, "subscribe"), lambda: c.subscribe(() if regex else topics, regex))
        elif kind == "rejoin":
            self.step(ClientEvent(c.name, "subscribe"), lambda: c.subscribe(c.topics, c.regex))
        elif kind == "failover":
            self.failover()
        else:
            action = rng.choice(["create", "delete", "add_partitions"])
            if action == "create":
                name = rng.choice(["c", "d"])
                if name not in self.state.topics:
                    self.step(
                        TopicEvent("create", name, 2), lambda: self.coord.create_topic(self.state, name, 2)
                    )
            elif action == "delete":
                name = rng.choice(["c", "d"])
                if name in self.state.topics:
                    self.step(TopicEvent("delete", name), lambda: self.coord.delete_topic(self.state, name))
            else:
                name = rng.choice(["a", "b"])
                total = self.state.topics[name] + 1
                if total <= 6:
                    self.step(
                        TopicEvent("add_partitions", name, total),
                        lambda: self.coord.add_partitions(self.state, name, total),
                    )

    def run(self, steps: int) -> None:
        rng = self.rng
        for _ in range(steps):
            roll = rng.random()
            c = rng.choice(self.clients)
            if roll < 0.25:
                self.tick(rng.choice([0, 50, 100, 200, 400]))
            elif roll < 0.70:
                self.send(c, self.lost, 0.1)
            elif roll < 0.80:
                self.deliver(c)
            elif roll < 0.88:
                self.step(ClientEvent(c.name, "reconcile"), c.complete_reconciliation)
            elif roll < 0.92:
                self.commit(c)
            elif roll < 0.92 + self.perturb:
                self.perturbation()
            else:
                self.tick(rng.choice([10, 100]))

    def settle(self) -> None:
        """Fair scheduling without perturbations until the convergence bound has passed."""
        for c in self.clients:
            self.deliver(c)
        self.quiet_since = self.now
        self.bound = self.config.session_timeout_ms + 1500 + 20 * self.config.heartbeat_interval_ms
        end = self.now + self.bound + 2000
        while self.now < end:
            self.tick(100)
            for c in self.clients:
                if c.state == ClientState.RECONCILING:
                    self.step(ClientEvent(c.name, "reconcile"), c.complete_reconciliation)
                self.send(c, 0.0, 0.0)

    def assert_clean(self) -> None:
        assert not self.violations, self.violations[:5]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_walk_checks_every_invariant_after_every_step(seed: int) -> None:
    sim = Simulation(seed)
    sim.run(4000)
    assert sim.steps > 2000
    sim.settle()
    sim.assert_clean()
    assert replay(sim.records) == sim.state
    assert sum(sim.fired.values()) > 0


def test_random_walk_sometimes_entries_fire() -> None:
    fired: Counter[str] = Counter()
    for seed in (1, 2, 3, 4):
        sim = Simulation(seed, perturb=0.06)
        sim.run(800)
        fired += sim.fired
    assert fired["consumer.sometimes_revocation"] > 0
    assert fired["consumer.sometimes_static_rejoin"] > 0


def test_random_walk_finds_the_kafka_16147_mutant() -> None:
    found: set[str] = set()
    for seed in range(1, 6):
        sim = Simulation(seed, coordinator_cls=PendingRevocationIsFree, lost=0.0, perturb=0.02)
        sim.run(600)
        found |= {v[0] for v in sim.violations}
        if "consumer.single_partition_holder" in found:
            break
    assert "consumer.single_partition_holder" in found


def test_current_assignment_record_roundtrip() -> None:
    h = Harness()
    ok(h.hb(join("m1")))
    recs = [r for r in h.records if isinstance(r, CurrentAssignmentRecord)]
    assert recs and all(r.durable for r in recs)
    assert not TimerScheduled.durable and not TimerCancelled.durable


@pytest.mark.parametrize("bump", [False, True])
def test_kafka_19974_member_keeps_its_epoch_when_it_must_revoke_again(bump: bool) -> None:
    """Found against Apache Kafka 4.4.0 (consumer ci profile, seed 1): a member acknowledges a
    revocation after the target moved on and must revoke again. Since KAFKA-19974 (apache/kafka PR
    #21107) it stays UNREVOKED_PARTITIONS at its own member epoch; before it took epoch + 1."""
    config = ConsumerCoordinatorConfig(bump_after_revocation=bump)
    h = Harness(ConsumerCoordinator(config, SeededChooser(1)), topics={"t": 4}, check=not bump)
    first = ok(h.hb(join("m1", server_assignor="range")))
    e1 = first.member_epoch
    assert first.assigned() == P("t", 0, 1, 2, 3)
    ok(h.hb(join("m2", server_assignor="range")))
    r = ok(h.hb(beat("m1", e1, P("t", 0, 1, 2, 3))))  # target {t-0, t-1}: revoke t-2, t-3
    assert r.member_epoch == e1 and r.assigned() == P("t", 0, 1)
    ok(h.hb(join("m3", server_assignor="range")))
    ok(h.hb(join("m4", server_assignor="range")))  # target of m1 is now {t-0}
    r = ok(h.hb(beat("m1", e1, P("t", 0, 1))))  # acknowledges t-2, t-3; still owns t-1
    assert r.assigned() == P("t", 0)
    assert h.member("m1").state == MemberState.UNREVOKED_PARTITIONS
    assert r.member_epoch == (e1 + 1 if bump else e1)
    if bump:  # the old rule hands out an epoch no target assignment carries
        assert "consumer.member_epoch_is_assignment_epoch" in {v[0] for v in h.violations}
    assert ConsumerCoordinatorConfig().bump_after_revocation is False  # Kafka 4.4.0 is the default
