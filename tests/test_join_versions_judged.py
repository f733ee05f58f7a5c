"""What a JoinGroup of an old version can carry is what the oracle and the invariants compare.

Below JoinGroup v5 the answer lists no group instance ids (KIP-345), and v0 carries no rebalance
timeout (the session timeout serves as both). Both false alarms appeared on Apache Kafka 4.4.0 with
32 concurrent groups, where a leader on JoinGroup v0-v4 shared a group with a static member.
"""

from __future__ import annotations

import pytest

from conformance.protocols.classic.hypo import Hypo
from conformance.protocols.classic.judge import Mismatch, compare
from model.classic.messages import JoinGroupMember, JoinGroupRequest, JoinGroupResponse
from model.classic.state import ClassicState
from model.errors import ErrorCode


def _answer(instance: str | None) -> JoinGroupResponse:
    members = (JoinGroupMember("c1", None, b"m1"), JoinGroupMember("i2-x", instance, b"m2"))
    return JoinGroupResponse(ErrorCode.NONE, 2, "consumer", "range", "c1", False, "c1", members)


@pytest.mark.parametrize("version", [0, 1, 4])
def test_an_old_leader_is_not_told_instance_ids(version: int) -> None:
    h = Hypo(ClassicState(), outstanding={7: (_answer("i2"), 0)})
    compare(h, 7, _answer(None), version)  # the wire dropped the instance id: no mismatch
    assert 7 in h.outstanding  # compare only judges; the caller pops


def test_from_v5_the_instance_ids_must_match() -> None:
    h = Hypo(ClassicState(), outstanding={7: (_answer("i2"), 0)})
    with pytest.raises(Mismatch, match="members"):
        compare(h, 7, _answer(None), 5)


def test_join_group_v0_uses_the_session_timeout_for_both() -> None:
    """A v0 request built with a rebalance timeout (an injected rejoin) still has none on the wire."""
    req = JoinGroupRequest("g", "c1", "consumer", (), 1500, 2000, version=0)
    assert req.effective_rebalance_timeout_ms == 1500
    assert (
        JoinGroupRequest("g", "c1", "consumer", (), 1500, 2000, version=1).effective_rebalance_timeout_ms
        == 2000
    )
