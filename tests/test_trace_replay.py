"""Counterexamples end to end: a failing run writes a trace, replay reproduces it, same seed -> same bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.engine.profiles import get_profile
from conformance.engine.run import run_check
from conformance.formats.trace_file import read_trace, to_bytes
from conformance.trace.replay import replay

STICKY_V0 = {"sticky": "v0", "assignor": "sticky"}


def _only(directory: Path) -> Path:
    files = sorted(directory.glob("*.ndjson"))
    assert len(files) == 1, files
    return files[0]


def test_scenario_counterexample_replays_exactly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["scenario", "run", "kafka-7026", "--variant", "sticky=v0", "--report-dir", str(tmp_path)]) == 1
    )
    out = capsys.readouterr().out
    path = _only(tmp_path / "counterexamples")
    # named after the first invariant it violates: the consumer view holds t-0 twice as well
    assert path.name.startswith("classic.no_partition_held_twice_")
    assert "Reproduce with:" in out and f"groupcheck replay {path} --target model" in out
    assert main(["replay", str(path)]) == 1
    out = capsys.readouterr().out
    assert ": FAILED" in out and "exact" in out and "classic.single_owner_consumer" in out
    # the fix (KIP-341 V1 user data) on the same ops: the recorded violation is gone
    assert main(["replay", str(path), "--variant", "sticky=v1"]) == 0
    assert ": FIXED" in capsys.readouterr().out


def test_scenario_traces_are_byte_identical(tmp_path: Path) -> None:
    for run in ("a", "b"):
        assert (
            main(
                [
                    "scenario",
                    "run",
                    "kafka-7026",
                    "--variant",
                    "sticky=v0",
                    "--report-dir",
                    str(tmp_path / run),
                ]
            )
            == 1
        )
    a, b = _only(tmp_path / "a" / "counterexamples"), _only(tmp_path / "b" / "counterexamples")
    assert a.name == b.name and a.read_bytes() == b.read_bytes()


def test_failing_check_writes_a_shrunk_trace_that_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hypothesis finds KAFKA-7026 from scratch with sticky V0; the same seed twice gives the same file."""
    args = [
        "check",
        "--max-examples",
        "300",
        "--seed",
        "1",
        "--variant",
        "sticky=v0",
        "--variant",
        "assignor=sticky",
        "--no-minimise",  # Hypothesis' shrunk trace; the minimised one has tests of its own
    ]
    assert main([*args, "--report-dir", str(tmp_path / "a")]) == 1
    out = capsys.readouterr().out
    assert "Reproduce with:" in out
    first = _only(tmp_path / "a" / "classic" / "counterexamples")
    trace = read_trace(first)
    assert trace.header["origin"] == {"kind": "check", "max_examples": 300, "profile": "ci", "seed": 1}
    assert trace.verdict == "FAILED" and trace.violated
    assert trace.steps[-1].violated, "the shrunk run ends at the violating step"
    result = replay(trace)
    assert result.verdict == "FAILED" and result.exact
    assert {v.invariant for v in result.violations} == {c.id for c in trace.steps[-1].violated}
    assert main([*args, "--report-dir", str(tmp_path / "b")]) == 1
    second = _only(tmp_path / "b" / "classic" / "counterexamples")
    assert first.name == second.name and first.read_bytes() == second.read_bytes()


def test_a_passing_check_writes_no_counterexample(tmp_path: Path) -> None:
    result = run_check("classic", profile=get_profile("dev"), max_examples=5, seed_value=3)
    assert result.verdict in ("PASSED", "INCONCLUSIVE") and result.trace is None


def test_replay_detects_a_tampered_response_on_the_model(tmp_path: Path) -> None:
    """Replay on the model is exact: a recording whose response was edited is reported as ERROR."""
    assert (
        main(["scenario", "run", "kafka-7026", "--variant", "sticky=v0", "--report-dir", str(tmp_path)]) == 1
    )
    path = _only(tmp_path / "counterexamples")
    text = path.read_text().replace('"generation_id":1,', '"generation_id":5,', 1)
    tampered = tmp_path / "tampered.ndjson"
    tampered.write_text(text)
    result = replay(read_trace(tampered))
    assert result.verdict == "ERROR" and "no longer reproduces" in (result.error or "")
    assert main(["replay", str(tampered)]) == 2


def test_replay_on_an_unknown_target_is_a_clear_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Replay on real targets is tested in tests/test_wire_faults.py; a bad target name is exit 2."""
    assert (
        main(["scenario", "run", "kafka-7026", "--variant", "sticky=v0", "--report-dir", str(tmp_path)]) == 1
    )
    path = _only(tmp_path / "counterexamples")
    capsys.readouterr()
    assert main(["replay", str(path), "--target", "no-such-target"]) == 2
    assert "unknown target 'no-such-target'" in capsys.readouterr().err


def test_same_bytes_from_to_bytes_of_read(tmp_path: Path) -> None:
    assert (
        main(["scenario", "run", "kafka-7026", "--variant", "sticky=v0", "--report-dir", str(tmp_path)]) == 1
    )
    path = _only(tmp_path / "counterexamples")
    assert to_bytes(read_trace(path)) == path.read_bytes()
