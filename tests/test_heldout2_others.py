"""Held-out mutants of KIP-848 clients and of Kafka-compatible brokers' classic coordinators
(conformance/mutants/heldout2_others.py): each answers, requests or records differently from the
reference model on a short scripted sequence, and the reference side shows the fixed rule."""

from __future__ import annotations

from typing import Any

from conformance.mutants import get_mutant, heldout_mutants
from conformance.mutants.heldout2_others import HELDOUT2_OTHERS_MUTANTS
from model.choice import SeededChooser
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import SyncGroupRequest
from model.classic.state import GroupState
from model.consumer.client import ClientState, VirtualConsumer
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from model.consumer.state import ConsumerCoordinatorState
from model.errors import ErrorCode as E
from tests.classic_script import Script, join


def client_of(name: str) -> type[VirtualConsumer]:
    mutant = get_mutant(name, "consumer")
    assert mutant.client is not None and mutant.client.__doc__
    return mutant.client


def coordinator_of(name: str) -> type[ClassicCoordinator]:
    mutant = get_mutant(name, "classic")
    assert mutant.coordinator is not None and mutant.coordinator.__doc__
    return mutant.coordinator


def test_every_mutant_is_registered_and_has_a_test() -> None:
    names = {m.name for m in HELDOUT2_OTHERS_MUTANTS}
    assert names <= set(heldout_mutants())
    assert names == {"kafka-16190", "kgo-1270", "kgo-1340", "redpanda-25270", "seaweedfs-9143"}


# ---------------------------------------------------------------------------------- KIP-848 clients


class Exchange:
    """A KIP-848 coordinator with topic t (3 partitions); clients' heartbeats go through it."""

    def __init__(self) -> None:
        self.coord = ConsumerCoordinator()
        self.state = ConsumerCoordinatorState()
        self.coord.create_topic(self.state, "t", 3)
        self.ref = 0

    def send(self, client: VirtualConsumer, now: int, *, lose: bool = False) -> Any:
        request = client.next_request(now)
        if request is None:
            return None, None
        self.ref += 1
        result = self.coord.handle_consumer_group_heartbeat(self.state, request, self.ref, now)
        response = next(d.response for d in result.deliveries if d.ref == self.ref)
        if lose:
            client.on_request_lost(now)
        else:
            client.on_response(response, now)
        return request, response


def joined(ex: Exchange, cls: type[VirtualConsumer], name: str = "c1") -> VirtualConsumer:
    client = cls(name, "g", SeededChooser(int(name[1:])), topics=("t",))
    ex.send(client, 0)
    ex.send(client, 1)  # acknowledges t-0..t-2
    assert client.state == ClientState.STABLE and len(client.owned) == 3
    return client


def rejoin_after_leaving(cls: type[VirtualConsumer]) -> tuple[ConsumerGroupHeartbeatRequest, Any, str]:
    ex = Exchange()
    client = joined(ex, cls)
    client.leave()
    ex.send(client, 2)
    client.subscribe(("t",))
    request, response = ex.send(client, 3)
    return request, response.error_code, client.state.value


def test_rejoin_after_leaving_sends_the_full_subscription() -> None:
    request, error, state = rejoin_after_leaving(VirtualConsumer)
    assert request.member_epoch == 0 and request.subscribed_topic_names == ("t",)
    assert request.rebalance_timeout_ms == 300_000 and error == E.NONE and state == "ACKNOWLEDGING"

    request, error, state = rejoin_after_leaving(client_of("kafka-16190"))
    assert request.member_epoch == 0 and request.subscribed_topic_names is None
    assert request.rebalance_timeout_ms == -1 and error == E.INVALID_REQUEST and state == "FATAL"


def heartbeat_after_lost_answer(cls: type[VirtualConsumer]) -> Any:
    ex = Exchange()
    c1 = joined(ex, cls)
    ex.send(VirtualConsumer("c2", "g", SeededChooser(2), topics=("t",)), 2)  # the group epoch moves
    _, lost = ex.send(c1, 10_000, lose=True)  # its answer revokes a partition; the client never sees it
    assert lost.assignment is not None and len(c1.owned) == 3
    request, response = ex.send(c1, 10_100)
    return request.topic_partitions, response.assignment, sorted(c1.owned)


def test_heartbeat_after_a_lost_answer_is_full_and_gets_the_assignment_again() -> None:
    owned, assignment, after = heartbeat_after_lost_answer(VirtualConsumer)
    assert owned == (TopicPartitions("t", (0, 1, 2)),)
    assert assignment is not None and len(after) == 2

    owned, assignment, after = heartbeat_after_lost_answer(client_of("kgo-1270"))
    assert owned is None and assignment is None and len(after) == 3


def revocation_acknowledged(cls: type[VirtualConsumer]) -> list[int]:
    """When (of 10_001, 12_000, 15_000) the consumer sends the heartbeat acknowledging a revocation."""
    client = cls("c1", "g", SeededChooser(1), topics=("t",))
    client.member_id, client.member_epoch, client.state = "m1", 3, ClientState.STABLE
    client.owned = frozenset({("t", 0), ("t", 1)})
    assert client.next_request(10_000) is not None
    revoke = ConsumerGroupHeartbeatResponse(
        member_id="m1", member_epoch=3, heartbeat_interval_ms=5_000, assignment=(TopicPartitions("t", (0,)),)
    )
    client.on_response(revoke, 10_000)
    assert client.state == ClientState.ACKNOWLEDGING and client.owned == frozenset({("t", 0)})
    sent = []
    for now in (10_001, 12_000, 15_000):
        request = client.next_request(now)
        if request is not None:
            assert request.owned() == frozenset({("t", 0)})
            sent.append(now)
            break
    return sent


def test_completed_revocation_is_acknowledged_at_once() -> None:
    assert revocation_acknowledged(VirtualConsumer) == [10_001]
    assert revocation_acknowledged(client_of("kgo-1340")) == [15_000]


# ---------------------------------------------------------------------------------- brokers


def sync(member: str, assignments: tuple[tuple[str, bytes], ...] = ()) -> SyncGroupRequest:
    return SyncGroupRequest("g", 1, member, assignments, None, "consumer", "range")


def last_member_expires_beside_a_pending_id(cls: type[ClassicCoordinator]) -> Any:
    s = Script(cls)
    pending = s.answers[s.send(join(version=4, client_id="c1"), 0)].member_id
    ref = s.send(join(pending, version=4, client_id="c1"), 0)
    s.advance(3_000)
    s.send(sync(pending, ((pending, b"a"),)), 3_000)
    assert s.answers[ref].error == E.NONE and s.group.state == GroupState.STABLE
    other = s.answers[s.send(join(version=4, client_id="c2", session_timeout_ms=60_000), 4_000)]
    assert other.error == E.MEMBER_ID_REQUIRED
    s.advance(3_000 + 10_000)  # the only member's session expires
    return s.group.state, len(s.group.members), len(s.group.pending_members)


def test_group_whose_last_member_expires_becomes_empty_despite_pending_ids() -> None:
    assert last_member_expires_beside_a_pending_id(ClassicCoordinator) == (GroupState.EMPTY, 0, 1)
    broken = last_member_expires_beside_a_pending_id(coordinator_of("redpanda-25270"))
    assert broken == (GroupState.PREPARING_REBALANCE, 0, 1)


def follower_rejoins_stable_group(cls: type[ClassicCoordinator]) -> Any:
    s = Script(cls)
    first = s.send(join(client_id="c1"), 0)
    second = s.send(join(client_id="c2"), 1)
    s.advance(6_000)  # the initial delay, extended once for the second member
    leader = s.group.leader
    follower = next(s.answers[r].member_id for r in (first, second) if s.answers[r].member_id != leader)
    s.send(sync(leader, ((leader, b"p0"), (follower, b"p1"))), 6_000)
    assert s.group.state == GroupState.STABLE
    rejoin = s.answers[s.send(join(follower, client_id="c2"), 7_000)]
    assert rejoin.error == E.NONE and rejoin.generation_id == 1
    answer = s.answers[s.send(sync(follower), 7_000)]
    return answer.error, answer.assignment, s.group.state


def test_follower_rejoining_a_stable_group_keeps_its_assignment() -> None:
    assert follower_rejoins_stable_group(ClassicCoordinator) == (E.NONE, b"p1", GroupState.STABLE)
    broken = follower_rejoins_stable_group(coordinator_of("seaweedfs-9143"))
    assert broken == (E.NONE, b"", GroupState.STABLE)
