"""KIP-848 model messages <-> Kafka wire messages, encoded and decoded by ``kio``.

The consumer-protocol twin of `conformance.protocols.classic.codec`: ConsumerGroupHeartbeat (api key 68,
v0-v1; ``ConsumerGroupHeartbeatRequest.json`` / ``ConsumerGroupHeartbeatResponse.json`` in Kafka's
``clients/src/main/resources/common/message/``), DeleteGroups (api key 42, v0-v2, an admin's request)
and OffsetCommit v9 (the first version a KIP-848
member may use, docs/protocol-reference.md#b12; topics still named, not ids). Inside the model a topic is its
*name*; on the wire ConsumerGroupHeartbeat names topics by topic id, so the caller passes a
`TopicMap` that knows the run's real topic names and ids (looked up with Metadata v12).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from conformance.wire.codec import (
    API_DELETE_GROUPS,
    API_METADATA,
    build,
    metadata_request,
    module,
    payload_class,
    topic_ids,
)
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    TopicPartitions,
)
from model.consumer.state import regex_matches
from model.errors import ErrorCode

API_CONSUMER_GROUP_HEARTBEAT = 68
API_OFFSET_COMMIT = 8
#: OffsetCommit versions a KIP-848 member sends here: v9 (names); v10 names topics by id.
OFFSET_COMMIT_VERSION = 9


@dataclass
class TopicMap:
    """Model topic name <-> (real topic name, topic id) for one port."""

    real: dict[str, str] = field(default_factory=dict)
    ids: dict[str, uuid.UUID] = field(default_factory=dict)
    #: (prefix, suffix) around the model name in the real names a port gives its own topics
    #: (`topic_ops.fresh_name`, then the partition count); None: topics seeded or named as in the model
    frame: tuple[str, str] | None = None

    def add(self, model: str, real: str, topic_id: uuid.UUID) -> None:
        self.real[model] = real
        self.ids[model] = topic_id

    def real_name(self, model: str) -> str:
        """Unknown model topics get a name no target has (a subscription to a missing topic)."""
        return self.real.get(model, f"gc-missing-{model}")

    def real_regex(self, regex: str | None) -> str | None:
        """A model SubscribedTopicRegex over real names: the model pattern inside the port's naming
        frame, so topics created later match too; without a frame (a fixed topic set), the known
        real names it matches (a name no topic has when none)."""
        if not regex:
            return regex
        if self.frame is not None:
            prefix, suffix = self.frame
            return f"{_literal(prefix)}(?:{regex}){_literal(suffix)}[0-9]+"
        names = [self.real[m] for m in sorted(self.real) if regex_matches(regex, m)]
        return "|".join(_literal(n) for n in names or [self.real_name("none")])

    def topic_id(self, model: str) -> uuid.UUID:
        return self.ids.get(model, uuid.UUID(int=0))

    def model_of_id(self, topic_id: uuid.UUID | None) -> str:
        for model, tid in self.ids.items():
            if tid == topic_id:
                return model
        return f"unknown-topic-{topic_id}"

    def model_of_name(self, real: str) -> str:
        for model, name in self.real.items():
            if name == real:
                return model
        return real


def _literal(name: str) -> str:
    """``name`` as a pattern that matches only itself, in the syntax RE2J and Python ``re`` share."""
    return "".join("\\" + c if c in ".+*?()[]{}|^$\\" else c for c in name)


def encode_heartbeat(
    request: ConsumerGroupHeartbeatRequest, version: int, group_id: str, topics: TopicMap
) -> Any:
    """The kio ConsumerGroupHeartbeat of ``version`` for a model request (group renamed to the real one)."""
    mod = module(API_CONSUMER_GROUP_HEARTBEAT, version, True)
    cls = payload_class(API_CONSUMER_GROUP_HEARTBEAT, version, True)
    owned = None
    if request.topic_partitions is not None:
        owned = tuple(
            build(mod.TopicPartitions, {"topic_id": topics.topic_id(tp.topic), "partitions": tp.partitions})
            for tp in request.topic_partitions
        )
    names = request.subscribed_topic_names
    values: dict[str, Any] = {
        "group_id": group_id,
        "member_id": request.member_id,
        "member_epoch": request.member_epoch,
        "instance_id": request.instance_id,
        "rack_id": request.rack_id,
        "rebalance_timeout": request.rebalance_timeout_ms,
        "subscribed_topic_names": None if names is None else tuple(topics.real_name(n) for n in names),
        "server_assignor": request.server_assignor,
        "topic_partitions": owned,
    }
    if version >= 1:
        values["subscribed_topic_regex"] = topics.real_regex(request.subscribed_topic_regex)
    return build(cls, values)


def _err(code: Any) -> ErrorCode:
    return ErrorCode.of(int(getattr(code, "value", code)))  # type: ignore[return-value]


def decode_heartbeat(wire: Any, topics: TopicMap) -> ConsumerGroupHeartbeatResponse:
    """The model response for a kio ConsumerGroupHeartbeat response (topic ids mapped back to names)."""
    assignment = None
    if wire.assignment is not None:
        by_topic: dict[str, set[int]] = {}
        for tp in wire.assignment.topic_partitions:
            by_topic.setdefault(topics.model_of_id(tp.topic_id), set()).update(int(p) for p in tp.partitions)
        assignment = tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(by_topic.items()))
    interval = wire.heartbeat_interval
    return ConsumerGroupHeartbeatResponse(
        error_code=_err(wire.error_code),
        error_message=None if wire.error_message is None else str(wire.error_message),
        member_id=None if wire.member_id is None else str(wire.member_id),
        member_epoch=int(wire.member_epoch),
        heartbeat_interval_ms=int(interval.total_seconds() * 1000)
        if hasattr(interval, "total_seconds")
        else int(interval),
        assignment=assignment,
    )


def encode_offset_commit(request: OffsetCommitRequest, version: int, group_id: str, topics: TopicMap) -> Any:
    mod = module(API_OFFSET_COMMIT, version, True)
    cls = payload_class(API_OFFSET_COMMIT, version, True)
    wire_topics = tuple(
        build(
            mod.OffsetCommitRequestTopic,
            {
                "name": topics.real_name(t.name),
                "partitions": tuple(
                    build(
                        mod.OffsetCommitRequestPartition,
                        {
                            "partition_index": p.partition_index,
                            "committed_offset": p.committed_offset,
                            "committed_leader_epoch": p.committed_leader_epoch,
                            "committed_metadata": p.committed_metadata,
                        },
                    )
                    for p in t.partitions
                ),
            },
        )
        for t in request.topics
    )
    return build(
        cls,
        {
            "group_id": group_id,
            "generation_id_or_member_epoch": request.generation_id_or_member_epoch,
            "member_id": request.member_id,
            "group_instance_id": request.group_instance_id,
            "topics": wire_topics,
        },
    )


def decode_offset_commit(wire: Any, topics: TopicMap) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        tuple(
            OffsetCommitResponseTopic(
                topics.model_of_name(str(t.name)),
                tuple(
                    OffsetCommitResponsePartition(int(p.partition_index), _err(p.error_code))
                    for p in t.partitions
                ),
            )
            for t in wire.topics
        )
    )


def encode_delete_groups(request: DeleteGroupsRequest, version: int, real: dict[str, str]) -> Any:
    """The kio DeleteGroups of ``version`` (v0-v2 carry the same field); model group ids renamed by
    ``real`` (model id -> the run's real group id)."""
    cls = payload_class(API_DELETE_GROUPS, version, True)
    return build(cls, {"groups_names": tuple(real.get(g, g) for g in request.groups_names)})


def decode_delete_groups(wire: Any, real: dict[str, str]) -> DeleteGroupsResponse:
    """The model response for a kio DeleteGroups response (real group ids mapped back)."""
    model = {r: m for m, r in real.items()}
    return DeleteGroupsResponse(
        tuple(
            DeletableGroupResult(model.get(str(r.group_id), str(r.group_id)), _err(r.error_code))
            for r in wire.results
        )
    )


__all__ = [
    "API_CONSUMER_GROUP_HEARTBEAT",
    "API_DELETE_GROUPS",
    "API_METADATA",
    "API_OFFSET_COMMIT",
    "OFFSET_COMMIT_VERSION",
    "TopicMap",
    "decode_delete_groups",
    "decode_heartbeat",
    "decode_offset_commit",
    "encode_delete_groups",
    "encode_heartbeat",
    "encode_offset_commit",
    "metadata_request",
    "topic_ids",
]
