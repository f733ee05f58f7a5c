"""RangeAssignor: contiguous ranges per topic (docs/protocol-reference.md#c; Kafka `clients/.../consumer/RangeAssignor.java`).

For each topic, the subscribed members sorted by member id split the partitions in order; with P
partitions and n members each gets P div n and the first P mod n get one more. Rack-aware
placement and the static-member ordering by group.instance.id (AbstractPartitionAssignor
`MemberInfo`) are not modelled: the embedded Subscription carries neither instance id nor, for
this purpose, racks. EAGER only.
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


class RangeAssignor(EagerAssignor):
    """Kafka's `range` assignor."""

    name = "range"

    def __repr__(self) -> str:
        return "RangeAssignor()"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        """Per topic, consecutive ranges over the subscribed members sorted by member id."""
        check_partition_counts(partitions_per_topic)
        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        wanted = sorted_topics(
            t for s in subscriptions.values() for t in s.topics if t in partitions_per_topic
        )
        for topic in wanted:
            members = sorted((m for m, s in subscriptions.items() if topic in s.topics), key=java_string_key)
            per_member, extra = divmod(partitions_per_topic[topic], len(members))
            start = 0
            for i, member in enumerate(members):
                length = per_member + (1 if i < extra else 0)
                result[member].extend((topic, p) for p in range(start, start + length))
                start += length
        return to_assignments(result, subscriptions)
