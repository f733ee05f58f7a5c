"""KIP-848 mutants: catalogue rows on the consumer protocol (coordinator and virtual consumer) and a
generic fencing fault.

Each class overrides one rule of `model.consumer.coordinator.ConsumerCoordinator` or of
`model.consumer.client.VirtualConsumer`. Sources: ``docs/bug-catalogue.md`` (rows
cited per mutant), docs/protocol-reference.md#b2 to #b12, #e15 to #e28.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.mutants.base import Mutant
from model.consumer.client import ClientState, VirtualConsumer
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.ids import new_member_id
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartition,
    TopicPartitions,
    to_topic_partitions,
)
from model.consumer.state import LEAVE_GROUP_MEMBER_EPOCH, ConsumerGroup, ConsumerMember
from model.result import Result

# ---------------------------------------------------------------------------------- coordinator


class PendingRevocationIsFree(ConsumerCoordinator):
    """KAFKA-16147 (row 5): a partition pending revocation loses its partition epoch, so the coordinator
    hands it to its new owner while the old one still holds it (docs/protocol-reference.md#b5; PR #15212)."""

    def current_partition_epoch(self, group: ConsumerGroup, tp: TopicPartition) -> int:
        if any(tp in m.assigned for m in group.members.values()):
            return group.current_partition_epoch(tp)
        return -1


class OwnPendingCountsAsHeld(ConsumerCoordinator):
    """KAFKA-19449 (row 6): reconciliation counts a partition the member itself has pending
    revocation as held by another member, so a member whose target gives that partition back waits
    (UNRELEASED_PARTITIONS) one heartbeat for itself: Kafka 4.0/4.1 before apache/kafka PR #20781
    (the model's `own_pending_is_free=False`)."""

    def reconcile_member(
        self, txn: Any, member: ConsumerMember, owned: Any, now: int, subscription_changed: bool = False
    ) -> ConsumerMember:
        fixed = self.config
        self.config = replace(fixed, own_pending_is_free=False)
        try:
            return super().reconcile_member(txn, member, owned, now, subscription_changed)
        finally:
            self.config = fixed


class EpochZeroRejoinFenced(ConsumerCoordinator):
    """KAFKA-19233 (row 7): an epoch-0 rejoin of a member the coordinator still holds at a higher
    epoch is epoch-checked and answered FENCED_MEMBER_EPOCH, so a fenced member cannot rejoin until
    its session expires: Kafka 4.0 before apache/kafka PR #21305 (`epoch_zero_rejoin=False`)."""

    def validate_member_epoch(self, member: ConsumerMember, request: ConsumerGroupHeartbeatRequest) -> None:
        fixed = self.config
        self.config = replace(fixed, epoch_zero_rejoin=False)
        try:
            super().validate_member_epoch(member, request)
        finally:
            self.config = fixed


class JoinAlwaysNewId(ConsumerCoordinator):
    """KAFKA-17116 (row 8): every epoch-0 join gets a coordinator-generated member id, as v0 did, so
    a join whose response is lost leaves a ghost member and each retry adds one (KIP-1082, docs/protocol-reference.md#b9)."""

    def assign_member_id(self, request: ConsumerGroupHeartbeatRequest) -> str:
        if request.member_epoch == 0:
            return new_member_id(self.chooser)
        return super().assign_member_id(request)


class CommitOnlyWhenReconciled(ConsumerCoordinator):
    """KAFKA-20066 (row 10): commit validation stricter than the exact epoch: a member still
    reconciling (its epoch is current but its assignment is not) is fenced (KIP-1251; docs/protocol-reference.md#b12)."""

    def offset_commit_group_error(self, state: Any, request: Any) -> Any:
        error = super().offset_commit_group_error(state, request)
        group = state.groups.get(request.group_id)
        member = None if group is None else group.members.get(request.member_id)
        if error is None and member is not None and member.state.value != "STABLE":
            from model.errors import ErrorCode

            return ErrorCode.STALE_MEMBER_EPOCH
        return error


class DuplicatedPartitionInResponse(ConsumerCoordinator):
    """Row 19 (franz-go kfake group848 D2): the assignment in a heartbeat response lists one partition
    twice (docs/protocol-reference.md#d: TopicPartitions is a set of partitions per topic)."""

    def handle_consumer_group_heartbeat(
        self, state: Any, request: ConsumerGroupHeartbeatRequest, ref: int, now: int
    ) -> Result:
        result = super().handle_consumer_group_heartbeat(state, request, ref, now)
        for i, d in enumerate(result.deliveries):
            r = d.response
            if isinstance(r, ConsumerGroupHeartbeatResponse) and r.assignment:
                first = r.assignment[0]
                if first.partitions:
                    doubled = TopicPartitions(first.topic, (*first.partitions, first.partitions[0]))
                    result.deliveries[i] = replace(
                        d, response=replace(r, assignment=(doubled, *r.assignment[1:]))
                    )
        return result


class NoEpochCheck(ConsumerCoordinator):
    """Generic (skip a fencing check): heartbeats are not validated against the member epoch (docs/protocol-reference.md#b6 row
    12; GMM L1362)."""

    def validate_member_epoch(self, member: ConsumerMember, request: ConsumerGroupHeartbeatRequest) -> None:
        return None


class LeaveWithoutBump(ConsumerCoordinator):
    """Generic (skip a generation bump): a fence (leave -1, session or rebalance timeout) does not bump
    the group epoch, so the departed member's partitions stay outside every target (docs/protocol-reference.md#b4; GMM
    `consumerGroupFenceMember` L3087). Also the z3 broken variant ``leave_bump=false``."""

    def bump_after_fence(self, txn: Any, group: ConsumerGroup) -> None:
        return None


# ---------------------------------------------------------------------------------- clients


class RejoinsBeforeReleasing(VirtualConsumer):
    """KAFKA-16251 (row 9): a fenced consumer sends its rejoin while its partitions are still being
    released (it keeps consuming them until the join is answered) (PR #15392; client.py docstring)."""

    def _rejoin(self) -> None:
        keep = self.owned
        super()._rejoin()
        self.owned = keep

    def next_request(self, now: int) -> ConsumerGroupHeartbeatRequest | None:
        keep = self.owned if self.state == ClientState.JOINING else None
        request = super().next_request(now)
        if keep is not None and request is not None:
            self.owned = keep  # the join reports nothing owned, but the callbacks have not run yet
        return request


class StaticLeavesWithMinusOne(VirtualConsumer):
    """thomhurst/Dekaf#1348 (docs/bug-catalogue.md#row-20): a static member closes with epoch -1 (a
    permanent leave) instead of -2, so every restart rebalances (KIP-848, docs/protocol-reference.md#b7;
    Kafka ConsumerMembershipManager leaveGroupEpoch)."""

    def _leave_request(self) -> ConsumerGroupHeartbeatRequest | None:
        request = super()._leave_request()
        if request is not None and self.instance_id is not None:
            request = replace(request, member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
        return request


CONSUMER_MUTANT_LIST: tuple[Mutant, ...] = (
    Mutant(
        "kafka-16147",
        "consumer",
        "catalogue",
        "a partition pending revocation is re-assigned before the revocation completes",
        "docs/bug-catalogue.md#row-5: KAFKA-16147 / apache/kafka PR #15212",
        ("consumer.single_partition_holder", "consumer.assign_only_free", "consumer.valid_partition_epoch"),
        row=5,
        coordinator=PendingRevocationIsFree,
    ),
    Mutant(
        "kafka-17116",
        "consumer",
        "catalogue",
        "every epoch-0 join gets a new coordinator-generated member id (ghosts on lost responses)",
        "docs/bug-catalogue.md#row-8: KAFKA-17116 / apache/kafka PR #17549 (KIP-1082)",
        ("consumer.no_ghost_member",),
        row=8,
        coordinator=JoinAlwaysNewId,
    ),
    Mutant(
        "kafka-16251",
        "consumer",
        "catalogue",
        "a fenced consumer rejoins before it has released its partitions",
        "docs/bug-catalogue.md#row-9: KAFKA-16251 / apache/kafka PR #15392",
        ("consumer.fenced_member_releases_first", "consumer.no_double_client_assignment"),
        row=9,
        client=RejoinsBeforeReleasing,
    ),
    Mutant(
        "kafka-20066",
        "consumer",
        "catalogue",
        "a commit with the member's exact epoch is rejected while the member is reconciling",
        "docs/bug-catalogue.md#row-10: KAFKA-20066 / apache/kafka PRs #21508, #21692 (KIP-1251)",
        ("consumer.offset_commit_exact_epoch",),
        row=10,
        coordinator=CommitOnlyWhenReconciled,
    ),
    Mutant(
        "kfake-d2",
        "consumer",
        "catalogue",
        "a heartbeat response lists one assigned partition twice",
        "docs/bug-catalogue.md#row-19: franz-go kfake group848 sweep test D2",
        ("consumer.responses_well_formed",),
        row=19,
        coordinator=DuplicatedPartitionInResponse,
    ),
    Mutant(
        "kafka-19449",
        "consumer",
        "catalogue",
        "a member's own pending revocation holds back that partition's re-assignment to it",
        "docs/bug-catalogue.md#row-6: KAFKA-19449 / apache/kafka PR #20781",
        ("consumer.reconciliation_progress",),
        row=6,
        coordinator=OwnPendingCountsAsHeld,
    ),
    Mutant(
        "kafka-19233",
        "consumer",
        "catalogue",
        "an epoch-0 rejoin of a member still held at a higher epoch is fenced",
        "docs/bug-catalogue.md#row-7: KAFKA-19233 / apache/kafka PR #21305",
        ("consumer.rejoin_always_possible",),
        row=7,
        coordinator=EpochZeroRejoinFenced,
    ),
    Mutant(
        "dekaf-1348",
        "consumer",
        "catalogue",
        "a static member closes with epoch -1 instead of -2",
        "docs/bug-catalogue.md#row-20: thomhurst/Dekaf#1348",
        ("consumer.static_close_is_temporary",),
        row=20,
        client=StaticLeavesWithMinusOne,
    ),
    Mutant(
        "skip-fencing-check",
        "consumer",
        "generic",
        "heartbeats are not validated against the member epoch",
        "docs/protocol-reference.md#b6 row 12; docs/protocol-reference.md#e18; GroupMetadataManager.java L1362",
        ("consumer.epoch_fencing",),
        coordinator=NoEpochCheck,
    ),
    Mutant(
        "leave-without-bump",
        "consumer",
        "generic",
        "a fenced or departed member does not bump the group epoch",
        "docs/protocol-reference.md#b4; GroupMetadataManager.java consumerGroupFenceMember L3087",
        ("consumer.legal_target_assignment",),
        coordinator=LeaveWithoutBump,
    ),
)


# -- a fault that only shows after a coordinator failover (docs/faults.md#consumer-failover) ------


class ForgetsPendingRevocationOnLoad(ConsumerCoordinator):
    """Generic, the consumer twin of ``forget-persisted-field``: the coordinator that loads a group
    after failover drops each member's partitions pending revocation (a field of the durable
    ConsumerGroupCurrentMemberAssignment record, replayed by GroupMetadataManager ``replay``), so a
    partition its old owner has not yet released is free for its new owner. Only a failover shows it."""

    def on_loaded(self, state: Any, now: int) -> Result:
        from model.consumer.records import apply, current_assignment_record

        forgotten = []
        for gid in sorted(state.groups):
            group = state.groups[gid]
            for member_id in sorted(group.members):
                member = group.members[member_id]
                if member.pending_revocation:
                    record = current_assignment_record(gid, replace(member, pending_revocation=frozenset()))
                    apply(state, record)
                    forgotten.append(record)
        result = super().on_loaded(state, now)
        result.records[:0] = forgotten
        return result


CONSUMER_MUTANT_LIST += (
    Mutant(
        "forget-pending-revocation",
        "consumer",
        "generic",
        "after failover the loaded group has forgotten its members' partitions pending revocation",
        "KIP-848 ConsumerGroupCurrentMemberAssignment record (PartitionsPendingRevocation); "
        "GroupMetadataManager replay / onLoaded",
        ("consumer.no_double_client_assignment",),
        coordinator=ForgetsPendingRevocationOnLoad,
    ),
)


# -- assignment batching (Kafka 4.2+, group.consumer.assignment.interval.ms) ----------------------


class BatchesTwiceTheInterval(ConsumerCoordinator):
    """Generic: a batching coordinator that waits twice ``group.consumer.assignment.interval.ms``
    before the next target, so heartbeats after the interval still get the old target."""

    def schedule_assignment_interval(self, txn: Any, deadline: int) -> None:
        super().schedule_assignment_interval(txn, deadline + self.config.assignment_interval_ms)


class IgnoresAssignmentInterval(ConsumerCoordinator):
    """Generic: a coordinator configured to batch that computes a target at every epoch bump (the
    Kafka 4.0/4.1 rule) while still recording when it did."""

    def target_assignment_due(self, group: Any) -> bool:
        return bool(group.group_epoch > group.assignment_epoch)


_BATCHING = (("assignment_interval", "1000"),)
_BATCHING_SOURCE = (
    "KAFKA-20291 / apache/kafka PR #21720 (group.consumer.assignment.interval.ms, Kafka 4.2+); "
    "GroupMetadataManager.maybeUpdateTargetAssignment in Apache Kafka 4.4.0"
)
CONSUMER_MUTANT_LIST += (
    Mutant(
        "assignment-interval-doubled",
        "consumer",
        "generic",
        "a batching coordinator computes the next target only after twice the assignment interval",
        _BATCHING_SOURCE,
        ("consumer.target_computed_on_next_heartbeat",),
        coordinator=BatchesTwiceTheInterval,
        variants=_BATCHING,
    ),
    Mutant(
        "assignment-interval-ignored",
        "consumer",
        "generic",
        "a coordinator configured to batch computes a target at every group epoch bump",
        _BATCHING_SOURCE,
        ("consumer.target_computed_on_next_heartbeat",),
        coordinator=IgnoresAssignmentInterval,
        variants=_BATCHING,
    ),
)


# -- KIP-1251 commit epochs (Kafka 4.3+) ------------------------------------------------------------


class CommitEpochsExactOnly(ConsumerCoordinator):
    """Generic: a coordinator that should accept KIP-1251 commits keeps Kafka 4.0's exact-epoch rule,
    so a member whose epoch moved on while its answer was in flight is fenced."""

    def older_epoch_member(self, state: Any, request: Any) -> Any:
        return None


_KIP_1251 = (("offset_commit_epochs", "assignment"),)
_KIP_1251_SOURCE = (
    "KIP-1251; KAFKA-20066 / apache/kafka PRs #21508, #21692; "
    "ConsumerGroup.validateOffsetCommit / createAssignmentEpochValidator in Apache Kafka 4.4.0"
)
CONSUMER_MUTANT_LIST += (
    Mutant(
        "commit-epochs-exact-only",
        "consumer",
        "generic",
        "a KIP-1251 coordinator rejects a commit whose older epoch still covers the partition",
        _KIP_1251_SOURCE,
        ("consumer.offset_commit_exact_epoch",),
        coordinator=CommitEpochsExactOnly,
        variants=_KIP_1251,
    ),
)


# -- asynchronous regex resolution (Kafka 4.0+, KAFKA-17593) -----------------------------------------


class ResolvesRegexInHeartbeat(ConsumerCoordinator):
    """Generic: a coordinator meant to resolve regexes off the heartbeat path that resolves a new
    regex in the heartbeat bringing it and bumps the group epoch at once (the model's earlier
    synchronous rule, ``regex_resolution="sync"``)."""

    def join_or_heartbeat(self, txn: Any, request: ConsumerGroupHeartbeatRequest, now: int) -> Any:
        fixed = self.config
        self.config = replace(fixed, regex_resolution="sync")
        try:
            return super().join_or_heartbeat(txn, request, now)
        finally:
            self.config = fixed


CONSUMER_MUTANT_LIST += (
    Mutant(
        "regex-resolved-in-heartbeat",
        "consumer",
        "generic",
        "a new subscription regex is resolved, and bumps the group epoch, in the heartbeat that brings it",
        "KAFKA-17593 / apache/kafka PR #17864; GroupMetadataManager.maybeUpdateRegularExpressions and "
        "handleRegularExpressionsResult in Apache Kafka 4.4.0",
        ("consumer.regex_resolved_off_heartbeat", "consumer.assignment_within_subscription"),
        coordinator=ResolvesRegexInHeartbeat,
    ),
)


# -- reconciliation to the subscription (Kafka 4.1+, KAFKA-19431) ------------------------------------


class ReconcileIgnoresSubscription(ConsumerCoordinator):
    """Generic: a coordinator meant to follow KAFKA-19431 that reconciles as Kafka 4.0 did: the
    target of a topic the member no longer subscribes to still counts, and a subscription change
    alone revokes nothing (the model's ``reconcile_to_subscription=False``)."""

    def reconcile_member(
        self, txn: Any, member: ConsumerMember, owned: Any, now: int, subscription_changed: bool = False
    ) -> ConsumerMember:
        fixed = self.config
        self.config = replace(fixed, reconcile_to_subscription=False)
        try:
            return super().reconcile_member(txn, member, owned, now, subscription_changed)
        finally:
            self.config = fixed


CONSUMER_MUTANT_LIST += (
    Mutant(
        "reconcile-ignores-subscription",
        "consumer",
        "generic",
        "reconciliation ignores the member's subscription: a dropped topic's partitions wait for the next target",
        "KAFKA-19431 / apache/kafka PR #20055 (Kafka 4.1+); CurrentAssignmentBuilder "
        "updateCurrentAssignment and subscribedTopicIds in Apache Kafka 4.4.0",
        ("consumer.assignment_within_subscription",),
        coordinator=ReconcileIgnoresSubscription,
        variants=_BATCHING,
    ),
)


# -- a member's subscription held by the coordinator (KIP-848 incremental heartbeat fields) ----------


class AcksBeforeRevoking(VirtualConsumer):
    """Generic: while its revocation callbacks run, the consumer already reports the new assignment
    as owned (ConsumerGroupHeartbeatRequest.json TopicPartitions: the partitions the member owns)."""

    def _heartbeat_request(self, epoch: int, send_all: bool) -> ConsumerGroupHeartbeatRequest:
        request = super()._heartbeat_request(epoch, send_all)
        if self.state == ClientState.RECONCILING and self.target is not None and epoch > 0:
            request = replace(request, topic_partitions=to_topic_partitions(self.target))
        return request


class JoinOnlySubscription(ConsumerCoordinator):
    """Generic: the coordinator takes a member's topic names and regex from its join only; a member
    already in the group that sends new ones keeps the old (a null-field rule applied to every
    field). No group epoch bump follows, so the coordinator's own records stay consistent."""

    def updated_member(
        self, member: ConsumerMember, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerMember:
        if member.member_epoch > 0:
            request = replace(request, subscribed_topic_names=None, subscribed_topic_regex=None)
        return super().updated_member(member, request)


CONSUMER_MUTANT_LIST += (
    Mutant(
        "join-only-subscription",
        "consumer",
        "generic",
        "a subscription change sent by a member already in the group is dropped: only a join sets it",
        "KIP-848 (the heartbeat carries a changed subscription); ConsumerGroupHeartbeatRequest.json "
        "SubscribedTopicNames / SubscribedTopicRegex (null only if unchanged)",
        ("consumer.member_record_matches_client",),
        coordinator=JoinOnlySubscription,
    ),
    Mutant(
        "acks-before-revoking",
        "consumer",
        "generic",
        "a reconciling consumer reports its new assignment as owned before it has revoked what it loses",
        "KIP-848 (a revocation is acknowledged once done); ConsumerGroupHeartbeatRequest.json TopicPartitions",
        ("consumer.reports_what_it_holds",),
        client=AcksBeforeRevoking,
    ),
)
