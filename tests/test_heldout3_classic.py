"""Classic-coordinator mutants of conformance/mutants/heldout3_classic.py: on a short scripted request
sequence each answers or records differently from the reference model, which keeps Kafka's fixed
rule (specs/bugs-heldout.yaml names the bug of each)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from conformance.mutants import heldout3_classic as h3
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from model.classic.records import OffsetCommitRecord, TimerSet
from model.classic.state import GroupState
from model.errors import ErrorCode as E
from tests.classic_script import PROTOCOLS, Script, join

SPEC = Path(__file__).resolve().parents[1] / "specs" / "bugs-heldout.yaml"


def sync(generation: int, member: str, assignments: tuple[tuple[str, bytes], ...] = ()) -> SyncGroupRequest:
    return SyncGroupRequest("g", generation, member, assignments, None, "consumer", "range")


def error_of(s: Script, ref: int) -> Any:
    """The error of request ``ref``'s answer, or None while it is parked."""
    answer = s.answers.get(ref)
    return None if answer is None else answer.error


def first_member_without_protocols(cls: type[ClassicCoordinator]) -> Any:
    """A JoinGroup with an empty protocol list starts group g; a consumer with the range assignor
    joins next; the initial delay then runs out."""
    s = Script(cls)
    bare = s.send(JoinGroupRequest("g", "", "consumer", (), version=3, client_id="c1"), 0)
    real = s.send(join(client_id="c2"), 0)
    s.advance(3_000)
    return error_of(s, bare), error_of(s, real), len(s.group.members)


def test_a_first_member_without_protocols_is_refused() -> None:
    assert first_member_without_protocols(ClassicCoordinator) == (E.INCONSISTENT_GROUP_PROTOCOL, E.NONE, 1)
    assert first_member_without_protocols(h3.EmptyProtocolFirstMember) == (
        E.NONE,
        E.INCONSISTENT_GROUP_PROTOCOL,
        1,
    )


def member_that_only_commits(cls: type[ClassicCoordinator]) -> Any:
    """A one-member group (session timeout 10 s, its deadline set by the sync answer at 3 s) whose member commits at
    9 s and 15 s and never heartbeats; the group is left alone until 20 s."""
    s = Script(cls)
    first = s.send(join(), 0)
    s.advance(3_000)
    mid = s.member_id(first)
    s.send(sync(1, mid, ((mid, b"a"),)), 3_000)
    s.advance(9_000)
    marks = len(s.records)
    s.send(OffsetCommitRequest("g", 1, mid, (OffsetCommitPartition("t", 0, 5),)), 9_000)
    rearmed = any(isinstance(r, TimerSet) and r.key == f"expire:{mid}" for r in s.records[marks:])
    s.advance(15_000)
    second = s.send(OffsetCommitRequest("g", 1, mid, (OffsetCommitPartition("t", 0, 6),)), 15_000)
    s.advance(20_000)
    stored = [r.offset for r in s.records if isinstance(r, OffsetCommitRecord)]
    return rearmed, s.answers[second].partitions, stored, mid in s.group.members


def test_an_accepted_commit_starts_a_new_session() -> None:
    assert member_that_only_commits(ClassicCoordinator) == (True, (("t", 0, E.NONE),), [5, 6], True)
    assert member_that_only_commits(h3.CommitNotAHeartbeat) == (
        False,
        (("t", 0, E.UNKNOWN_MEMBER_ID),),
        [5],
        False,
    )


def heartbeats_around_a_rebalance(cls: type[ClassicCoordinator]) -> Any:
    """Two members form generation 1; the leader rejoins, so the group prepares a rebalance; the
    follower heartbeats with generation 1 (current) and with generation 0 (stale)."""
    s = Script(cls)
    r1 = s.send(join(client_id="c1"), 0)
    r2 = s.send(join(client_id="c2"), 0)
    s.advance(6_000)  # the second join extended the initial delay to 6 s
    m1, m2 = s.member_id(r1), s.member_id(r2)
    s.send(sync(1, m1, ((m1, b"a1"), (m2, b"a2"))), 6_000)
    s.send(sync(1, m2), 6_000)
    stable = s.send(HeartbeatRequest("g", 1, m2), 6_500)
    s.send(join(m1, client_id="c1"), 7_000)
    assert s.group.state == GroupState.PREPARING_REBALANCE and s.group.generation == 1
    current = s.send(HeartbeatRequest("g", 1, m2), 7_000)
    stale = s.send(HeartbeatRequest("g", 0, m2), 7_000)
    return error_of(s, stable), error_of(s, current), error_of(s, stale)


def test_a_current_heartbeat_during_a_rebalance_is_told_of_the_rebalance() -> None:
    assert heartbeats_around_a_rebalance(ClassicCoordinator) == (
        E.NONE,
        E.REBALANCE_IN_PROGRESS,
        E.ILLEGAL_GENERATION,
    )
    assert heartbeats_around_a_rebalance(h3.RebalanceAnsweredIllegalGeneration) == (
        E.NONE,
        E.ILLEGAL_GENERATION,
        E.ILLEGAL_GENERATION,
    )


def join_with_empty_group_id(cls: type[ClassicCoordinator]) -> Any:
    """A consumer sends JoinGroup with the empty group id; the initial delay then runs out."""
    s = Script(cls)
    ref = s.send(JoinGroupRequest("", "", "consumer", PROTOCOLS, version=3), 0)
    s.advance(3_000)
    group = s.state.groups.get("")
    return error_of(s, ref), None if group is None else (group.state, len(group.members))


def test_a_join_without_group_id_is_refused() -> None:
    assert join_with_empty_group_id(ClassicCoordinator) == (E.INVALID_GROUP_ID, None)
    assert join_with_empty_group_id(h3.EmptyGroupIdJoin) == (E.NONE, (GroupState.COMPLETING_REBALANCE, 1))


def test_the_module_and_its_catalogue_agree() -> None:
    entries = [b for b in yaml.safe_load(SPEC.read_text())["bugs"] if "HB-45" <= b["id"] <= "HB-48"]
    assert [e["id"] for e in entries] == ["HB-45", "HB-46", "HB-47", "HB-48"]
    by_name = {m.name: m for m in h3.HELDOUT3_CLASSIC_MUTANTS}
    assert [e["mutant"] for e in entries] == list(by_name)
    for entry in entries:
        mutant = by_name[entry["mutant"]]
        assert entry["wave"] == 3 and entry["protocol"] == "classic" and entry["layer"] == "coordinator"
        assert mutant.family == "heldout" and mutant.expect == ()
        assert mutant.coordinator is not None and mutant.coordinator.__doc__
        assert issubclass(mutant.coordinator, ClassicCoordinator)
        assert entry["sources"][0]["ref"] in mutant.source
