"""model.embedded: round trips, byte equality with the kio Kafka library, sticky/cooperative user data, errors."""

from __future__ import annotations

import contextlib
import importlib
import io
import struct
from itertools import groupby
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer
from kio.serial.writers import legacy_array_writer, write_int32, write_legacy_string
from kio.static.primitive import i32

from model.embedded import (
    Assignment,
    EmbeddedDecodeError,
    Subscription,
    canonical_subscription,
    decode_assignment,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    decode_sticky_user_data_v0,
    decode_subscription,
    encode_assignment,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    encode_subscription,
    java_string_key,
)

VERSIONS = (0, 1, 2, 3)

# Names whose Python order equals Java's (no characters at or above U+E000), so the expected wire
# order can be computed with plain sorted(); the UTF-16 ordering has its own test below.
names = st.text(alphabet="abcxyz-._09ÄéΩ中", min_size=0, max_size=6)
partition_ids = st.integers(min_value=0, max_value=2**31 - 1) | st.integers(min_value=-3, max_value=40)
tps = st.lists(st.tuples(names, partition_ids), max_size=8)
int32s = st.integers(min_value=-(2**31), max_value=2**31 - 1)
user_datas = st.none() | st.binary(max_size=16)
subscriptions = st.builds(
    Subscription,
    topics=st.lists(names, max_size=5).map(tuple),
    user_data=user_datas,
    owned_partitions=tps.map(tuple),
    generation_id=int32s,
    rack_id=st.none() | names,
)
assignments = st.builds(Assignment, partitions=tps.map(tuple), user_data=user_datas)
FAST = settings(max_examples=60, deadline=None)


# ------------------------------------------------------------------------------- kio reference


def _kio_module(kind: str, version: int) -> Any:
    return importlib.import_module(f"kio.schema.consumer_protocol_{kind}.v{version}.data")


def _java_sorted_groups(partitions: tuple[tuple[str, int], ...]) -> list[tuple[str, list[int]]]:
    ordered = sorted(partitions)
    return [(t, [p for _, p in grp]) for t, grp in groupby(ordered, key=lambda tp: tp[0])]


def _first_seen_groups(partitions: tuple[tuple[str, int], ...]) -> list[tuple[str, list[int]]]:
    out: dict[str, list[int]] = {}
    for t, p in partitions:
        out.setdefault(t, []).append(p)
    return list(out.items())


def kio_subscription(sub: Subscription, version: int) -> bytes:
    """What Kafka's ConsumerProtocol.serializeSubscription writes, built with kio's generated schema."""
    mod = _kio_module("subscription", version)
    fields: dict[str, Any] = {"topics": tuple(sorted(sub.topics)), "user_data": sub.user_data}
    if version >= 1:
        fields["owned_partitions"] = tuple(
            mod.TopicPartition(topic=t, partitions=tuple(i32(p) for p in ps))
            for t, ps in _java_sorted_groups(sub.owned_partitions)
        )
    if version >= 2:
        fields["generation_id"] = i32(sub.generation_id)
    if version >= 3:
        fields["rack_id"] = sub.rack_id
    buf = io.BytesIO()
    buf.write(struct.pack(">h", version))
    entity_writer(mod.ConsumerProtocolSubscription)(buf, mod.ConsumerProtocolSubscription(**fields))
    return buf.getvalue()


def kio_assignment(a: Assignment, version: int) -> bytes:
    mod = _kio_module("assignment", version)
    parts = tuple(
        mod.TopicPartition(topic=t, partitions=tuple(i32(p) for p in ps))
        for t, ps in _first_seen_groups(a.partitions)
    )
    buf = io.BytesIO()
    buf.write(struct.pack(">h", version))
    entity_writer(mod.ConsumerProtocolAssignment)(
        buf, mod.ConsumerProtocolAssignment(assigned_partitions=parts, user_data=a.user_data)
    )
    return buf.getvalue()


# ------------------------------------------------------------------------------- subscription


@pytest.mark.parametrize("version", VERSIONS)
@FAST
@given(sub=subscriptions)
def test_subscription_bytes_equal_kio(version: int, sub: Subscription) -> None:
    assert encode_subscription(sub, version) == kio_subscription(sub, version)


@pytest.mark.parametrize("version", VERSIONS)
@FAST
@given(sub=subscriptions)
def test_subscription_round_trip_and_kio_reads_ours(version: int, sub: Subscription) -> None:
    data = encode_subscription(sub, version)
    assert decode_subscription(data) == canonical_subscription(sub, version)
    mod = _kio_module("subscription", version)
    parsed, size = entity_reader(mod.ConsumerProtocolSubscription)(data, 2)
    assert size == len(data) - 2
    assert tuple(parsed.topics) == tuple(sorted(sub.topics))
    assert parsed.user_data == sub.user_data


def test_subscription_fixed_vector_v3() -> None:
    sub = Subscription(
        topics=("b", "a"),
        user_data=b"\x01\x02",
        owned_partitions=(("b", 0), ("a", 2), ("a", 1)),
        generation_id=7,
        rack_id="r1",
    )
    expected = (
        b"\x00\x03"  # version
        + b"\x00\x00\x00\x02\x00\x01a\x00\x01b"  # topics, sorted
        + b"\x00\x00\x00\x02\x01\x02"  # user data
        + b"\x00\x00\x00\x02"  # owned: 2 topics, sorted by (topic, partition)
        + b"\x00\x01a\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x02"
        + b"\x00\x01b\x00\x00\x00\x01\x00\x00\x00\x00"
        + b"\x00\x00\x00\x07"  # generation
        + b"\x00\x02r1"  # rack
    )
    assert encode_subscription(sub) == expected == kio_subscription(sub, 3)
    assert decode_subscription(expected) == Subscription(
        ("a", "b"), b"\x01\x02", (("a", 1), ("a", 2), ("b", 0)), 7, "r1"
    )


def test_subscription_nulls_and_defaults() -> None:
    data = encode_subscription(Subscription(topics=()))
    no_topics, null_bytes, no_owned, generation_none, null_rack = (
        b"\x00\x00\x00\x00",
        b"\xff\xff\xff\xff",
        b"\x00\x00\x00\x00",
        b"\xff\xff\xff\xff",
        b"\xff\xff",
    )
    assert data == b"\x00\x03" + no_topics + null_bytes + no_owned + generation_none + null_rack
    assert decode_subscription(data) == Subscription(topics=())


def test_subscription_v0_drops_later_fields() -> None:
    sub = Subscription(("t",), None, (("t", 0),), 5, "rack")
    assert decode_subscription(encode_subscription(sub, 0)) == Subscription(("t",))
    assert decode_subscription(encode_subscription(sub, 1)) == Subscription(("t",), None, (("t", 0),))
    assert decode_subscription(encode_subscription(sub, 2)) == Subscription(("t",), None, (("t", 0),), 5)


def test_topics_sorted_like_java_string_compare() -> None:
    # Java compares UTF-16 code units: U+10000 is a surrogate pair (0xD800 ...) and sorts before U+FFFF.
    high_bmp, astral = "\uffff", "\U00010000"
    assert sorted([high_bmp, astral]) == [high_bmp, astral]
    assert sorted([high_bmp, astral], key=java_string_key) == [astral, high_bmp]
    decoded = decode_subscription(encode_subscription(Subscription((high_bmp, astral))))
    assert decoded.topics == (astral, high_bmp)


def test_newer_version_parsed_with_v3_layout_and_trailing_bytes_ignored() -> None:
    sub = Subscription(("t",), b"u", (("t", 1),), 3, None)
    data = bytearray(encode_subscription(sub, 3))
    data[0:2] = struct.pack(">h", 9)
    assert decode_subscription(bytes(data) + b"future-field") == sub


def test_encode_version_above_highest_is_written_as_highest() -> None:
    sub = Subscription(("t",))
    assert encode_subscription(sub, 7) == encode_subscription(sub, 3)
    assert encode_assignment(Assignment(()), 7) == encode_assignment(Assignment(()), 3)


def test_encode_rejects_values_the_wire_cannot_carry() -> None:
    with pytest.raises(ValueError, match="version"):
        encode_subscription(Subscription(()), -1)
    with pytest.raises(ValueError, match="generation_id"):
        encode_subscription(Subscription((), generation_id=2**31))
    with pytest.raises(ValueError, match="32767"):
        encode_subscription(Subscription(("x" * 40_000,)))
    with pytest.raises(ValueError, match="partitions"):
        encode_assignment(Assignment((("t", -(2**31) - 1),)))


# ------------------------------------------------------------------------------- assignment


@pytest.mark.parametrize("version", VERSIONS)
@FAST
@given(a=assignments)
def test_assignment_bytes_equal_kio_and_round_trip(version: int, a: Assignment) -> None:
    data = encode_assignment(a, version)
    assert data == kio_assignment(a, version)
    expected = tuple((t, p) for t, ps in _first_seen_groups(a.partitions) for p in ps)
    assert decode_assignment(data) == Assignment(expected, a.user_data)
    mod = _kio_module("assignment", version)
    parsed, _ = entity_reader(mod.ConsumerProtocolAssignment)(data, 2)
    assert parsed.user_data == a.user_data


def test_assignment_groups_by_first_seen_topic_keeping_partition_order() -> None:
    a = Assignment((("b", 3), ("a", 0), ("b", 1)), None)
    data = encode_assignment(a)
    assert data == (
        b"\x00\x03\x00\x00\x00\x02"
        + b"\x00\x01b\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x01"
        + b"\x00\x01a\x00\x00\x00\x01\x00\x00\x00\x00"
        + b"\xff\xff\xff\xff"
    )
    assert decode_assignment(data).partitions == (("b", 3), ("b", 1), ("a", 0))


# ------------------------------------------------------------------------------- user data


def _kio_sticky(partitions: list[tuple[str, int]], generation: int | None) -> bytes:
    """KIP-341 layout composed from kio's Kafka primitive writers."""

    def write_topic_assignment(buf: Any, item: tuple[str, list[int]]) -> None:
        write_legacy_string(buf, item[0])
        legacy_array_writer(write_int32)(buf, [i32(p) for p in item[1]])

    buf = io.BytesIO()
    legacy_array_writer(write_topic_assignment)(buf, _first_seen_groups(tuple(partitions)))
    if generation is not None:
        write_int32(buf, i32(generation))
    return buf.getvalue()


def test_sticky_user_data_fixed_vectors() -> None:
    parts = [("t", 0), ("t", 2)]
    v0 = b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x02"
    assert encode_sticky_user_data(parts, None) == v0 == _kio_sticky(parts, None)
    assert encode_sticky_user_data(parts, 4) == v0 + b"\x00\x00\x00\x04" == _kio_sticky(parts, 4)


@FAST
@given(parts=tps, generation=st.none() | int32s)
def test_sticky_user_data_round_trip_and_kio_layout(
    parts: list[tuple[str, int]], generation: int | None
) -> None:
    data = encode_sticky_user_data(parts, generation)
    assert data == _kio_sticky(parts, generation)
    expected = tuple((t, p) for t, ps in _first_seen_groups(tuple(parts)) for p in ps)
    assert decode_sticky_user_data(data) == (expected, generation)
    assert decode_sticky_user_data_v0(data) == expected


def test_sticky_user_data_fallbacks() -> None:
    assert decode_sticky_user_data(None) == ((), None)
    assert decode_sticky_user_data(b"") == ((), None)
    v0 = encode_sticky_user_data([("t", 1)], None)
    assert decode_sticky_user_data(v0) == ((("t", 1),), None)  # V1 fails (no generation), V0 fits
    assert decode_sticky_user_data(v0 + b"\x00\x00") == ((("t", 1),), None)  # too short for V1
    assert decode_sticky_user_data(b"\x00\x00\x00\x05") == ((), -1)  # neither layout fits
    assert decode_sticky_user_data(b"\xff\xff\xff\xff") == ((), -1)  # negative array length
    assert decode_sticky_user_data(encode_cooperative_user_data(9)) == ((), -1)


def test_cooperative_user_data() -> None:
    assert encode_cooperative_user_data(12) == b"\x00\x00\x00\x0c"
    assert encode_cooperative_user_data(-1) == b"\xff\xff\xff\xff"
    assert decode_cooperative_user_data(b"\x00\x00\x00\x0c") == 12
    assert decode_cooperative_user_data(b"\x00\x00\x00\x0c\x99") == 12
    assert decode_cooperative_user_data(None) is None
    assert decode_cooperative_user_data(b"") == -1
    assert decode_cooperative_user_data(b"\x00\x01") == -1


# ------------------------------------------------------------------------------- errors


def _all_prefixes_fail(data: bytes, decode: Any) -> None:
    for cut in range(len(data)):
        with pytest.raises(EmbeddedDecodeError) as info:
            decode(data[:cut])
        err = info.value
        assert 0 <= err.offset <= cut
        assert f"byte offset {err.offset}" in str(err)
        assert repr(err.field) in str(err)


@pytest.mark.parametrize("version", VERSIONS)
def test_truncated_subscription_names_offset_and_field(version: int) -> None:
    sub = Subscription(("a", "b"), b"xy", (("a", 0), ("b", 1)), 3, "r")
    _all_prefixes_fail(encode_subscription(sub, version), decode_subscription)


def test_truncated_assignment_names_offset_and_field() -> None:
    _all_prefixes_fail(encode_assignment(Assignment((("a", 0), ("b", 1)), b"u")), decode_assignment)


def test_truncation_message_names_the_field() -> None:
    data = encode_subscription(Subscription(("topic",), None, (), 5))
    with pytest.raises(EmbeddedDecodeError, match=r"'generation_id' at byte offset 21"):
        decode_subscription(data[:-4])
    with pytest.raises(EmbeddedDecodeError, match=r"'version' at byte offset 0"):
        decode_subscription(b"\x00")


@pytest.mark.parametrize(
    ("data", "field", "offset"),
    [
        (b"\xff\xff", "version", 0),  # negative version
        (b"\x00\x00\xff\xff\xff\xfe", "topics", 2),  # negative topics array
        (b"\x00\x00\x00\x00\x00\x01\xff\xff", "topics", 6),  # null (non-nullable) topic name
        (b"\x00\x00\x00\x00\x00\x01\x00\x09ab", "topics", 6),  # string longer than the data
        (b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10ab", "user_data", 6),  # bytes longer than the data
        (b"\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xfd", "owned_partitions", 10),
    ],
)
def test_malformed_subscription(data: bytes, field: str, offset: int) -> None:
    with pytest.raises(EmbeddedDecodeError) as info:
        decode_subscription(data)
    assert (info.value.field, info.value.offset) == (field, offset)
    assert isinstance(info.value, ValueError)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=40))
def test_arbitrary_bytes_decode_or_raise_embedded_error_only(data: bytes) -> None:
    for decode in (decode_subscription, decode_assignment):
        with contextlib.suppress(EmbeddedDecodeError):
            decode(data)
    decode_sticky_user_data(data)
    decode_cooperative_user_data(data)


def test_invalid_utf8_is_replaced_like_java() -> None:
    data = b"\x00\x00\x00\x00\x00\x01\x00\x02\xc3\x28\xff\xff\xff\xff"
    assert decode_subscription(data).topics == ("\ufffd(",)
