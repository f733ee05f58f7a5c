"""The pytest plugin: the `coordinator` fixture is the model by default and a real target behind the
oracle with --groupcheck-target; the capability marker skips what a target lacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from model.classic.messages import JoinGroupRequest, JoinGroupResponse
from model.classic.port import ModelPort
from model.errors import ErrorCode

USER_TEST = """
import pytest
from model.classic.messages import JoinGroupRequest

def test_join_needs_a_member_id(coordinator):
    coordinator.current_member = "c1"
    coordinator.send(1, JoinGroupRequest("g", "", "consumer", (("range", b""),), 1500, 2000, client_id="c1", version=4), 0)
    assert coordinator.answers[1][0].error.name == "MEMBER_ID_REQUIRED"
    assert coordinator.take_findings() == []

@pytest.mark.groupcheck_requires("no-such-capability")
def test_skipped(coordinator):
    raise AssertionError("must not run")
"""


def test_default_coordinator_is_the_model(coordinator: object) -> None:
    assert isinstance(coordinator, ModelPort)
    out = coordinator.send(
        1, JoinGroupRequest("g", "", "consumer", (("range", b""),), 1500, client_id="c1"), 0
    )
    assert (
        isinstance(out[0].response, JoinGroupResponse)
        and out[0].response.error == ErrorCode.MEMBER_ID_REQUIRED
    )


@pytest.mark.target
def test_coordinator_fixture_on_a_real_target(tmp_path: Path) -> None:
    """Anyone's pytest run: a test file using the fixture, run with --groupcheck-target kfake."""
    (tmp_path / "test_user.py").write_text(USER_TEST)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--groupcheck-target",
            "kfake",
            "-m",
            "not groupcheck",  # the user's tests only, not the suite's items
            "test_user.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed, 1 skipped" in out.stdout
