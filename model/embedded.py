"""The consumer embedded protocol as bytes (docs/protocol-reference.md#c1, #c2), byte-compatible with Apache Kafka.

JoinGroup `Protocols[].Metadata` carries a ConsumerProtocolSubscription and SyncGroup `Assignment`
a ConsumerProtocolAssignment (MSG `ConsumerProtocolSubscription.json` / `ConsumerProtocolAssignment.json`,
versions 0-3, non-flexible; `clients/.../consumer/internals/ConsumerProtocol.java`). The sticky
assignor's user data follows KIP-341 (V0, V1 = V0 + generation; SA L187-272) and the
cooperative-sticky assignor's is a bare int32 generation (CSA L56-105).

Byte order choices, matching the Java client (ConsumerProtocol.serializeSubscription/-Assignment):
* Subscription: Topics sorted; OwnedPartitions sorted by (topic, partition) and grouped into one entry
  per run of equal topics. Strings are ordered as Java's `String.compareTo` orders them (UTF-16 code
  units), see `java_string_key`.
* Assignment: one entry per topic in order of first appearance, partitions in the given order (the
  Java writer looks the topic up in the keyed collection and appends).
* Sticky user data: one entry per topic in order of first appearance, partitions in the given order.
  Java groups through a HashMap (`CollectionUtils.groupPartitionsByTopic`), whose order is
  unspecified; readers never depend on it.

Decoding follows the Java reader: a version above 3 is parsed with the version-3 layout (fields are
only ever appended), a negative version is rejected, trailing bytes are ignored, any negative length
of a nullable field means null, and strings decode as UTF-8 with malformed bytes replaced (as
`new String(bytes, UTF_8)` does).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

TopicPartition = tuple[str, int]

HIGHEST_VERSION = 3
"""Highest ConsumerProtocolSubscription/Assignment version (MSG `validVersions: 0-3`)."""

DEFAULT_GENERATION = -1
"""Generation meaning "none" (ASA `DEFAULT_GENERATION`, L56; subscription GenerationId default)."""

_INT16_MAX = 0x7FFF
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Subscription:
    """One member's JoinGroup metadata for one assignor (ConsumerProtocolSubscription)."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = DEFAULT_GENERATION
    rack_id: str | None = None


@dataclass(frozen=True)
class Assignment:
    """What the leader hands one member in SyncGroup (ConsumerProtocolAssignment)."""

    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None


class EmbeddedDecodeError(ValueError):
    """Truncated or malformed embedded-protocol bytes; names the byte offset and the field."""

    def __init__(self, what: str, field: str, offset: int, problem: str) -> None:
        super().__init__(f"{what}: {problem} in field {field!r} at byte offset {offset}")
        self.what = what
        self.field = field
        self.offset = offset
        self.problem = problem


def java_string_key(s: str) -> bytes:
    """Sort key ordering strings like Java's `String.compareTo` (lexicographic over UTF-16 code units)."""
    return s.encode("utf-16-be", "surrogatepass")


def _tp_key(tp: TopicPartition) -> tuple[bytes, int]:
    return java_string_key(tp[0]), tp[1]


# ---------------------------------------------------------------------------------------- writing


class _Writer:
    def __init__(self, what: str) -> None:
        self.what = what
        self.out = bytearray()

    def int16(self, value: int, field: str) -> None:
        self._check_range(value, -(2**15), _INT16_MAX, field)
        self.out += struct.pack(">h", value)

    def int32(self, value: int, field: str) -> None:
        self._check_range(value, _INT32_MIN, _INT32_MAX, field)
        self.out += struct.pack(">i", value)

    def string(self, value: str, field: str) -> None:
        raw = value.encode("utf-8")
        if len(raw) > _INT16_MAX:
            raise ValueError(f"{self.what}: {field} is {len(raw)} bytes, longer than a Kafka string (32767)")
        self.out += struct.pack(">h", len(raw)) + raw

    def nullable_string(self, value: str | None, field: str) -> None:
        if value is None:
            self.out += struct.pack(">h", -1)
        else:
            self.string(value, field)

    def nullable_bytes(self, value: bytes | None, field: str) -> None:
        if value is None:
            self.out += struct.pack(">i", -1)
        else:
            self.int32(len(value), field)
            self.out += value

    def topic_partitions(self, groups: Sequence[tuple[str, Sequence[int]]], field: str) -> None:
        self.int32(len(groups), field)
        for topic, partitions in groups:
            self.string(topic, f"{field}.topic")
            self.int32(len(partitions), f"{field}.partitions")
            for p in partitions:
                self.int32(p, f"{field}.partitions")

    def _check_range(self, value: int, lo: int, hi: int, field: str) -> None:
        if not lo <= value <= hi:
            raise ValueError(f"{self.what}: {field}={value} does not fit the wire type")


def _group_sorted(partitions: Sequence[TopicPartition]) -> list[tuple[str, list[int]]]:
    """Sort by (topic, partition) and group runs of one topic (ConsumerProtocol.serializeSubscription)."""
    groups: list[tuple[str, list[int]]] = []
    for topic, p in sorted(partitions, key=_tp_key):
        if not groups or groups[-1][0] != topic:
            groups.append((topic, []))
        groups[-1][1].append(p)
    return groups


def _group_first_seen(partitions: Sequence[TopicPartition]) -> list[tuple[str, list[int]]]:
    """Group by topic in order of first appearance, partitions in the given order."""
    by_topic: dict[str, list[int]] = {}
    for topic, p in partitions:
        by_topic.setdefault(topic, []).append(p)
    return list(by_topic.items())


def _write_version(w: _Writer, version: int) -> int:
    if version < 0:
        raise ValueError(f"{w.what}: unsupported version {version}")
    # ConsumerProtocol.checkSubscriptionVersion/checkAssignmentVersion: above the highest known
    # version the Java client writes (and labels) the highest one.
    version = min(version, HIGHEST_VERSION)
    w.int16(version, "version")
    return version


def canonical_subscription(sub: Subscription, version: int = HIGHEST_VERSION) -> Subscription:
    """What `decode_subscription(encode_subscription(sub, version))` yields: wire order, absent fields at defaults."""
    version = min(version, HIGHEST_VERSION)
    owned = tuple((t, p) for t, ps in _group_sorted(sub.owned_partitions) for p in ps)
    return Subscription(
        topics=tuple(sorted(sub.topics, key=java_string_key)),
        user_data=sub.user_data,
        owned_partitions=owned if version >= 1 else (),
        generation_id=sub.generation_id if version >= 2 else DEFAULT_GENERATION,
        rack_id=sub.rack_id if version >= 3 else None,
    )


def encode_subscription(sub: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    """ConsumerProtocolSubscription bytes (int16 version header, then the fields of that version).

    Fields the version lacks are left out silently: every field added after v0 is `ignorable` in the
    schema. The Java consumer always sends version 3 (docs/protocol-reference.md#c1; CC `metadata()`).
    """
    w = _Writer("subscription")
    version = _write_version(w, version)
    topics = sorted(sub.topics, key=java_string_key)
    w.int32(len(topics), "topics")
    for topic in topics:
        w.string(topic, "topics")
    w.nullable_bytes(sub.user_data, "user_data")
    if version >= 1:
        w.topic_partitions(_group_sorted(sub.owned_partitions), "owned_partitions")
    if version >= 2:
        w.int32(sub.generation_id, "generation_id")
    if version >= 3:
        w.nullable_string(sub.rack_id, "rack_id")
    return bytes(w.out)


def encode_assignment(a: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    """ConsumerProtocolAssignment bytes; versions 0-3 share one layout after the header."""
    w = _Writer("assignment")
    _write_version(w, version)
    w.topic_partitions(_group_first_seen(a.partitions), "assigned_partitions")
    w.nullable_bytes(a.user_data, "user_data")
    return bytes(w.out)


# ---------------------------------------------------------------------------------------- reading


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def fail(self, field: str, problem: str, offset: int | None = None) -> EmbeddedDecodeError:
        return EmbeddedDecodeError(self.what, field, self.pos if offset is None else offset, problem)

    def _take(self, n: int, field: str) -> bytes:
        have = len(self.data) - self.pos
        if n > have:
            raise self.fail(field, f"truncated: needs {n} byte(s), {have} left")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int16(self, field: str) -> int:
        value: int = struct.unpack(">h", self._take(2, field))[0]
        return value

    def int32(self, field: str) -> int:
        value: int = struct.unpack(">i", self._take(4, field))[0]
        return value

    def nullable_string(self, field: str) -> str | None:
        start = self.pos
        n = self.int16(field)
        if n < 0:
            return None
        return self._take_text(n, field, start)

    def string(self, field: str) -> str:
        start = self.pos
        n = self.int16(field)
        if n < 0:
            raise self.fail(field, f"non-nullable string has length {n}", start)
        return self._take_text(n, field, start)

    def _take_text(self, n: int, field: str, start: int) -> str:
        have = len(self.data) - self.pos
        if n > have:
            raise self.fail(field, f"truncated: string of {n} byte(s), {have} left", start)
        return self._take(n, field).decode("utf-8", "replace")

    def nullable_bytes(self, field: str) -> bytes | None:
        start = self.pos
        n = self.int32(field)
        if n < 0:
            return None
        have = len(self.data) - self.pos
        if n > have:
            raise self.fail(field, f"truncated: bytes of length {n}, {have} left", start)
        return self._take(n, field)

    def array_length(self, field: str) -> int:
        start = self.pos
        n = self.int32(field)
        if n < 0:
            raise self.fail(field, f"non-nullable array has length {n}", start)
        return n

    def topic_partitions(self, field: str) -> tuple[TopicPartition, ...]:
        out: list[TopicPartition] = []
        for _ in range(self.array_length(field)):
            topic = self.string(f"{field}.topic")
            for _ in range(self.array_length(f"{field}.partitions")):
                out.append((topic, self.int32(f"{field}.partitions")))
        return tuple(out)


def _read_version(r: _Reader) -> int:
    version = r.int16("version")
    if version < 0:
        raise r.fail("version", f"unsupported version {version}", 0)
    return min(version, HIGHEST_VERSION)


def decode_subscription(data: bytes) -> Subscription:
    """Parse ConsumerProtocolSubscription bytes (ConsumerProtocol.deserializeSubscription)."""
    if type(data) is bytes:  # the result is immutable: the same bytes parse the same
        return _decode_subscription_cached(data)
    return _decode_subscription(data)


@lru_cache(maxsize=4096)
def _decode_subscription_cached(data: bytes) -> Subscription:
    return _decode_subscription(data)


def _decode_subscription(data: bytes) -> Subscription:
    r = _Reader(data, "subscription")
    version = _read_version(r)
    topics = tuple(r.string("topics") for _ in range(r.array_length("topics")))
    user_data = r.nullable_bytes("user_data")
    owned = r.topic_partitions("owned_partitions") if version >= 1 else ()
    generation = r.int32("generation_id") if version >= 2 else DEFAULT_GENERATION
    rack = r.nullable_string("rack_id") if version >= 3 else None
    return Subscription(topics, user_data, owned, generation, rack)


def decode_assignment(data: bytes) -> Assignment:
    """Parse ConsumerProtocolAssignment bytes (ConsumerProtocol.deserializeAssignment)."""
    if type(data) is bytes:  # the result is immutable: the same bytes parse the same
        return _decode_assignment_cached(data)
    return _decode_assignment(data)


@lru_cache(maxsize=4096)
def _decode_assignment_cached(data: bytes) -> Assignment:
    return _decode_assignment(data)


def _decode_assignment(data: bytes) -> Assignment:
    r = _Reader(data, "assignment")
    _read_version(r)
    partitions = r.topic_partitions("assigned_partitions")
    user_data = r.nullable_bytes("user_data")
    return Assignment(partitions, user_data)


# ------------------------------------------------------------------- assignor user data (docs/protocol-reference.md#c2)


def encode_sticky_user_data(partitions: Sequence[TopicPartition], generation: int | None) -> bytes:
    """StickyAssignor user data: KIP-341 V1 (claimed partitions + int32 generation) or V0 when None.

    The Java writer always emits V1 (SA `serializeTopicPartitionAssignment`); V0 is what a
    pre-KIP-341 client sends.
    """
    w = _Writer("sticky user data")
    w.topic_partitions(_group_first_seen(partitions), "previous_assignment")
    if generation is not None:
        w.int32(generation, "generation")
    return bytes(w.out)


def decode_sticky_user_data_v0(data: bytes) -> tuple[TopicPartition, ...]:
    """Read only the V0 part (the claimed partitions), ignoring what follows.

    This is how a pre-KIP-341 leader reads V1 user data (KIP-341 "forward compatibility").
    Raises `EmbeddedDecodeError` when even the V0 part does not parse.
    """
    return _Reader(data, "sticky user data").topic_partitions("previous_assignment")


def decode_sticky_user_data(data: bytes | None) -> tuple[tuple[TopicPartition, ...], int | None]:
    """(claimed partitions, generation) as the Java StickyAssignor leader reads them (SA L230-272).

    Null or empty user data: nothing claimed, no generation. Otherwise the V1 layout is tried, then
    V0 (generation None); bytes that fit neither mean nothing claimed at generation -1 (docs/protocol-reference.md#c2).
    """
    if not data:
        return (), None
    r = _Reader(data, "sticky user data")
    try:
        partitions = r.topic_partitions("previous_assignment")
    except EmbeddedDecodeError:
        return (), DEFAULT_GENERATION
    try:
        return partitions, r.int32("generation")
    except EmbeddedDecodeError:
        return partitions, None


def encode_cooperative_user_data(generation: int) -> bytes:
    """CooperativeStickyAssignor user data: the int32 generation of the last assignment (CSA L77)."""
    w = _Writer("cooperative user data")
    w.int32(generation, "generation")
    return bytes(w.out)


def decode_cooperative_user_data(data: bytes | None) -> int | None:
    """The generation in cooperative-sticky user data: None when null, -1 when unreadable (CSA L88-105)."""
    if data is None:
        return None
    try:
        return _Reader(data, "cooperative user data").int32("generation")
    except EmbeddedDecodeError:
        return DEFAULT_GENERATION
