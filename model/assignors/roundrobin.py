"""RoundRobinAssignor (Kafka `clients/.../consumer/RoundRobinAssignor.java`; docs/protocol-reference.md#c).

All subscribed, existing topic-partitions in (topic, partition) order are dealt to the members
sorted by member id, cycling; a member not subscribed to the partition's topic is skipped (the
Java `CircularIterator` peek/next loop). Static-member ordering by group.instance.id is not
modelled. EAGER only.
"""

from __future__ import annotations

from collections.abc import Mapping

from model.assignors.base import (
    EagerAssignor,
    check_partition_counts,
    sorted_topics,
    to_assignments,
)
from model.embedded import Assignment, Subscription, TopicPartition, java_string_key


class RoundRobinAssignor(EagerAssignor):
    """Kafka's `roundrobin` assignor."""

    name = "roundrobin"

    def __repr__(self) -> str:
        return "RoundRobinAssignor()"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        """Deal sorted partitions to sorted members in turn, skipping members not subscribed."""
        check_partition_counts(partitions_per_topic)
        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        members = sorted(subscriptions, key=java_string_key)
        wanted = sorted_topics(
            t for s in subscriptions.values() for t in s.topics if t in partitions_per_topic
        )
        turn = 0
        for topic in wanted:
            for partition in range(partitions_per_topic[topic]):
                while topic not in subscriptions[members[turn % len(members)]].topics:
                    turn += 1
                result[members[turn % len(members)]].append((topic, partition))
                turn += 1
        return to_assignments(result, subscriptions)
