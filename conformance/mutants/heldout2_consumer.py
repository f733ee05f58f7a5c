"""KIP-848 coordinator mutants of the second (held-out) bug catalogue, docs/bug-catalogue-heldout.md:
the server-side assignors, reconciliation and heartbeat responses of a consumer group, and the
offset commits of classic members inside one (mixed groups).

Each class overrides one rule of `model.consumer.coordinator.ConsumerCoordinator` (or, for the mixed
one, of `model.mixed.classic_requests.MixedConsumerCoordinator`, run as the variant
``mixed_mutant=NAME`` like `conformance.mutants.heldout_mixed`) and reproduces one real bug the first
catalogue was not built for; ``specs/bugs-heldout.yaml`` names the source of each.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.mutants.base import Mutant
from model.consumer.assignors import AssignmentMember, AssignorError, GroupAssignment, uniform_homogeneous
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatRequest, OffsetCommitRequest
from model.consumer.records import current_assignment_record
from model.consumer.state import ConsumerCoordinatorState, ConsumerMember, MemberState
from model.errors import ErrorCode
from model.mixed.classic_requests import MixedConsumerCoordinator
from model.mixed.coordinator import MixedCoordinator

# ---------------------------------------------------------------------------------- assignors


class ExtraSlotsByMemberOrder(ConsumerCoordinator):
    """KAFKA-18688: the uniform assignor with homogeneous subscriptions gives the P mod N extra
    partitions to the first members in iteration order instead of to members that already hold
    one more, so a balanced target is reshuffled and partitions move for nothing."""

    def run_assignor(
        self, name: str, members: dict[str, AssignmentMember], topics: dict[str, int], homogeneous: bool
    ) -> GroupAssignment:
        if name == "uniform" and homogeneous:
            return uniform_homogeneous(members, topics, extra_to_retained=False)
        return super().run_assignor(name, members, topics, homogeneous)


class EmptySubscriptionBreaksUniform(ConsumerCoordinator):
    """KAFKA-16930: the uniform assignor with heterogeneous subscriptions fails (Kafka: a
    NullPointerException while balancing) when a member subscribes to no existing topic while others
    do, so every heartbeat that computes the target assignment is answered UNKNOWN_SERVER_ERROR and
    that member can never join."""

    def run_assignor(
        self, name: str, members: dict[str, AssignmentMember], topics: dict[str, int], homogeneous: bool
    ) -> GroupAssignment:
        specs = members.values()
        if name == "uniform" and not homogeneous and any(m.subscribed for m in specs):
            if any(not m.subscribed for m in specs):
                raise AssignorError("a member without subscribed topics has no assignment to balance")
        return super().run_assignor(name, members, topics, homogeneous)


# ---------------------------------------------------------------------------------- reconciliation


class RevocationRestartsOnNewTarget(ConsumerCoordinator):
    """KAFKA-16249: a member still revoking when a new target is installed restarts its
    reconciliation from that target (assigned + pending revocation against the new target), without
    looking at what it reports owning, and the rebalance timeout is armed again from now, so a
    stream of new targets keeps a slow revocation from ever timing out."""

    def reconcile_member(
        self,
        txn: Any,
        member: ConsumerMember,
        owned: Any,
        now: int,
        subscription_changed: bool = False,
    ) -> ConsumerMember:
        if member.state != MemberState.UNREVOKED_PARTITIONS:
            return super().reconcile_member(txn, member, owned, now, subscription_changed)
        group = txn.require_group()
        target = group.target_of(member.member_id)
        if self.config.reconcile_to_subscription:
            topics = self.subscribed_topic_ids(txn.scratch, group, member)
            target = frozenset(tp for tp in target if tp[0] in topics)
        held = member.assigned | member.pending_revocation
        keep, revoke = held & target, held - target
        if not revoke or (keep, revoke) == (member.assigned, member.pending_revocation):
            return super().reconcile_member(txn, member, owned, now, subscription_changed)
        restarted = replace(member, assigned=keep, pending_revocation=revoke)
        txn.emit(current_assignment_record(txn.group_id, restarted))
        self.schedule_rebalance_timeout(txn, restarted, now)
        return restarted


# ---------------------------------------------------------------------------------- responses


class AssignmentWhenOwnedReported(ConsumerCoordinator):
    """KAFKA-16367: the coordinator decides that a heartbeat is a full request from its owned
    partitions alone, so every heartbeat that reports owned partitions (a revocation acknowledged,
    say) is answered with the whole assignment, whether or not anything changed."""

    def assignment_in_response(
        self, request: ConsumerGroupHeartbeatRequest, before: ConsumerMember, after: ConsumerMember
    ) -> bool:
        return (
            request.member_epoch == 0
            or request.topic_partitions is not None
            or before.assigned != after.assigned
        )


# ---------------------------------------------------------------------------------- mixed groups


class _ClassicCommitConsumerErrors(MixedConsumerCoordinator):
    def offset_commit_group_error(
        self, state: ConsumerCoordinatorState, request: OffsetCommitRequest
    ) -> ErrorCode | None:
        error = super().offset_commit_group_error(state, request)
        group = state.groups.get(request.group_id)
        member = None if group is None else group.members.get(request.member_id)
        if member is None or member.classic is None or error != ErrorCode.ILLEGAL_GENERATION:
            return error
        return ErrorCode.STALE_MEMBER_EPOCH if request.version >= 9 else ErrorCode.UNSUPPORTED_VERSION


class ClassicCommitConsumerErrors(MixedCoordinator):
    """apache/kafka PR #16145: a classic member of a consumer group committing offsets with a stale
    generation is answered as a consumer-protocol member would be: STALE_MEMBER_EPOCH (OffsetCommit
    v9+) or UNSUPPORTED_VERSION (older versions), errors a classic consumer does not take as a
    signal to rejoin, instead of ILLEGAL_GENERATION."""

    consumer_class = _ClassicCommitConsumerErrors


def _m(name: str, fault: str, source: str, **parts: Any) -> Mutant:
    return Mutant(name, "consumer", "heldout", fault, source, (), **parts)


#: mixed mutants, resolved by the variant ``mixed_mutant=NAME`` (`conformance.protocols.mixed.trace`)
HELDOUT2_MIXED_MUTANTS: dict[str, type[MixedCoordinator]] = {
    "kafka-pr-16145": ClassicCommitConsumerErrors,
}

HELDOUT2_CONSUMER_MUTANTS: tuple[Mutant, ...] = (
    _m(
        "kafka-18688",
        "the uniform assignor gives the extra partitions by member order, moving partitions needlessly",
        "KAFKA-18688 / apache/kafka PR #19677",
        coordinator=ExtraSlotsByMemberOrder,
    ),
    _m(
        "kafka-16249",
        "a new target restarts an unfinished revocation and re-arms the rebalance timeout",
        "KAFKA-16249 / apache/kafka PR #15364",
        coordinator=RevocationRestartsOnNewTarget,
    ),
    _m(
        "kafka-16930",
        "the heterogeneous uniform assignor fails when a member subscribes to no existing topic",
        "KAFKA-16930 / apache/kafka PR #16283",
        coordinator=EmptySubscriptionBreaksUniform,
    ),
    _m(
        "kafka-16367",
        "every heartbeat reporting owned partitions is answered with the full assignment",
        "KAFKA-16367 / apache/kafka PR #15533",
        coordinator=AssignmentWhenOwnedReported,
    ),
    Mutant(
        "kafka-pr-16145",
        "mixed",
        "heldout",
        "a classic member's stale commit in a consumer group gets STALE_MEMBER_EPOCH or UNSUPPORTED_VERSION",
        "apache/kafka PR #16145",
        (),
        coordinator=ClassicCommitConsumerErrors,
        variants=(("mixed_mutant", "kafka-pr-16145"),),
    ),
)

__all__ = ["HELDOUT2_CONSUMER_MUTANTS", "HELDOUT2_MIXED_MUTANTS"]
