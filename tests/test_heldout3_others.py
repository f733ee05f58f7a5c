"""Third-wave mutants of Kafka-compatible brokers and client libraries
(conformance/mutants/heldout3_others.py): on a short scripted sequence each one answers, records or
requests differently from the reference model, and the reference side shows the fixed rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from conformance.mutants.heldout3_others import (
    HELDOUT3_OTHERS_MUTANTS,
    IllegalGenerationForgetsMemberId,
    JoinWithOwnedAccepted,
    LoadInProgressOnJoinIsFatal,
    RejoinKeepsFirstTimeouts,
)
from model.choice import SeededChooser
from model.classic.client import ClassicClient, ClientConfig, Phase
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.classic.state import GroupState
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.ids import new_member_id
from model.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartitions
from model.consumer.state import ConsumerCoordinatorState
from model.errors import ErrorCode as E
from tests.classic_script import Script, join, stable_client

SPEC = Path(__file__).resolve().parents[1] / "specs" / "bugs-heldout.yaml"


def test_spec_entries_match_the_mutants() -> None:
    entries = [b for b in yaml.safe_load(SPEC.read_text())["bugs"] if "HB-53" <= b["id"] <= "HB-56"]
    assert [e["id"] for e in entries] == ["HB-53", "HB-54", "HB-55", "HB-56"]
    by_name = {m.name: m for m in HELDOUT3_OTHERS_MUTANTS}
    assert [e["mutant"] for e in entries] == list(by_name)
    for entry in entries:
        mutant = by_name[entry["mutant"]]
        assert entry["wave"] == 3 and entry["half"] in ("dev", "heldout")
        assert entry["protocol"] == mutant.protocol and mutant.expect == ()
        part = mutant.coordinator if entry["layer"] == "coordinator" else mutant.client
        assert part is not None and part.__doc__
        assert all(s["url"].startswith("https://github.com/") for s in entry["sources"])


# ---------------------------------------------------------------------------------- brokers


def sync(member: str, generation: int, assignments: tuple[tuple[str, bytes], ...] = ()) -> SyncGroupRequest:
    return SyncGroupRequest("g", generation, member, assignments, None, "consumer", "range")


def rejoin_with_longer_timeouts(cls: type[ClassicCoordinator]) -> Any:
    """A lone member (timeouts 10 s and 20 s) rejoins its Stable group with 30 s and 60 s
    (session, rebalance), then heartbeats once and goes quiet for 15 s."""
    s = Script(cls)
    first = s.send(join(client_id="c1", session_timeout_ms=10_000, rebalance_timeout_ms=20_000), 0)
    s.advance(3_000)
    member = s.member_id(first)
    s.send(sync(member, 1, ((member, b"p"),)), 3_000)
    assert s.group.state == GroupState.STABLE
    again = s.send(
        join(member, client_id="c1", session_timeout_ms=30_000, rebalance_timeout_ms=60_000), 4_000
    )
    assert s.answers[again].error == E.NONE and s.answers[again].generation_id == 2
    s.send(sync(member, 2, ((member, b"p"),)), 4_000)
    stored = s.group.members[member]
    timeouts = (stored.session_timeout_ms, stored.rebalance_timeout_ms)
    beat = s.answers[s.send(HeartbeatRequest("g", 2, member), 5_000)]
    assert beat.error == E.NONE
    s.advance(5_000 + 15_000)
    return timeouts, member in s.group.members, s.group.state


def test_known_member_rejoin_takes_the_new_timeouts() -> None:
    fixed = rejoin_with_longer_timeouts(ClassicCoordinator)
    assert fixed == ((30_000, 60_000), True, GroupState.STABLE)
    broken = rejoin_with_longer_timeouts(RejoinKeepsFirstTimeouts)
    assert broken == ((10_000, 20_000), False, GroupState.EMPTY)


def static_takeover_timeouts(cls: type[ClassicCoordinator]) -> tuple[int, int]:
    """Static instance i1 joins with timeouts of 10 s and 20 s; a restarted process takes i1 over
    (unknown member id) with 30 s and 60 s."""
    s = Script(cls)
    first = s.send(
        join(version=5, group_instance_id="i1", session_timeout_ms=10_000, rebalance_timeout_ms=20_000), 0
    )
    s.advance(3_000)
    old = s.member_id(first)
    s.send(sync(old, 1, ((old, b"p"),)), 3_000)
    ref = s.send(
        join(version=5, group_instance_id="i1", session_timeout_ms=30_000, rebalance_timeout_ms=60_000), 4_000
    )
    new = s.member_id(ref)
    assert s.answers[ref].error == E.NONE and new != old and old not in s.group.members
    member = s.group.members[new]
    return member.session_timeout_ms, member.rebalance_timeout_ms


def test_static_takeover_takes_the_new_timeouts() -> None:
    assert static_takeover_timeouts(ClassicCoordinator) == (30_000, 60_000)
    assert static_takeover_timeouts(RejoinKeepsFirstTimeouts) == (10_000, 20_000)


def consumer_join(member_id: str, owned: tuple[TopicPartitions, ...] | None) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id=member_id,
        member_epoch=0,
        rebalance_timeout_ms=300_000,
        subscribed_topic_names=("t",),
        topic_partitions=owned,
        version=1,
    )


def joins_with_owned(cls: type[ConsumerCoordinator]) -> Any:
    """A new member's join reports owning t-0; a member of the group rejoins in place (epoch 0)
    reporting t-1; a join omits the owned list. The error of each answer and the group's members."""
    coord, state = cls(), ConsumerCoordinatorState()
    coord.create_topic(state, "t", 3)
    m1, m2, m3 = (new_member_id(SeededChooser(n)) for n in (1, 2, 3))
    answers = []
    for ref, request in enumerate(
        (
            consumer_join(m1, (TopicPartitions("t", (0,)),)),
            consumer_join(m2, ()),
            consumer_join(m2, (TopicPartitions("t", (1,)),)),
            consumer_join(m3, None),
        ),
        start=1,
    ):
        result = coord.handle_consumer_group_heartbeat(state, request, ref, ref)
        answers.append(next(d.response for d in result.deliveries if d.ref == ref).error_code)
    group = state.groups["g"]
    return answers, sorted(group.members) == sorted((m1, m2, m3)), sorted(group.members) == [m2]


def test_join_reporting_owned_partitions_is_rejected() -> None:
    answers, all_three, only_m2 = joins_with_owned(ConsumerCoordinator)
    assert answers == [E.INVALID_REQUEST, E.NONE, E.INVALID_REQUEST, E.INVALID_REQUEST] and only_m2
    answers, all_three, only_m2 = joins_with_owned(JoinWithOwnedAccepted)
    assert answers == [E.NONE, E.NONE, E.NONE, E.NONE] and all_three


# ---------------------------------------------------------------------------------- clients


def client_rejoin_after_stale_heartbeat(cls: type[ClassicClient]) -> Any:
    """Consumer c1, alone in a Stable group, heartbeats with a generation the group has left behind
    (ILLEGAL_GENERATION): the member id it rejoins with, and the group it makes."""
    topics = {"t": 2}
    s = Script(ClassicCoordinator)
    first = s.send(join(client_id="c1"), 0)
    s.advance(3_000)
    member = s.member_id(first)
    s.send(sync(member, 1, ((member, b""),)), 3_000)
    client = cls("c1", ClientConfig(join_version=3))
    client.member_id, client.generation, client.phase, client.needs_rejoin = member, 0, Phase.STABLE, False
    for now in (4_000, 4_001):
        request = client.next_request(topics)
        assert request is not None
        ref = s.send(request, now)
        if ref in s.answers:
            client.on_response(s.answers[ref], topics)
        if isinstance(request, JoinGroupRequest):
            break
    assert isinstance(request, JoinGroupRequest) and client.last_error in (E.ILLEGAL_GENERATION, E.NONE)
    return request.member_id == member, len(s.group.members), s.group.state


def test_illegal_generation_keeps_the_member_id() -> None:
    assert client_rejoin_after_stale_heartbeat(ClassicClient) == (True, 1, GroupState.COMPLETING_REBALANCE)
    broken = client_rejoin_after_stale_heartbeat(IllegalGenerationForgetsMemberId)
    assert broken == (False, 2, GroupState.PREPARING_REBALANCE)


def member_id_after_illegal_generation(cls: type[ClassicClient]) -> list[str]:
    """ILLEGAL_GENERATION answered to a Heartbeat, a SyncGroup and an OffsetCommit: the member id
    of the JoinGroup that follows each."""
    topics = {"t": 2}
    ids = []
    for kind in ("heartbeat", "sync", "commit"):
        c = stable_client(cls)
        if kind == "sync":
            c.phase = Phase.SYNCING
        if kind == "commit":
            assert c.commit_request(5) is not None
            c.on_response(OffsetCommitResponse((("t", 0, E.ILLEGAL_GENERATION),)), topics)
        else:
            assert c.next_request(topics) is not None
            answer = HeartbeatResponse(E.ILLEGAL_GENERATION) if kind == "heartbeat" else None
            c.on_response(answer or SyncGroupResponse(E.ILLEGAL_GENERATION), topics)
        rejoin = c.next_request(topics)
        assert isinstance(rejoin, JoinGroupRequest) and c.generation == -1
        ids.append(rejoin.member_id)
    return ids


def test_every_illegal_generation_path_keeps_the_member_id() -> None:
    assert member_id_after_illegal_generation(ClassicClient) == ["m1", "m1", "m1"]
    assert member_id_after_illegal_generation(IllegalGenerationForgetsMemberId) == ["", "", ""]


def after_load_in_progress(cls: type[ClassicClient]) -> list[Any]:
    """COORDINATOR_LOAD_IN_PROGRESS answered to a JoinGroup, then (another consumer) to a
    SyncGroup: the phase and the next request of each."""
    topics = {"t": 2}
    out = []
    for kind in ("join", "sync"):
        c = stable_client(cls)
        if kind == "join":
            c.needs_rejoin = True
            assert isinstance(c.next_request(topics), JoinGroupRequest)
            c.on_response(JoinGroupResponse(E.COORDINATOR_LOAD_IN_PROGRESS), topics)
        else:
            c.phase = Phase.SYNCING
            assert isinstance(c.next_request(topics), SyncGroupRequest)
            c.on_response(SyncGroupResponse(E.COORDINATOR_LOAD_IN_PROGRESS), topics)
        nxt = c.next_request(topics)
        out.append((c.phase, type(nxt).__name__ if nxt is not None else None, c.fatal_error))
    return out


def test_load_in_progress_on_join_or_sync_is_retried() -> None:
    fixed = after_load_in_progress(ClassicClient)
    assert [(p, n) for p, n, _ in fixed] == [(Phase.JOINING, "JoinGroupRequest")] * 2
    assert all(f is None for _, _, f in fixed)
    broken = after_load_in_progress(LoadInProgressOnJoinIsFatal)
    assert broken == [(Phase.FATAL, None, E.COORDINATOR_LOAD_IN_PROGRESS)] * 2


def test_load_in_progress_on_a_heartbeat_is_unchanged() -> None:
    """Only the JoinGroup/SyncGroup handling differs: a heartbeat's answer is handled as before."""
    for cls in (ClassicClient, LoadInProgressOnJoinIsFatal):
        c = stable_client(cls)
        assert isinstance(c.next_request({"t": 2}), HeartbeatRequest)
        c.on_response(HeartbeatResponse(E.COORDINATOR_LOAD_IN_PROGRESS), {"t": 2})
        assert c.phase != Phase.FATAL and isinstance(c.next_request({"t": 2}), JoinGroupRequest)
