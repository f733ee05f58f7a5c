"""Mixed-group traces (docs/protocol-reference.md#b13): a failing check or scenario writes one, replay reproduces it exactly,
the fixed coordinator does not, and the same seed gives the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.formats.trace_file import read_trace
from conformance.trace.replay import replay

MUTANT = ["--variant", "mixed_mutant=generation-off-by-one"]


def _check(directory: Path) -> Path:
    argv = ["check", "--protocol", "mixed", *MUTANT, "--max-examples", "40", "--report-dir", str(directory)]
    assert main(argv) == 1
    (path,) = sorted((directory / "mixed" / "counterexamples").glob("*.ndjson"))
    return path


def test_mixed_check_trace_replays_exactly_and_the_fix_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _check(tmp_path / "a")
    assert path.name.startswith("mixed.classic_generation_is_member_epoch_")
    trace = read_trace(path)
    assert trace.protocol == "mixed" and trace.header["setup"]["policy"]
    capsys.readouterr()
    assert main(["replay", str(path)]) == 1
    out = capsys.readouterr().out
    assert ": FAILED" in out and "exact" in out and "mixed.classic_generation_is_member_epoch" in out
    fixed = replay(trace, variants={"mixed_mutant": None})
    assert fixed.error is None and "mixed.classic_generation_is_member_epoch" not in {
        v.invariant for v in fixed.violations
    }
    for fmt in ("text", "mermaid", "svg"):
        assert main(["show", str(path), "--format", fmt, "--output", str(tmp_path / f"out.{fmt}")]) == 0
    text = (tmp_path / "out.text").read_text()
    assert "starts (classic protocol" in text and "VIOLATED mixed.classic_generation_is_member_epoch" in text


def test_mixed_traces_are_byte_identical(tmp_path: Path) -> None:
    a, b = _check(tmp_path / "a"), _check(tmp_path / "b")
    assert a.name == b.name and a.read_bytes() == b.read_bytes()


def test_mixed_scenario_failure_writes_a_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "scenario",
        "run",
        "kip-848-rolling-upgrade",
        "--variant",
        "mixed_mutant=upgrade-keeps-classic-group",
    ]
    assert main([*argv, "--report-dir", str(tmp_path)]) == 1
    (path,) = sorted((tmp_path / "counterexamples").glob("mixed.one_group_type_*.ndjson"))
    capsys.readouterr()
    assert main(["replay", str(path)]) == 1
    assert "exact" in capsys.readouterr().out


def test_a_bad_mixed_op_or_setup_is_a_tool_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _check(tmp_path / "a")
    lines = path.read_text().splitlines()
    header, first = json.loads(lines[0]), json.loads(lines[1])
    first["action"]["op"] = "teleport"
    bad = tmp_path / "bad-op.ndjson"
    bad.write_text("\n".join([lines[0], json.dumps(first), *lines[2:]]) + "\n")
    capsys.readouterr()
    assert main(["replay", str(bad)]) == 2
    said = capsys.readouterr()  # the verdict line on stdout, the tool error on stderr
    assert "bad-op.ndjson:2: unknown mixed op 'teleport'" in said.out + said.err
    header["setup"]["policy"] = "sideways"
    bad = tmp_path / "bad-policy.ndjson"
    bad.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    assert main(["replay", str(bad)]) == 2
    said = capsys.readouterr()
    assert "sideways" in said.out + said.err
