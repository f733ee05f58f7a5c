"""`classic.sync_gives_leader_assignment`: every member's SyncGroup answer carries what the
generation's leader sent for it, judged against the harness's record (`model.classic.wire_record`)."""

from __future__ import annotations

from model.classic.messages import (
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.classic.wire_record import KEEP_GENERATIONS, SyncAsked, WireRecord
from model.errors import ErrorCode
from model.result import Delivery

E = ErrorCode


def test_the_record_lists_the_leaders_assignment_with_each_members_instance() -> None:
    record = WireRecord()
    record.record(1, JoinGroupRequest("g", "", "consumer", (("range", b""),), group_instance_id="s"))
    record.take(
        [
            Delivery(
                1,
                JoinGroupResponse(
                    E.NONE, 4, member_id="old", leader="old", members=(JoinGroupMember("m2", None, b""),)
                ),
            )
        ]
    )
    assert record.instances == {"old": "s"}
    record.record(2, SyncGroupRequest("g", 4, "old", (("old", b"a"), ("m2", b"b")), "s"))
    record.record(3, SyncGroupRequest("g", 4, "new", (), "s"))  # the replacement, same instance
    record.record(4, SyncGroupRequest("g", 4, "m2"))
    joins, syncs = record.take(
        [
            Delivery(3, SyncGroupResponse(E.NONE, assignment=b"a")),
            Delivery(4, SyncGroupResponse(E.REBALANCE_IN_PROGRESS)),  # a failed answer is not judged
        ]
    )
    listing = (("old", "s", b"a"), ("m2", None, b"b"))
    assert joins == () and syncs == (SyncAsked(3, "new", "s", 4, (listing,), leader_known=True),)
    assert record.syncs == {2: ("old", 4)}  # 3 and 4 were answered


def test_the_leaders_are_bounded_and_forgotten_with_the_group() -> None:
    record = WireRecord()
    for generation in range(KEEP_GENERATIONS + 3):
        record.record(generation, SyncGroupRequest("g", generation, "l", (("l", b"x"),)))
        record.record(10_000 + generation, SyncGroupRequest("g", generation, "l", (("l", b"x"),)))  # a retry
    assert len(record.leaders) == KEEP_GENERATIONS and min(record.leaders) == 3
    assert record.leaders[5] == ((("l", b"x"),),)  # the same list once
    record.forget_generations()
    assert record.leaders == {}


def test_a_leader_named_by_a_join_answer_records_even_an_empty_sync() -> None:
    record = WireRecord()
    record.take([Delivery(9, JoinGroupResponse(E.NONE, 2, member_id="l", leader="l"))])
    record.record(1, SyncGroupRequest("g", 2, "l"))  # KIP-814: a leader told to skip assignment
    record.record(2, SyncGroupRequest("g", 2, "f"))  # a follower's empty request is no listing
    record.record(3, SyncGroupRequest("g", 3, "f"))
    assert record.leaders == {2: ((),)}
    _, syncs = record.take([Delivery(2, SyncGroupResponse(E.NONE)), Delivery(3, SyncGroupResponse(E.NONE))])
    assert syncs == (SyncAsked(2, "f", None, 2, ((),), True), SyncAsked(3, "f", None, 3, (), False))
