"""The broker team's own checks, next to the conformance suite: the same fixtures reach the model,
a mutant, a launched broker or the broker at host:port (whatever --groupcheck-target names)."""

from __future__ import annotations

from typing import Any

import pytest

from model.classic.messages import JoinGroupRequest


def answer(coordinator: Any, ref: int, delivered: list[Any]) -> Any:
    """The coordinator's answer to request ``ref``: the model answers at once; a real broker behind
    the oracle records what it said in ``answers``."""
    recorded = getattr(coordinator, "answers", {})
    if ref in recorded:
        return recorded[ref][0]
    return next(d.response for d in delivered)


@pytest.mark.groupcheck_requires("classic")
def test_a_new_member_is_asked_for_its_member_id(coordinator: Any) -> None:
    """KIP-394: JoinGroup v4+ without a member id is answered MEMBER_ID_REQUIRED with an id to use."""
    if hasattr(coordinator, "current_member"):
        coordinator.current_member = "c1"
    join = JoinGroupRequest("g", "", "consumer", (("range", b""),), 6000, 6000, client_id="c1", version=4)
    delivered = coordinator.send(1, join, 0)
    response = answer(coordinator, 1, delivered)
    assert response.error.name == "MEMBER_ID_REQUIRED"
    assert response.member_id  # the id the member must join with
    assert getattr(coordinator, "take_findings", list)() == []  # the oracle saw nothing wrong


@pytest.mark.groupcheck_requires("consumer")
def test_the_target_under_test_is_named(groupcheck: Any) -> None:
    """The suite fixture: one API whatever the target; reports name the target and its version."""
    assert groupcheck.target.name == groupcheck.spec
    assert groupcheck.properties()["target"] == groupcheck.spec
