"""`groupcheck prove`: exit codes, determinism, and the catalogue's z3 entries."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conformance.cli.main import main
from conformance.errors import SpecError
from conformance.formats.trace_file import read_trace
from conformance.smt.catalogue import validate
from conformance.trace.replay import replay

SMALL = ["--members", "2", "--partitions", "2", "--no-times"]


def test_confirmed_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--invariant", "consumer.epoch_fencing", *SMALL]) == 0
    assert "consumer.epoch_fencing" in capsys.readouterr().out


def test_refuted_exits_1_and_prints_the_counterexample(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["prove", "--invariant", "consumer.epoch_fencing", "--variant", "epoch_check=false", *SMALL])
    out = capsys.readouterr().out
    assert code == 1
    assert "REFUTED" in out and "re-checked on the model" in out and '"member_epoch"' in out


@pytest.mark.parametrize(
    "argv",
    [
        ["prove", "--invariant", "no.such.invariant"],
        ["prove", "--variant", "bogus=1"],
        ["prove", "--variant", "leave_bump=maybe"],
        ["prove", "--members", "0"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "groupcheck: error:" in capsys.readouterr().err


def test_unknown_exits_3_only_with_fail_on_unknown() -> None:
    argv = ["prove", "--invariant", "consumer.single_partition_holder", "--rlimit", "1", *SMALL]
    assert main(argv) == 0
    assert main([*argv, "--fail-on-unknown"]) == 3


def test_same_seed_same_bytes() -> None:
    """Two invocations with the same seed print the same bytes (z3's global context is per process)."""
    argv = [
        "prove",
        "--invariant",
        "consumer.epoch_fencing",
        "--variant",
        "epoch_check=false",
        *SMALL,
    ]
    cmd = [sys.executable, "-m", "conformance.cli.main", *argv]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert first.returncode == 1 and "REFUTED" in first.stdout
    assert first.stdout == second.stdout


def test_catalogue_and_encoders_agree() -> None:
    validate()


def test_catalogue_rejects_z3_without_encoder(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from conformance.specs import SPECS_DIR

    text = (SPECS_DIR / "invariants.yaml").read_text(encoding="utf-8")
    broken = re.sub(
        r"(  - id: consumer.group_state_derived\n(?:    .*\n)*?    checkers: \[[^\]]*)\]",
        r"\1, z3]",
        text,
        count=1,
    )
    assert broken != text
    path = tmp_path / "invariants.yaml"
    path.write_text(broken, encoding="utf-8")
    with pytest.raises(SpecError, match="no z3 encoder"):
        validate(path)


@pytest.mark.parametrize(
    ("invariant", "variant", "mutant"),
    [
        ("consumer.single_partition_holder", "reconcile_pending=ignore", "kafka-16147"),
        ("consumer.legal_target_assignment", "leave_bump=false", "leave-without-bump"),
        ("consumer.epoch_fencing", "epoch_check=false", "skip-fencing-check"),
        ("client.sticky_stale_claim_loses", "sticky=v0", "kafka-7026"),
        ("client.cooperative_no_direct_transfer", "cooperative_adjust=false", "kafka-14639"),
        (
            "consumer.target_computed_on_next_heartbeat",
            "assignment_interval_wait=2x",
            "assignment-interval-doubled",
        ),
        (
            "consumer.target_computed_on_next_heartbeat",
            "assignment_interval_check=false",
            "assignment-interval-ignored",
        ),
        ("consumer.offset_commit_exact_epoch", "commit_epochs=exact-only", "commit-epochs-exact-only"),
    ],
)
def test_written_counterexample_is_a_trace_that_replays(
    invariant: str, variant: str, mutant: str, tmp_path, capsys
) -> None:  # type: ignore[no-untyped-def]
    """Every REFUTED result is a trace (docs/proofs.md); `groupcheck replay` reproduces it (exit 1) on the
    registered mutant, and the same steps on the correct model do not violate the invariant."""
    argv = ["prove", "--invariant", invariant, "--variant", variant, "--members", "3", "--partitions", "4"]
    assert main([*argv, "--counterexamples", str(tmp_path)]) == 1
    (path,) = tmp_path.glob(f"{invariant}_*.ndjson")
    assert f"groupcheck replay {path}" in capsys.readouterr().out
    trace = read_trace(path)
    assert trace.header["variants"]["mutant"] == mutant and invariant in trace.violated
    assert main(["replay", str(path)]) == 1
    assert "FAILED" in capsys.readouterr().out
    fixed = replay(trace, variants={"mutant": None, "sticky": None, "cooperative_adjust": None})
    assert fixed.verdict in ("FIXED", "FAILED"), fixed.error
    assert invariant not in {v.invariant for v in fixed.violations}
    assert main(["show", str(path), "--format", "mermaid"]) == 0
