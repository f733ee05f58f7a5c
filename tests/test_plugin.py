"""The pytest plugin: the `coordinator` fixture is the model by default and a real target behind the
oracle with --groupcheck-target; the capability marker skips what a target lacks."""

from __future__ import annotations

import pytest

from model.classic.messages import JoinGroupRequest, JoinGroupResponse
from model.classic.sim import ModelPort
from model.errors import ErrorCode

pytest_plugins = ["pytester"]

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
def test_coordinator_fixture_on_a_real_target(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TEST)
    result = pytester.runpytest("--groupcheck-target", "kfake", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=1)
