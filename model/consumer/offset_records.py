"""The OffsetCommit record and its tombstone (key: group id, topic, partition).

Kafka writes one record per committed offset (OffsetMetadataManager) and a tombstone under the same
key when the offset is deleted: DeleteGroups writes one for every committed offset of the group
before the group's own tombstones (GroupCoordinatorShard ``deleteGroups`` and OffsetMetadataManager
``deleteAllOffsets``, apache/kafka@1eb7644 group-coordinator).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class OffsetCommitRecord:
    """OffsetCommit: one committed offset (OMM)."""

    durable: ClassVar[bool] = True
    group_id: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(frozen=True)
class OffsetCommitTombstone:
    """The committed offset of ``(topic, partition)`` is deleted (``newOffsetCommitTombstoneRecord``)."""

    durable: ClassVar[bool] = True
    group_id: str
    topic: str
    partition: int
