"""The CLI's promise under hostile arguments: exit 2 with one line, never a traceback, never exit 1
for a tool problem; an unforeseen exception leaves its traceback in a log file (docs/hostile-input.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli import main as cli
from conformance.cli.main import main

GOLDEN = Path(__file__).resolve().parent / "golden" / "classic-model.ndjson"


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check", "--max-examples", "0"], "--max-examples: 0 is out of range"),
        (["check", "--max-examples", "1", "--restarts", "-1"], "--restarts: -1 is out of range"),
        (["check", "--seed", "9" * 40], "is not an integer"),
        (["explore", "--depth", "-1"], "--depth: -1 is out of range"),
        (["explore", "--budget", "nan"], "--budget: 'nan' is not a finite number"),
        (["explore", "--budget", "inf"], "--budget: 'inf' is not a finite number"),
        (["explore", "--budget", "-5"], "--budget: -5 is out of range"),
        (["explore", "--members", "100000"], "--members: 100000 is out of range"),
        (["explore", "--static", "5"], "--static: 5 is out of range"),
        (["explore", "--workers", "0"], "--workers: 0 is out of range"),
        (["explore", "--members", "1", "--static", "2", "--depth", "1"], "--static 0..members"),
        (
            ["pipeline", "audit", "lake", "--max-counterexamples", "-3"],
            "--max-counterexamples: -3 is out of range",
        ),
        (
            ["pipeline", "coordlog", "--bootstrap", "x:1", "--pace", "nan"],
            "--pace: 'nan' is not a finite number",
        ),
        (["pipeline", "swarm", "--runs", "0"], "--runs: 0 is out of range"),
        (["check", "--max-examples=--"], "--max-examples: expected one value"),
        (["check", "--target=--"], "--target: expected one value"),
    ],
)
def test_out_of_range_numbers_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in _one_line(capsys)


def test_an_unwritable_report_dir_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["check", "--max-examples", "1", "--report-dir", str(blocker / "reports")]) == 2
    assert f"--report-dir {blocker / 'reports'}: cannot create" in _one_line(capsys)


def test_an_unwritable_show_output_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["show", str(GOLDEN), "--output", str(blocker / "out" / "x.txt")]) == 2
    assert "--output" in _one_line(capsys)


def test_an_unforeseen_exception_is_one_line_with_its_traceback_in_a_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(args: object) -> int:
        raise RuntimeError("a bug\nwith a second line")

    monkeypatch.setattr(cli, "cmd_check", broken)
    assert main(["check", "--report-dir", str(tmp_path)]) == 2
    err = _one_line(capsys)
    log = tmp_path / "groupcheck-error.log"
    assert f"check: unexpected RuntimeError: a bug (traceback in {log})" in err
    assert "Traceback" in log.read_text() and "raise RuntimeError" in log.read_text()


def test_without_a_report_dir_the_log_goes_to_the_temp_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)

    def broken(args: object) -> int:
        raise KeyError("boom")

    monkeypatch.setattr(cli, "cmd_specs", broken)
    assert main(["specs", "validate"]) == 2
    err = _one_line(capsys)
    logs = list(tmp_path.glob("groupcheck-error-*.log"))
    assert len(logs) == 1 and str(logs[0]) in err and "KeyError" in err
