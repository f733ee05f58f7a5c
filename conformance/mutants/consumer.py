"""KIP-848 coordinator mutants (bug catalogue rows on the consumer protocol).

Sources: ../shared/reference/bug-catalogue.md row 5 (KAFKA-16147 / PR #15212)."""

from __future__ import annotations

from model.consumer.coordinator import ConsumerCoordinator, _Txn
from model.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartition
from model.consumer.records import (
    CurrentAssignmentTombstone,
    MemberSubscriptionTombstone,
    SubscriptionMetadataRecord,
    TargetAssignmentMemberTombstone,
)
from model.consumer.state import REBALANCE, SESSION, ConsumerGroup, ConsumerMember


class PendingRevocationIsFree(ConsumerCoordinator):
    """KAFKA-16147: a partition pending revocation loses its partition epoch, so the coordinator
    hands it to its new owner while the old one still holds it (reference B.5; bug catalogue)."""

    def current_partition_epoch(self, group: ConsumerGroup, tp: TopicPartition) -> int:
        if any(tp in m.assigned for m in group.members.values()):
            return group.current_partition_epoch(tp)
        return -1


class LeaveWithoutBump(ConsumerCoordinator):
    """A fence (leave -1, session or rebalance timeout) that does not bump the group epoch, so the
    departed member's partitions stay outside every target (reference B.4, GMM L3087; issue 6)."""

    def fence_member(self, txn: _Txn, member: ConsumerMember) -> None:
        gid = txn.group_id
        txn.emit(CurrentAssignmentTombstone(gid, member.member_id))
        txn.emit(TargetAssignmentMemberTombstone(gid, member.member_id))
        txn.emit(MemberSubscriptionTombstone(gid, member.member_id))
        group = txn.require_group()
        metadata = self.compute_subscription_metadata(txn.scratch, group)
        if metadata != group.subscription_metadata:
            txn.emit(SubscriptionMetadataRecord(gid, tuple(sorted(metadata.items()))))
        for kind in (SESSION, REBALANCE):
            self.cancel_timer(txn, kind, member.member_id)


class NoEpochCheck(ConsumerCoordinator):
    """Heartbeat member epochs are not validated (reference B.6 row 12, GMM L1362; issue 6)."""

    def validate_member_epoch(self, member: ConsumerMember, request: ConsumerGroupHeartbeatRequest) -> None:
        return None


CONSUMER_MUTANTS: dict[str, type[ConsumerCoordinator]] = {
    "kafka-16147": PendingRevocationIsFree,
    "leave-no-bump": LeaveWithoutBump,
    "no-epoch-check": NoEpochCheck,
}
