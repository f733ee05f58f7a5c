"""`cooperative-no-follow-up` breaks only `classic.eventual_convergence` (docs/invariants.md): a
cooperative member that revoked partitions never asks for the follow-up rebalance, so they stay
unowned until something else rebalances the group."""

from __future__ import annotations

from pathlib import Path

from conformance.engine.profiles import get_profile
from conformance.mutants import get_mutant
from conformance.power.matrix import run_mutant


def test_a_missing_follow_up_rebalance_is_caught_by_convergence(tmp_path: Path) -> None:
    assert get_mutant("cooperative-no-follow-up").expect == ("classic.eventual_convergence",)
    row = run_mutant(
        "cooperative-no-follow-up",
        profile=get_profile("ci"),
        max_examples=150,
        seed=0,
        budget_s=180,
        run_dir=tmp_path,
        shrink=False,
    )
    assert row.caught and "classic.eventual_convergence" in row.invariants, row.invariants
