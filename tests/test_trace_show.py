"""`groupcheck show`: the step table, Mermaid and images name the breaking step and the generations."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.formats.trace_file import read_trace, write_trace
from conformance.specs import load_scenarios
from conformance.trace.render import mermaid, rows, text
from conformance.trace.scenario import run_scenario, scenario_trace


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    result = run_scenario(load_scenarios()["kafka-7026"], {"sticky": "v0"})
    return write_trace(scenario_trace(result), tmp_path_factory.mktemp("show") / "k.ndjson")


def test_text_table_tells_the_kafka_7026_story(trace_file: Path) -> None:
    out = text(read_trace(trace_file))
    assert "FAILED: classic.no_partition_held_twice, classic.single_owner_consumer" in out.splitlines()[0]
    assert "claims t-0 (no gen)" in out  # the stale V0 claim, decoded from the sticky user data
    assert "Heartbeat UNKNOWN_MEMBER_ID" in out  # c1 learns it was removed
    assert "== Stable, generation 3, leader c2" in out
    broken = [line for line in out.splitlines() if "!! VIOLATED classic.single_owner_consumer" in line]
    assert broken and broken[0].split()[0] == "35!"  # the breaking step is marked
    assert "t-0 delivered to c1 and c2 in generation 3" in broken[0]


def test_mermaid_highlights_only_the_breaking_steps(trace_file: Path) -> None:
    trace = read_trace(trace_file)
    out = mermaid(trace)
    assert out.startswith("sequenceDiagram\n")
    assert "participant C as coordinator" in out
    assert out.count("rect rgb(255, 205, 205)") == out.count("\n    end") == 2  # steps 33 and 35
    assert "Note over C: Stable, generation 3, leader c2" in out
    assert "C-->>c1: SyncGroup NONE assigned t-0" in out
    assert ";" not in out.split("\n", 2)[2]  # ';' would end a Mermaid statement
    bad_steps = {r.step for r in rows(trace) if r.bad}
    assert bad_steps == {s.n for s in trace.steps if s.violated}


def test_window_limits_the_rows(trace_file: Path) -> None:
    trace = read_trace(trace_file)
    assert {r.step for r in rows(trace, (30, 35))} == set(range(30, 36))


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_images_are_written_and_stable(trace_file: Path, tmp_path: Path, fmt: str) -> None:
    a, b = tmp_path / f"a.{fmt}", tmp_path / f"b.{fmt}"
    assert main(["show", str(trace_file), "--format", fmt, "--output", str(a), "--steps", "28:35"]) == 0
    assert main(["show", str(trace_file), "--format", fmt, "--output", str(b), "--steps", "28:35"]) == 0
    data = a.read_bytes()
    assert data[:4] == (b"\x89PNG" if fmt == "png" else b"<?xm")
    if fmt == "svg":
        assert data == b.read_bytes()  # no dates, stable ids
        assert b"<text" in data  # real text, not glyph outlines
        assert b"VIOLATED classic.single_owner_consumer" in data


def test_show_text_and_bad_window(trace_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(trace_file)]) == 0
    assert "!! VIOLATED" in capsys.readouterr().out
    assert main(["show", str(trace_file), "--steps", "x:y"]) == 2
    assert main(["show", str(trace_file), "--steps", "9:3"]) == 2  # backwards
    assert main(["show", str(trace_file), "--steps", "0:3"]) == 2  # steps count from 1
    assert "1 <= FROM <= TO" in capsys.readouterr().err
