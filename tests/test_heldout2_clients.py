"""Client mutants of the held-out catalogue (conformance/mutants/heldout2_clients.py): on a short
scripted exchange each one sends, keeps or assigns differently from the reference classic consumer,
and the reference side is the fixed behaviour."""

from __future__ import annotations

from typing import Any

from conformance.mutants import get_mutant
from conformance.mutants import heldout2_clients as h2
from model.assignors import get_assignor
from model.classic.client import ClassicClient, ClientConfig, Phase
from model.classic.messages import (
    HeartbeatRequest,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitResponse,
    SyncGroupRequest,
)
from model.embedded import TopicPartition, encode_subscription
from model.errors import ErrorCode as E
from tests.classic_script import stable_client


def mutant_client(name: str) -> type[ClassicClient]:
    client = get_mutant(name, "classic").client
    assert client is not None and issubclass(client, ClassicClient) and client.__doc__
    return client


def leader_output(
    cls: type[ClassicClient],
    assignor: str,
    claims: dict[str, tuple[tuple[str, ...], tuple[TopicPartition, ...], int]],
    topics: dict[str, int],
) -> dict[str, tuple[TopicPartition, ...]]:
    """Client m1 joins, is elected leader of the members ``claims`` describes (topics, owned
    partitions, generation of the claim) and runs ``assignor``: what it hands out."""
    client = cls("c1", ClientConfig(assignors=(assignor,), topics=tuple(claims["m1"][0])))
    client.member_id = "m1"
    assert isinstance(client.next_request(topics), JoinGroupRequest)
    members = tuple(
        JoinGroupMember(m, None, encode_subscription(get_assignor(assignor).subscription(t, owned, gen)))
        for m, (t, owned, gen) in claims.items()
    )
    client.on_response(JoinGroupResponse(E.NONE, 5, "consumer", assignor, "m1", False, "m1", members), topics)
    return dict(client.leader_output)


# ---------------------------------------------------------------------------------- error handling


def retriable_rebalance_failures(cls: type[ClassicClient]) -> Any:
    """A cooperative member's JoinGroup answered COORDINATOR_NOT_AVAILABLE, then (another member)
    its SyncGroup lost to a request timeout: the next JoinGroup of each."""
    c = stable_client(cls, cooperative=True)
    c.needs_rejoin = True
    assert isinstance(c.next_request({"t": 2}), JoinGroupRequest)
    c.on_response(JoinGroupResponse(E.COORDINATOR_NOT_AVAILABLE), {"t": 2})
    after_error = c.next_request({"t": 2})
    s = stable_client(cls)
    s.phase = Phase.SYNCING
    assert isinstance(s.next_request({"t": 2}), SyncGroupRequest)
    s.on_timeout()
    after_timeout = s.next_request({"t": 2})
    assert isinstance(after_error, JoinGroupRequest) and isinstance(after_timeout, JoinGroupRequest)
    return (after_error.member_id, c.generation, c.owned), (after_timeout.member_id, s.generation)


def test_retriable_join_or_sync_failure_keeps_member_id_and_generation() -> None:
    fixed = retriable_rebalance_failures(ClassicClient)
    broken = retriable_rebalance_failures(mutant_client("kafka-13214"))
    assert fixed == (("m1", 3, (("t", 0),)), ("m1", 3))
    assert broken == (("", -1, ()), ("", -1))


def commit_member_errors(cls: type[ClassicClient]) -> Any:
    """A Stable member's commit answered UNKNOWN_MEMBER_ID (and another's ILLEGAL_GENERATION): the
    request each sends next."""
    out = []
    for error in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION):
        c = stable_client(cls)
        assert c.commit_request(5) is not None
        c.on_response(OffsetCommitResponse((("t", 0, error),)), {"t": 2})
        request = c.next_request({"t": 2})
        assert request is not None
        out.append((type(request).__name__, c.member_id, c.generation, c.last_error))
    return out


def test_commit_fenced_member_error_makes_the_consumer_rejoin() -> None:
    fixed = commit_member_errors(ClassicClient)
    broken = commit_member_errors(mutant_client("franz-go-1326"))
    assert fixed == [
        (JoinGroupRequest.__name__, "", -1, E.UNKNOWN_MEMBER_ID),
        (JoinGroupRequest.__name__, "m1", -1, E.ILLEGAL_GENERATION),
    ]
    assert broken == [
        (HeartbeatRequest.__name__, "m1", 3, E.UNKNOWN_MEMBER_ID),
        (HeartbeatRequest.__name__, "m1", 3, E.ILLEGAL_GENERATION),
    ]


# ---------------------------------------------------------------------------------- assignors


def stale_claim(cls: type[ClassicClient]) -> Any:
    """m1 owns t-0 at generation 3; m2, which missed two rebalances, still claims it at generation
    1. A cooperative-sticky leader (the faulty one), then an eager sticky one (not affected)."""
    claims = {"m1": (("t",), (("t", 0),), 3), "m2": (("t",), (("t", 0),), 1)}
    return [leader_output(cls, name, claims, {"t": 1}) for name in ("cooperative-sticky", "sticky")]


def test_sticky_leader_gives_a_doubly_claimed_partition_to_its_newest_claimant() -> None:
    fixed = stale_claim(ClassicClient)
    broken = stale_claim(mutant_client("librdkafka-4252"))
    assert fixed == [{"m1": (("t", 0),), "m2": ()}] * 2
    assert broken == [{"m1": (), "m2": (("t", 0),)}, {"m1": (("t", 0),), "m2": ()}]


def copartitioned_range(cls: type[ClassicClient]) -> Any:
    """Two members of two co-partitioned topics, then three members of a one-partition topic."""
    two = {m: (("t", "v"), (), -1) for m in ("m1", "m2")}
    three = {m: (("t",), (), -1) for m in ("m1", "m2", "m3")}
    return leader_output(cls, "range", two, {"t": 2, "v": 2}), leader_output(cls, "range", three, {"t": 1})


def test_range_leader_keeps_copartitioned_topics_aligned_by_member_id() -> None:
    fixed = copartitioned_range(ClassicClient)
    broken = copartitioned_range(mutant_client("sarama-2245"))
    assert fixed == (
        {"m1": (("t", 0), ("v", 0)), "m2": (("t", 1), ("v", 1))},
        {"m1": (("t", 0),), "m2": (), "m3": ()},
    )
    assert broken == (
        {"m1": (("t", 1), ("v", 0)), "m2": (("t", 0), ("v", 1))},
        {"m1": (), "m2": (), "m3": (("t", 0),)},
    )


def unequal_roundrobin(cls: type[ClassicClient]) -> Any:
    """Unequal subscriptions: m1 {a}, m2 {a, b}, m3 {b}; then m1 {a}, m2 {b}, where the leader m1
    must assign b: its assignment, and the request it sends next."""
    uneven = {"m1": (("a",), (), -1), "m2": (("a", "b"), (), -1), "m3": (("b",), (), -1)}
    first = leader_output(cls, "roundrobin", uneven, {"a": 2, "b": 2})
    client = cls("c1", ClientConfig(assignors=("roundrobin",), topics=("a",)))
    client.member_id = "m1"
    assert isinstance(client.next_request({"a": 1, "b": 1}), JoinGroupRequest)
    members = tuple(
        JoinGroupMember(m, None, encode_subscription(get_assignor("roundrobin").subscription(t, (), -1)))
        for m, t in (("m1", ("a",)), ("m2", ("b",)))
    )
    resp = JoinGroupResponse(E.NONE, 5, "consumer", "roundrobin", "m1", False, "m1", members)
    client.on_response(resp, {"a": 1, "b": 1})
    request = client.next_request({"a": 1, "b": 1})
    assert request is None or isinstance(request, SyncGroupRequest)
    sent = None if request is None else (type(request).__name__, len(request.assignments))
    return first, sent


def test_roundrobin_leader_deals_each_topic_to_all_its_subscribers() -> None:
    fixed = unequal_roundrobin(ClassicClient)
    broken = unequal_roundrobin(mutant_client("librdkafka-3159"))
    assert fixed == (
        {"m1": (("a", 0),), "m2": (("a", 1), ("b", 1)), "m3": (("b", 0),)},
        ("SyncGroupRequest", 2),
    )
    assert broken == ({"m1": (("a", 0),), "m2": (("a", 1), ("b", 0), ("b", 1)), "m3": ()}, None)


def test_every_client_mutant_has_a_test() -> None:
    assert {m.name for m in h2.HELDOUT2_CLIENT_MUTANTS} == {
        "kafka-13214",
        "franz-go-1326",
        "librdkafka-4252",
        "sarama-2245",
        "librdkafka-3159",
    }
    assert all(m.protocol == "classic" and m.client is not None for m in h2.HELDOUT2_CLIENT_MUTANTS)
