"""KIP-848 consumer traces: a failing check (the KAFKA-16147 mutant) records a trace that replays exactly."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conformance.engine.profiles import get_profile
from conformance.engine.run import run_check
from conformance.formats.schema import SCHEMA_PATH
from conformance.formats.trace_file import read_trace, to_bytes, write_trace
from conformance.trace.render import mermaid, text
from conformance.trace.replay import replay


@pytest.fixture(scope="module")
def mutant_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    result = run_check(
        "consumer",
        profile=get_profile("dev"),
        max_examples=60,
        seed_value=1,
        variants={"mutant": "kafka-16147"},
    )
    assert result.verdict == "FAILED" and result.trace is not None
    return write_trace(result.trace, tmp_path_factory.mktemp("consumer") / "t.ndjson")


def test_consumer_trace_replays_exactly_and_fails(mutant_trace: Path) -> None:
    trace = read_trace(mutant_trace)
    assert trace.protocol == "consumer" and trace.header["variants"] == {"mutant": "kafka-16147"}
    assert "consumer.single_partition_holder" in trace.violated
    result = replay(trace)
    assert result.verdict == "FAILED" and result.exact, result.error or result.difference
    assert "consumer.single_partition_holder" in {v.invariant for v in result.violations}
    assert to_bytes(read_trace(mutant_trace)) == mutant_trace.read_bytes()


def test_consumer_trace_validates_and_renders(mutant_trace: Path) -> None:
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    for line in mutant_trace.read_text().splitlines():
        validator.validate(json.loads(line))
    trace = read_trace(mutant_trace)
    table = text(trace)
    assert "ConsumerGroupHeartbeat" in table and "!! VIOLATED consumer.single_partition_holder" in table
    assert "group_epoch" in table  # epochs annotated
    assert "rect rgb(255, 205, 205)" in mermaid(trace)


def test_tampered_consumer_trace_is_an_error(mutant_trace: Path, tmp_path: Path) -> None:
    lines = mutant_trace.read_text().splitlines(keepends=True)
    i = next(i for i, line in enumerate(lines) if '"member_epoch":1' in line and '"kind":"step"' in line)
    lines[i] = lines[i].replace('"member_epoch":1', '"member_epoch":7', 1)
    bad = tmp_path / "bad.ndjson"
    bad.write_text("".join(lines))
    result = replay(read_trace(bad))
    assert result.verdict == "ERROR" and "no longer reproduces" in (result.error or "")
