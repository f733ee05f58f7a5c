"""The generic mutants of `conformance/mutants/classic_promises.py`: each breaks one classic promise
and is caught from scratch, at seed 0 of the ci profile, with that promise first."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.engine.profiles import get_profile
from conformance.mutants.classic_promises import CLASSIC_PROMISE_MUTANTS
from conformance.power.matrix import run_mutant


@pytest.mark.parametrize("mutant", CLASSIC_PROMISE_MUTANTS, ids=lambda m: m.name)
def test_each_promise_catches_its_mutant(mutant, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    row = run_mutant(
        mutant.name,
        profile=get_profile("ci"),
        max_examples=150,
        seed=0,
        budget_s=180,
        run_dir=tmp_path,
        shrink=False,
    )
    assert row.caught and row.invariants[0] == mutant.expect[0], (mutant.name, row.invariants)
