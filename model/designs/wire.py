"""Encoded sizes, in Kafka's classic (non-flexible) encoding, of every design's messages.

Kafka's protocol guide fixes the primitives: INT16/INT32/INT64, STRING (INT16 length + UTF-8),
BYTES (INT32 length), ARRAY (INT32 count); every request has a size prefix and a header (api key,
version, correlation id, client id), every response a size prefix and a correlation id
(https://kafka.apache.org/protocol#protocol_types). Messages of designs that were never shipped are
sized from the field lists their seed gives, in the same encoding, so sizes compare across designs.
Embedded consumer metadata (subscriptions, assignments) are the model's own bytes (`model.embedded`).
"""

from __future__ import annotations

from collections.abc import Iterable

from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

I16, I32, I64 = 2, 4, 8
CLIENT_ID = "consumer"
REQUEST_HEADER = 4 + I16 + I16 + I32 + 2 + len(CLIENT_ID)
RESPONSE_HEADER = 4 + I32


def s(text: str | None) -> int:
    """STRING / NULLABLE_STRING."""
    return 2 + (len(text.encode()) if text else 0)


def b(data: bytes | None) -> int:
    """BYTES / NULLABLE_BYTES."""
    return 4 + (len(data) if data else 0)


def arr(items: Iterable[int]) -> int:
    return 4 + sum(items)


def request(body: int) -> int:
    return REQUEST_HEADER + body


def response(body: int) -> int:
    return RESPONSE_HEADER + body


def partitions(parts: Iterable[tuple[str, int]], per_partition: int = I32) -> int:
    """[Topic [Partition]]: the topic-grouped partition list every design uses."""
    by_topic: dict[str, int] = {}
    for topic, _ in parts:
        by_topic[topic] = by_topic.get(topic, 0) + 1
    return arr(s(t) + arr([per_partition] * n) for t, n in sorted(by_topic.items()))


def classic_size(msg: object) -> int:
    """The shipped protocol's messages (JoinGroup v5, SyncGroup v3, Heartbeat v3, LeaveGroup v3,
    OffsetCommit v7 field lists: `clients/src/main/resources/common/message/*.json`)."""
    if isinstance(msg, JoinGroupRequest):
        protos = arr(s(name) + b(meta) for name, meta in msg.protocols)
        body = s(msg.group_id) + I32 + I32 + s(msg.member_id) + s(msg.group_instance_id)
        return request(body + s(msg.protocol_type) + protos)
    if isinstance(msg, JoinGroupResponse):
        members = arr(s(m.member_id) + s(m.group_instance_id) + b(m.metadata) for m in msg.members)
        body = I32 + I16 + I32 + s(msg.protocol_name) + s(msg.leader) + s(msg.member_id)
        return response(body + members)
    if isinstance(msg, SyncGroupRequest):
        states = arr(s(mid) + b(data) for mid, data in msg.assignments)
        return request(s(msg.group_id) + I32 + s(msg.member_id) + s(msg.group_instance_id) + states)
    if isinstance(msg, SyncGroupResponse):
        return response(I32 + I16 + b(msg.assignment))
    if isinstance(msg, HeartbeatRequest):
        return request(s(msg.group_id) + I32 + s(msg.member_id) + s(msg.group_instance_id))
    if isinstance(msg, HeartbeatResponse):
        return response(I32 + I16)
    if isinstance(msg, LeaveGroupRequest):
        return request(s(msg.group_id) + arr(s(m.member_id) + s(m.group_instance_id) for m in msg.members))
    if isinstance(msg, LeaveGroupResponse):
        return response(I32 + I16 + arr(s(m.member_id) + s(m.group_instance_id) + I16 for m in msg.members))
    if isinstance(msg, OffsetCommitRequest):
        parts = [(p.topic, p.partition) for p in msg.partitions]
        return request(
            s(msg.group_id) + I32 + s(msg.member_id) + s(msg.group_instance_id) + partitions(parts, 20)
        )
    if isinstance(msg, OffsetCommitResponse):
        return response(I32 + partitions([(t, p) for t, p, _ in msg.partitions], I32 + I16))
    raise TypeError(f"no size for {type(msg).__name__}")
