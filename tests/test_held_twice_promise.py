"""`classic.no_partition_held_twice`: no two consumers of the group's current generation hold one
partition at once, across generations (the consumer view KIP-429 promises)."""

from __future__ import annotations

from pathlib import Path

from conformance.engine.profiles import get_profile
from conformance.mutants import get_mutant
from conformance.power.matrix import run_mutant

PROMISE = "classic.no_partition_held_twice"


def test_a_cooperative_join_that_hides_what_it_holds_is_caught(tmp_path: Path) -> None:
    mutant = get_mutant("cooperative-join-hides-owned")
    assert mutant.expect == (PROMISE,) and dict(mutant.variants)["assignor"] == "cooperative-sticky"
    row = run_mutant(
        "cooperative-join-hides-owned",
        profile=get_profile("ci"),
        max_examples=150,
        seed=0,
        budget_s=120,
        run_dir=tmp_path,
        shrink=False,
    )
    assert row.caught and row.invariants[0] == PROMISE, row.invariants
