"""Generic mutants that each break one promise (`conformance/mutants/classic_promises.py` and the
later generic ones of docs/mutants.md): each is caught from scratch, at seed 0 of the ci profile,
with the invariant it names first."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.engine.profiles import get_profile
from conformance.mutants import get_mutant
from conformance.mutants.classic_promises import CLASSIC_PROMISE_MUTANTS
from conformance.mutants.classic_strays import CLASSIC_STRAY_MUTANTS
from conformance.power.matrix import run_mutant

NAMES = [m.name for m in (*CLASSIC_PROMISE_MUTANTS, *CLASSIC_STRAY_MUTANTS)] + [
    "cooperative-no-follow-up",
    "acks-before-revoking",
]


@pytest.mark.parametrize("name", NAMES)
def test_each_promise_catches_its_mutant(name: str, tmp_path: Path) -> None:
    mutant = get_mutant(name)
    row = run_mutant(
        name,
        profile=get_profile("ci"),
        max_examples=150,
        seed=0,
        budget_s=180,
        run_dir=tmp_path,
        shrink=False,
    )
    assert row.caught and row.invariants[0] == mutant.expect[0], (name, row.invariants)
