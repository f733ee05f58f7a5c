"""Classic-coordinator mutants of conformance/mutants/heldout2_classic.py: on a short scripted request
sequence each answers or records differently from the reference model, which keeps Kafka's fixed
rule (specs/bugs-heldout.yaml names the bug of each)."""

from __future__ import annotations

from typing import Any

from conformance.mutants import get_mutant, heldout_mutants
from conformance.mutants import heldout2_classic as h2
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import (
    HeartbeatRequest,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from model.classic.records import OffsetCommitRecord
from model.classic.state import GroupState
from model.errors import ErrorCode as E
from tests.classic_script import Script, join


def sync(generation: int, member: str, assignments: tuple[tuple[str, bytes], ...] = (), **kw: Any) -> Any:
    instance = kw.get("group_instance_id")
    return SyncGroupRequest("g", generation, member, assignments, instance, "consumer", "range")


def two_members_stable(s: Script, **kw: Any) -> tuple[str, str]:
    """Two JoinGroup v3 members (``kw`` for both) form generation 1: the second join extends the
    initial delay to 6 s; both sync at 6 s."""
    r1 = s.send(join(client_id="c1", **kw), 0)
    r2 = s.send(join(client_id="c2", **kw), 0)
    s.advance(6_000)
    m1, m2 = s.member_id(r1), s.member_id(r2)
    assert s.group.leader == m1
    s.send(sync(1, m1, ((m1, b"a1"), (m2, b"a2"))), 6_000)
    s.send(sync(1, m2), 6_000)
    assert s.group.state == GroupState.STABLE
    return m1, m2


def dropped_member_then_its_session_end(cls: type[ClassicCoordinator]) -> Any:
    """The leader rejoins, the follower does not; the join phase drops the follower; the group is
    then left alone past the moment the follower's session would have ended."""
    s = Script(cls)
    kw = {"session_timeout_ms": 30_000, "rebalance_timeout_ms": 10_000}
    m1, _ = two_members_stable(s, **kw)
    s.send(join(m1, **kw), 8_000)
    s.advance(18_000)  # join deadline: the follower is dropped, generation 2
    s.send(sync(2, m1, ((m1, b"a1"),)), 18_000)
    assert s.group.state == GroupState.STABLE and sorted(s.group.members) == [m1]
    s.advance(36_001)  # the follower's session, started by its sync at 6 s, would end at 36 s
    return s.group.state, s.group.generation


def test_a_member_dropped_by_the_join_phase_does_not_rebalance_the_group_later() -> None:
    assert dropped_member_then_its_session_end(ClassicCoordinator) == (GroupState.STABLE, 2)
    assert dropped_member_then_its_session_end(h2.DroppedMemberTimerKept) == (
        GroupState.PREPARING_REBALANCE,
        2,
    )


def static_instance_restarted_twice(cls: type[ClassicCoordinator]) -> Any:
    """A static member forms a Stable group, then two processes with its instance id start one after
    the other (each replaces the member without a rebalance); the second one's predecessor then
    heartbeats with the member id it was given."""
    s = Script(cls)
    first = s.send(join(version=5, group_instance_id="i1"), 0)
    s.advance(3_000)
    original = s.member_id(first)
    s.send(sync(1, original, ((original, b"a"),), group_instance_id="i1"), 3_000)
    second = s.member_id(s.send(join(version=5, group_instance_id="i1"), 4_000))
    third = s.member_id(s.send(join(version=5, group_instance_id="i1"), 5_000))
    assert s.group.state == GroupState.STABLE
    zombie = s.send(HeartbeatRequest("g", 1, second, "i1"), 6_000)
    return second == third, s.answers[zombie].error


def test_each_static_replacement_gets_a_new_member_id_and_fences_its_predecessor() -> None:
    assert static_instance_restarted_twice(ClassicCoordinator) == (False, E.FENCED_INSTANCE_ID)
    assert static_instance_restarted_twice(h2.StaticIdFromStateTime) == (True, E.NONE)


def new_member_dies_after_its_join(cls: type[ClassicCoordinator]) -> Any:
    """A new member joins a Stable one-member group, the rebalance completes at once when the leader
    rejoins, and the new member never sends anything again; the leader syncs and heartbeats."""
    s = Script(cls)
    first = s.send(join(session_timeout_ms=30_000, rebalance_timeout_ms=60_000), 0)
    s.advance(3_000)
    m1 = s.member_id(first)
    s.send(sync(1, m1, ((m1, b"a1"),)), 3_000)
    newcomer = s.send(join(client_id="c2", session_timeout_ms=10_000, rebalance_timeout_ms=60_000), 4_000)
    s.send(join(m1, session_timeout_ms=30_000, rebalance_timeout_ms=60_000), 4_000)
    m2 = s.member_id(newcomer)
    assert s.group.state == GroupState.COMPLETING_REBALANCE and s.group.generation == 2
    s.send(sync(2, m1, ((m1, b"a1"), (m2, b"a2"))), 4_000)
    s.send(HeartbeatRequest("g", 2, m1), 10_000)
    watched = f"expire:{m2}" in s.group.timers
    s.advance(14_001)  # the newcomer's session (10 s from the join completion) is over
    return watched, m2 in s.group.members, s.group.state


def test_a_member_new_in_the_rebalance_is_expired_at_its_session_timeout() -> None:
    assert new_member_dies_after_its_join(ClassicCoordinator) == (
        True,
        False,
        GroupState.PREPARING_REBALANCE,
    )
    assert new_member_dies_after_its_join(h2.NewMemberUnwatchedAfterJoin) == (False, True, GroupState.STABLE)


def follower_outwaits_its_session_in_sync(cls: type[ClassicCoordinator]) -> Any:
    """Both members rejoin; the follower syncs at once and waits longer than its session for the
    leader's SyncGroup; once answered it never sends anything again."""
    s = Script(cls)
    kw = {"session_timeout_ms": 10_000, "rebalance_timeout_ms": 60_000}
    m1, m2 = two_members_stable(s, **kw)
    s.send(join(m1, **kw), 7_000)
    s.send(join(m2, client_id="c2", **kw), 7_000)
    assert s.group.state == GroupState.COMPLETING_REBALANCE and s.group.generation == 2
    s.send(sync(2, m2), 8_000)
    s.send(HeartbeatRequest("g", 2, m1), 14_000)
    s.advance(17_000)  # the follower's session ends while its SyncGroup is parked: ignored
    s.send(sync(2, m1, ((m1, b"a1"), (m2, b"a2"))), 22_000)
    watched = f"expire:{m2}" in s.group.timers
    s.send(HeartbeatRequest("g", 2, m1), 28_000)
    s.advance(32_001)  # a new session from the answer at 22 s would be over
    return watched, m2 in s.group.members


def test_a_sync_answer_starts_a_new_session_for_the_member_answered() -> None:
    assert follower_outwaits_its_session_in_sync(ClassicCoordinator) == (True, False)
    assert follower_outwaits_its_session_in_sync(h2.AnsweredSyncNotRearmed) == (False, True)


def commit_after_group_deleted(cls: type[ClassicCoordinator]) -> Any:
    """The only member leaves, the empty group is deleted by the periodic cleanup, then the member
    commits with the generation it had."""
    s = Script(cls)
    first = s.send(join(), 0)
    s.advance(3_000)
    mid = s.member_id(first)
    s.send(sync(1, mid, ((mid, b"a"),)), 3_000)
    s.send(LeaveGroupRequest("g", (MemberIdentity(mid),)), 4_000)
    s.cleanup()
    assert "g" not in s.state.groups
    ref = s.send(OffsetCommitRequest("g", 1, mid, (OffsetCommitPartition("t", 0, 7),)), 5_000)
    stored = [r for r in s.records if isinstance(r, OffsetCommitRecord)]
    return s.answers[ref].partitions, len(stored)


def test_a_commit_with_a_generation_for_an_unknown_group_is_refused() -> None:
    assert commit_after_group_deleted(ClassicCoordinator) == ((("t", 0, E.ILLEGAL_GENERATION),), 0)
    assert commit_after_group_deleted(h2.CommitToUnknownGroupStored) == ((("t", 0, E.NONE),), 1)


def test_every_mutant_of_the_module_is_registered_with_its_coordinator() -> None:
    assert {m.name for m in h2.HELDOUT2_CLASSIC_MUTANTS} <= set(heldout_mutants())
    for mutant in h2.HELDOUT2_CLASSIC_MUTANTS:
        found = get_mutant(mutant.name, "classic")
        assert found.family == "heldout" and found.coordinator is not None and found.coordinator.__doc__
        assert issubclass(found.coordinator, ClassicCoordinator)
