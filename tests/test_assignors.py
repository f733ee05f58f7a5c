"""model.assignors: Kafka semantics of range/roundrobin, sticky V0/V1, cooperative-sticky, and the client invariants."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.assignors import (
    ASSIGNOR_NAMES,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    get_assignor,
)
from model.assignors.base import Assignor
from model.assignors.invariants import (
    AssignmentObservation,
    assignment_complete,
    assignment_only_subscribed,
    assignment_single_owner,
    cooperative_no_direct_transfer,
    sticky_stale_claim_loses,
)
from model.assignors.sticky import resolve_claims, sticky_claim
from model.embedded import (
    Assignment,
    Subscription,
    TopicPartition,
    canonical_subscription,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    decode_subscription,
    encode_sticky_user_data,
    encode_subscription,
)
from model.invariants import REGISTRY

CLIENT_INVARIANTS = (
    "client.assignment_complete",
    "client.assignment_only_subscribed",
    "client.assignment_single_owner",
    "client.cooperative_no_direct_transfer",
    "client.sticky_stale_claim_loses",
)
FAST = settings(max_examples=40, deadline=None)


def parts(assignment: Assignment) -> set[TopicPartition]:
    return set(assignment.partitions)


def protocol_of(assignor: Assignor) -> str:
    return assignor.rebalance_protocols[0]


def observe(
    assignor: Assignor,
    counts: Mapping[str, int],
    subs: Mapping[str, Subscription],
    result: Mapping[str, Assignment],
    protocol: str | None = None,
) -> AssignmentObservation:
    return AssignmentObservation(counts, subs, result, protocol or protocol_of(assignor), assignor.name)


def violations(obs: AssignmentObservation) -> dict[str, list[str]]:
    found = {inv_id: REGISTRY[inv_id].check(obs) for inv_id in CLIENT_INVARIANTS}
    return {k: v for k, v in found.items() if v}


# ------------------------------------------------------------------------------- random groups


@dataclass(frozen=True)
class Member:
    member_id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...]
    generation: int


@dataclass(frozen=True)
class Group:
    counts: dict[str, int]
    members: tuple[Member, ...]

    def subscriptions(self, assignor: Assignor) -> dict[str, Subscription]:
        return {m.member_id: assignor.subscription(m.topics, m.owned, m.generation) for m in self.members}


TOPICS = ("t0", "t1", "t2", "gone")


@st.composite
def groups(draw: st.DrawFn) -> Group:
    counts = {t: draw(st.integers(0, 5)) for t in TOPICS[:3] if draw(st.booleans()) or t == "t0"}
    ids = draw(st.permutations(["m-a", "m-b", "m-c", "m-d", "m-e"]))[: draw(st.integers(1, 5))]
    universe = [(t, p) for t in TOPICS for p in range(6)]
    members = []
    for mid in ids:
        topics = tuple(draw(st.lists(st.sampled_from(TOPICS), max_size=3, unique=True)))
        owned = tuple(draw(st.lists(st.sampled_from(universe), max_size=6, unique=True)))
        members.append(Member(mid, topics, owned, draw(st.integers(-1, 4))))
    return Group(counts, tuple(members))


LEGAL_ASSIGNORS = [
    RangeAssignor(),
    RoundRobinAssignor(),
    StickyAssignor(user_data_version=1),
    CooperativeStickyAssignor(adjust=True),
]


@pytest.mark.parametrize("assignor", LEGAL_ASSIGNORS, ids=repr)
@FAST
@given(group=groups())
def test_every_client_invariant_holds(assignor: Assignor, group: Group) -> None:
    subs = group.subscriptions(assignor)
    result = assignor.assign(group.counts, subs)
    assert list(result) == list(subs)  # every member, in the leader's member-list order
    assert violations(observe(assignor, group.counts, subs, result)) == {}
    # what goes on the wire decodes back to the same subscription
    for sub in subs.values():
        assert decode_subscription(encode_subscription(sub)) == canonical_subscription(sub) == sub


@pytest.mark.parametrize("assignor", LEGAL_ASSIGNORS, ids=repr)
@FAST
@given(group=groups())
def test_assign_is_deterministic(assignor: Assignor, group: Group) -> None:
    subs = group.subscriptions(assignor)
    assert assignor.assign(group.counts, subs) == assignor.assign(dict(group.counts), dict(subs))


def _single_moves_cannot_improve(
    counts: Mapping[str, int], subs: Mapping[str, Subscription], result: Mapping[str, Assignment]
) -> None:
    size = {m: len(a.partitions) for m, a in result.items()}
    for a, assignment in result.items():
        for tp in assignment.partitions:
            for b, sub in subs.items():
                if tp[0] in sub.topics:
                    assert size[a] <= size[b] + 1, (tp, a, b, size)


@pytest.mark.parametrize("assignor", [StickyAssignor(1), CooperativeStickyAssignor(adjust=False)], ids=repr)
@FAST
@given(group=groups())
def test_sticky_core_is_balanced(assignor: Assignor, group: Group) -> None:
    subs = group.subscriptions(assignor)
    result = assignor.assign(group.counts, subs)
    _single_moves_cannot_improve(group.counts, subs, result)
    eligible = [m for m, s in subs.items() if any(t in group.counts for t in s.topics)]
    if eligible and all(
        set(subs[m].topics) & set(group.counts) == set(subs[eligible[0]].topics) & set(group.counts)
        for m in eligible
    ):
        sizes = [len(result[m].partitions) for m in eligible]
        assert max(sizes) - min(sizes) <= 1


@FAST
@given(group=groups())
def test_sticky_keeps_a_balanced_assignment_unchanged(group: Group) -> None:
    sticky = StickyAssignor(1)
    first = sticky.assign(group.counts, group.subscriptions(sticky))
    again = Group(
        group.counts,
        tuple(Member(m.member_id, m.topics, first[m.member_id].partitions, 10) for m in group.members),
    )
    assert sticky.assign(group.counts, again.subscriptions(sticky)) == first


@FAST
@given(group=groups())
def test_cooperative_rounds_converge_to_a_complete_assignment(group: Group) -> None:
    coop = CooperativeStickyAssignor()
    members = group.members
    previous: dict[str, Assignment] | None = None
    for generation in range(10, 16):
        subs = {m.member_id: coop.subscription(m.topics, m.owned, generation) for m in members}
        result = coop.assign(group.counts, subs)
        assert violations(observe(coop, group.counts, subs, result)) == {}
        if result == previous:
            break
        previous = result
        members = tuple(
            Member(m.member_id, m.topics, result[m.member_id].partitions, generation) for m in members
        )
    else:
        pytest.fail("cooperative-sticky did not settle within five follow-up rebalances")
    # once settled nothing is held back any more: complete even without the cooperative excuse
    assert list(assignment_complete(observe(coop, group.counts, subs, result, protocol="EAGER"))) == []


# ------------------------------------------------------------------------------- range / roundrobin


def _subs(topics_by_member: Mapping[str, Sequence[str]]) -> dict[str, Subscription]:
    return {m: Subscription(tuple(ts)) for m, ts in topics_by_member.items()}


def test_range_gives_the_first_members_one_extra() -> None:
    result = RangeAssignor().assign(
        {"t": 7, "u": 2}, _subs({"c2": ["t"], "c0": ["t", "u"], "c1": ["t", "u"]})
    )
    assert list(result) == ["c2", "c0", "c1"]
    assert result["c0"].partitions == (("t", 0), ("t", 1), ("t", 2), ("u", 0))
    assert result["c1"].partitions == (("t", 3), ("t", 4), ("u", 1))
    assert result["c2"].partitions == (("t", 5), ("t", 6))


def test_range_skips_missing_topics_and_gives_everyone_an_entry() -> None:
    result = RangeAssignor().assign({"t": 1}, _subs({"a": ["t"], "b": ["t"], "c": ["missing"]}))
    assert result == {"a": Assignment((("t", 0),)), "b": Assignment(()), "c": Assignment(())}


def test_roundrobin_matches_kafka_javadoc_examples() -> None:
    # RoundRobinAssignor javadoc: identical subscriptions.
    same = RoundRobinAssignor().assign({"t0": 3, "t1": 3}, _subs({"C1": ["t0", "t1"], "C0": ["t0", "t1"]}))
    assert same["C0"].partitions == (("t0", 0), ("t0", 2), ("t1", 1))
    assert same["C1"].partitions == (("t0", 1), ("t1", 0), ("t1", 2))
    # ... and differing subscriptions: members not subscribed are skipped.
    diff = RoundRobinAssignor().assign(
        {"t0": 1, "t1": 2, "t2": 3}, _subs({"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]})
    )
    assert diff["C0"].partitions == (("t0", 0),)
    assert diff["C1"].partitions == (("t1", 0),)
    assert diff["C2"].partitions == (("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2))


# ------------------------------------------------------------------------------- subscriptions


def test_eager_subscriptions_carry_no_owned_partitions() -> None:
    for assignor in (RangeAssignor(), RoundRobinAssignor(), StickyAssignor()):
        sub = assignor.subscription(["b", "a", "b"], [("a", 0)], 4)
        assert sub.topics == ("a", "b") and sub.owned_partitions == () and sub.generation_id == 4
    assert RangeAssignor().subscription(["a"], [], -1).user_data is None


def test_sticky_subscription_user_data() -> None:
    v1 = StickyAssignor(1).subscription(["t"], [("t", 1)], 6)
    assert v1.user_data == encode_sticky_user_data([("t", 1)], 6)
    assert sticky_claim(v1) == ((("t", 1),), 6)
    assert StickyAssignor(1).subscription(["t"], [], -1).user_data is None  # no assignment yet (SA L211)
    v0 = StickyAssignor(0).subscription(["t"], [("t", 1)], 6)
    assert decode_sticky_user_data(v0.user_data) == ((("t", 1),), None)
    assert v0.generation_id == -1


def test_cooperative_subscription() -> None:
    sub = CooperativeStickyAssignor().subscription(["t", "u"], [("x", 0), ("u", 1), ("t", 2)], 8)
    assert sub.owned_partitions == (("t", 2), ("u", 1))  # partitions of dropped topics revoked first
    assert sub.generation_id == 8 and decode_cooperative_user_data(sub.user_data) == 8
    assert CooperativeStickyAssignor().rebalance_protocols == ("COOPERATIVE", "EAGER")
    assert StickyAssignor().rebalance_protocols == ("EAGER",)


# ------------------------------------------------------------------------------- registry


def test_get_assignor_registry() -> None:
    assert [get_assignor(n).name for n in ASSIGNOR_NAMES] == list(ASSIGNOR_NAMES)
    assert isinstance(get_assignor("sticky", user_data_version=0), StickyAssignor)
    assert get_assignor("sticky", user_data_version=0).user_data_version == 0  # type: ignore[attr-defined]
    assert get_assignor("cooperative-sticky", adjust=False).adjust is False  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="'uniform'"):
        get_assignor("uniform")
    with pytest.raises(ValueError, match="'range'.*adjust"):
        get_assignor("range", adjust=True)
    with pytest.raises(ValueError, match="user_data_version"):
        get_assignor("sticky", user_data_version=2)
    with pytest.raises(ValueError, match="adjust"):
        get_assignor("cooperative-sticky", adjust="yes")


def test_invariants_registered() -> None:
    for inv_id in CLIENT_INVARIANTS:
        inv = REGISTRY[inv_id]
        assert (inv.kind, inv.protocol) == ("safety", "client")
        assert inv.summary and inv.predicate.__doc__ and "(" in inv.predicate.__doc__
    with pytest.raises(ValueError, match="protocol"):
        AssignmentObservation({}, {}, {}, "cooperative-sticky")


# ------------------------------------------------------------------------------- claim resolution (docs/protocol-reference.md#c3)


def test_resolve_claims() -> None:
    p = ("t", 0)
    assert resolve_claims({"a": ((p,), 3), "b": ((p,), 5)}) == {p: "b"}
    assert resolve_claims({"b": ((p,), 5), "a": ((p,), 3)}) == {p: "b"}
    assert resolve_claims({"a": ((p,), 5), "b": ((p,), 5)}) == {}  # voided, PR #10985
    assert resolve_claims({"a": ((p,), 5), "b": ((p,), 5), "c": ((p,), 7)}) == {p: "c"}
    assert resolve_claims({"a": ((p,), 7), "b": ((p,), 5), "c": ((p,), 5)}) == {p: "a"}


def test_generation_from_subscription_field_else_user_data() -> None:
    data = encode_sticky_user_data([("t", 0)], 4)
    assert sticky_claim(Subscription(("t",), data, (), 9)) == ((("t", 0),), 9)
    assert sticky_claim(Subscription(("t",), data, (), -1)) == ((("t", 0),), 4)
    v0 = encode_sticky_user_data([("t", 0)], None)
    assert sticky_claim(Subscription(("t",), v0)) == ((("t", 0),), -1)


def test_sticky_v1_higher_generation_claim_stays_put() -> None:
    sticky = StickyAssignor(1)
    subs = {
        "stale": sticky.subscription(["t"], [("t", 0), ("t", 1)], 3),
        "current": sticky.subscription(["t"], [("t", 0)], 4),
        "other": sticky.subscription(["t"], [("t", 1), ("t", 2)], 4),
    }
    result = sticky.assign({"t": 3}, subs)
    assert parts(result["current"]) == {("t", 0)}
    assert parts(result["other"]) | parts(result["stale"]) == {("t", 1), ("t", 2)}


# ------------------------------------------------------------------------------- KAFKA-7026 (docs/protocol-reference.md#c4)

G = 5
C4_COUNTS = {"t": 2}


def c4_subscriptions(client: StickyAssignor) -> dict[str, Subscription]:
    """C1 was removed after generation G, C2 took everything in G+1, C1 rejoins with its stale claim."""
    return {
        "C1": client.subscription(["t"], [("t", 0)], G),
        "C2": client.subscription(["t"], [("t", 0), ("t", 1)], G + 1),
    }


def test_kafka_7026_double_assignment_with_v0_only() -> None:
    v0 = StickyAssignor(user_data_version=0)
    result = v0.assign(C4_COUNTS, c4_subscriptions(v0))
    assert ("t", 0) in parts(result["C1"]) and ("t", 0) in parts(result["C2"])
    obs = observe(v0, C4_COUNTS, c4_subscriptions(v0), result)
    assert list(assignment_single_owner(obs)) == ["t-0 assigned to C1, C2"]

    v1 = StickyAssignor(user_data_version=1)
    fixed = v1.assign(C4_COUNTS, c4_subscriptions(v1))
    assert parts(fixed["C1"]).isdisjoint(parts(fixed["C2"]))
    assert parts(fixed["C1"]) | parts(fixed["C2"]) == {("t", 0), ("t", 1)}
    assert violations(observe(v1, C4_COUNTS, c4_subscriptions(v1), fixed)) == {}


# ------------------------------------------------------------------------------- every invariant can fail


def test_single_owner_can_fail() -> None:
    obs = AssignmentObservation(
        {"t": 1},
        _subs({"a": ["t"], "b": ["t"]}),
        {"a": Assignment((("t", 0),)), "b": Assignment((("t", 0),))},
        "EAGER",
        "range",
    )
    assert list(assignment_single_owner(obs)) == ["t-0 assigned to a, b"]


def test_stale_claim_loses_fails_for_a_pre_kip341_leader() -> None:
    # Mixed group (KIP-341 "forward compatibility"): members send V1, the leader reads only V0.
    members = c4_subscriptions(StickyAssignor(1))
    result = StickyAssignor(0).assign(C4_COUNTS, members)
    obs = AssignmentObservation(C4_COUNTS, members, result, "EAGER", "sticky")
    assert list(sticky_stale_claim_loses(obs)) == [
        f"t-0 kept by C1 on its stale generation-{G} claim and by C2 (generation {G + 1})"
    ]


def test_stale_claim_loses_fails_when_the_owner_takes_something_new_instead() -> None:
    sticky = StickyAssignor(1)
    subs = {
        "old": sticky.subscription(["t"], [("t", 0)], 2),
        "new": sticky.subscription(["t"], [("t", 0)], 3),
    }
    # balanced, but stale "old" got t-0 while its owner "new" took the unclaimed t-1
    bad = {"old": Assignment((("t", 0),)), "new": Assignment((("t", 1),))}
    obs = AssignmentObservation({"t": 2}, subs, bad, "EAGER", "sticky")
    assert list(sticky_stale_claim_loses(obs)) == [
        "t-0 went to old on its stale generation-2 claim while its generation-3 owner new took unclaimed t-1"
    ]
    good = sticky.assign({"t": 2}, subs)
    assert good == {"old": Assignment((("t", 1),)), "new": Assignment((("t", 0),))}
    assert (
        list(sticky_stale_claim_loses(AssignmentObservation({"t": 2}, subs, good, "EAGER", "sticky"))) == []
    )
    # the same bad output is not judged for a non-sticky assignor
    assert list(sticky_stale_claim_loses(AssignmentObservation({"t": 2}, subs, bad, "EAGER", "range"))) == []


def test_cooperative_no_direct_transfer_fails_without_adjust() -> None:
    counts = {"t": 4}
    owner = CooperativeStickyAssignor().subscription(["t"], [("t", p) for p in range(4)], 3)
    newcomer = CooperativeStickyAssignor().subscription(["t"], [], -1)
    subs = {"A": owner, "B": newcomer}

    mutant = CooperativeStickyAssignor(adjust=False)
    direct = mutant.assign(counts, subs)
    assert len(direct["B"].partitions) == 2
    msgs = list(cooperative_no_direct_transfer(observe(mutant, counts, subs, direct)))
    assert len(msgs) == 2 and "added to B while still owned by A" in msgs[0]

    # KIP-429: first rebalance only revokes, the follow-up one assigns.
    coop = CooperativeStickyAssignor()
    first = coop.assign(counts, subs)
    assert first["B"].partitions == () and len(first["A"].partitions) == 2
    assert violations(observe(coop, counts, subs, first)) == {}
    follow = {
        "A": coop.subscription(["t"], first["A"].partitions, 4),
        "B": coop.subscription(["t"], first["B"].partitions, 4),
    }
    second = coop.assign(counts, follow)
    assert second["A"] == first["A"] and len(second["B"].partitions) == 2
    assert violations(observe(coop, counts, follow, second)) == {}


def test_only_subscribed_can_fail() -> None:
    obs = AssignmentObservation(
        {"t": 1, "u": 1},
        _subs({"a": ["t"]}),
        {"a": Assignment((("u", 0), ("t", 5))), "ghost": Assignment((("t", 0),))},
        "EAGER",
        "range",
    )
    assert list(assignment_only_subscribed(obs)) == [
        "a assigned u-0 but did not subscribe to u",
        "a assigned t-5, which does not exist",
        "ghost is not a member of this rebalance but was assigned 1 partition(s)",
    ]


def test_complete_can_fail_and_excuses_only_cooperative_hold_back() -> None:
    subs = _subs({"a": ["t"], "b": ["t"]})
    dropped = AssignmentObservation(
        {"t": 2}, subs, {"a": Assignment((("t", 0),)), "b": Assignment(())}, "EAGER"
    )
    assert list(assignment_complete(dropped)) == ["t-1 is subscribed but assigned to no member"]

    coop = CooperativeStickyAssignor()
    counts = {"t": 2}
    held = {"a": coop.subscription(["t"], [("t", 0), ("t", 1)], 1), "b": coop.subscription(["t"], [], -1)}
    result = coop.assign(counts, held)
    assert list(assignment_complete(observe(coop, counts, held, result))) == []
    assert list(assignment_complete(observe(coop, counts, held, result, protocol="EAGER"))) == [
        "t-1 is subscribed but assigned to no member"
    ]
