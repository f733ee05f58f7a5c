"""Bounded model checking shared by the encodings: unroll the rules from the initial state, one step
per frame, until some frame can break the property (docs/proofs.md).

Frame k+1 equals the post-state of the option a selector ``sel{k+1}`` picks among the options at
frame k (a rule for one member slot, with its inputs). After each frame the solver is asked for a
violation at that depth; the shortest one is returned with the model, so the caller can read the
inputs, replay them on the Python model and decide the verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import z3

from conformance.smt.solver import Limits, check, make_solver

Option = tuple[str, int, Any]
"""(rule name, member slot or -1, the step: an object with ``guard`` and ``post``)."""


@dataclass
class Unrolled:
    """A violation found at depth ``len(picked)`` (``model`` set), or none (``reason``: z3's, when it gave up)."""

    model: z3.ModelRef | None
    picked: list[Option]
    frames: list[Any]
    reason: str = ""


def unroll(
    fresh: Callable[[str], Any],
    initial: Callable[[Any], Any],
    options: Callable[[Any, int], Sequence[Option]],
    same: Callable[[Any, Any], Any],
    bad: Callable[[Any, Any, Any, Sequence[Option]], Any],
    limits: Limits,
    depth: int,
    frame_constraint: Callable[[Any], Any] | None = None,
    step_guard: Callable[[Any], Any] | None = None,
) -> Unrolled:
    """``bad(pre, post, sel, options)``: the property fails at this step; ``frame_constraint``
    bounds every frame (e.g. a clock); ``step_guard`` adds to every option's guard (input ranges)."""
    frames = [fresh("f0")]
    s = make_solver(limits)
    s.add(initial(frames[0]))
    chosen: list[tuple[Any, Sequence[Option]]] = []
    for k in range(1, depth + 1):
        pre = frames[-1]
        post = fresh(f"f{k}")
        opts = options(pre, k)
        sel = z3.Int(f"sel{k}")
        s.add(sel >= 0, sel < len(opts))
        if frame_constraint is not None:
            s.add(frame_constraint(post))
        for n, (_, _, st) in enumerate(opts):
            fires = [st.guard] if step_guard is None else [st.guard, step_guard(st)]
            s.add(z3.Implies(sel == n, z3.And(*fires, same(post, st.post))))
        frames.append(post)
        chosen.append((sel, opts))
        s.push()
        s.add(bad(pre, post, sel, opts))
        result, reason = check(s)
        if result == z3.sat:
            model = s.model()
            picked = [o[model.eval(x, model_completion=True).as_long()] for x, o in chosen]
            return Unrolled(model, picked, frames)
        s.pop()
        if result == z3.unknown:
            return Unrolled(None, [], frames, reason)
    return Unrolled(None, [], frames)


def violated_by_pick(sel: Any, opts: Sequence[Option], obligation: Callable[[int, Any], Any]) -> Any:
    """The picked option breaks ``obligation(slot, step)`` (a transition property)."""
    return z3.Or([z3.And(sel == n, z3.Not(obligation(i, st))) for n, (_, i, st) in enumerate(opts)])
