"""The few Kafka requests the launchers need, over a raw socket, encoded with ``kio``.

Readiness probes (ApiVersions, or Metadata v0 for brokers older than ApiVersions), CreateTopics and
a Metadata look-up to wait for a new topic's leaders. This is deliberately tiny and synchronous: the
conformance adapters have their own, fuller client.

Errors come in two kinds: :class:`WireRetry` (nothing usable yet: refused, reset, closed, timed out;
the caller may try again) and :class:`WireGarbage` (a complete answer that is not a valid response:
the caller must not wait for it to get better).
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import itertools
import socket
import struct
import time
from collections.abc import Mapping
from typing import Any, Literal

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta

from conformance.wire import dial

CLIENT_ID = "groupcheck-targets"
MAX_FRAME = 64 * 1024 * 1024

API_METADATA = 3
API_API_VERSIONS = 18
API_CREATE_TOPICS = 19

# Request versions this module can build (kio has more; these are the ones exercised here).
KIO_RANGES: dict[int, tuple[int, int]] = {
    API_METADATA: (0, 12),
    API_API_VERSIONS: (0, 3),
    API_CREATE_TOPICS: (2, 7),
}

_correlation = itertools.count(1)


class WireRetry(Exception):
    """No usable answer yet (connection refused/reset/closed, timeout)."""


class WireGarbage(Exception):
    """The peer sent a complete answer that is not a valid response to our request."""


@dataclasses.dataclass(frozen=True)
class ApiVersionsInfo:
    """What a broker said in ApiVersions: api key -> (min, max), plus the request version used."""

    request_version: int
    api_versions: Mapping[int, tuple[int, int]]
    error_code: int = 0
    notes: tuple[str, ...] = ()

    def supports(self, api_key: int) -> bool:
        return api_key in self.api_versions

    def best_version(self, api_key: int) -> int | None:
        """Highest version both the broker and this module support, or None."""
        if api_key not in self.api_versions:
            return None
        lo, hi = self.api_versions[api_key]
        klo, khi = KIO_RANGES[api_key]
        best = min(hi, khi)
        return best if best >= max(lo, klo) else None


def split_bootstrap(bootstrap: str) -> tuple[str, int]:
    first = bootstrap.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"bad bootstrap address {bootstrap!r} (want HOST:PORT)")
    return host, int(port)


def _encode(payload: Any, correlation_id: int) -> bytes:
    header_cls = payload.__header_schema__
    header = header_cls(
        request_api_key=payload.__api_key__,
        request_api_version=payload.__version__,
        correlation_id=i32(correlation_id),
        client_id=CLIENT_ID,
    )
    buf = io.BytesIO()
    entity_writer(header_cls)(buf, header)
    entity_writer(type(payload))(buf, payload)
    body = buf.getvalue()
    return struct.pack(">i", len(body)) + body


def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytes:
    """``n`` bytes before ``deadline`` (monotonic): the deadline is the whole answer's, so a peer
    that sends a byte now and then cannot hold the caller past it."""
    chunks = []
    while n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise WireRetry("timed out waiting for the answer (deadline of the whole exchange)")
        try:
            sock.settimeout(left)
            chunk = sock.recv(min(n, 1 << 16))
        except TimeoutError as e:
            raise WireRetry("timed out waiting for the answer") from e
        except OSError as e:
            raise WireRetry(f"connection error while reading: {e}") from e
        if not chunk:
            raise WireRetry("connection closed before a complete answer")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def exchange(host: str, port: int, payload: Any, timeout: float) -> bytes:
    """Send one request on a fresh connection, return the response frame (without its size).
    ``timeout`` bounds the whole exchange: connect, send and the complete answer."""
    deadline = time.monotonic() + max(timeout, 0.05)
    correlation_id = next(_correlation) & 0x7FFFFFFF
    data = _encode(payload, correlation_id)
    try:
        sock = dial.connect((host, port), max(timeout, 0.05))
    except TimeoutError as e:
        raise WireRetry("connect timed out") from e
    except OSError as e:
        raise WireRetry(f"connect failed: {e.strerror or e}") from e
    with sock:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            sock.sendall(data)
        except OSError as e:
            raise WireRetry(f"send failed: {e}") from e
        (size,) = struct.unpack(">i", _recv_exact(sock, 4, deadline))
        if size < 4 or size > MAX_FRAME:
            raise WireGarbage(f"response frame size {size} is not plausible")
        frame = _recv_exact(sock, size, deadline)
    (got,) = struct.unpack_from(">i", frame, 0)
    if got != correlation_id:
        raise WireGarbage(f"response correlation id {got} != request's {correlation_id}")
    return frame


def decode(payload_type: Any, frame: bytes) -> Any:
    """Decode a response frame; the whole frame must be consumed."""
    header_cls = payload_type.__header_schema__
    try:
        _header, offset = entity_reader(header_cls)(frame, 0)
        value, size = entity_reader(payload_type)(frame, offset)
    except Exception as e:  # kio raises assorted errors on malformed input
        raise WireGarbage(f"cannot decode {payload_type.__name__} v{payload_type.__version__}: {e}") from e
    if offset + size != len(frame):
        raise WireGarbage(
            f"{payload_type.__name__} v{payload_type.__version__}: {len(frame) - offset - size} trailing bytes"
        )
    return value


def _module(api_key: int, version: int, kind: Literal[EntityType.request, EntityType.response]) -> Any:
    return load_payload_module(api_key, version, kind)


def _payload_class(module: Any, suffix: str) -> Any:
    for name, obj in vars(module).items():
        if (
            isinstance(obj, type)
            and name.endswith(suffix)
            and getattr(obj, "__type__", None)
            in (
                EntityType.request,
                EntityType.response,
            )
        ):
            return obj
    raise LookupError(f"no {suffix} class in {module.__name__}")


def api_versions(host: str, port: int, timeout: float, version: int = 3) -> ApiVersionsInfo:
    """ApiVersions at ``version``; on UNSUPPORTED_VERSION (35) asks again at v0.

    A broker that does not support our version should answer error 35 in the v0 layout, listing
    its ApiVersions range; not all do (the librdkafka 2.16 mock writes a layout that is neither v0
    nor v3), so only the error code is read from such an answer, and the question is asked again
    at v0, which every broker that has ApiVersions supports. The oddity is kept in ``notes``.
    """
    req_cls = _payload_class(_module(API_API_VERSIONS, version, EntityType.request), "Request")
    resp_cls = _payload_class(_module(API_API_VERSIONS, version, EntityType.response), "Response")
    kwargs: dict[str, Any] = {}
    if "client_software_name" in {f.name for f in dataclasses.fields(req_cls)}:
        kwargs = {"client_software_name": "groupcheck", "client_software_version": "0"}
    frame = exchange(host, port, req_cls(**kwargs), timeout)
    code = struct.unpack_from(">h", frame, 4)[0] if len(frame) >= 6 else None
    if version != 0 and code == 35:
        notes: tuple[str, ...] = ()
        try:
            v0 = _payload_class(_module(API_API_VERSIONS, 0, EntityType.response), "Response")
            decode(v0, frame)
        except WireGarbage as e:
            notes = (f"ApiVersions v{version} answered UNSUPPORTED_VERSION in a malformed body ({e})",)
        info = api_versions(host, port, timeout, version=0)
        return dataclasses.replace(info, notes=notes + info.notes)
    resp = decode(resp_cls, frame)
    code = int(resp.error_code.value)
    if code != 0:
        raise WireGarbage(f"ApiVersions v{version} error {error_name(code)}")
    return ApiVersionsInfo(version, _ranges(resp), code)


def _ranges(resp: Any) -> dict[int, tuple[int, int]]:
    out = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in resp.api_keys}
    if API_API_VERSIONS not in out:
        raise WireGarbage("ApiVersions answer does not list ApiVersions itself")
    return out


def metadata(host: str, port: int, topics: list[str] | None, timeout: float, version: int = 0) -> Any:
    """Metadata at ``version`` (0 lists all topics when ``topics`` is None or empty)."""
    req_mod = _module(API_METADATA, version, EntityType.request)
    req_cls = _payload_class(req_mod, "Request")
    topic_cls = req_mod.MetadataRequestTopic
    topic_fields = {f.name for f in dataclasses.fields(topic_cls)}

    def topic(name: str) -> Any:
        kw: dict[str, Any] = {"name": name}
        if "topic_id" in topic_fields:
            kw["topic_id"] = None
        return topic_cls(**kw)

    kwargs: dict[str, Any] = {}
    fields = {f.name for f in dataclasses.fields(req_cls)}
    if topics:
        kwargs["topics"] = tuple(topic(t) for t in topics)
    else:
        kwargs["topics"] = () if version == 0 else None
    if "allow_auto_topic_creation" in fields:
        kwargs["allow_auto_topic_creation"] = False
    for f in ("include_cluster_authorized_operations", "include_topic_authorized_operations"):
        if f in fields:
            kwargs[f] = False
    frame = exchange(host, port, req_cls(**kwargs), timeout)
    resp_cls = _payload_class(_module(API_METADATA, version, EntityType.response), "Response")
    return decode(resp_cls, frame)


def create_topics(
    host: str, port: int, name: str, partitions: int, timeout: float, version: int
) -> tuple[int, str | None]:
    """CreateTopics for one topic, replication factor 1; returns (error code, error message)."""
    req_mod = _module(API_CREATE_TOPICS, version, EntityType.request)
    req_cls = _payload_class(req_mod, "Request")
    topic = req_mod.CreatableTopic(
        name=name,
        num_partitions=i32(partitions),
        replication_factor=i16(1),
        assignments=(),
        configs=(),
    )
    wait_ms = max(1000, int(timeout * 1000) - 500)
    kwargs: dict[str, Any] = {
        "topics": (topic,),
        "timeout": i32Timedelta.parse(datetime.timedelta(milliseconds=wait_ms)),
    }
    frame = exchange(host, port, req_cls(**kwargs), timeout)
    resp_cls = _payload_class(_module(API_CREATE_TOPICS, version, EntityType.response), "Response")
    resp = decode(resp_cls, frame)
    for result in resp.topics:
        if result.name == name:
            return int(result.error_code.value), getattr(result, "error_message", None)
    raise WireGarbage(f"CreateTopics answer does not mention topic {name!r}")


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"error {code}"
