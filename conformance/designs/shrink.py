"""Shrink a failing workload: fewer ops, shorter waits, the same violation, still harmless to the baseline.

Delta debugging over the op list (drop chunks, then single ops), then halving every `Advance`, keeping a
candidate only if the design still violates the target predicate and the shipped protocol it is
compared with violates nothing. Deterministic; bounded by a budget of runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from model.designs import DESIGNS, make_engine
from model.designs import ops as o
from model.designs.driver import run

Check = Callable[[list[Any]], bool]


def distinguishes(
    design: str, options: dict[str, str], topics: dict[str, int], seed: int, target: str
) -> Check:
    """True for workloads that violate ``target`` on the design and nothing on its baseline."""
    spec = DESIGNS[design]

    def check(ops: list[Any]) -> bool:
        result = run(make_engine(design, topics, options, seed), ops, stop_at=target)
        if target not in result.violated:
            return False
        baseline = run(make_engine(spec.baseline, topics, spec.baseline_options, seed), ops)
        return not baseline.findings

    return check


def shrink(ops: Sequence[Any], check: Check, budget: int = 250) -> list[Any]:
    current = list(ops)
    runs = 0

    def test(candidate: list[Any]) -> bool:
        nonlocal runs
        if runs >= budget:
            return False
        runs += 1
        return check(candidate)

    chunk = max(1, len(current) // 2)
    while chunk >= 1 and runs < budget:
        i, changed = 0, False
        while i < len(current) and runs < budget:
            candidate = current[:i] + current[i + chunk :]
            if candidate and test(candidate):
                current, changed = candidate, True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    for i, op in enumerate(list(current)):
        while isinstance(op, o.Advance) and op.ms >= 200 and runs < budget:  # a Settle keeps its bound
            smaller = type(op)(op.ms // 2 // 100 * 100)
            candidate = current[:i] + [smaller] + current[i + 1 :]
            if not test(candidate):
                break
            current, op = candidate, smaller
    return current
