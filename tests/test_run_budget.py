"""A run's time budget (`run_check`'s ``stop_at``): rounds of the examples until it is spent; the
first example to end after it ends the run.

The groups benchmark measures operations per second over the same time for one group and for N
(benchmarks/groups_throughput.py); without a budget a run is its examples, as before.
"""

from __future__ import annotations

import time

from conformance.engine.profiles import get_profile
from conformance.engine.progress import WATCHER
from conformance.engine.run import run_check
from conformance.protocols import get_kit


def examples_started(stop_at: float | None) -> int:
    started = []

    class Count:
        def watch(self, machine, checker, n):  # type: ignore[no-untyped-def]
            class Counted(machine):  # type: ignore[misc, valid-type]
                def __init__(self) -> None:
                    super().__init__()
                    started.append(1)

            return Counted

    token = WATCHER.set(Count())
    try:
        result = run_check(
            get_kit("classic"), profile=get_profile("dev"), max_examples=4, seed_value=3, stop_at=stop_at
        )
    finally:
        WATCHER.reset(token)
    assert result.error is None and not result.violations
    return len(started)


def test_a_spent_budget_lets_no_example_start_after_the_one_running() -> None:
    assert examples_started(time.monotonic() - 1.0) == 1


def test_without_a_budget_a_run_is_its_examples() -> None:
    assert examples_started(None) == 4


def test_a_budget_runs_rounds_of_the_examples_until_it_is_spent() -> None:
    """The budget is a multiple of one round's time on this machine, so a slow or busy machine
    does not decide how many rounds fit."""
    first = time.monotonic()
    assert examples_started(None) == 4
    budget = 2.5 * (time.monotonic() - first)
    start = time.monotonic()
    started = examples_started(start + budget)
    assert started > 4 and time.monotonic() - start >= budget
