"""Coordinator-log decoding (hand-encoded records) and audit (planted bugs are caught)."""

from __future__ import annotations

import struct
import uuid

import pytest

from conformance.pipeline.coordaudit import audit_records
from conformance.pipeline.coordlog import CoordinatorRecord, RecordDecodeError, decode_record
from model.embedded import Assignment, Subscription, encode_assignment, encode_subscription

TOPIC_ID = "239142d9-48fc-4993-9193-342e51be4bcf"


def s16(text: str) -> bytes:
    b = text.encode()
    return struct.pack(">h", len(b)) + b


def cstr(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    b = text.encode()
    return bytes([len(b) + 1]) + b


def test_decodes_group_metadata_v3_and_current_assignment_v0():
    member = (
        s16("m1") + struct.pack(">h", -1) + s16("client") + s16("/127.0.0.1") + struct.pack(">ii", 30000, 6000)
        + struct.pack(">i", 3) + b"sub" + struct.pack(">i", 2) + b"as"
    )  # fmt: skip
    value = (
        struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 7) + s16("range") + s16("m1")
        + struct.pack(">q", 123) + struct.pack(">i", 1) + member
    )  # fmt: skip
    rec = decode_record(5, 99, struct.pack(">h", 2) + s16("g"), value)
    assert rec.name == "GroupMetadata" and rec.key == {"group": "g"}
    assert rec.value["generation"] == 7 and rec.value["leader"] == "m1"
    m = rec.value["members"][0]
    assert (m["instance_id"], m["session_timeout_ms"], m["subscription"], m["assignment"]) == (
        None,
        6000,
        b"sub",
        b"as",
    )

    tps = b"\x02" + uuid.UUID(TOPIC_ID).bytes + b"\x03" + struct.pack(">ii", 0, 1) + b"\x00"
    cur = struct.pack(">hiib", 0, 4, 3, 1) + tps + b"\x01" + b"\x00"
    rec = decode_record(6, 99, struct.pack(">h", 8) + s16("g") + s16("m1"), cur)
    assert rec.value["member_epoch"] == 4 and rec.value["state"] == 1
    assert rec.value["assigned"] == [{"topic_id": TOPIC_ID, "partitions": [0, 1]}]
    assert decode_record(7, 99, struct.pack(">h", 8) + s16("g") + s16("m1"), None).value is None  # tombstone
    with pytest.raises(RecordDecodeError, match="truncated"):
        decode_record(8, 99, struct.pack(">h", 8) + s16("g") + s16("m1"), cur[:-4])
    with pytest.raises(RecordDecodeError, match="trailing"):
        decode_record(9, 99, struct.pack(">h", 2) + s16("g") + b"zz", value)


def _classic(
    offset: int, generation: int, assignments: dict[str, tuple[tuple[str, int], ...]]
) -> CoordinatorRecord:
    members = [
        {"member_id": mid, "instance_id": None, "client_id": mid, "client_host": "h", "rebalance_timeout_ms": 30000,
         "session_timeout_ms": 6000, "subscription": encode_subscription(Subscription(("t",))),
         "assignment": encode_assignment(Assignment(parts))}
        for mid, parts in assignments.items()
    ]  # fmt: skip
    value = {"protocol_type": "consumer", "generation": generation, "protocol": "range",
             "leader": next(iter(assignments)), "members": members}  # fmt: skip
    return CoordinatorRecord(offset, offset, 2, "GroupMetadata", {"group": "g"}, value)


def test_classic_history_passes_and_planted_bugs_fail():
    good = [_classic(1, 1, {"a": (("t", 0), ("t", 1))}), _classic(2, 2, {"a": (("t", 0),), "b": (("t", 1),)})]
    audit = audit_records(good, {}, {"t": 2})
    assert audit.verdict == "PASSED" and audit.checks["classic.single_owner_coordinator"] == 2
    double = [*good, _classic(3, 3, {"a": (("t", 0), ("t", 1)), "b": (("t", 1),)})]
    found = {v[2] for v in audit_records(double, {}, {"t": 2}).violations}
    assert {"classic.single_owner_coordinator", "client.assignment_single_owner"} <= found
    back = [*good, _classic(3, 1, {"a": (("t", 0), ("t", 1))})]
    assert {v[2] for v in audit_records(back, {}, {"t": 2}).violations} == {"classic.generation_monotonic"}


def _tp(parts):
    return [{"topic_id": TOPIC_ID, "partitions": list(parts)}]


def _consumer(ts: int, rtype: int, name: str, member: str | None, value):
    key = {"group": "c"} | ({"member_id": member} if member else {})
    return CoordinatorRecord(ts, ts, rtype, name, key, value)


def _member_md():
    return {"instance_id": None, "rack_id": None, "client_id": "x", "client_host": "h",
            "subscribed_topic_names": ["t"], "subscribed_topic_regex": "", "rebalance_timeout_ms": 1,
            "server_assignor": None, "tags": []}  # fmt: skip


def _consumer_history(second_assigned):
    cur = "ConsumerGroupCurrentMemberAssignment"
    return [
        _consumer(1, 5, "ConsumerGroupMemberMetadata", "m1", _member_md()),
        _consumer(1, 3, "ConsumerGroupMetadata", None, {"epoch": 1}),
        _consumer(1, 7, "ConsumerGroupTargetAssignmentMember", "m1", {"topic_partitions": _tp([0, 1])}),
        _consumer(1, 6, "ConsumerGroupTargetAssignmentMetadata", None, {"assignment_epoch": 1}),
        _consumer(
            1,
            8,
            cur,
            "m1",
            {
                "member_epoch": 1,
                "previous_member_epoch": 0,
                "state": 0,
                "assigned": _tp([0, 1]),
                "pending_revocation": [],
            },
        ),  # fmt: skip
        _consumer(2, 5, "ConsumerGroupMemberMetadata", "m2", _member_md()),
        _consumer(2, 3, "ConsumerGroupMetadata", None, {"epoch": 2}),
        _consumer(2, 7, "ConsumerGroupTargetAssignmentMember", "m1", {"topic_partitions": _tp([0])}),
        _consumer(2, 7, "ConsumerGroupTargetAssignmentMember", "m2", {"topic_partitions": _tp([1])}),
        _consumer(2, 6, "ConsumerGroupTargetAssignmentMetadata", None, {"assignment_epoch": 2}),
        _consumer(
            2,
            8,
            cur,
            "m1",
            {
                "member_epoch": 1,
                "previous_member_epoch": 1,
                "state": 1,
                "assigned": _tp([0]),
                "pending_revocation": _tp([1]),
            },
        ),  # fmt: skip
        _consumer(
            2,
            8,
            cur,
            "m2",
            {
                "member_epoch": 2,
                "previous_member_epoch": 0,
                "state": 0,
                "assigned": _tp(second_assigned),
                "pending_revocation": [],
            },
        ),  # fmt: skip
    ]


def test_kip848_history_is_checked_per_append_and_a_double_holder_is_caught():
    names, topics = {TOPIC_ID: "t"}, {"t": 2}
    ok = audit_records(_consumer_history([]), names, topics)
    assert ok.verdict == "PASSED" and ok.states_checked == {"c": 2}  # two appends, two states
    bad = audit_records(_consumer_history([1]), names, topics)  # m2 gets t-1 while m1 still revokes it
    assert {v[2] for v in bad.violations} >= {"consumer.single_partition_holder"}
