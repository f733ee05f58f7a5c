"""KIP-848 and mixed-group coordinator mutants of conformance/mutants/heldout2_consumer.py
(specs/bugs-heldout.yaml): each answers or records differently from the reference model on a short
scripted request sequence."""

from __future__ import annotations

from typing import Any

from conformance.mutants import get_mutant, heldout_mutants
from conformance.mutants.heldout2_consumer import (
    HELDOUT2_CONSUMER_MUTANTS,
    HELDOUT2_MIXED_MUTANTS,
    AssignmentWhenOwnedReported,
    ClassicCommitConsumerErrors,
    EmptySubscriptionBreaksUniform,
    ExtraSlotsByMemberOrder,
    RevocationRestartsOnNewTarget,
)
from conformance.protocols.mixed.trace import make_mixed_run
from model.classic.messages import JoinGroupRequest, OffsetCommitPartition
from model.classic.messages import OffsetCommitRequest as ClassicOffsetCommitRequest
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from model.consumer.state import REBALANCE, ConsumerCoordinatorState, MemberState
from model.embedded import Subscription, encode_subscription
from model.errors import ErrorCode
from model.mixed.coordinator import MixedConfig, MixedCoordinator
from model.mixed.state import MixedState


class Script:
    """A consumer coordinator with topic ``t`` (3 partitions); every answer kept."""

    def __init__(self, cls: type[ConsumerCoordinator]) -> None:
        self.coord, self.state, self.ref = cls(), ConsumerCoordinatorState(), 0
        self.coord.create_topic(self.state, "t", 3)

    def send(self, request: ConsumerGroupHeartbeatRequest, now: int) -> ConsumerGroupHeartbeatResponse:
        self.ref += 1
        result = self.coord.handle_consumer_group_heartbeat(self.state, request, self.ref, now)
        (delivery,) = result.deliveries
        response = delivery.response
        assert isinstance(response, ConsumerGroupHeartbeatResponse) and response.error_code == 0
        return response


def join(member: str) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        "g", member, 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t",), topic_partitions=()
    )


def heartbeat(member: str, epoch: int, owned: tuple[int, ...]) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest("g", member, epoch, topic_partitions=(TopicPartitions("t", owned),))


def owned_of(response: ConsumerGroupHeartbeatResponse) -> tuple[int, ...]:
    return tuple(sorted(p for tp in response.assignment or () for p in tp.partitions))


def test_every_mutant_is_registered_as_a_heldout_consumer_mutant() -> None:
    for mutant in HELDOUT2_CONSUMER_MUTANTS:
        assert heldout_mutants()[mutant.name] is mutant
        assert get_mutant(mutant.name, mutant.protocol).coordinator is not None
        assert mutant.coordinator is not None and mutant.coordinator.__doc__


# ---------------------------------------------------------------------------------- uniform assignor


def second_member_joins(cls: type[ConsumerCoordinator]) -> dict[str, list[int]]:
    """m2 holds t-0..t-2; m1 (earlier in member-id order) joins: one partition has to move."""
    s = Script(cls)
    first = s.send(join("m2"), 0)
    s.send(heartbeat("m2", first.member_epoch, owned_of(first)), 1)
    s.send(join("m1"), 2)
    target = s.state.groups["g"].target
    return {m: sorted(p for _, p in target[m]) for m in sorted(target)}


def test_uniform_assignor_gives_the_extra_partition_to_the_member_already_holding_it() -> None:
    assert get_mutant("kafka-18688", "consumer").coordinator is ExtraSlotsByMemberOrder
    assert second_member_joins(ConsumerCoordinator) == {"m1": [2], "m2": [0, 1]}
    # the extra slot goes to m1 by member order: m2 gives up two partitions where one would do
    assert second_member_joins(ExtraSlotsByMemberOrder) == {"m1": [1, 2], "m2": [0]}


# ---------------------------------------------------------------------------------- reconciliation


def new_target_while_revoking(cls: type[ConsumerCoordinator]) -> Any:
    """m1 holds t-0..t-2; m2 joins and m1 starts revoking one partition at t=3; m3 joins (a new
    target) and m1 heartbeats at t=20, still owning all three."""
    s = Script(cls)
    first = s.send(join("m1"), 0)
    s.send(heartbeat("m1", first.member_epoch, owned_of(first)), 1)
    s.send(join("m2"), 2)
    revoking = s.send(heartbeat("m1", first.member_epoch, owned_of(first)), 3)
    s.send(join("m3"), 10)
    s.send(heartbeat("m1", revoking.member_epoch, owned_of(first)), 20)
    group = s.state.groups["g"]
    member = group.members["m1"]
    return (
        member.state,
        sorted(p for _, p in member.assigned),
        sorted(p for _, p in member.pending_revocation),
        group.timers[(REBALANCE, "m1")].deadline,
    )


def test_unfinished_revocation_keeps_its_rebalance_deadline_when_a_new_target_arrives() -> None:
    assert get_mutant("kafka-16249", "consumer").coordinator is RevocationRestartsOnNewTarget
    unrevoked = MemberState.UNREVOKED_PARTITIONS
    assert new_target_while_revoking(ConsumerCoordinator) == (unrevoked, [0, 1], [2], 3 + 30_000)
    # the new target restarts the revocation (two partitions now) and its deadline from t=20
    assert new_target_while_revoking(RevocationRestartsOnNewTarget) == (unrevoked, [0], [1, 2], 20 + 30_000)


def test_heldout_mixed_mutants_resolve_as_mixed_mutant_variants() -> None:
    for name, cls in HELDOUT2_MIXED_MUTANTS.items():
        mutant = get_mutant(name, "mixed")
        assert mutant.coordinator is cls and mutant.variants == (("mixed_mutant", name),)
        run = make_mixed_run({}, {"mixed_mutant": name}, "test")
        assert type(run.coordinator) is cls


# ---------------------------------------------------------------------------------- heterogeneous uniform


def member_without_existing_topic_joins(cls: type[ConsumerCoordinator]) -> Any:
    """m1 subscribes to t; m2 joins subscribed to u, a topic that does not exist."""
    s = Script(cls)
    s.send(join("m1"), 0)
    request = ConsumerGroupHeartbeatRequest(
        "g", "m2", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("u",), topic_partitions=()
    )
    s.ref += 1
    (delivery,) = s.coord.handle_consumer_group_heartbeat(s.state, request, s.ref, 10).deliveries
    return delivery.response.error_code, sorted(s.state.groups["g"].members)


def test_member_subscribed_to_no_existing_topic_joins_a_heterogeneous_uniform_group() -> None:
    assert get_mutant("kafka-16930", "consumer").coordinator is EmptySubscriptionBreaksUniform
    assert member_without_existing_topic_joins(ConsumerCoordinator) == (ErrorCode.NONE, ["m1", "m2"])
    # the assignor fails: the join is refused and m2 never becomes a member
    broken = member_without_existing_topic_joins(EmptySubscriptionBreaksUniform)
    assert broken == (ErrorCode.UNKNOWN_SERVER_ERROR, ["m1"])


# ---------------------------------------------------------------------------------- responses


def acknowledgement_answer(cls: type[ConsumerCoordinator]) -> Any:
    """m1 holds t-0..t-2 and is told to revoke one for m2; it acknowledges with an incremental
    heartbeat that reports only its owned partitions."""
    s = Script(cls)
    first = s.send(join("m1"), 0)
    stable = s.send(heartbeat("m1", first.member_epoch, owned_of(first)), 1)
    s.send(join("m2"), 2)
    revoking = s.send(heartbeat("m1", stable.member_epoch, owned_of(first)), 3)
    kept = owned_of(revoking)
    settled = s.send(heartbeat("m1", revoking.member_epoch, kept), 4)
    again = s.send(heartbeat("m1", settled.member_epoch, kept), 5)
    return kept, settled.assignment, again.assignment


def test_heartbeat_reporting_owned_partitions_gets_no_assignment_unless_it_changed() -> None:
    assert get_mutant("kafka-16367", "consumer").coordinator is AssignmentWhenOwnedReported
    kept, settled, again = acknowledgement_answer(ConsumerCoordinator)
    assert len(kept) == 2 and settled is None and again is None
    kept, settled, again = acknowledgement_answer(AssignmentWhenOwnedReported)
    assert settled == again == (TopicPartitions("t", kept),)


# ---------------------------------------------------------------------------------- mixed groups


def stale_classic_commit(cls: type[MixedCoordinator], version: int) -> ErrorCode:
    """A consumer group with a consumer-protocol member and a classic member (epoch 2); the classic
    member commits with generation 1."""
    state, ref = MixedState(), 0
    coord = cls(MixedConfig())
    coord.create_topic(state, "t", 3)

    def send(request: Any, now: int) -> Any:
        nonlocal ref
        ref += 1
        (delivery,) = coord.handle(state, request, ref, now).deliveries
        return delivery.response

    assert send(join("m1"), 0).error_code == ErrorCode.NONE
    subscription = encode_subscription(Subscription(("t",)))
    joined = send(JoinGroupRequest("g", "", "consumer", (("range", subscription),), version=3), 1)
    assert joined.error == ErrorCode.NONE and joined.generation_id > 1
    commit = ClassicOffsetCommitRequest(
        "g", joined.generation_id - 1, joined.member_id, (OffsetCommitPartition("t", 0, 5),), version=version
    )
    ((_, _, code),) = send(commit, 2).partitions
    return code


def test_classic_member_stale_commit_in_a_consumer_group_is_illegal_generation() -> None:
    assert HELDOUT2_MIXED_MUTANTS["kafka-pr-16145"] is ClassicCommitConsumerErrors
    for version in (8, 9):
        assert stale_classic_commit(MixedCoordinator, version) == ErrorCode.ILLEGAL_GENERATION
    assert stale_classic_commit(ClassicCommitConsumerErrors, 8) == ErrorCode.UNSUPPORTED_VERSION
    assert stale_classic_commit(ClassicCommitConsumerErrors, 9) == ErrorCode.STALE_MEMBER_EPOCH
