"""The trace format: codec round trips, the reader's rejections (file:line), the JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conformance.cli.main import main
from conformance.formats.codec import CodecError, decode, dumps, encode, registered
from conformance.formats.schema import SCHEMA_PATH, render
from conformance.formats.trace_file import TraceError, read_trace, to_bytes
from conformance.specs import load_scenarios
from conformance.trace.scenario import scenario_trace
from model.classic.messages import JoinGroupMember, JoinGroupResponse, OffsetCommitResponse
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    TopicPartitions,
)
from model.consumer.world import AdvanceEvent, ClientEvent, HeartbeatEvent, OffsetCommitEvent, TopicEvent
from model.errors import ErrorCode
from model.result import Delivery


@pytest.fixture(scope="module")
def kafka_7026_v0(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conformance.trace.scenario import run_scenario

    result = run_scenario(load_scenarios()["kafka-7026"], {"sticky": "v0"})
    path = tmp_path_factory.mktemp("trace") / "kafka-7026.ndjson"
    path.write_bytes(to_bytes(scenario_trace(result)))
    return path


CONSUMER_VALUES = [
    HeartbeatEvent(
        3,
        ConsumerGroupHeartbeatRequest(
            "g", "m1", 0, subscribed_topic_names=("t",), topic_partitions=(TopicPartitions("t", (0, 2)),)
        ),
        "c1",
    ),
    Delivery(
        3,
        ConsumerGroupHeartbeatResponse(
            ErrorCode.NONE, None, "m1", 4, 5000, (TopicPartitions("t", (1,)),), throttle_time_ms=0
        ),
    ),
    OffsetCommitEvent(
        4,
        OffsetCommitRequest(
            "g", (OffsetCommitRequestTopic("t", (OffsetCommitRequestPartition(0, 7),)),), 4, "m1"
        ),
    ),
    AdvanceEvent(1000),
    TopicEvent("add_partitions", "t", 4),
    ClientEvent("c1", "crash"),
]


@pytest.mark.parametrize("value", CONSUMER_VALUES, ids=lambda v: type(v).__name__)
def test_consumer_values_round_trip(value: object) -> None:
    assert decode(json.loads(dumps(encode(value)))) == value


def test_classic_round_trip_keeps_bytes_errors_and_unmodelled_codes() -> None:
    resp = JoinGroupResponse(
        ErrorCode.NONE, 2, "consumer", "sticky", "m", False, "m", (JoinGroupMember("m", None, b"\x00\xff"),)
    )
    data = encode(resp)
    assert data["members"][0]["metadata"] == "00ff" and data["error"] == "NONE"
    assert decode(data) == resp
    odd = OffsetCommitResponse((("t", 0, ErrorCode.of(9999)),))  # a code Kafka added after the model
    assert decode(encode(odd)) == odd


def test_both_offset_commit_requests_are_told_apart() -> None:
    tags = registered()
    assert "classic.OffsetCommitRequest" in tags and "consumer.OffsetCommitRequest" in tags
    assert tags["classic.OffsetCommitRequest"] is not tags["consumer.OffsetCommitRequest"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "classic.HeartbeatResponse", "error": "NOPE"}, "$.error: 'NOPE' is not a ErrorCode"),
        ({"type": "classic.HeartbeatResponse"}, "lacks field 'error'"),
        ({"type": "classic.HeartbeatResponse", "error": "NONE", "x": 1}, "has no field 'x'"),
        ({"type": "classic.Nope"}, "unknown type 'classic.Nope'"),
        ({"type": "classic.Advance", "ms": "10"}, "$.ms: expected an integer"),
        ({"type": "classic.Advance", "ms": True}, "$.ms: expected an integer"),
        (
            {"type": "classic.SyncGroupResponse", "error": "NONE", "assignment": "zz"},
            "$.assignment: 'zz' is not hex",
        ),
    ],
)
def test_decode_rejects_bad_values_with_their_path(data: dict[str, object], message: str) -> None:
    with pytest.raises(CodecError) as err:
        decode(data)
    assert message in str(err.value)


def test_encoding_is_canonical(kafka_7026_v0: Path) -> None:
    trace = read_trace(kafka_7026_v0)
    assert to_bytes(trace) == kafka_7026_v0.read_bytes()  # read + write is the identity
    for line in kafka_7026_v0.read_text().splitlines():
        assert line == dumps(json.loads(line))  # sorted keys, no spaces


def _mutate(src: Path, tmp: Path, index: int, fn: object) -> Path:
    lines = src.read_text().splitlines(keepends=True)
    lines[index] = fn(lines[index])  # type: ignore[operator]
    out = tmp / "bad.ndjson"
    out.write_text("".join(lines))
    return out


@pytest.mark.parametrize(
    ("index", "edit", "expected"),
    [
        (0, lambda s: s.replace('"version":1', '"version":2'), ":1: format version 2 is newer"),
        (0, lambda s: s.replace('"groupcheck-trace"', '"other"'), ":1: not a groupcheck trace"),
        (3, lambda s: s[:40] + "\n", ":4: invalid JSON"),
        (3, lambda s: s.replace('"kind":"step"', '"kind":"stop"'), ":4: kind 'stop'"),
        (3, lambda s: s.replace('"n":3', '"n":9'), ":4: step number 9 out of order"),
        (
            3,
            lambda s: s.replace('"type":"classic.Send"', '"type":"classic.Sent"'),
            ":4: event.type: unknown type",
        ),
        (5, lambda s: s.replace('"now":', '"later":'), ":6: step lacks field 'now'"),
        (-1, lambda s: s.replace('"verdict":"FAILED"', '"verdict":"MAYBE"'), "verdict 'MAYBE'"),
    ],
)
def test_reader_rejects_bad_lines_with_file_and_line(
    kafka_7026_v0: Path, tmp_path: Path, index: int, edit: object, expected: str
) -> None:
    bad = _mutate(kafka_7026_v0, tmp_path, index, edit)
    with pytest.raises(TraceError) as err:
        read_trace(bad)
    assert str(err.value).startswith(str(bad)) and expected in str(err.value)


def test_truncated_files_are_rejected(kafka_7026_v0: Path, tmp_path: Path) -> None:
    data = kafka_7026_v0.read_bytes()
    cut = tmp_path / "cut.ndjson"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match="truncated: the last line has no newline"):
        read_trace(cut)
    lines = data.decode().splitlines(keepends=True)
    cut.write_text("".join(lines[:10]))
    with pytest.raises(TraceError, match=r"cut.ndjson:11: truncated: no verdict line"):
        read_trace(cut)
    cut.write_text("".join(lines[:10] + lines[-1:]))
    with pytest.raises(TraceError, match="truncated: verdict says"):
        read_trace(cut)
    cut.write_text("")
    with pytest.raises(TraceError, match=":1: empty file"):
        read_trace(cut)


def test_cli_exits_2_naming_file_and_line(
    kafka_7026_v0: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _mutate(kafka_7026_v0, tmp_path, 0, lambda s: s.replace('"version":1', '"version":7'))
    assert main(["replay", str(bad)]) == 2
    assert f"{bad}:1: format version 7" in capsys.readouterr().err


def test_committed_schema_is_current() -> None:
    assert SCHEMA_PATH.read_text() == render(), "run: python -m conformance.formats.schema"


def test_every_line_validates_against_the_schema_and_broken_ones_do_not(kafka_7026_v0: Path) -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    lines = [json.loads(line) for line in kafka_7026_v0.read_text().splitlines()]
    for obj in lines:
        validator.validate(obj)
    broken = json.loads(json.dumps(lines[2]))
    broken["actual"][0]["response"]["error"] = {"no": 1}
    assert not validator.is_valid(broken)
    assert not validator.is_valid({**lines[0], "version": 2})
