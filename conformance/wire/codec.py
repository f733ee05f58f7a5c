"""The Kafka API keys the adapter speaks and the ``kio`` helpers every codec builds on.

Protocol-neutral: the classic and KIP-848 codecs (`conformance.protocols.*.codec`), the adapter
(`conformance.wire.connection`) and the topic changes (`conformance.protocols.topic_ops`) build
``kio`` entities through `build` and look their payload classes up with `payload_class`. API keys
and names follow Kafka's message schemas (``clients/src/main/resources/common/message/*.json``).
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Callable
from functools import cache
from typing import Any

from kio.index import UnknownEntity, load_payload_module
from kio.static.constants import EntityType

API_METADATA = 3
API_OFFSET_COMMIT = 8
API_FIND_COORDINATOR = 10
API_JOIN_GROUP = 11
API_HEARTBEAT = 12
API_LEAVE_GROUP = 13
API_SYNC_GROUP = 14
API_DESCRIBE_GROUPS = 15
API_API_VERSIONS = 18
API_DELETE_GROUPS = 42

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
    API_DELETE_GROUPS: (0, 2),
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
    API_DELETE_GROUPS: "DeleteGroups",
}


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


def preload() -> None:
    """Every payload class of `SUPPORTED`, requests and responses, looked up now: kio builds a
    version's classes on first use (about 0.3 s for all of them), and ``--groups`` forks N
    processes that would each build the ones they meet (`conformance.targets.open.prepare_groups`)."""
    for api_key, (lo, hi) in SUPPORTED.items():
        for version in range(lo, hi + 1):
            for request in (True, False):
                try:
                    payload_class(api_key, version, request)
                except (UnknownEntity, LookupError):  # a version kio does not carry: never sent
                    continue


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


def metadata_request(names: list[str], version: int = 12) -> Any:
    """A Metadata request (v10+) for ``names`` by name, never creating a topic."""
    mod = module(API_METADATA, version, True)
    return build(
        payload_class(API_METADATA, version, True),
        {
            "topics": tuple(build(mod.MetadataRequestTopic, {"topic_id": None, "name": n}) for n in names),
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )


def topic_ids(exchange: Callable[[Any], Any], names: list[str], version: int = 12) -> dict[str, uuid.UUID]:
    """Topic ids of ``names`` by Metadata v10+ (KIP-516); ``exchange`` sends a kio request, returns the answer."""
    answer = exchange(metadata_request(names, version))
    out = {}
    for t in answer.topics:
        if int(t.error_code.value) == 0 and t.name is not None and t.topic_id is not None:
            out[str(t.name)] = t.topic_id
    return out
