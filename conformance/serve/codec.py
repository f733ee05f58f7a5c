"""Server-side Kafka framing with ``kio``: request frames in, response frames out.

The client half lives in `conformance.wire.framing`; this is its mirror for a served coordinator.
A request frame is a 4-byte big-endian size, then the request header (api key int16, api version
int16, correlation id int32, client id; tagged fields when flexible) and the body; a response is
the size, the correlation id (plus tagged fields for flexible versions, except ApiVersions, whose
response header stays v0: ``ApiVersionsResponse.json``, tagged fields in the body only) and the body (Kafka protocol guide, "Common Request and Response
Structure"). Bytes are read and written by ``kio`` only; `build_deep` turns plain nested values
into ``kio`` entities by following each field's declared type.
"""

from __future__ import annotations

import dataclasses
import io
import struct
import typing
from dataclasses import dataclass
from typing import Any

from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from conformance.wire.codec import convert, payload_class

#: a request frame larger than this closes the connection (the group APIs need far less)
MAX_REQUEST_FRAME = 1 << 20
#: nesting bound for `build_deep` (Kafka messages nest three or four levels)
MAX_DEPTH = 6

API_FETCH = 1
API_LIST_OFFSETS = 2
API_METADATA = 3
API_OFFSET_COMMIT = 8
API_OFFSET_FETCH = 9
API_FIND_COORDINATOR = 10
API_JOIN_GROUP = 11
API_HEARTBEAT = 12
API_LEAVE_GROUP = 13
API_SYNC_GROUP = 14
API_DESCRIBE_GROUPS = 15
API_API_VERSIONS = 18
API_CONSUMER_GROUP_HEARTBEAT = 68

#: the versions served (ApiVersions advertises exactly these). Fetch stays below v13 and
#: OffsetCommit/OffsetFetch below v10 so that topics are named, not given by id (KIP-516).
SERVED: dict[int, tuple[int, int]] = {
    API_FETCH: (4, 12),
    API_LIST_OFFSETS: (1, 7),
    API_METADATA: (1, 12),
    API_OFFSET_COMMIT: (2, 9),
    API_OFFSET_FETCH: (1, 9),
    API_FIND_COORDINATOR: (0, 4),
    API_JOIN_GROUP: (0, 9),
    API_HEARTBEAT: (0, 4),
    API_LEAVE_GROUP: (0, 5),
    API_SYNC_GROUP: (0, 5),
    API_DESCRIBE_GROUPS: (0, 5),
    API_API_VERSIONS: (0, 3),
    API_CONSUMER_GROUP_HEARTBEAT: (0, 1),
}

NAMES = {
    API_FETCH: "Fetch",
    API_LIST_OFFSETS: "ListOffsets",
    API_METADATA: "Metadata",
    API_OFFSET_COMMIT: "OffsetCommit",
    API_OFFSET_FETCH: "OffsetFetch",
    API_FIND_COORDINATOR: "FindCoordinator",
    API_JOIN_GROUP: "JoinGroup",
    API_HEARTBEAT: "Heartbeat",
    API_LEAVE_GROUP: "LeaveGroup",
    API_SYNC_GROUP: "SyncGroup",
    API_DESCRIBE_GROUPS: "DescribeGroups",
    API_API_VERSIONS: "ApiVersions",
    API_CONSUMER_GROUP_HEARTBEAT: "ConsumerGroupHeartbeat",
}


class BadFrame(Exception):
    """A frame this server will not serve: the connection that sent it is closed."""


@dataclass(frozen=True)
class Incoming:
    api_key: int
    version: int
    correlation_id: int
    client_id: str
    body: Any  # the decoded kio request; None for an ApiVersions request of a version not served


def peek_header(frame: bytes) -> tuple[int, int, int]:
    if len(frame) < 8:
        raise BadFrame(f"request frame of {len(frame)} bytes has no header")
    key, version, corr = struct.unpack_from(">hhi", frame, 0)
    return key, version, corr


def decode_request(frame: bytes) -> Incoming:
    """Decode one request frame (without its size prefix). An ApiVersions request of an unserved
    version is returned with ``body=None`` (answered with UNSUPPORTED_VERSION and the
    served ranges: KAFKA-3652, KIP-511)."""
    key, version, corr = peek_header(frame)
    lo_hi = SERVED.get(key)
    if lo_hi is None:
        raise BadFrame(f"api key {key} is not served")
    if not lo_hi[0] <= version <= lo_hi[1]:
        if key == API_API_VERSIONS:
            return Incoming(key, version, corr, "", None)
        raise BadFrame(f"{NAMES[key]} v{version} is not served")
    cls = payload_class(key, version, True)
    try:
        header, offset = entity_reader(cls.__header_schema__)(frame, 0)
        body, size = entity_reader(cls)(frame, offset)
    except Exception as e:  # kio raises assorted errors on malformed input
        raise BadFrame(f"{NAMES[key]} v{version} undecodable: {type(e).__name__}: {e}") from None
    if offset + size != len(frame):
        raise BadFrame(f"{NAMES[key]} v{version}: {len(frame) - offset - size} trailing bytes")
    return Incoming(key, version, corr, str(getattr(header, "client_id", "") or ""), body)


def encode_response(api_key: int, version: int, correlation_id: int, values: dict[str, Any]) -> bytes:
    """A whole response frame (size prefix included) of ``version`` built from plain values."""
    cls = payload_class(api_key, version, False)
    header_cls = cls.__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(buf, header_cls(correlation_id=i32(correlation_id)))
    entity_writer(cls)(buf, build_deep(cls, values))
    body = buf.getvalue()
    return struct.pack(">i", len(body)) + body


def _entity_of(kind: Any) -> Any:
    """The dataclass inside ``kind`` (``X``, ``X | None``, ``tuple[X, ...]``), else None."""
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return kind
    for arg in typing.get_args(kind):
        found = _entity_of(arg)
        if found is not None:
            return found
    return None


def build_deep(cls: Any, values: dict[str, Any], depth: int = 0) -> Any:
    """A kio entity from plain values: nested dicts (or lists of dicts) become the field's entity.
    Fields left out take their default; a version lacking a field ignores its value."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{cls.__name__}: nesting deeper than {MAX_DEPTH}")
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in values:
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                continue
            raise KeyError(f"{cls.__name__}.{f.name} has no value")
        value = values[f.name]
        kind = hints.get(f.name, f.type)
        inner = _entity_of(kind)
        if isinstance(value, dict) and inner is not None:
            kwargs[f.name] = build_deep(inner, value, depth + 1)
        elif isinstance(value, list | tuple):
            if inner is not None:
                kwargs[f.name] = tuple(build_deep(inner, v, depth + 1) for v in value)
            else:
                args = typing.get_args(kind)
                item = args[0] if args else None
                kwargs[f.name] = tuple(convert(item, v) for v in value)
        else:
            kwargs[f.name] = convert(kind, value)
    return cls(**kwargs)
