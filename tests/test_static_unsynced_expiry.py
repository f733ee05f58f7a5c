"""A static leader that never syncs (its JoinGroup answer lost) keeps its instance id until its session
expires, then loses it: the model's rule behind faults.md item 4 (apache-kafka classic faults, seed 1).

Kafka (group-coordinator GroupMetadataManager.completeClassicGroupJoin) re-arms every member's session
when the join phase completes; at expiry (expireClassicGroupMemberHeartbeat) a member that is neither
new nor parked in a JoinGroup/SyncGroup fails ClassicGroupMember.hasSatisfiedHeartbeat and is removed,
and ClassicGroup.remove drops its static mapping. ClassicGroup.validateMember then answers a request
naming the instance id with another member id FENCED_INSTANCE_ID while the mapping exists, and
UNKNOWN_MEMBER_ID once it is gone.
"""

from __future__ import annotations

from model.choice import SeededChooser
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import JoinGroupRequest, SyncGroupRequest
from model.classic.state import ClassicConfig, ClassicState, GroupState
from model.errors import ErrorCode

CFG = ClassicConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=500)
SESSION_MS = 1_500
JOINED_AT = 428


def static_leader_awaiting_sync() -> tuple[ClassicCoordinator, ClassicState, str]:
    c = ClassicCoordinator(CFG, SeededChooser(1))
    st = ClassicState()
    join = JoinGroupRequest(
        "g", "", "consumer", (("sticky", b"m"),), SESSION_MS, 10_000, group_instance_id="i2"
    )
    c.handle(st, join, 1, JOINED_AT)
    c.advance(st, JOINED_AT)  # initial delay 0: the join phase completes by its timer
    g = st.groups["g"]
    assert g.state == GroupState.COMPLETING_REBALANCE and g.generation == 1
    return c, st, g.leader or ""


def probe(c: ClassicCoordinator, st: ClassicState, at: int) -> ErrorCode:
    """The raw SyncGroup of the finding: c2's instance id, an empty member id, generation 1."""
    req = SyncGroupRequest(
        "g", 1, "", group_instance_id="i2", protocol_type="consumer", protocol_name="sticky"
    )
    return c.handle(st, req, 99, at).deliveries[0].response.error


def test_before_its_session_expires_the_instance_id_fences() -> None:
    c, st, leader = static_leader_awaiting_sync()
    at = JOINED_AT + SESSION_MS - 1
    c.advance(st, at)
    assert st.groups["g"].static_members.get("i2") == leader
    assert probe(c, st, at) == ErrorCode.FENCED_INSTANCE_ID


def test_at_its_session_expiry_the_unsynced_static_member_is_removed() -> None:
    c, st, _leader = static_leader_awaiting_sync()
    at = JOINED_AT + SESSION_MS
    c.advance(st, at)
    g = st.groups["g"]
    assert g.state == GroupState.EMPTY and g.generation == 2
    assert "i2" not in g.static_members
    assert probe(c, st, at) == ErrorCode.UNKNOWN_MEMBER_ID
