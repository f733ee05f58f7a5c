"""docs/bug-catalogue.md#row-2 (KAFKA-12984, apache/kafka PR #10985): the fixed cooperative-sticky leader voids a
partition two members claim at the same generation and withholds it for one rebalance; the pre-fix
assignor (the kafka-12984 mutant) hands it to both; the stale-SubscriptionState fault of the classic
machine produces such claims, and the suite catches the mutant from scratch."""

from __future__ import annotations

from pathlib import Path

from conformance.engine.profiles import get_profile
from conformance.mutants import MUTANTS, UNMODELLED_ROWS
from conformance.mutants.classic_clients import NoVoidingClient
from conformance.power.matrix import run_mutant
from conformance.protocols.build import make_classic_sim
from model.assignors.cooperative_sticky import CooperativeStickyAssignor, voided_claims
from model.assignors.invariants import AssignmentObservation, assignment_complete, assignment_single_owner


def _observe(subs, result):  # type: ignore[no-untyped-def]
    return AssignmentObservation({"t": 3}, subs, result, "COOPERATIVE", "cooperative-sticky")


def test_fixed_leader_voids_equal_generation_claims_and_holds_them_back() -> None:
    coop = CooperativeStickyAssignor()
    subs = {
        "a": coop.subscription(["t"], [("t", 0)], 5),
        "b": coop.subscription(["t"], [("t", 0), ("t", 1)], 5),
        "c": coop.subscription(["t"], [("t", 2)], 6),
    }
    assert voided_claims({m: (s.owned_partitions, s.generation_id) for m, s in subs.items()}) == {("t", 0)}
    result = coop.assign({"t": 3}, subs)
    held = {m: set(a.partitions) for m, a in result.items()}
    assert all(("t", 0) not in ps for ps in held.values())  # nobody, not even a claimant (PR #10985)
    assert ("t", 1) in held["b"] and ("t", 2) in held["c"]  # single claims stay put
    assert list(assignment_complete(_observe(subs, result))) == []  # held back, excused under COOPERATIVE
    # a higher-generation claim is not a conflict: it wins and keeps the partition
    subs["b"] = coop.subscription(["t"], [("t", 0), ("t", 1)], 6)
    assert ("t", 0) in coop.assign({"t": 3}, subs)["b"].partitions


def test_pre_fix_assignor_gives_a_doubly_claimed_partition_to_both() -> None:
    client = NoVoidingClient("c1", make_classic_sim({"t": 3}, [{"name": "c1"}], {}, {}).clients["c1"].config)
    pre_fix = client._assignor("cooperative-sticky")
    coop = CooperativeStickyAssignor()
    subs = {
        "a": coop.subscription(["t"], [("t", 0)], -1),
        "b": coop.subscription(["t"], [("t", 0), ("t", 1)], 4),
    }
    result = pre_fix.assign({"t": 3}, subs)
    assert list(assignment_single_owner(_observe(subs, result))) == ["t-0 assigned to a, b"]
    assert list(assignment_single_owner(_observe(subs, coop.assign({"t": 3}, subs)))) == []


def test_stale_subscription_fault_keeps_the_partitions_once() -> None:
    sim = make_classic_sim(
        {"t": 2},
        [
            {"name": "c1", "assignors": ["cooperative-sticky"]},
            {"name": "c2", "assignors": ["cooperative-sticky"]},
        ],
        {},
        {},
    )
    for _ in range(10):
        for n in ("c1", "c2"):
            sim.client_step(n)
        sim.advance(0)
    c1 = sim.clients["c1"]
    owned = c1.owned
    assert owned
    sim.stale_subscription("c1")  # type: ignore[attr-defined]
    c1._on_error(c1.last_error.UNKNOWN_MEMBER_ID)
    assert c1.owned == owned and c1.generation == -1 and not c1.stale_subscription
    c1._on_error(c1.last_error.UNKNOWN_MEMBER_ID)
    assert c1.owned == ()  # one shot: the next fall-out is the ordinary onPartitionsLost


def test_equal_generation_claims_mutant_is_modelled_and_caught_from_scratch(tmp_path: Path) -> None:
    assert MUTANTS["kafka-12984"].row == 2 and 2 not in UNMODELLED_ROWS
    row = run_mutant(
        "kafka-12984",
        profile=get_profile("ci"),
        max_examples=60,
        seed=0,
        budget_s=60,
        run_dir=tmp_path,
        shrink=False,
    )
    assert row.caught and row.expected_hit, row.invariants
