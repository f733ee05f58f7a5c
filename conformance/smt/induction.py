"""The one proof query every encoding makes: assumptions, and named obligations that must follow.

A base case assumes the initial state; an inductive step assumes the invariant's lemmas on the
pre-state and one rule's guard, and asks for the lemmas on the post-state plus the rule's
obligation. unsat is CONFIRMED; sat names the obligations the solver's model breaks (UNKNOWN: not
inductive); a solver that gives up is UNKNOWN with z3's reason (docs/proofs.md).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import z3

from conformance.smt.outcome import Outcome
from conformance.smt.solver import Limits, Verdict, check, make_solver

INITIAL = "initial"


def failed_names(model: z3.ModelRef, named: Sequence[tuple[str, Any]]) -> tuple[str, ...]:
    return tuple(name for name, f in named if not z3.is_true(model.eval(f, model_completion=True)))


def prove_obligations(
    invariant_id: str,
    transition: str,
    members: int,
    partitions: int,
    assumptions: Sequence[Any],
    obligations: Sequence[tuple[str, Any]],
    limits: Limits,
    lemmas: tuple[str, ...] = (),
    start: float | None = None,
) -> Outcome:
    """CONFIRMED iff the assumptions imply every obligation; ``transition`` "initial" is the base case."""
    start = time.perf_counter() if start is None else start
    s = make_solver(limits)
    s.add(*assumptions)
    s.add(z3.Not(z3.And([f for _, f in obligations] or [z3.BoolVal(True)])))
    result, reason = check(s)
    seconds = time.perf_counter() - start
    if result == z3.unsat:
        return Outcome(
            invariant_id, transition, members, partitions, Verdict.CONFIRMED, seconds, lemmas=lemmas
        )
    if result == z3.unknown:
        return Outcome(
            invariant_id, transition, members, partitions, Verdict.UNKNOWN, seconds, reason, lemmas=lemmas
        )
    failed = failed_names(s.model(), obligations)
    detail = (
        f"does not hold initially: {', '.join(failed)}"
        if transition == INITIAL
        else f"not inductive: {transition} can break {', '.join(failed)}"
    )
    return Outcome(
        invariant_id,
        transition,
        members,
        partitions,
        Verdict.UNKNOWN,
        seconds,
        detail,
        lemmas=lemmas,
        failed=failed,
    )
