"""Decode the group coordinator's own records from `__consumer_offsets` (docs/pipeline.md#coordinator-log).

Our own reader of Kafka's record layouts, written from the message schemas in apache/kafka
`group-coordinator/src/main/resources/common/message/` (GroupMetadataKey/Value, OffsetCommitKey/Value,
ConsumerGroupMetadataKey/Value, ConsumerGroupMemberMetadataKey/Value,
ConsumerGroupTargetAssignmentMetadataKey/Value, ConsumerGroupTargetAssignmentMemberKey/Value,
ConsumerGroupCurrentMemberAssignmentKey/Value). A key is an int16 record type (the schema's
`apiKey`; OffsetCommit also 0 for the legacy key) followed by the key fields in the non-flexible
layout; a value is an int16 version followed by the fields, flexible (compact strings and arrays,
tagged fields) from the schema's `flexibleVersions`. A null value is a tombstone (deletion).
Unknown tagged fields are skipped, as Kafka's readers do; record types we do not audit (share and
streams groups, regular expressions, partition metadata) are counted as `other`.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

OFFSET_COMMIT = (0, 1)
GROUP_METADATA = 2
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8

RECORD_NAMES = {
    0: "OffsetCommit",
    1: "OffsetCommit",
    2: "GroupMetadata",
    3: "ConsumerGroupMetadata",
    4: "ConsumerGroupPartitionMetadata",
    5: "ConsumerGroupMemberMetadata",
    6: "ConsumerGroupTargetAssignmentMetadata",
    7: "ConsumerGroupTargetAssignmentMember",
    8: "ConsumerGroupCurrentMemberAssignment",
}


class RecordDecodeError(ValueError):
    """A key or value that does not follow the schema (the reason is quarantined with the record)."""


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise RecordDecodeError(f"truncated: need {n} bytes at offset {self.pos} of {len(self.data)}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def _fmt(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def i8(self) -> int:
        return int(self._fmt(">b"))

    def i16(self) -> int:
        return int(self._fmt(">h"))

    def i32(self) -> int:
        return int(self._fmt(">i"))

    def i64(self) -> int:
        return int(self._fmt(">q"))

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 35:
                raise RecordDecodeError("varint too long")

    def uuid(self) -> str:
        return str(uuid.UUID(bytes=self.take(16)))

    def string(self, flexible: bool, nullable: bool = False) -> str | None:
        n = self.uvarint() - 1 if flexible else self.i16()
        if n < 0:
            if not nullable:
                raise RecordDecodeError("null in a non-nullable string")
            return None
        return self.take(n).decode("utf-8", errors="replace")

    def bytes_(self, flexible: bool) -> bytes:
        n = self.uvarint() - 1 if flexible else self.i32()
        if n < 0:
            return b""
        return self.take(n)

    def array(self, flexible: bool, item: Callable[[], Any]) -> list[Any]:
        n = self.uvarint() - 1 if flexible else self.i32()
        if n < 0:
            return []
        if n > len(self.data):
            raise RecordDecodeError(f"array length {n} larger than the record")
        return [item() for _ in range(n)]

    def tagged(self) -> dict[int, bytes]:
        """Tagged fields of a flexible struct: tag -> raw bytes (callers decode the ones they know)."""
        out = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            out[tag] = self.take(self.uvarint())
        return out

    def done(self) -> None:
        if self.pos != len(self.data):
            raise RecordDecodeError(f"{len(self.data) - self.pos} trailing bytes")


@dataclass(frozen=True)
class CoordinatorRecord:
    offset: int
    timestamp: int
    record_type: int
    name: str
    key: dict[str, Any]
    value: dict[str, Any] | None  # None: tombstone


def decode_key(data: bytes) -> tuple[int, dict[str, Any]]:
    r = _Reader(data)
    rtype = r.i16()
    key: dict[str, Any]
    if rtype in OFFSET_COMMIT:
        key = {"group": r.string(False), "topic": r.string(False), "partition": r.i32()}
    elif rtype == GROUP_METADATA or rtype in (3, 4, 6):
        key = {"group": r.string(False)}
    elif rtype in (5, 7, 8):
        key = {"group": r.string(False), "member_id": r.string(False)}
    else:
        return rtype, {}
    r.done()
    return rtype, key


def _group_metadata_value(r: _Reader, version: int) -> dict[str, Any]:
    """GroupMetadataValue v0-4 (flexible from 4)."""
    flex = version >= 4

    def member() -> dict[str, Any]:
        m: dict[str, Any] = {"member_id": r.string(flex)}
        m["instance_id"] = r.string(flex, nullable=True) if version >= 3 else None
        m["client_id"] = r.string(flex)
        m["client_host"] = r.string(flex)
        m["rebalance_timeout_ms"] = r.i32() if version >= 1 else -1
        m["session_timeout_ms"] = r.i32()
        m["subscription"] = r.bytes_(flex)
        m["assignment"] = r.bytes_(flex)
        if flex:
            r.tagged()
        return m

    v: dict[str, Any] = {"protocol_type": r.string(flex)}
    v["generation"] = r.i32()
    v["protocol"] = r.string(flex, nullable=True)
    v["leader"] = r.string(flex, nullable=True)
    v["current_state_timestamp"] = r.i64() if version >= 2 else -1
    v["members"] = r.array(flex, member)
    if flex:
        r.tagged()
    return v


def _topic_partitions(r: _Reader) -> list[dict[str, Any]]:
    def item() -> dict[str, Any]:
        tp = {"topic_id": r.uuid(), "partitions": r.array(True, r.i32)}
        r.tagged()  # AssignmentEpochs (tag 0, KIP-1251) is not needed here
        return tp

    return r.array(True, item)


def decode_value(rtype: int, data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    r = _Reader(data)
    version = r.i16()
    v: dict[str, Any] = {"version": version}
    if rtype in OFFSET_COMMIT:
        flex = version >= 4
        v["offset"] = r.i64()
        v["leader_epoch"] = r.i32() if version >= 3 else -1
        v["metadata"] = r.string(flex)
        v["commit_timestamp"] = r.i64()
        if version == 1:
            v["expire_timestamp"] = r.i64()
        if flex:
            r.tagged()
    elif rtype == GROUP_METADATA:
        if not 0 <= version <= 4:
            raise RecordDecodeError(f"GroupMetadataValue version {version} unknown")
        v.update(_group_metadata_value(r, version))
    elif rtype == CONSUMER_GROUP_METADATA:
        v["epoch"] = r.i32()
        r.tagged()
    elif rtype == CONSUMER_GROUP_MEMBER_METADATA:
        v["instance_id"] = r.string(True, nullable=True)
        v["rack_id"] = r.string(True, nullable=True)
        v["client_id"] = r.string(True)
        v["client_host"] = r.string(True)
        v["subscribed_topic_names"] = r.array(True, lambda: r.string(True))
        v["subscribed_topic_regex"] = r.string(True, nullable=True)
        v["rebalance_timeout_ms"] = r.i32()
        v["server_assignor"] = r.string(True, nullable=True)
        v["tags"] = sorted(r.tagged())  # tagged fields present (tag 0: ClassicMemberMetadata)
    elif rtype == CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
        v["assignment_epoch"] = r.i32()
        r.tagged()
    elif rtype == CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
        v["topic_partitions"] = _topic_partitions(r)
        r.tagged()
    elif rtype == CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        v["member_epoch"] = r.i32()
        v["previous_member_epoch"] = r.i32()
        v["state"] = r.i8()
        v["assigned"] = _topic_partitions(r)
        v["pending_revocation"] = _topic_partitions(r)
        r.tagged()
    else:
        return {"version": version, "opaque": len(data)}
    r.done()
    return v


def decode_record(offset: int, timestamp: int, key: bytes, value: bytes | None) -> CoordinatorRecord:
    rtype, k = decode_key(key)
    return CoordinatorRecord(
        offset, timestamp, rtype, RECORD_NAMES.get(rtype, "other"), k, decode_value(rtype, value)
    )
