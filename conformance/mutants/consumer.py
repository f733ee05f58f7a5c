"""KIP-848 coordinator mutants (bug catalogue rows on the consumer protocol).

Sources: ../shared/reference/bug-catalogue.md row 5 (KAFKA-16147 / PR #15212)."""

from __future__ import annotations

from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import TopicPartition
from model.consumer.state import ConsumerGroup


class PendingRevocationIsFree(ConsumerCoordinator):
    """KAFKA-16147: a partition pending revocation loses its partition epoch, so the coordinator
    hands it to its new owner while the old one still holds it (reference B.5; bug catalogue)."""

    def current_partition_epoch(self, group: ConsumerGroup, tp: TopicPartition) -> int:
        if any(tp in m.assigned for m in group.members.values()):
            return group.current_partition_epoch(tp)
        return -1


CONSUMER_MUTANTS: dict[str, type[ConsumerCoordinator]] = {
    "kafka-16147": PendingRevocationIsFree,
}
