"""BFS polish: replace a minimised classic trace's tail by a shorter op sequence, found breadth-first.

Delta debugging (`conformance.trace.minimise`) only drops ops, so it stops at a 1-minimal
sub-sequence of what the random run happened to do; a shorter counterexample may need ops the run
never took (a stall instead of two members' joins, one member instead of two). This pass searches
for one: from the state after each prefix of the trace, longest prefix first, a breadth-first
search over `groupcheck explore`'s ops (`conformance.trace.explore._enabled`, one op = one BFS edge,
so lengths stay in explore's unit) plus the trace's own ops (a failover, a raw request, a restart,
an unsubscribe: whatever the run needed that explore's alphabet lacks), looking for a violation of
the same invariant in fewer ops than the tail it replaces. States are deduplicated by explore's
abstraction without symmetry (the trace's own ops name clients). Every candidate is checked by
replaying it (`minimise._fails`), so the pass can only shorten a trace that still fails.

Issue 8: the kill matrix's shrunk / BFS-minimal ratio (goal <= 1.25) was 1.40 where ddmin kept a
7-op path that BFS does in 5.
"""

from __future__ import annotations

import json
import time
from typing import Any

from conformance.build import make_classic_sim
from conformance.checker import Checker
from conformance.trace.abstraction import abstract_key
from conformance.trace.classic import CLIENT_OPS, TracedClassicSim, apply_op
from conformance.trace.explore import DEFAULT_OPS, _enabled, clone
from conformance.trace.format import Step, Trace
from conformance.trace.minimise import _fails, _with_steps

#: explore's op kinds the polish may add when the trace itself used that kind
OPTIONAL_KINDS = ("lose_response", "leave", "restart")


def _root(trace: Trace) -> TracedClassicSim:
    setup = trace.header["setup"]
    return make_classic_sim(
        {str(k): int(v) for k, v in setup.get("topics", {}).items()},
        list(setup.get("clients", [])),
        dict(setup.get("config", {})),
        dict(trace.header["variants"]),
        seed=int(trace.header["seed"]),
        where="polish",
    )


def _extras(trace: Trace) -> list[dict[str, Any]]:
    """The trace's own ops explore cannot generate, each once (in trace order)."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for step in trace.steps:
        op = step.action
        if op.get("op") in (*DEFAULT_OPS, *OPTIONAL_KINDS):
            continue
        key = json.dumps(op, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(dict(op))
    return out


def _search(
    root: TracedClassicSim,
    target: str,
    depth: int,
    kinds: tuple[str, ...],
    extras: list[dict[str, Any]],
    deadline: float,
) -> tuple[dict[str, Any], ...] | None:
    """A shortest op path (at most ``depth`` ops) from ``root`` to a violation of ``target``."""
    checker = Checker("classic")
    frontier: list[tuple[TracedClassicSim, tuple[dict[str, Any], ...]]] = [(root, ())]
    seen = {abstract_key(root, symmetry=False)}
    for level in range(depth):
        nxt: list[tuple[TracedClassicSim, tuple[dict[str, Any], ...]]] = []
        for sim, path in frontier:
            for op in [*_enabled(sim, kinds), *extras]:
                if time.process_time() > deadline:
                    return None
                child = clone(sim)
                try:
                    obs = apply_op(child, op, "polish")
                except Exception:  # an op of the trace that does not apply here
                    continue
                child.log.clear()
                child.port.records.clear()  # type: ignore[attr-defined]
                if obs is None and op.get("op") not in CLIENT_OPS:
                    continue
                if obs is not None and any(v.invariant == target for v in checker.check(obs, level + 1)):
                    return (*path, op)
                key = abstract_key(child, symmetry=False)
                if key not in seen:
                    seen.add(key)
                    nxt.append((child, (*path, op)))
        frontier = nxt
        if not frontier:
            return None
    return None


def polish(trace: Trace, invariant: str, *, budget_s: float = 5.0) -> Trace:
    """``trace`` with its tail replaced by a shorter failing one where a search within ``budget_s``
    CPU seconds finds it (longest prefix first, so cheap searches go first); else ``trace``.
    Returns a trace of plain ops (``minimise`` re-records it)."""
    if trace.protocol != "classic" or len(trace.steps) < 2:
        return trace
    deadline = time.process_time() + budget_s
    kinds = (*DEFAULT_OPS, *(k for k in OPTIONAL_KINDS if any(s.action.get("op") == k for s in trace.steps)))
    extras = _extras(trace)
    steps = list(trace.steps)
    k = len(steps) - 2  # keep steps[:k], search for a tail shorter than steps[k:]
    while k >= 0 and time.process_time() < deadline:
        root = _root(trace)
        try:
            for step in steps[:k]:
                apply_op(root, step.action, "polish")
        except Exception:
            return _with_steps(trace, steps)
        root.log.clear()
        root.port.records.clear()  # type: ignore[attr-defined]
        tail = _search(root, invariant, len(steps) - k - 1, kinds, extras, deadline)
        if tail is not None:
            candidate = steps[:k] + [Step(0, 0, dict(op)) for op in tail]
            if _fails(trace, candidate, invariant):
                steps = candidate
        k = min(k - 1, len(steps) - 2)
    return _with_steps(trace, steps)
