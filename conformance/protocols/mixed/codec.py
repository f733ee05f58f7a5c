"""A mixed group's requests on the wire: each member's protocol codec, with real topic names.

A classic member's request goes through the classic codec (`conformance.protocols.classic.codec`,
fields a version lacks dropped), its embedded subscription and assignments naming the run's real
topics (the consumer embedded protocol, docs/protocol-reference.md#c1); a consumer-protocol member's
ConsumerGroupHeartbeat through the KIP-848 codec (topic ids). Answers come back with model topic
names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from conformance.protocols.classic.codec import (
    API_NAMES,
    api_key_of,
    as_sent,
    decode_response,
    encode_request,
)
from conformance.protocols.consumer.codec import (
    API_CONSUMER_GROUP_HEARTBEAT,
    TopicMap,
    decode_heartbeat,
    encode_heartbeat,
)
from model.classic.messages import JoinGroupRequest, SyncGroupRequest, SyncGroupResponse
from model.consumer.messages import ConsumerGroupHeartbeatRequest
from model.embedded import (
    Assignment,
    EmbeddedDecodeError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)


class NotOffered(Exception):
    """The target offers no version of the request's API this codec speaks."""

    def __init__(self, api: str, message: str) -> None:
        super().__init__(message)
        self.api = api


def encode(caps: Any, request: Any, real_group: str, topics: TopicMap) -> tuple[int, int, Any]:
    """(api key, version, kio request) for ``request`` on a target offering ``caps``, in the real
    group; `NotOffered` when the target speaks no version of it."""
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        lo, hi = caps.api_versions.get(API_CONSUMER_GROUP_HEARTBEAT, (0, -1))
        if not lo <= request.version <= hi:
            raise NotOffered(
                "ConsumerGroupHeartbeat", f"target offers no ConsumerGroupHeartbeat v{request.version}"
            )
        payload = encode_heartbeat(request, request.version, real_group, topics)
        return API_CONSUMER_GROUP_HEARTBEAT, request.version, payload
    key = api_key_of(request)
    version = caps.version(key, getattr(request, "version", 99))
    if version is None:
        raise NotOffered(API_NAMES[key], f"target offers no {API_NAMES[key]} version we speak")
    sent = as_sent(request, version)
    if isinstance(sent, JoinGroupRequest):  # the embedded subscription names real topics
        sent = dataclasses.replace(
            sent, protocols=tuple((n, real_subscription(m, topics)) for n, m in sent.protocols)
        )
    if isinstance(sent, SyncGroupRequest):
        sent = dataclasses.replace(
            sent,
            assignments=tuple((mid, map_assignment(a, topics.real_name)) for mid, a in sent.assignments),
        )
    real = dataclasses.replace(sent, group_id=real_group)
    return key, version, encode_request(real, version, topics.real_name)


def decode(request: Any, version: int, value: Any, topics: TopicMap) -> Any:
    """The model's view of the target's answer ``value`` to ``request`` (real topic names mapped)."""
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        return decode_heartbeat(value, topics)
    resp = decode_response(request, value, version, lambda real, _p, _m: topics.model_of_name(real))
    if isinstance(resp, SyncGroupResponse):
        resp = dataclasses.replace(resp, assignment=map_assignment(resp.assignment, topics.model_of_name))
    return resp


def real_subscription(metadata: bytes, topics: TopicMap) -> bytes:
    """A JoinGroup protocol's subscription bytes with real topic names (malformed bytes as they are)."""
    from model.mixed.consumer_group import subscription_version

    try:
        sub = decode_subscription(metadata)
    except EmbeddedDecodeError:
        return metadata  # malformed on purpose: the target must say so
    sub = dataclasses.replace(
        sub,
        topics=tuple(topics.real_name(t) for t in sub.topics),
        owned_partitions=tuple((topics.real_name(t), p) for t, p in sub.owned_partitions),
    )
    return encode_subscription(sub, subscription_version(metadata))


def map_assignment(data: bytes, name: Callable[[str], str]) -> bytes:
    """Assignment bytes with each topic renamed by ``name`` (unreadable bytes as they are)."""
    from model.mixed.consumer_group import subscription_version

    if not data:
        return data
    try:
        a = decode_assignment(data)
    except EmbeddedDecodeError:
        return data
    return encode_assignment(
        Assignment(tuple((name(t), p) for t, p in a.partitions), a.user_data), subscription_version(data)
    )
