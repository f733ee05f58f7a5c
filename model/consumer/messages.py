"""KIP-848 wire messages as plain frozen data: ConsumerGroupHeartbeat (key 68), OffsetCommit (key 8) and
DeleteGroups (key 42).

Field names are Kafka's (MSG `ConsumerGroupHeartbeatRequest.json`, `ConsumerGroupHeartbeatResponse.json`,
`OffsetCommitRequest.json`, `OffsetCommitResponse.json`) in snake_case; docs/protocol-reference.md#d, #b10, #b12.

Model simplification: on the wire a topic is named by its topic id (uuid) in ConsumerGroupHeartbeat
(and in OffsetCommit v10+); inside the model topics are named by their *name*. Adapters translate
names to ids and back. Every message carries the API ``version`` it was (or would be) sent with,
since rules differ by version (KIP-1082: ConsumerGroupHeartbeat v1; docs/protocol-reference.md#b12: OffsetCommit v9).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from model.errors import ErrorCode

TopicPartition = tuple[str, int]
"""(topic name, partition index): the model's partition identity."""


@dataclass(frozen=True)
class TopicPartitions:
    """One entry of a TopicPartitions list: a topic (wire: ``topic_id``) and its partition indexes."""

    topic: str
    partitions: tuple[int, ...]


def to_topic_partitions(partitions: Iterable[TopicPartition]) -> tuple[TopicPartitions, ...]:
    """The canonical wire-shaped list (topics sorted by name, partitions ascending) of a partition set."""
    by_topic: dict[str, list[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(index)
    return tuple(TopicPartitions(t, tuple(sorted(set(ps)))) for t, ps in sorted(by_topic.items()))


def from_topic_partitions(entries: Iterable[TopicPartitions]) -> frozenset[TopicPartition]:
    """The partition set named by a TopicPartitions list (duplicates collapse)."""
    return frozenset((e.topic, p) for e in entries for p in e.partitions)


@dataclass(frozen=True)
class ConsumerGroupHeartbeatRequest:
    """ConsumerGroupHeartbeat request, versions 0-1 (docs/protocol-reference.md#d; #b10 for which fields a join must carry).

    ``None`` / ``-1`` mean "unchanged" on heartbeats after the join. ``subscribed_topic_regex`` exists
    only in v1. ``topic_partitions`` is the member's owned set (wire: topic ids).
    """

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: tuple[TopicPartitions, ...] | None = None
    version: int = 1

    def owned(self) -> frozenset[TopicPartition] | None:
        """The reported owned set, or None when the request does not carry it."""
        return None if self.topic_partitions is None else from_topic_partitions(self.topic_partitions)


@dataclass(frozen=True)
class ConsumerGroupHeartbeatResponse:
    """ConsumerGroupHeartbeat response (docs/protocol-reference.md#d). ``assignment`` is the wire ``Assignment.TopicPartitions``.

    ``assignment`` is None when the response carries no assignment (docs/protocol-reference.md#b10); when present it is the
    member's complete assigned set, never a delta. Error responses carry only the error code and
    message (member id null, epoch 0, interval 0), as Kafka's coordinator builds them.
    """

    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[TopicPartitions, ...] | None = None
    throttle_time_ms: int = 0

    def assigned(self) -> frozenset[TopicPartition] | None:
        return None if self.assignment is None else from_topic_partitions(self.assignment)


@dataclass(frozen=True)
class OffsetCommitRequestPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = ""


@dataclass(frozen=True)
class OffsetCommitRequestTopic:
    name: str
    partitions: tuple[OffsetCommitRequestPartition, ...]


@dataclass(frozen=True)
class OffsetCommitRequest:
    """OffsetCommit request (docs/protocol-reference.md#d). KIP-848 members put their member epoch in
    ``generation_id_or_member_epoch`` and must use v9+ (docs/protocol-reference.md#b12)."""

    group_id: str
    topics: tuple[OffsetCommitRequestTopic, ...]
    generation_id_or_member_epoch: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: int = -1
    version: int = 9


@dataclass(frozen=True)
class OffsetCommitResponsePartition:
    partition_index: int
    error_code: ErrorCode


@dataclass(frozen=True)
class OffsetCommitResponseTopic:
    name: str
    partitions: tuple[OffsetCommitResponsePartition, ...]


@dataclass(frozen=True)
class OffsetCommitResponse:
    topics: tuple[OffsetCommitResponseTopic, ...]
    throttle_time_ms: int = 0

    def errors(self) -> dict[TopicPartition, ErrorCode]:
        """Per-partition error codes of the response."""
        return {(t.name, p.partition_index): p.error_code for t in self.topics for p in t.partitions}


@dataclass(frozen=True)
class DeleteGroupsRequest:
    """DeleteGroups request, versions 0-2 (``DeleteGroupsRequest.json``: v1 as v0, v2 flexible; an
    admin's request, not a member's). Kafka answers each distinct group id once (KafkaApis
    ``handleDeleteGroupsRequest``)."""

    groups_names: tuple[str, ...]
    version: int = 2


@dataclass(frozen=True)
class DeletableGroupResult:
    group_id: str
    error_code: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True)
class DeleteGroupsResponse:
    results: tuple[DeletableGroupResult, ...]
    throttle_time_ms: int = 0

    def errors(self) -> dict[str, ErrorCode]:
        """Per-group error codes of the response."""
        return {r.group_id: r.error_code for r in self.results}
