"""docs/bug-catalogue.md#row-6 (KAFKA-19449) and #row-7 (KAFKA-19233): the model follows the fixes Kafka 4.4.0 has, the
pre-fix rules are the mutants, and the bounded-liveness invariants catch them from scratch."""

from __future__ import annotations

from pathlib import Path

import model.consumer.invariants  # noqa: F401  (registers the consumer invariants)
from conformance.engine.profiles import get_profile
from conformance.mutants import MUTANTS, UNMODELLED_ROWS
from conformance.power.matrix import run_mutant
from model.consumer.reconcile import CurrentAssignment, reconcile
from model.consumer.state import MemberState
from model.consumer.txn import ConsumerCoordinatorConfig
from model.invariants import REGISTRY


def test_model_defaults_are_the_fixed_rules() -> None:
    config = ConsumerCoordinatorConfig()
    assert config.own_pending_is_free and config.epoch_zero_rejoin
    assert {6, 7}.isdisjoint(UNMODELLED_ROWS)
    assert MUTANTS["kafka-19449"].row == 6 and MUTANTS["kafka-19233"].row == 7
    assert "consumer.reconciliation_progress" in REGISTRY and "consumer.rejoin_always_possible" in REGISTRY


def test_own_pending_revocation_given_back() -> None:
    tp0, tp1 = ("t", 0), ("t", 1)
    current = CurrentAssignment(MemberState.UNREVOKED_PARTITIONS, 3, 2, frozenset({tp0}), frozenset({tp1}))
    held_by_self = {tp0: 3, tp1: 3}.get
    fixed = reconcile(
        current, 5, frozenset({tp0, tp1}), lambda tp: held_by_self(tp, -1), frozenset({tp0}), True
    )
    old = reconcile(
        current, 5, frozenset({tp0, tp1}), lambda tp: held_by_self(tp, -1), frozenset({tp0}), False
    )
    assert fixed is not None and fixed.state == MemberState.STABLE and fixed.assigned == {tp0, tp1}
    assert old is not None and old.state == MemberState.UNRELEASED_PARTITIONS and old.assigned == {tp0}


def test_pending_revocation_and_rejoin_mutants_are_caught_from_scratch(tmp_path: Path) -> None:
    for name, seed in (("kafka-19449", 1), ("kafka-19233", 0)):
        row = run_mutant(
            name, profile=get_profile("ci"), seed=seed, budget_s=90, run_dir=tmp_path, shrink=False
        )
        assert row.caught and row.expected_hit, (name, row.invariants)


def test_generation_reset_client_mutant_is_caught_from_scratch(tmp_path: Path) -> None:
    """KAFKA-8104 (row 21): a client reset without the rejoin request keeps heartbeating with
    generation -1; classic.lost_generation_rejoins catches it."""
    assert MUTANTS["kafka-8104"].row == 21 and 21 not in UNMODELLED_ROWS
    row = run_mutant(
        "kafka-8104", profile=get_profile("ci"), seed=0, budget_s=60, run_dir=tmp_path, shrink=False
    )
    assert row.caught and row.expected_hit, row.invariants
