"""Model requests <-> Kafka wire messages, encoded and decoded by ``kio`` (no hand-written codec).

The model's classic messages (`model/classic/messages.py`) carry the version the client would send;
the adapter picks the version actually sent (ApiVersions negotiation) and this module builds the
``kio`` request of that version from the model request, and turns a ``kio`` response back into the
model's response type. Field names follow Kafka's message schemas (docs/protocol-reference.md#d; MSG *.json).
"""

from __future__ import annotations

import dataclasses
import datetime
from functools import cache
from typing import Any

from kio.index import load_payload_module
from kio.static.constants import EntityType

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

API_OFFSET_COMMIT = 8
API_FIND_COORDINATOR = 10
API_JOIN_GROUP = 11
API_HEARTBEAT = 12
API_LEAVE_GROUP = 13
API_SYNC_GROUP = 14
API_DESCRIBE_GROUPS = 15
API_API_VERSIONS = 18

#: Versions of each API this adapter can speak (kio has them all; these are the ones exercised).
SUPPORTED: dict[int, tuple[int, int]] = {
    API_OFFSET_COMMIT: (0, 8),
    API_FIND_COORDINATOR: (0, 3),
    API_JOIN_GROUP: (0, 9),
    API_HEARTBEAT: (0, 4),
    API_LEAVE_GROUP: (0, 5),
    API_SYNC_GROUP: (0, 5),
    API_API_VERSIONS: (0, 3),
    API_DESCRIBE_GROUPS: (0, 5),
}

API_NAMES = {
    API_OFFSET_COMMIT: "OffsetCommit",
    API_FIND_COORDINATOR: "FindCoordinator",
    API_JOIN_GROUP: "JoinGroup",
    API_HEARTBEAT: "Heartbeat",
    API_LEAVE_GROUP: "LeaveGroup",
    API_SYNC_GROUP: "SyncGroup",
    API_API_VERSIONS: "ApiVersions",
    API_DESCRIBE_GROUPS: "DescribeGroups",
}


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


@cache
def module(api_key: int, version: int, request: bool) -> Any:
    return load_payload_module(api_key, version, EntityType.request if request else EntityType.response)


def payload_class(api_key: int, version: int, request: bool) -> Any:
    mod = module(api_key, version, request)
    want = EntityType.request if request else EntityType.response
    for obj in vars(mod).values():
        if isinstance(obj, type) and getattr(obj, "__type__", None) == want:
            return obj
    raise LookupError(f"kio has no payload class for api {api_key} v{version}")


def build(cls: Any, values: dict[str, Any]) -> Any:
    """Instantiate a kio entity from plain values, converting to each field's primitive type."""
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in values:
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                continue
            raise KeyError(f"{cls.__name__}.{f.name} has no value")
        kwargs[f.name] = convert(f.type, values[f.name])
    return cls(**kwargs)


def convert(kind: Any, value: Any) -> Any:
    if value is None or not isinstance(kind, type):
        return value
    if hasattr(kind, "parse") and kind.__name__.endswith("Timedelta"):
        return kind.parse(datetime.timedelta(milliseconds=int(value)))
    if issubclass(kind, int) and not issubclass(kind, bool) and not isinstance(value, kind):
        return kind(value)
    if issubclass(kind, str) and not isinstance(value, kind):
        return kind(value)
    return value


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
