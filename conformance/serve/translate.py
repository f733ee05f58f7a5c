"""Decoded ``kio`` requests -> the model's messages, and the model's responses -> plain values.

The inverse of `conformance.protocols.classic.codec` and `conformance.protocols.consumer.codec`
(which turn model requests into kio requests and kio responses back): here the client is real and
the coordinator is the model. Field names follow Kafka's message schemas
(``clients/src/main/resources/common/message/*.json``); fields a version lacks take Kafka's
defaults. Topics are named inside the model; ConsumerGroupHeartbeat names them by topic id
(KIP-848), mapped through the served `TopicMap`.
"""

from __future__ import annotations

from typing import Any

from conformance.protocols.consumer.codec import TopicMap
from conformance.serve.codec import (
    API_CONSUMER_GROUP_HEARTBEAT,
    API_HEARTBEAT,
    API_JOIN_GROUP,
    API_LEAVE_GROUP,
    API_OFFSET_COMMIT,
    API_SYNC_GROUP,
)
from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)

#: bounds on what one request may carry into the model (hostile input)
MAX_ITEMS = 10_000


def ms(value: Any) -> int:
    """A kio duration (timedelta) or plain int as milliseconds."""
    if hasattr(value, "total_seconds"):
        return int(round(value.total_seconds() * 1000))
    return int(value)


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def _bounded(items: Any, what: str) -> tuple[Any, ...]:
    out = tuple(items or ())
    if len(out) > MAX_ITEMS:
        raise ValueError(f"{what}: {len(out)} entries (at most {MAX_ITEMS})")
    return out


def to_model(api_key: int, version: int, body: Any, client_id: str, topics: TopicMap) -> Any:
    """The model request for a group API request (classic, OffsetCommit or ConsumerGroupHeartbeat)."""
    if api_key == API_JOIN_GROUP:
        return JoinGroupRequest(
            group_id=str(body.group_id),
            member_id=str(body.member_id),
            protocol_type=str(body.protocol_type),
            protocols=tuple((str(p.name), bytes(p.metadata)) for p in _bounded(body.protocols, "protocols")),
            session_timeout_ms=ms(body.session_timeout),
            rebalance_timeout_ms=ms(getattr(body, "rebalance_timeout", -1)),
            group_instance_id=_opt(getattr(body, "group_instance_id", None)),
            reason=_opt(getattr(body, "reason", None)),
            client_id=client_id or "consumer",
            version=version,
        )
    if api_key == API_SYNC_GROUP:
        return SyncGroupRequest(
            group_id=str(body.group_id),
            generation_id=int(body.generation_id),
            member_id=str(body.member_id),
            assignments=tuple(
                (str(a.member_id), bytes(a.assignment)) for a in _bounded(body.assignments, "assignments")
            ),
            group_instance_id=_opt(getattr(body, "group_instance_id", None)),
            protocol_type=_opt(getattr(body, "protocol_type", None)),
            protocol_name=_opt(getattr(body, "protocol_name", None)),
            version=version,
        )
    if api_key == API_HEARTBEAT:
        return HeartbeatRequest(
            group_id=str(body.group_id),
            generation_id=int(body.generation_id),
            member_id=str(body.member_id),
            group_instance_id=_opt(getattr(body, "group_instance_id", None)),
            version=version,
        )
    if api_key == API_LEAVE_GROUP:
        if version < 3:
            members: tuple[MemberIdentity, ...] = (MemberIdentity(str(body.member_id)),)
        else:
            members = tuple(
                MemberIdentity(str(m.member_id), _opt(m.group_instance_id), _opt(getattr(m, "reason", None)))
                for m in _bounded(body.members, "members")
            )
        return LeaveGroupRequest(str(body.group_id), members, version=version)
    if api_key == API_OFFSET_COMMIT:
        parts = []
        for t in _bounded(body.topics, "topics"):
            for p in _bounded(t.partitions, "partitions"):
                parts.append(
                    OffsetCommitPartition(
                        str(t.name),
                        int(p.partition_index),
                        int(p.committed_offset),
                        _opt(p.committed_metadata),
                    )
                )
        return OffsetCommitRequest(
            group_id=str(body.group_id),
            generation_id=int(
                getattr(body, "generation_id_or_member_epoch", getattr(body, "generation_id", -1))
            ),
            member_id=str(getattr(body, "member_id", "")),
            partitions=tuple(parts),
            group_instance_id=_opt(getattr(body, "group_instance_id", None)),
            version=version,
        )
    if api_key == API_CONSUMER_GROUP_HEARTBEAT:
        owned = None
        if body.topic_partitions is not None:
            owned = tuple(
                TopicPartitions(topics.model_of_id(tp.topic_id), tuple(int(p) for p in tp.partitions))
                for tp in _bounded(body.topic_partitions, "topic_partitions")
            )
        names = body.subscribed_topic_names
        return ConsumerGroupHeartbeatRequest(
            group_id=str(body.group_id),
            member_id=str(body.member_id),
            member_epoch=int(body.member_epoch),
            instance_id=_opt(body.instance_id),
            rack_id=_opt(body.rack_id),
            rebalance_timeout_ms=ms(body.rebalance_timeout),
            subscribed_topic_names=None if names is None else tuple(str(n) for n in _bounded(names, "names")),
            subscribed_topic_regex=_opt(getattr(body, "subscribed_topic_regex", None)),
            server_assignor=_opt(body.server_assignor),
            topic_partitions=owned,
            version=version,
        )
    raise ValueError(f"api key {api_key} is not a group request")


def to_wire(response: Any, version: int, topics: TopicMap) -> dict[str, Any]:
    """Plain values of the wire response for a model response (``throttle_time`` 0)."""
    out: dict[str, Any] = {"throttle_time": 0}
    if isinstance(response, JoinGroupResponse):
        members = [
            {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": m.metadata}
            for m in response.members
        ]
        return out | {
            "error_code": int(response.error),
            "generation_id": response.generation_id,
            "protocol_type": response.protocol_type,
            # "" before v7, null for "" from v7 (Kafka ``JoinGroupResponse`` constructor)
            "protocol_name": (response.protocol_name or "")
            if version < 7
            else (response.protocol_name or None),
            "leader": response.leader,
            "skip_assignment": response.skip_assignment,
            "member_id": response.member_id,
            "members": members,
        }
    if isinstance(response, SyncGroupResponse):
        return out | {
            "error_code": int(response.error),
            "protocol_type": response.protocol_type,
            "protocol_name": response.protocol_name,
            "assignment": response.assignment,
        }
    if isinstance(response, HeartbeatResponse):
        return out | {"error_code": int(response.error)}
    if isinstance(response, LeaveGroupResponse):
        left: list[dict[str, Any]] = [
            {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "error_code": int(m.error)}
            for m in response.members
        ]
        return out | {"error_code": int(response.error), "members": left}
    if isinstance(response, OffsetCommitResponse):
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for topic, partition, error in response.partitions:
            by_topic.setdefault(topic, []).append({"partition_index": partition, "error_code": int(error)})
        return out | {"topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
    if isinstance(response, ConsumerGroupHeartbeatResponse):
        assignment = None
        if response.assignment is not None:
            assignment = {
                "topic_partitions": [
                    {"topic_id": topics.topic_id(tp.topic), "partitions": list(tp.partitions)}
                    for tp in response.assignment
                ]
            }
        return out | {
            "error_code": int(response.error_code),
            "error_message": response.error_message,
            "member_id": response.member_id,
            "member_epoch": response.member_epoch,
            "heartbeat_interval": response.heartbeat_interval_ms,
            "assignment": assignment,
        }
    raise TypeError(f"not a model response: {type(response).__name__}")


def summary(response: Any) -> dict[str, Any]:
    """A short, deterministic description of a model response for the trace."""
    if isinstance(response, JoinGroupResponse):
        return {
            "error": int(response.error),
            "generation": response.generation_id,
            "leader": response.leader == response.member_id and bool(response.member_id),
            "members": len(response.members),
        }
    if isinstance(response, SyncGroupResponse):
        return {"error": int(response.error), "assignment_bytes": len(response.assignment)}
    if isinstance(response, HeartbeatResponse | LeaveGroupResponse):
        return {"error": int(response.error)}
    if isinstance(response, OffsetCommitResponse):
        return {"errors": sorted({int(e) for _t, _p, e in response.partitions})}
    if isinstance(response, ConsumerGroupHeartbeatResponse):
        assigned = None
        if response.assignment is not None:
            assigned = sorted(f"{tp.topic}:{p}" for tp in response.assignment for p in tp.partitions)
        return {"error": int(response.error_code), "epoch": response.member_epoch, "assigned": assigned}
    return {"type": type(response).__name__}
