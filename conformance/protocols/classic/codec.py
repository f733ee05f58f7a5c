"""Model requests <-> Kafka wire messages, encoded and decoded by ``kio`` (no hand-written codec).

The model's classic messages (`model/classic/messages.py`) carry the version the client would send;
the adapter picks the version actually sent (ApiVersions negotiation) and this module builds the
``kio`` request of that version from the model request, and turns a ``kio`` response back into the
model's response type. Field names follow Kafka's message schemas (docs/protocol-reference.md#d; MSG *.json).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from conformance.wire.codec import (
    API_API_VERSIONS,
    API_DESCRIBE_GROUPS,
    API_FIND_COORDINATOR,
    API_HEARTBEAT,
    API_JOIN_GROUP,
    API_LEAVE_GROUP,
    API_NAMES,
    API_OFFSET_COMMIT,
    API_SYNC_GROUP,
    SUPPORTED,
    build,
    convert,
    module,
    payload_class,
)
from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitResponse,
    Request,
    Response,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.errors import ErrorCode

#: the kio helpers and API keys live in `conformance.wire.codec`; re-exported for this codec's users
__all__ = [
    "API_API_VERSIONS",
    "API_DESCRIBE_GROUPS",
    "API_FIND_COORDINATOR",
    "API_HEARTBEAT",
    "API_JOIN_GROUP",
    "API_LEAVE_GROUP",
    "API_NAMES",
    "API_OFFSET_COMMIT",
    "API_SYNC_GROUP",
    "SUPPORTED",
    "api_key_of",
    "as_sent",
    "build",
    "convert",
    "decode_response",
    "encode_request",
    "module",
    "payload_class",
]


def api_key_of(request: Request) -> int:
    if isinstance(request, JoinGroupRequest):
        return API_JOIN_GROUP
    if isinstance(request, SyncGroupRequest):
        return API_SYNC_GROUP
    if isinstance(request, HeartbeatRequest):
        return API_HEARTBEAT
    if isinstance(request, LeaveGroupRequest):
        return API_LEAVE_GROUP
    return API_OFFSET_COMMIT


def as_sent(request: Request, version: int) -> Request:
    """The model request as the wire carries it at ``version`` (fields a version lacks are dropped)."""
    if isinstance(request, JoinGroupRequest):
        r = dataclasses.replace(request, version=version)
        if version < 5:
            r = dataclasses.replace(r, group_instance_id=None)
        if version == 0:
            r = dataclasses.replace(r, rebalance_timeout_ms=-1)
        return r
    if isinstance(request, SyncGroupRequest):
        r = dataclasses.replace(request, version=version)
        if version < 5:
            r = dataclasses.replace(r, protocol_type=None, protocol_name=None)
        if version < 3:
            r = dataclasses.replace(r, group_instance_id=None)
        return r
    if isinstance(request, LeaveGroupRequest):
        r = dataclasses.replace(request, version=version)
        if version < 3:
            r = dataclasses.replace(r, members=request.members[:1])
        return r
    if hasattr(request, "version"):
        r = dataclasses.replace(request, version=version)  # type: ignore[type-var]
        if version < 3 and hasattr(r, "group_instance_id"):
            r = dataclasses.replace(r, group_instance_id=None)  # type: ignore[type-var]
        return r
    return request


def encode_request(request: Request, version: int, topic_name: Any = None) -> Any:
    """The kio request of ``version`` for a model request. ``topic_name`` maps model topics to real ones."""
    key = api_key_of(request)
    mod = module(key, version, True)
    cls = payload_class(key, version, True)
    if isinstance(request, JoinGroupRequest):
        protos = tuple(
            build(mod.JoinGroupRequestProtocol, {"name": n, "metadata": m}) for n, m in request.protocols
        )
        return build(
            cls,
            {
                "group_id": request.group_id,
                "session_timeout": request.session_timeout_ms,
                "rebalance_timeout": request.rebalance_timeout_ms,
                "member_id": request.member_id,
                "group_instance_id": request.group_instance_id,
                "protocol_type": request.protocol_type,
                "protocols": protos,
                "reason": request.reason,
            },
        )
    if isinstance(request, SyncGroupRequest):
        assignments = tuple(
            build(mod.SyncGroupRequestAssignment, {"member_id": mid, "assignment": data})
            for mid, data in request.assignments
        )
        return build(
            cls,
            {
                "group_id": request.group_id,
                "generation_id": request.generation_id,
                "member_id": request.member_id,
                "group_instance_id": request.group_instance_id,
                "protocol_type": request.protocol_type,
                "protocol_name": request.protocol_name,
                "assignments": assignments,
            },
        )
    if isinstance(request, HeartbeatRequest):
        return build(
            cls,
            {
                "group_id": request.group_id,
                "generation_id": request.generation_id,
                "member_id": request.member_id,
                "group_instance_id": request.group_instance_id,
            },
        )
    if isinstance(request, LeaveGroupRequest):
        if version < 3:
            return build(cls, {"group_id": request.group_id, "member_id": request.members[0].member_id})
        members = tuple(
            build(
                mod.MemberIdentity,
                {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "reason": m.reason},
            )
            for m in request.members
        )
        return build(cls, {"group_id": request.group_id, "members": members})
    # OffsetCommit: partitions grouped by (real) topic, in first-seen order
    by_topic: dict[str, list[Any]] = {}
    for p in request.partitions:
        real = topic_name(p.topic) if topic_name else p.topic
        by_topic.setdefault(real, []).append(
            build(
                mod.OffsetCommitRequestPartition,
                {
                    "partition_index": p.partition,
                    "committed_offset": p.offset,
                    "committed_leader_epoch": -1,
                    "commit_timestamp": -1,
                    "committed_metadata": p.metadata,
                },
            )
        )
    topics = tuple(
        build(mod.OffsetCommitRequestTopic, {"name": name, "partitions": tuple(parts)})
        for name, parts in by_topic.items()
    )
    return build(
        cls,
        {
            "group_id": request.group_id,
            "generation_id_or_member_epoch": request.generation_id,
            "generation_id": request.generation_id,
            "member_id": request.member_id,
            "group_instance_id": request.group_instance_id,
            "retention_time": -1,
            "topics": topics,
        },
    )


def _err(code: Any) -> ErrorCode | int:
    return ErrorCode.of(int(getattr(code, "value", code)))


def decode_response(request: Request, wire: Any, version: int, topic_back: Any = None) -> Response:
    """The model response for a kio response to ``request`` (sent at ``version``)."""
    if isinstance(request, JoinGroupRequest):
        members = tuple(
            JoinGroupMember(str(m.member_id), getattr(m, "group_instance_id", None), bytes(m.metadata))
            for m in wire.members
        )
        name = wire.protocol_name
        return JoinGroupResponse(
            _err(wire.error_code),  # type: ignore[arg-type]
            int(wire.generation_id),
            getattr(wire, "protocol_type", None),
            None if name is None else str(name),
            str(wire.leader),
            bool(getattr(wire, "skip_assignment", False)),
            str(wire.member_id),
            members,
        )
    if isinstance(request, SyncGroupRequest):
        return SyncGroupResponse(
            _err(wire.error_code),  # type: ignore[arg-type]
            getattr(wire, "protocol_type", None),
            getattr(wire, "protocol_name", None),
            bytes(wire.assignment),
        )
    if isinstance(request, HeartbeatRequest):
        return HeartbeatResponse(_err(wire.error_code))  # type: ignore[arg-type]
    if isinstance(request, LeaveGroupRequest):
        members = tuple(
            LeaveGroupMemberResponse(str(m.member_id), m.group_instance_id, _err(m.error_code))  # type: ignore[arg-type]
            for m in getattr(wire, "members", ())
        )
        return LeaveGroupResponse(_err(wire.error_code), members)  # type: ignore[arg-type]
    # OffsetCommit: map real topics back position by position (same order as the request)
    out: list[tuple[str, int, ErrorCode]] = []
    model_topics = [p.topic for p in request.partitions]
    for t in wire.topics:
        for p in t.partitions:
            name = (
                topic_back(str(t.name), int(p.partition_index), model_topics) if topic_back else str(t.name)
            )
            out.append((name, int(p.partition_index), _err(p.error_code)))  # type: ignore[arg-type]
    return OffsetCommitResponse(tuple(out))
