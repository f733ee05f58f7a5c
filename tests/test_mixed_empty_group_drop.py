"""A classic JoinGroup with a member id at an EMPTY consumer group removes the group from memory only.

Regression of the `--protocol all --profile faults` seed-0 mixed run on Apache Kafka 4.4.0
(`reports/conformance/faults/apache-kafka.mixed.seed0-empty-group-dropped.ndjson`): after a crash
restart the loaded mixed group expired its members; the classic member's JoinGroup (with its old member
id) was answered UNKNOWN_MEMBER_ID, and the KIP-848 member's next heartbeat GROUP_ID_NOT_FOUND where the
model still had the empty consumer group (UNKNOWN_MEMBER_ID). Kafka's ``classicGroupJoinToClassicGroup``
removes the empty consumer group (``maybeDeleteEmptyConsumerGroup``: ``removeGroup`` at once) before it
rejects the unknown member with ``EMPTY_RESULT``, so the tombstones it prepared are never written
(GroupMetadataManager, apache/kafka mirror 1eb7644 L4039-4052, L6032; the same calls in
kafka-group-coordinator-4.4.0.jar). The model keeps that as a volatile record (`ConsumerGroupDropped`):
a restart reads the group back from the log.
"""

from __future__ import annotations

from test_mixed_groups import Harness, beat, jg, join

from model.classic.messages import JoinGroupResponse, SyncGroupRequest
from model.classic.records import GroupMetadataRecord
from model.consumer.records import ConsumerGroupTombstone
from model.errors import ErrorCode
from model.mixed.state import ConsumerGroupDropped, rebuild, replay

E = ErrorCode


def empty_consumer_group() -> tuple[Harness, int]:
    h = Harness()
    answer = h.send(join("K"))
    assert answer.error_code == E.NONE  # type: ignore[attr-defined]
    epoch = answer.member_epoch  # type: ignore[attr-defined]
    assert h.send(beat("K", -1)).error_code == E.NONE  # type: ignore[attr-defined]
    assert h.state.group_type("g") == "consumer" and not h.group.members
    return h, epoch


def test_a_rejected_classic_join_drops_the_empty_consumer_group_without_a_tombstone() -> None:
    h, epoch = empty_consumer_group()
    assert h.send(jg("c1-old")).error == E.UNKNOWN_MEMBER_ID  # type: ignore[attr-defined]
    assert h.state.group_type("g") is None
    assert [type(r) for r in h.last.records] == [ConsumerGroupDropped]
    # the KIP-848 member's next heartbeat finds no group (Kafka 4.4.0, as observed)
    assert h.send(beat("K", epoch)).error_code == E.GROUP_ID_NOT_FOUND  # type: ignore[attr-defined]
    assert replay(h.records) == h.state  # the records still rebuild the state
    assert rebuild(h.records, h.now).group_type("g") == "consumer"  # a restart loads it back
    assert not h.violations


def test_a_join_without_member_id_still_replaces_the_empty_consumer_group_durably() -> None:
    h, _ = empty_consumer_group()
    assert h.send(jg("")).error == E.MEMBER_ID_REQUIRED  # type: ignore[attr-defined]
    assert isinstance(h.last.records[0], ConsumerGroupTombstone)
    assert rebuild(h.records, h.now).group_type("g") != "consumer"
    assert not h.violations


def test_a_restart_after_the_drop_loads_the_classic_group_written_since() -> None:
    """Kafka's load replays the log in order and a GroupMetadata record puts the classic group in
    place of the (never tombstoned) consumer group (GMM ``replay(GroupMetadataKey, ...)``)."""
    h, _ = empty_consumer_group()
    h.send(jg("c1-old"))  # dropped in memory only
    answer = h.send(jg(version=9))
    assert answer.error == E.MEMBER_ID_REQUIRED  # type: ignore[attr-defined]
    member = answer.member_id  # type: ignore[attr-defined]
    assert h.send(jg(member)) is None  # parked: the new classic group's initial rebalance delay
    done = h.advance(h.now + 5_000)
    leader = next(d.response for d in done.deliveries if isinstance(d.response, JoinGroupResponse))
    assert leader.error == E.NONE
    sync = h.send(
        SyncGroupRequest(
            "g",
            leader.generation_id,
            member,
            ((member, b""),),
            protocol_type="consumer",
            protocol_name="range",
        )
    )
    assert sync.error == E.NONE  # type: ignore[attr-defined]
    assert any(isinstance(r, GroupMetadataRecord) for r in h.records)
    loaded = rebuild(h.records, h.now)
    assert loaded.group_type("g") == "classic" and "g" not in loaded.consumer.groups
    assert not h.violations
