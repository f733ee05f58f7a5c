"""Minimise a failing trace: drop ops while replay on the model still violates the same invariant.

Hypothesis shrinks rule sequences, but a rule like `settle` expands into many ops and scenarios are
written for readers, not for brevity. This delta-debugging pass (Zeller's ddmin, chunks halving to
single ops) works on the recorded ops themselves, replaying each candidate on the model; the
result is re-recorded by the trace's kit, so it is an ordinary, exactly replayable trace. A kit
whose ops are not all single steps (``minimise_view``) first gives the trace as single ops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from conformance.engine.kit import ProtocolKit, resolve
from conformance.engine.replay import replay
from conformance.formats.trace_file import Step, Trace


def with_steps(trace: Trace, steps: list[Step]) -> Trace:
    """``trace`` with these steps, renumbered from 1."""
    renumbered = [replace(s, n=i) for i, s in enumerate(steps, 1)]
    return Trace(trace.header, renumbered, trace.verdict, trace.violated, trace.violations, trace.path)


def flatten_macro(
    trace: Trace, macro: str, single: Callable[[Step, Step | None], list[Step] | None]
) -> Trace:
    """``trace`` with each ``macro`` op (one recorded op whose observations follow on ``cont``
    lines: a consumer ``settle``, a classic ``converge``) rewritten as single ops, for a kit's
    ``minimise_view``. ``single(step, previous)`` gives the ops that made one of its observations
    (``previous``: the last step kept before it), or None when no single op reproduces it, and
    then the trace is left as it is; so is a trace without the macro."""
    out: list[Step] = []
    inside = flattened = False
    for step in trace.steps:
        op = step.action.get("op")
        if op != "cont":
            inside = op == macro
        if not inside:
            out.append(step)
            continue
        flattened = True
        ops = single(step, out[-1] if out else None)
        if ops is None:
            return trace
        out.extend(ops)
    return with_steps(trace, out) if flattened else trace


def fails(trace: Trace, steps: list[Step], invariant: str) -> bool:
    """Replaying ``steps`` under ``trace``'s header on the model still violates ``invariant``."""
    # not exact: dropping an op changes the events after it (with the exact replay only
    # drops that changed nothing later were ever accepted)
    result = replay(with_steps(trace, steps), exact=False)
    return result.error is None and any(v.invariant == invariant for v in result.violations)


def minimise(trace: Trace, invariant: str | None = None, kit: ProtocolKit | str | None = None) -> Trace:
    """The shortest-found sub-sequence of ``trace``'s ops that still violates ``invariant``
    (through ``kit``, by default the installed kit of the trace's protocol)."""
    kit = resolve(trace.protocol if kit is None else kit)
    target = invariant or sorted(trace.violated)[0]
    steps = list(trace.steps)
    if not fails(trace, steps, target):
        raise ValueError(f"the trace does not violate {target} on the model")
    if kit.minimise_view is not None:  # single ops ddmin can cut (a consumer settle is many)
        flat = kit.minimise_view(trace)
        if flat is not trace and fails(flat, list(flat.steps), target):
            trace, steps = flat, list(flat.steps)
    # cut everything after the first step that violates the target
    result = replay(trace, exact=False)
    first = min(v.step for v in result.violations if v.invariant == target)
    steps = [s for s in steps if s.n <= first]
    chunk = max(1, len(steps) // 2)
    while chunk >= 1:
        i, changed = 0, False
        while i < len(steps):
            candidate = steps[:i] + steps[i + chunk :]
            if candidate and fails(trace, candidate, target):
                steps, changed = candidate, True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    final = replay(with_steps(trace, steps), exact=False)
    cut = min(v.step for v in final.violations if v.invariant == target)
    kept = steps[:cut]  # steps are renumbered on replay: stop at the violating one
    final = replay(with_steps(trace, kept), exact=False)
    return kit.to_trace(  # type: ignore[no-any-return]
        final.sim,
        target="model",
        target_version=trace.header["target"]["version"],
        origin={"kind": "minimised", "of": trace.header["origin"], "invariant": target},
        violations=[(v.invariant, v.message, v.step) for v in final.violations],
    )
