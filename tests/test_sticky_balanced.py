"""client.sticky_balanced (docs/bug-catalogue.md#row-4, KAFKA-15106): the reference sticky assignors keep it
on random groups; the kafka-15106 mutant's wrong balance predicate breaks it and the suite catches
the mutant from scratch."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.engine.profiles import get_profile
from conformance.power.matrix import run_mutant
from model.assignors.base import COOPERATIVE, EAGER
from model.assignors.cooperative_sticky import CooperativeStickyAssignor
from model.assignors.invariants import AssignmentObservation, sticky_balanced
from model.assignors.sticky import StickyAssignor
from model.embedded import Assignment


def _check(assignor: object, counts: dict[str, int], subs: dict, result: dict, protocol: str) -> list[str]:
    return list(sticky_balanced(AssignmentObservation(counts, subs, result, protocol, assignor.name)))  # type: ignore[attr-defined]


def test_an_unbalanced_sticky_assignment_fails_and_a_balanced_one_passes() -> None:
    sticky = StickyAssignor(1)
    subs = {"a": sticky.subscription(["t"], [("t", 0), ("t", 1)], 3), "b": sticky.subscription(["t"], [], -1)}
    bad = {"a": Assignment((("t", 0), ("t", 1))), "b": Assignment(())}
    assert _check(sticky, {"t": 2}, subs, bad, EAGER) == [
        "a holds 2 partitions and b 0; t-0 could move (0 partition(s) unassigned)"
    ]
    good = sticky.assign({"t": 2}, subs)
    assert _check(sticky, {"t": 2}, subs, good, EAGER) == []
    # b cannot take a partition of a topic it does not subscribe to: no violation
    other = {"a": subs["a"], "b": sticky.subscription(["u"], [], -1)}
    assert _check(sticky, {"t": 2, "u": 0}, other, bad, EAGER) == []


def test_the_kafka_15106_assignor_leaves_a_spread_of_two() -> None:
    from conformance.mutants.classic_clients import _LooseSticky

    loose = _LooseSticky(1)
    subs = {"a": loose.subscription(["t"], [("t", 0), ("t", 1)], 3), "b": loose.subscription(["t"], [], -1)}
    result = loose.assign({"t": 2}, subs)
    assert len(result["a"].partitions) == 2 and result["b"].partitions == ()
    assert _check(loose, {"t": 2}, subs, result, EAGER)


members = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d"]),
    st.tuples(
        st.sets(st.sampled_from(["t", "u"]), min_size=1),
        st.sets(st.integers(0, 5), max_size=4),
        st.integers(-1, 3),
    ),
    min_size=1,
)


@settings(max_examples=60, deadline=None)
@given(members=members, t=st.integers(0, 6), u=st.integers(0, 3), cooperative=st.booleans())
def test_reference_sticky_assignors_are_balanced(members: dict, t: int, u: int, cooperative: bool) -> None:
    counts = {"t": t, "u": u}
    assignor = CooperativeStickyAssignor() if cooperative else StickyAssignor(1)
    subs = {
        m: assignor.subscription(
            sorted(topics), [(tp, p) for tp in sorted(topics) for p in owned if p < counts[tp]], gen
        )
        for m, (topics, owned, gen) in members.items()
    }
    result = assignor.assign(counts, subs)
    assert _check(assignor, counts, subs, result, COOPERATIVE if cooperative else EAGER) == []


def test_kafka_15106_is_caught_from_scratch(tmp_path: Path) -> None:
    row = run_mutant(
        "kafka-15106",
        profile=get_profile("dev"),
        max_examples=40,
        seed=0,
        budget_s=60,  # seed 0 catches it within its 40 examples: no verdict rests on the clock
        run_dir=tmp_path,
        shrink=False,
    )
    assert row.caught and row.expected_hit, row.invariants
