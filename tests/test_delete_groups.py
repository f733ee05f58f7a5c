"""DeleteGroups on the KIP-848 model (model/consumer/group_deletion.py) and in the suite: the
handler's answers and records, what a heartbeat or a commit meets afterwards, the invariant
consumer.deleted_group_is_gone, the trace op, and the librdkafka PR #5488 mutant it makes reachable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conformance.cli.main import main
from conformance.engine.profiles import get_profile
from conformance.engine.run import run_check
from conformance.formats.schema import SCHEMA_PATH
from conformance.formats.trace_file import read_trace, to_bytes, write_trace
from conformance.protocols.consumer.codec import decode_delete_groups, encode_delete_groups
from conformance.protocols.consumer.judge import compare
from conformance.trace.render import text
from conformance.trace.replay import replay
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    TopicPartitions,
)
from model.consumer.offset_records import OffsetCommitTombstone
from model.consumer.records import ConsumerGroupTombstone, compact, rebuild
from model.consumer.state import ConsumerCoordinatorState
from model.consumer.txn import ConsumerCoordinatorConfig
from model.consumer.world import DeleteGroupsEvent, HeartbeatEvent, capture_world
from model.errors import ErrorCode as E
from model.invariants import load_all
from model.observation import Observation
from model.result import Delivery


class Shard:
    """One coordinator shard and every record it wrote."""

    def __init__(self, **config: Any) -> None:
        self.coord = ConsumerCoordinator(ConsumerCoordinatorConfig(**config))
        self.state = ConsumerCoordinatorState()
        self.records: list[object] = []
        self.ref = 0
        self.coord.create_topic(self.state, "t", 2)

    def _answer(self, result: Any) -> Any:
        self.records += result.records
        return next(d.response for d in result.deliveries if d.ref == self.ref)

    def hb(self, member: str, epoch: int, owned: tuple[int, ...] = ()) -> ConsumerGroupHeartbeatResponse:
        self.ref += 1
        request = ConsumerGroupHeartbeatRequest(
            "g",
            member,
            epoch,
            rebalance_timeout_ms=30_000 if epoch == 0 else -1,
            subscribed_topic_names=("t",) if epoch == 0 else None,
            topic_partitions=(TopicPartitions("t", owned),) if owned else (),
        )
        return self._answer(self.coord.handle_consumer_group_heartbeat(self.state, request, self.ref, 0))  # type: ignore[no-any-return]

    def commit(self, member: str, epoch: int, partition: int = 0) -> OffsetCommitResponse:
        self.ref += 1
        parts = (OffsetCommitRequestPartition(partition, 42),)
        request = OffsetCommitRequest("g", (OffsetCommitRequestTopic("t", parts),), epoch, member)
        return self._answer(self.coord.handle_offset_commit(self.state, request, self.ref, 0))  # type: ignore[no-any-return]

    def delete(self, *groups: str) -> dict[str, Any]:
        self.ref += 1
        request = DeleteGroupsRequest(groups or ("g",))
        answer = self._answer(self.coord.handle_delete_groups(self.state, request, self.ref, 0))
        assert isinstance(answer, DeleteGroupsResponse)
        return answer.errors()


def emptied() -> Shard:
    """m1 joins, commits t-0 and t-1, then leaves: an Empty group with two committed offsets."""
    s = Shard()
    joined = s.hb("m1", 0)
    assert s.commit("m1", joined.member_epoch, 0).errors() == {("t", 0): E.NONE}
    assert s.commit("m1", joined.member_epoch, 1).errors() == {("t", 1): E.NONE}
    s.hb("m1", -1)
    assert not s.state.groups["g"].members
    return s


def test_an_unknown_group_is_group_id_not_found() -> None:
    s = Shard()
    assert s.delete("g") == {"g": E.GROUP_ID_NOT_FOUND}
    assert not s.records[1:]  # only the topic's record


def test_a_group_with_members_is_non_empty_group_and_nothing_is_written() -> None:
    s = Shard()
    s.hb("m1", 0)
    before = s.state.copy()
    written = len(s.records)
    assert s.delete() == {"g": E.NON_EMPTY_GROUP}
    assert len(s.records) == written and s.state == before


def test_an_empty_group_is_deleted_with_its_offsets_offsets_first() -> None:
    s = emptied()
    written = len(s.records)
    assert s.delete() == {"g": E.NONE}
    assert s.records[written:] == [
        OffsetCommitTombstone("g", "t", 0),
        OffsetCommitTombstone("g", "t", 1),
        ConsumerGroupTombstone("g"),
    ]
    assert "g" not in s.state.groups and "g" not in s.state.offsets
    loaded = rebuild(compact(s.records))  # a new coordinator loads the same: group and offsets gone
    assert "g" not in loaded.groups and "g" not in loaded.offsets
    assert s.delete() == {"g": E.GROUP_ID_NOT_FOUND}  # deleted once


def test_a_group_id_with_only_offsets_is_deleted_like_kafkas_simple_group() -> None:
    s = Shard()
    assert s.commit("", -1).errors() == {("t", 0): E.NONE}
    assert "g" not in s.state.groups
    assert s.delete() == {"g": E.NONE}
    assert s.records[-1] == OffsetCommitTombstone("g", "t", 0) and "g" not in s.state.offsets


@pytest.mark.parametrize(
    ("availability", "code"),
    [
        ("inactive", E.COORDINATOR_NOT_AVAILABLE),
        ("not_coordinator", E.NOT_COORDINATOR),
        ("loading", E.COORDINATOR_LOAD_IN_PROGRESS),
    ],
)
def test_an_unavailable_coordinator_answers_every_group(availability: str, code: E) -> None:
    s = Shard(availability=availability)
    assert s.delete("g", "h", "g") == {"g": code, "h": code}


def test_each_distinct_group_is_answered_once_in_request_order() -> None:
    s = emptied()
    s.ref += 1
    request = DeleteGroupsRequest(("x", "g", "x"))
    result = s.coord.handle_delete_groups(s.state, request, s.ref, 0)
    (delivery,) = result.deliveries
    assert delivery.response.results == (
        DeletableGroupResult("x", E.GROUP_ID_NOT_FOUND),
        DeletableGroupResult("g", E.NONE),
    )


def test_after_deletion_epoch_above_0_is_group_id_not_found_and_epoch_0_creates_a_new_group() -> None:
    s = Shard()
    joined = s.hb("m1", 0)
    s.coord.advance(s.state, 60_000)  # m1's session expires: the group is Empty
    assert s.delete() == {"g": E.NONE}
    stale = s.hb("m1", joined.member_epoch, (0, 1))
    assert stale.error_code == E.GROUP_ID_NOT_FOUND and "g" not in s.state.groups
    again = s.hb("m1", 0)
    assert again.error_code == E.NONE and again.member_epoch == 1
    assert s.state.groups["g"].group_epoch == 1  # a new group: its epochs start again


def test_after_deletion_a_member_commit_is_group_id_not_found_and_an_admin_commit_stores() -> None:
    s = emptied()
    s.delete()
    assert s.commit("m1", 1).errors() == {("t", 0): E.GROUP_ID_NOT_FOUND}
    assert s.commit("", -1).errors() == {("t", 0): E.NONE}
    assert set(s.state.offsets["g"]) == {("t", 0)}


# ---------------------------------------------------------------------------------- invariant


def check(obs: Observation[Any]) -> list[str]:
    return load_all()["consumer.deleted_group_is_gone"].check(obs)


def _deletion(before: Shard, after: Shard, codes: dict[str, E]) -> Observation[Any]:
    event = DeleteGroupsEvent(9, DeleteGroupsRequest(tuple(codes)))
    answer = DeleteGroupsResponse(tuple(DeletableGroupResult(g, c) for g, c in codes.items()))
    return Observation(
        capture_world(before.state), event, (Delivery(9, answer),), capture_world(after.state), 0
    )


def deletion_violations() -> list[str]:
    """A coordinator that answers NONE but keeps the group's offsets (for test_consumer_model)."""
    s = emptied()
    kept = emptied()
    kept.state.groups.pop("g")
    return check(_deletion(s, kept, {"g": E.NONE}))


def test_the_invariant_holds_on_the_model_and_fails_on_wrong_answers() -> None:
    before, after = emptied(), emptied()
    after.delete()
    assert not check(_deletion(before, after, {"g": E.NONE}))
    assert deletion_violations()
    live = Shard()
    live.hb("m1", 0)
    assert check(_deletion(live, Shard(), {"g": E.NONE}))  # members: it may not be deleted
    assert check(_deletion(before, before, {"g": E.NON_EMPTY_GROUP}))  # Empty: not NON_EMPTY_GROUP
    assert check(_deletion(before, before, {"g": E.GROUP_ID_NOT_FOUND}))  # it exists
    gone = capture_world(after.state)
    beat = HeartbeatEvent(10, ConsumerGroupHeartbeatRequest("g", "m1", 3), "c1")
    as_member = Observation(
        gone, beat, (Delivery(10, ConsumerGroupHeartbeatResponse(member_epoch=3)),), gone, 0
    )
    assert check(as_member)
    refused = ConsumerGroupHeartbeatResponse(E.GROUP_ID_NOT_FOUND)
    assert not check(Observation(gone, beat, (Delivery(10, refused),), gone, 0))


# ---------------------------------------------------------------------------------- wire


def test_the_wire_codec_renames_the_group_both_ways_and_the_oracle_compares_codes() -> None:
    real = {"g": "groupcheck-g-1"}
    for version in (0, 1, 2):
        wire = encode_delete_groups(DeleteGroupsRequest(("g",), version), version, real)
        assert [str(g) for g in wire.groups_names] == ["groupcheck-g-1"]
    from conformance.wire.codec import build, module, payload_class

    mod = module(42, 2, False)
    result = build(mod.DeletableGroupResult, {"group_id": "groupcheck-g-1", "error_code": 68})
    answer = decode_delete_groups(
        build(payload_class(42, 2, False), {"throttle_time": 0, "results": (result,)}), real
    )
    assert answer.errors() == {"g": E.NON_EMPTY_GROUP}
    model = DeleteGroupsResponse((DeletableGroupResult("g"),))
    assert compare(model, model, None) == (None, [])
    why, _ = compare(model, answer, None)
    assert why is not None and "NON_EMPTY_GROUP" in why


# ---------------------------------------------------------------------------------- suite


@pytest.fixture(scope="module")
def caught(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The librdkafka PR #5488 mutant (GROUP_ID_NOT_FOUND retried with the old epoch), caught."""
    result = run_check(
        "consumer", profile=get_profile("ci"), seed_value=0, variants={"mutant": "librdkafka-5488"}
    )
    assert result.verdict == "FAILED" and result.trace is not None
    assert "consumer.ended_membership_rejoins" in {v.invariant for v in result.violations}
    return write_trace(result.trace, tmp_path_factory.mktemp("deleted") / "t.ndjson")


def test_the_counterexample_deletes_the_group_and_replays_exactly(caught: Path) -> None:
    trace = read_trace(caught)
    assert {"op": "delete_group"} in [s.action for s in trace.steps]
    result = replay(trace)
    assert result.verdict == "FAILED" and result.exact, result.error or result.difference
    assert to_bytes(read_trace(caught)) == caught.read_bytes()
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    for line in caught.read_text().splitlines():
        validator.validate(json.loads(line))
    assert "admin        -> DeleteGroups v2 g" in text(trace)


def test_a_delete_group_op_with_a_field_is_an_error_naming_the_step(
    caught: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = caught.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if '"op":"delete_group"' in line)
    lines[at] = lines[at].replace('"op":"delete_group"', '"group_id":"other","op":"delete_group"', 1)
    bad = tmp_path / "hostile.ndjson"
    bad.write_text("".join(lines))
    assert main(["replay", str(bad)]) == 2
    assert (
        f"hostile.ndjson:{at + 1}: consumer op 'delete_group' has no field 'group_id'"
        in capsys.readouterr().err
    )


def test_the_cli_catches_librdkafka_5488_on_ci_seed_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["check", "--protocol", "consumer", "--profile", "ci", "--seed", "0", "--no-minimise"]
    assert main([*argv, "--target", "mutant:librdkafka-5488"]) == 1
    assert "consumer.ended_membership_rejoins" in capsys.readouterr().out
    assert main([*argv, "--target", "model"]) == 0
