"""Server-side KIP-848 assignors (model/consumer/assignors.py) against independent straightforward
implementations of Apache Kafka's algorithm descriptions (docs/protocol-reference.md#b11), on randomized
subscriptions (hypothesis)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from model.choice import SeededChooser
from model.consumer.assignors import (
    AssignmentMember,
    is_homogeneous,
    preferred_assignor,
    range_assignor,
    uniform,
    uniform_heterogeneous,
    uniform_homogeneous,
)
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatRequest
from model.consumer.state import ConsumerCoordinatorState
from model.consumer.txn import ConsumerCoordinatorConfig
from model.errors import ErrorCode

TP = tuple[str, int]
NAMES = ["a", "b", "c", "d"]

# ------------------------------------------------------------------ scenarios


@st.composite
def scenarios(draw: st.DrawFn, homogeneous: bool) -> tuple[dict[str, AssignmentMember], dict[str, int]]:
    topics = draw(st.dictionaries(st.sampled_from(NAMES), st.integers(0, 7), min_size=1, max_size=4))
    ids = draw(st.lists(st.text("mnopqrs", min_size=1, max_size=3), min_size=1, max_size=6, unique=True))
    static = draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)))
    instances = draw(st.permutations([f"i{k}" for k in range(len(ids))]))
    universe = sorted(topics) + ["zz"]  # "zz" does not exist
    shared = frozenset(draw(st.sets(st.sampled_from(universe))))
    subs = {m: shared if homogeneous else frozenset(draw(st.sets(st.sampled_from(universe)))) for m in ids}
    # a random previous target: disjoint, sometimes stale (unsubscribed topics, vanished partitions)
    current: dict[str, set[TP]] = {m: set() for m in ids}
    for t in sorted(topics):
        for p in range(topics[t] + 1):
            owner = draw(st.integers(-1, len(ids) - 1))
            if owner >= 0:
                current[ids[owner]].add((t, p))
    members = {
        m: AssignmentMember(
            member_id=m,
            subscribed=frozenset(t for t in subs[m] if t in topics),
            current=frozenset(current[m]),
            instance_id=instances[i] if static[i] else None,
        )
        for i, m in enumerate(ids)
    }
    return members, topics


# ------------------------------------------------------------------ independent reference implementations


def ref_uniform_homogeneous(
    members: Mapping[str, AssignmentMember], topics: Mapping[str, int]
) -> dict[str, set[TP]]:
    """Kafka's UHom description: quota ⌊P/N⌋, P mod N members get one extra; each member keeps its
    previous target partitions up to its quota; everything else goes to members below quota.
    The arbitrary choices are the ones the model documents: extra slots to the members keeping the
    most (then by id), the lowest partitions are kept, never-assigned partitions are handed out
    first in (topic, partition) order, revoked ones after them, members filled in the same order."""
    topic_set = next(iter(members.values())).subscribed
    partitions = sorted((t, p) for t in topic_set for p in range(topics[t]))
    n = len(members)
    base, extra = divmod(len(partitions), n)
    first_claim: dict[TP, str] = {}
    for m in sorted(members):
        for tp in sorted(members[m].current):
            if tp in set(partitions):
                first_claim.setdefault(tp, m)
    claims = Counter(first_claim.values())
    order = sorted(members, key=lambda m: (-claims[m], m))
    quota = {m: base + (1 if k < extra else 0) for k, m in enumerate(order)}
    result: dict[str, set[TP]] = {}
    revoked: list[TP] = []
    for m in order:
        mine = sorted(tp for tp, owner in first_claim.items() if owner == m)
        result[m] = set(mine[: quota[m]])
        revoked += mine[quota[m] :]
    queue = [tp for tp in partitions if tp not in first_claim] + revoked
    for m in order:
        while len(result[m]) < quota[m]:
            result[m].add(queue.pop(0))
    assert not queue
    return result


def ref_range(members: Mapping[str, AssignmentMember], topics: Mapping[str, int]) -> dict[str, set[TP]]:
    """Kafka's RangeAssignor description: static members sorted by instance id, then dynamic ones by
    member id; per topic the n subscribers in that order get contiguous ranges of ⌊P/n⌋, the first
    P mod n one more."""
    statics = sorted((m.instance_id, m.member_id) for m in members.values() if m.instance_id is not None)
    dynamics = sorted(m.member_id for m in members.values() if m.instance_id is None)
    order = [mid for _, mid in statics] + dynamics
    result: dict[str, set[TP]] = {m: set() for m in members}
    for t, count in topics.items():
        subs = [m for m in order if t in members[m].subscribed]
        cursor = 0
        for k, m in enumerate(subs):
            size = count // len(subs) + (1 if k < count % len(subs) else 0)
            result[m] |= {(t, p) for p in range(cursor, cursor + size)}
            cursor += size
    return result


# ------------------------------------------------------------------ property helpers


def subscribed_partitions(members: Mapping[str, AssignmentMember], topics: Mapping[str, int]) -> set[TP]:
    wanted = {t for m in members.values() for t in m.subscribed}
    return {(t, p) for t in wanted for p in range(topics[t])}


def assert_valid(
    members: Mapping[str, AssignmentMember], topics: Mapping[str, int], result: Mapping[str, frozenset[TP]]
) -> None:
    assert set(result) == set(members)
    everything = [tp for ps in result.values() for tp in ps]
    assert len(everything) == len(set(everything)), "a partition assigned twice"
    assert set(everything) == subscribed_partitions(members, topics), "not exactly the subscribed partitions"
    for m, ps in result.items():
        assert all(t in members[m].subscribed for t, _ in ps), "partition of an unsubscribed topic"


def no_improving_move(members: Mapping[str, AssignmentMember], result: Mapping[str, frozenset[TP]]) -> bool:
    return all(
        len(result[a]) - len(result[b]) <= 1
        for a in result
        for b in result
        if any(t in members[b].subscribed for t, _ in result[a])
    )


def claimed(members: Mapping[str, AssignmentMember], topics: Mapping[str, int]) -> dict[str, set[TP]]:
    valid = subscribed_partitions(members, topics)
    taken: set[TP] = set()
    out: dict[str, set[TP]] = {}
    for m in sorted(members):
        out[m] = {tp for tp in members[m].current if tp in valid and tp[0] in members[m].subscribed} - taken
        taken |= out[m]
    return out


def with_current(
    members: Mapping[str, AssignmentMember], result: Mapping[str, frozenset[TP]]
) -> dict[str, AssignmentMember]:
    return {
        m: AssignmentMember(m, spec.subscribed, result[m], spec.instance_id) for m, spec in members.items()
    }


# ------------------------------------------------------------------ uniform, homogeneous


@settings(max_examples=300, deadline=None)
@given(scenarios(homogeneous=True))
def test_uniform_homogeneous_matches_reference_and_is_valid_balanced_sticky(
    case: tuple[dict[str, AssignmentMember], dict[str, int]],
) -> None:
    members, topics = case
    assert is_homogeneous(m.subscribed for m in members.values())
    result = uniform(members, topics, True)
    assert {m: set(ps) for m, ps in result.items()} == ref_uniform_homogeneous(members, topics)
    assert_valid(members, topics, result)
    sizes = [len(ps) for ps in result.values()]
    assert max(sizes) - min(sizes) <= 1
    total = len(subscribed_partitions(members, topics))
    floor = total // len(members)
    for m, kept in claimed(members, topics).items():
        assert len(result[m] & kept) >= min(len(kept), floor), "not sticky up to quota"
    again = uniform(with_current(members, result), topics, True)
    assert again == result, "a balanced target must be stable"


# ------------------------------------------------------------------ uniform, heterogeneous


@settings(max_examples=300, deadline=None)
@given(scenarios(homogeneous=False))
def test_uniform_heterogeneous_is_valid_locally_balanced_and_sticky(
    case: tuple[dict[str, AssignmentMember], dict[str, int]],
) -> None:
    members, topics = case
    result = uniform_heterogeneous(members, topics)
    assert_valid(members, topics, result)
    assert no_improving_move(members, result)
    again = uniform_heterogeneous(with_current(members, result), topics)
    assert again == result, "a valid, balanced target is kept as it is"
    if is_homogeneous(m.subscribed for m in members.values()):
        sizes = [len(ps) for ps in result.values()]
        assert max(sizes) - min(sizes) <= 1


@settings(max_examples=200, deadline=None)
@given(scenarios(homogeneous=True))
def test_uniform_heterogeneous_builder_on_equal_subscriptions_is_balanced(
    case: tuple[dict[str, AssignmentMember], dict[str, int]],
) -> None:
    members, topics = case
    result = uniform_heterogeneous(members, topics)
    assert_valid(members, topics, result)
    sizes = [len(ps) for ps in result.values()]
    assert max(sizes) - min(sizes) <= 1


def test_uniform_heterogeneous_example_keeps_partitions_of_still_subscribed_topics() -> None:
    members = {
        "m1": AssignmentMember("m1", frozenset({"a"}), frozenset({("a", 0), ("a", 1)})),
        "m2": AssignmentMember("m2", frozenset({"a", "b"}), frozenset({("b", 0)})),
    }
    result = uniform(members, {"a": 2, "b": 2}, False)
    assert result == {"m1": frozenset({("a", 0), ("a", 1)}), "m2": frozenset({("b", 0), ("b", 1)})}


# ------------------------------------------------------------------ range


@settings(max_examples=300, deadline=None)
@given(st.booleans().flatmap(lambda h: scenarios(homogeneous=h)))
def test_range_matches_reference_and_is_contiguous(
    case: tuple[dict[str, AssignmentMember], dict[str, int]],
) -> None:
    members, topics = case
    result = range_assignor(members, topics, is_homogeneous(m.subscribed for m in members.values()))
    assert {m: set(ps) for m, ps in result.items()} == ref_range(members, topics)
    assert_valid(members, topics, result)
    for ps in result.values():
        for t in {t for t, _ in ps}:
            idx = sorted(p for tt, p in ps if tt == t)
            assert idx == list(range(idx[0], idx[0] + len(idx)))
    shared = {m.subscribed for m in members.values()}
    if len(shared) == 1 and len({topics[t] for t in next(iter(shared))}) == 1:
        for ps in result.values():  # co-partitioned
            per_topic = {t: {p for tt, p in ps if tt == t} for t in next(iter(shared))}
            assert len({frozenset(v) for v in per_topic.values()}) <= 1


def test_range_orders_static_members_first_by_instance_id() -> None:
    members = {
        "a": AssignmentMember("a", frozenset({"t"})),
        "z": AssignmentMember("z", frozenset({"t"}), instance_id="i2"),
        "y": AssignmentMember("y", frozenset({"t"}), instance_id="i1"),
    }
    result = range_assignor(members, {"t": 5}, True)
    assert result == {
        "y": frozenset({("t", 0), ("t", 1)}),
        "z": frozenset({("t", 2), ("t", 3)}),
        "a": frozenset({("t", 4)}),
    }


# ------------------------------------------------------------------ selection (CoG L597)


class RecordingChooser(SeededChooser):
    def __init__(self) -> None:
        super().__init__(0)
        self.asked: list[tuple[str, list[str]]] = []

    def pick(self, kind: str, options: Sequence[str]) -> str:
        self.asked.append((kind, list(options)))
        return options[-1]


def test_preferred_assignor_selection_and_ties_through_the_chooser() -> None:
    chooser = RecordingChooser()
    configured = ("uniform", "range")
    assert preferred_assignor([None, None], configured, chooser) == "uniform"
    assert preferred_assignor(["range", None, "range", "uniform"], configured, chooser) == "range"
    assert chooser.asked == []
    assert preferred_assignor(["range", "uniform"], configured, chooser) == "range"
    assert chooser.asked == [("consumer.preferred_assignor", ["uniform", "range"])]
    assert preferred_assignor(["range", "uniform"], configured, SeededChooser(0)) == "uniform"


def test_coordinator_uses_the_assignor_the_members_prefer() -> None:
    coord = ConsumerCoordinator(ConsumerCoordinatorConfig(), SeededChooser(0))
    state = ConsumerCoordinatorState()
    coord.create_topic(state, "t", 5)

    def join(member: str, instance: str | None, assignor: str | None) -> None:
        request = ConsumerGroupHeartbeatRequest(
            group_id="g",
            member_id=member,
            member_epoch=0,
            instance_id=instance,
            rebalance_timeout_ms=1000,
            subscribed_topic_names=("t",),
            server_assignor=assignor,
            topic_partitions=(),
        )
        response = coord.handle_consumer_group_heartbeat(state, request, 1, 0).deliveries[0].response
        assert response.error_code == ErrorCode.NONE

    join("a", None, "range")
    join("z", "i2", None)
    join("y", "i1", "range")
    group = state.groups["g"]
    assert group.last_assignor == "range"
    assert group.target["y"] == frozenset({("t", 0), ("t", 1)})
    assert group.target["z"] == frozenset({("t", 2), ("t", 3)})
    assert group.target["a"] == frozenset({("t", 4)})


def test_uniform_homogeneous_extra_partitions_go_to_members_keeping_most() -> None:
    members = {
        "m1": AssignmentMember("m1", frozenset({"t"}), frozenset({("t", 0), ("t", 1), ("t", 2)})),
        "m2": AssignmentMember("m2", frozenset({"t"}), frozenset({("t", 3), ("t", 4)})),
        "m0": AssignmentMember("m0", frozenset({"t"})),
    }
    result = uniform_homogeneous(members, {"t": 7})
    assert result["m1"] == frozenset({("t", 0), ("t", 1), ("t", 2)})
    assert result["m2"] == frozenset({("t", 3), ("t", 4)})
    assert result["m0"] == frozenset({("t", 5), ("t", 6)})
