"""The group-wide rules of the KIP-848 coordinator that every request shares: subscription
metadata, the target assignment, reconciliation of one member, timers and fencing (KIP-848;
Kafka's ``GroupMetadataManager`` methods are cited per method).
"""

from __future__ import annotations

from dataclasses import replace

from model.choice import Chooser, SeededChooser
from model.consumer.assignors import (
    ASSIGNORS,
    AssignmentMember,
    AssignorError,
    GroupAssignment,
    is_homogeneous,
    preferred_assignor,
)
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    TopicPartition,
)
from model.consumer.reconcile import CurrentAssignment, reconcile
from model.consumer.records import (
    AssignorUsedRecord,
    CurrentAssignmentTombstone,
    GroupEpochRecord,
    MemberSubscriptionTombstone,
    MetadataRefreshRecord,
    SubscriptionMetadataRecord,
    TargetAssignmentEpochRecord,
    TargetAssignmentMemberRecord,
    TargetAssignmentMemberTombstone,
    TimerCancelled,
    TimerScheduled,
    current_assignment_record,
)
from model.consumer.regex_records import RegexResolvedTombstone
from model.consumer.state import (
    ASSIGNMENT_INTERVAL,
    REBALANCE,
    SESSION,
    ConsumerCoordinatorState,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    ResolvedRegex,
    member_subscribes,
)
from model.consumer.txn import ConsumerCoordinatorConfig, _effective_regex, _Rejected, _Txn
from model.errors import ErrorCode


class GroupRules:
    """Shared steps of the coordinator's request handlers (`model.consumer.coordinator`)."""

    def __init__(
        self, config: ConsumerCoordinatorConfig | None = None, chooser: Chooser | None = None
    ) -> None:
        self.config = config or ConsumerCoordinatorConfig()
        self.chooser: Chooser = chooser or SeededChooser(0)

    def fence_member(self, txn: _Txn, member: ConsumerMember) -> None:
        """GMM `consumerGroupFenceMember` L3087: three tombstones, subscription metadata without the
        member, group epoch +1, the member's timers cancelled."""
        gid = txn.group_id
        txn.emit(CurrentAssignmentTombstone(gid, member.member_id))
        txn.emit(TargetAssignmentMemberTombstone(gid, member.member_id))
        txn.emit(MemberSubscriptionTombstone(gid, member.member_id))
        group = txn.require_group()
        metadata = self.compute_subscription_metadata(txn.scratch, group)
        if metadata != group.subscription_metadata:
            txn.emit(SubscriptionMetadataRecord(gid, tuple(sorted(metadata.items()))))
        self.forget_unused_regexes(txn)
        self.bump_after_fence(txn, group)
        group = txn.require_group()
        if not group.members and group.assignment_epoch < group.group_epoch:
            # Kafka 4.4.0 `consumerGroupFenceMembers`: when the fenced members were all the group's
            # members, the (empty) target is written at the new epoch at once (a
            # ConsumerGroupTargetAssignmentMetadata record); seen on a restart, where ConsumerGroupDescribe
            # showed an expired group Empty at assignment epoch = group epoch
            txn.emit(TargetAssignmentEpochRecord(gid, group.group_epoch))
        for kind in (SESSION, REBALANCE):
            self.cancel_timer(txn, kind, member.member_id)

    def forget_unused_regexes(self, txn: _Txn) -> None:
        """A resolution no member subscribes to any more is deleted (GMM
        ``maybeDeleteResolvedRegularExpressions`` on fencing, Apache Kafka 4.4.0)."""
        group = txn.require_group()
        used = {m.subscribed_topic_regex for m in group.members.values()}
        for regex in sorted(set(group.resolved_regexes) - used):
            txn.emit(RegexResolvedTombstone(txn.group_id, regex))

    def resolved_view(self, group: ConsumerGroup) -> dict[str, ResolvedRegex] | None:
        """The regex resolutions members' subscriptions go by: None resolves synchronously
        (``regex_resolution="sync"``), else the group's recorded ones (`member_subscribes`)."""
        return None if self.config.regex_resolution == "sync" else group.resolved_regexes

    def bump_after_fence(self, txn: _Txn, group: ConsumerGroup) -> None:
        """The group epoch +1 that makes the next target exclude the fenced member (docs/protocol-reference.md#b4)."""
        txn.emit(GroupEpochRecord(txn.group_id, group.group_epoch + 1))

    def updated_member(
        self, member: ConsumerMember, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerMember:
        """docs/protocol-reference.md#b2 step 5: provided fields replace stored ones; null / -1 mean unchanged."""
        return replace(
            member,
            instance_id=member.instance_id if request.instance_id is None else request.instance_id,
            rack_id=member.rack_id if request.rack_id is None else request.rack_id,
            rebalance_timeout_ms=(
                member.rebalance_timeout_ms
                if request.rebalance_timeout_ms == -1
                else request.rebalance_timeout_ms
            ),
            server_assignor=member.server_assignor
            if request.server_assignor is None
            else request.server_assignor,
            subscribed_topic_names=(
                member.subscribed_topic_names
                if request.subscribed_topic_names is None
                else frozenset(request.subscribed_topic_names)
            ),
            subscribed_topic_regex=(
                member.subscribed_topic_regex
                if request.subscribed_topic_regex is None
                else request.subscribed_topic_regex
            ),
        )

    def group_epoch_bump_due(
        self, group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember
    ) -> bool:
        """docs/protocol-reference.md#b4: a new group (epoch 0), or the member's subscribed names or regex changed."""
        return group.group_epoch == 0 or self.subscription_changed(member, updated)

    def subscription_changed(self, member: ConsumerMember, updated: ConsumerMember) -> bool:
        """GMM `hasMemberSubscriptionChanged` L2294 (names); under ``regex_resolution="sync"`` any
        regex change too (under "async" `RegexRules.update_regular_expressions` decides)."""
        names = member.subscribed_topic_names != updated.subscribed_topic_names
        if self.config.regex_resolution != "sync":
            return names
        return names or _effective_regex(member) != _effective_regex(updated)

    def maybe_update_subscription_metadata(self, txn: _Txn, bump: bool, changed: bool = False) -> None:
        """docs/protocol-reference.md#b2 step 6: on a bump, a subscription change (``changed``: a regex
        updated, still unresolved) or a due refresh, recompute the subscription metadata; a change also
        bumps. The epoch record follows the metadata record (GMM `updateSubscriptionMetadata`)."""
        group = txn.require_group()
        refresh_due = group.metadata_refresh_due
        if not (bump or changed or refresh_due):
            return
        self.update_subscription_metadata(txn, bump)
        if refresh_due:
            txn.emit(MetadataRefreshRecord(txn.group_id, False))

    def update_subscription_metadata(self, txn: _Txn, bump: bool) -> None:
        """GMM `updateSubscriptionMetadata`: write the recomputed subscription metadata when it
        changed, then the group epoch + 1 when it changed or ``bump``."""
        group = txn.require_group()
        metadata = self.compute_subscription_metadata(txn.scratch, group)
        if metadata != group.subscription_metadata:
            bump = True
            txn.emit(SubscriptionMetadataRecord(txn.group_id, tuple(sorted(metadata.items()))))
        if bump:
            txn.emit(GroupEpochRecord(txn.group_id, group.group_epoch + 1))

    def subscribed_topic_ids(
        self, state: ConsumerCoordinatorState, group: ConsumerGroup, member: ConsumerMember
    ) -> frozenset[str]:
        """CAB `subscribedTopicIds` (KAFKA-19431): the member's topics that exist in the image."""
        return frozenset(t for t in self.subscribed_topics(state, group, member) if t in state.topics)

    def subscribed_topics(
        self, state: ConsumerCoordinatorState, group: ConsumerGroup, member: ConsumerMember
    ) -> frozenset[str]:
        """The member's subscription: names (existing or not) plus its regex's topics in the image
        (matched now, or as last resolved: `resolved_view`)."""
        regex = _effective_regex(member)
        denied, resolved = self.config.topic_describe_denied, self.resolved_view(group)
        matched = (
            frozenset(t for t in state.topics if member_subscribes(member, t, denied, resolved))
            if regex
            else frozenset()
        )
        return member.subscribed_topic_names | matched

    def compute_subscription_metadata(
        self, state: ConsumerCoordinatorState, group: ConsumerGroup
    ) -> dict[str, int]:
        """CoG `computeSubscriptionMetadata`: partition count of every subscribed topic that exists."""
        wanted: set[str] = set()
        for member in group.members.values():
            wanted |= self.subscribed_topics(state, group, member)
        return {t: state.topics[t] for t in sorted(wanted) if t in state.topics}

    def target_assignment_due(self, group: ConsumerGroup) -> bool:
        """GMM L1769: computed lazily when the group epoch is ahead of the assignment epoch; with
        assignment batching (Kafka 4.2+) not while the assignment interval runs (`ASSIGNMENT_INTERVAL`)."""
        return group.group_epoch > group.assignment_epoch and (ASSIGNMENT_INTERVAL, "") not in group.timers

    def select_assignor(self, group: ConsumerGroup) -> str:
        """docs/protocol-reference.md#b11 selection (CoG L597), ties through the Chooser."""
        return preferred_assignor(
            (m.server_assignor for m in sorted(group.members.values(), key=lambda m: m.member_id)),
            self.config.assignors,
            self.chooser,
        )

    def assignment_specs(
        self, state: ConsumerCoordinatorState, group: ConsumerGroup
    ) -> dict[str, AssignmentMember]:
        denied, resolved = self.config.topic_describe_denied, self.resolved_view(group)
        return {
            m.member_id: AssignmentMember(
                member_id=m.member_id,
                subscribed=frozenset(
                    t for t in group.subscription_metadata if member_subscribes(m, t, denied, resolved)
                ),
                current=group.target_of(m.member_id),
                instance_id=m.instance_id,
                rack_id=m.rack_id,
            )
            for m in group.members.values()
        }

    def run_assignor(
        self, name: str, members: dict[str, AssignmentMember], topics: dict[str, int], homogeneous: bool
    ) -> GroupAssignment:
        return ASSIGNORS[name](members, topics, homogeneous)

    def compute_target_assignment(self, txn: _Txn, now: int | None = None) -> None:
        """TAB `build` L434-509: run the assignor for the whole group; write only changed members,
        then the assignment epoch. An assignor failure is UNKNOWN_SERVER_ERROR (row 14). With
        assignment batching the epoch record carries ``now`` and the assignment interval starts."""
        group = txn.require_group()
        name = self.select_assignor(group)
        homogeneous = is_homogeneous(
            self.subscribed_topics(txn.scratch, group, m) for m in group.members.values()
        )
        specs = self.assignment_specs(txn.scratch, group)
        try:
            assignment = self.run_assignor(name, specs, dict(group.subscription_metadata), homogeneous)
        except AssignorError as exc:
            raise _Rejected(ErrorCode.UNKNOWN_SERVER_ERROR, f"assignor {name} failed: {exc}") from None
        for member_id in sorted(assignment):
            if assignment[member_id] != group.target_of(member_id):
                txn.emit(
                    TargetAssignmentMemberRecord(
                        txn.group_id, member_id, tuple(sorted(assignment[member_id]))
                    )
                )
        interval = self.config.assignment_interval_ms
        batching = interval > 0 and now is not None
        txn.emit(TargetAssignmentEpochRecord(txn.group_id, group.group_epoch, now if batching else None))
        txn.emit(AssignorUsedRecord(txn.group_id, name))
        if batching:
            assert now is not None
            self.schedule_assignment_interval(txn, now + interval)

    def schedule_assignment_interval(self, txn: _Txn, deadline: int) -> None:
        """No new target before ``deadline`` (`ASSIGNMENT_INTERVAL`; when it fires, nothing else happens:
        the next heartbeat computes the target, GMM `maybeUpdateTargetAssignment` in Kafka 4.4.0)."""
        txn.emit(TimerScheduled(txn.group_id, ASSIGNMENT_INTERVAL, "", deadline))

    def current_partition_epoch(self, group: ConsumerGroup, tp: TopicPartition) -> int:
        """CoG `currentPartitionEpoch`: the holder's epoch, -1 when free."""
        return group.current_partition_epoch(tp)

    def reconcile_member(
        self,
        txn: _Txn,
        member: ConsumerMember,
        owned: frozenset[TopicPartition] | None,
        now: int,
        subscription_changed: bool = False,
    ) -> ConsumerMember:
        """GMM `maybeReconcile` L2681 around the pure `reconcile` (docs/protocol-reference.md#b5); arms or cancels the
        rebalance timer when the member changed (docs/protocol-reference.md#b8). ``subscription_changed``:
        this request changed the member's topic names or regex (Kafka 4.4.0 passes
        `hasMemberSubscriptionChanged || regexUpdated`)."""
        group = txn.require_group()
        filtered = self.config.reconcile_to_subscription
        if member.is_reconciled_to(group.assignment_epoch) and not (filtered and subscription_changed):
            return member
        current = CurrentAssignment(
            member.state,
            member.member_epoch,
            member.previous_member_epoch,
            member.assigned,
            member.pending_revocation,
        )
        nxt = reconcile(
            current,
            group.assignment_epoch,
            group.target_of(member.member_id),
            lambda tp: self.current_partition_epoch(group, tp),
            owned,
            self.config.own_pending_is_free,
            self.config.bump_after_revocation,
            self.subscribed_topic_ids(txn.scratch, group, member) if filtered else None,
            subscription_changed,
        )
        if nxt is None:
            raise _Rejected(
                ErrorCode.FENCED_MEMBER_EPOCH, "member in an unknown state must rejoin without partitions"
            )
        updated = replace(
            member,
            state=nxt.state,
            member_epoch=nxt.member_epoch,
            previous_member_epoch=nxt.previous_member_epoch,
            assigned=nxt.assigned,
            pending_revocation=nxt.pending_revocation,
        )
        if updated != member:
            txn.emit(current_assignment_record(txn.group_id, updated))
            if updated.state == MemberState.UNREVOKED_PARTITIONS:
                self.schedule_rebalance_timeout(txn, updated, now)
            else:
                self.cancel_timer(txn, REBALANCE, updated.member_id)
        return updated

    def is_full_request(self, request: ConsumerGroupHeartbeatRequest) -> bool:
        """docs/protocol-reference.md#b10: rebalance timeout, names or regex, and owned partitions all present."""
        return (
            request.rebalance_timeout_ms != -1
            and (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
            and request.topic_partitions is not None
        )

    def assignment_in_response(
        self, request: ConsumerGroupHeartbeatRequest, before: ConsumerMember, after: ConsumerMember
    ) -> bool:
        """docs/protocol-reference.md#b10 (GMM L1811-1813): join, full request, or the assigned set changed."""
        return request.member_epoch == 0 or self.is_full_request(request) or before.assigned != after.assigned

    def session_timeout_ms(self, group_id: str) -> int:
        return self.config.session_timeout_ms

    def schedule_session_timeout(self, txn: _Txn, member_id: str, now: int) -> None:
        """Re-armed after every successful heartbeat (GMM L1797)."""
        deadline = now + self.session_timeout_ms(txn.group_id)
        txn.emit(TimerScheduled(txn.group_id, SESSION, member_id, deadline))

    def schedule_rebalance_timeout(self, txn: _Txn, member: ConsumerMember, now: int) -> None:
        """Armed with the member's epoch when it enters/stays in UNREVOKED_PARTITIONS after a change."""
        deadline = now + member.rebalance_timeout_ms
        txn.emit(TimerScheduled(txn.group_id, REBALANCE, member.member_id, deadline, member.member_epoch))

    def cancel_timer(self, txn: _Txn, kind: str, member_id: str) -> None:
        group = txn.group
        if group is not None and (kind, member_id) in group.timers:
            txn.emit(TimerCancelled(txn.group_id, kind, member_id))
