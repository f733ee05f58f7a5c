"""`--target mutant:NAME` (docs/mutants.md#mutant-targets): a mutant reached through the adapter layer like any coordinator,
from `groupcheck check`, `groupcheck replay` and the pytest plugin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.engine.profiles import REAL_PROFILES
from conformance.errors import UsageError
from conformance.formats.trace_file import read_trace
from conformance.protocols import get_kit
from conformance.targets.open import in_process, open_target

CLASSIC = get_kit("classic")

USER_TEST = """
from model.classic.messages import JoinGroupRequest

def _join(port, ref, member_id, name):
    port.current_member = name
    req = JoinGroupRequest("g", member_id, "consumer", (("range", b""),), 10000, 20000, client_id=name, version=4)
    return port.send(ref, req, 0)

def test_followers_get_no_member_list(coordinator):
    ids = [_join(coordinator, i, "", f"c{i}")[0].response.member_id for i in (1, 2)]
    _join(coordinator, 3, ids[0], "c1")
    _join(coordinator, 4, ids[1], "c2")
    responses = [d.response for d in coordinator.advance(0)]  # the join phase completes
    assert len(responses) == 2
    follower = [r for r in responses if r.member_id != r.leader]
    assert follower and all(not r.members for r in follower)
"""


def test_mutant_target_is_in_process_and_names_its_mutant() -> None:
    assert in_process("model") and in_process("mutant:answer-twice") and not in_process("kfake")
    with open_target("mutant:answer-twice") as handle:
        assert handle.kind == "model" and handle.name == "mutant:answer-twice"
        assert handle.variants == {"mutant": "answer-twice"}
        port = CLASSIC.real_setup(handle, REAL_PROFILES["dev"])[0]
        assert port is not None
        from model.classic.coordinator import ClassicCoordinator

        assert type(port(ClassicCoordinator()).coordinator).__name__ == "AnswerTwice"
    with pytest.raises(UsageError, match="unknown mutant"), open_target("mutant:no-such-bug"):
        pass


def test_check_target_mutant_fails_with_a_replayable_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--max-examples", "10", "--profile", "dev", "--report-dir", str(tmp_path)]
    assert main(["check", "--target", "mutant:member-list-to-followers", *args]) == 1
    out = capsys.readouterr().out
    assert "classic on mutant:member-list-to-followers: FAILED" in out
    traces = sorted((tmp_path / "classic" / "counterexamples").glob("*.ndjson"))
    assert traces and traces[0].name.startswith("classic.followers_get_no_member_list")
    trace = read_trace(traces[0])
    assert trace.header["variants"]["mutant"] == "member-list-to-followers"
    assert trace.header["target"]["name"] == "mutant:member-list-to-followers"
    assert main(["replay", str(traces[0]), "--target", "mutant:member-list-to-followers"]) == 1
    assert "FAILED" in capsys.readouterr().out


def test_check_target_mutant_protocol_rules(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--target", "mutant:kafka-16147"]) == 2  # a consumer mutant, classic asked
    assert "consumer mutant" in capsys.readouterr().err
    assert main(["check", "--target", "mutant:answer-twice", "--variant", "mutant=kafka-8500"]) == 2
    assert "disagree" in capsys.readouterr().err


def test_the_reference_model_passes_what_the_mutant_target_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--target", "model", "--max-examples", "10", "--profile", "dev"]) == 0


def test_pytest_plugin_runs_a_users_test_against_a_mutant(tmp_path: Path) -> None:
    """Anyone's pytest file: passes on the model, fails on ``--groupcheck-target mutant:...``."""
    (tmp_path / "test_user.py").write_text(USER_TEST)
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"]
    ok = subprocess.run(base, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = subprocess.run(
        [*base, "--groupcheck-target", "mutant:member-list-to-followers"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # the user's own test fails (the plugin's suite items, collected beside it, fail on the mutant too)
    assert bad.returncode == 1 and "FAILED test_user.py::" in bad.stdout, bad.stdout + bad.stderr
