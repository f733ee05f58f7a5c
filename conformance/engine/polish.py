"""BFS polish: replace a minimised trace's tail by a shorter op sequence, found breadth-first.

Delta debugging (`conformance.engine.minimise`) only drops ops, so it stops at a 1-minimal
sub-sequence of what the random run happened to do; a shorter counterexample may need ops the run
never took (a stall instead of two members' joins, one member instead of two). This pass searches
for one: from the state after each prefix of the trace, longest prefix first, a breadth-first
search over `groupcheck explore`'s ops (the kit's ``polish_space``: one op = one BFS edge, so lengths
stay in explore's unit) plus the trace's own ops (a failover, a raw request, a restart, an
unsubscribe: whatever the run needed that explore's alphabet lacks), looking for a violation of
the same invariant in fewer ops than the tail it replaces. States are deduplicated by explore's
abstractions without symmetry (the trace's own ops name clients). Every candidate is checked by
replaying it (`conformance.engine.minimise.fails`), so the pass can only shorten a trace that still fails.

Why (docs/mutants.md#shrinking): the kill matrix's shrunk / BFS-minimal ratio (goal <= 1.25) was 1.40 where ddmin kept a
7-op path that BFS does in 5.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.engine.checker import Checker
from conformance.engine.kit import ProtocolKit, resolve
from conformance.engine.minimise import fails, with_steps
from conformance.formats.trace_file import Step, Trace


@dataclass
class PolishSpace:
    """What the search needs from one protocol's simulator and explorer (its kit's ``polish_space``)."""

    root: Callable[[Trace], Any]
    apply: Callable[[Any, dict[str, Any]], list[Any] | None]  # observations; None: the op did nothing
    enabled: Callable[[Any], list[dict[str, Any]]]
    clone: Callable[[Any], Any]
    key: Callable[[Any], str]
    own: tuple[str, ...]  # explore's op kinds: the trace's ops of other kinds are added verbatim


def _ops(trace: Trace) -> list[int]:
    """Indices of the steps that are ops (a consumer settle's ``cont`` lines are not)."""
    return [i for i, s in enumerate(trace.steps) if s.action.get("op") != "cont"]


def _extras(trace: Trace, own: tuple[str, ...]) -> list[dict[str, Any]]:
    """The trace's own ops explore cannot generate, each once (in trace order)."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for step in trace.steps:
        op = step.action
        if op.get("op") in own:
            continue
        key = json.dumps(op, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(dict(op))
    return out


def _search(
    proto: PolishSpace,
    root: Any,
    target: str,
    depth: int,
    extras: list[dict[str, Any]],
    deadline: float,
    kit: ProtocolKit,
) -> tuple[dict[str, Any], ...] | None:
    """A shortest op path (at most ``depth`` ops) from ``root`` to a violation of ``target``."""
    checker = Checker(kit)
    frontier: list[tuple[Any, tuple[dict[str, Any], ...]]] = [(root, ())]
    seen = {proto.key(root)}
    for level in range(depth):
        nxt: list[tuple[Any, tuple[dict[str, Any], ...]]] = []
        for sim, path in frontier:
            for op in [*proto.enabled(sim), *extras]:
                if time.process_time() > deadline:
                    return None
                child = proto.clone(sim)
                try:
                    observations = proto.apply(child, op)
                except Exception:  # an op of the trace that does not apply here
                    continue
                if observations is None:
                    continue
                if any(v.invariant == target for obs in observations for v in checker.check(obs, level + 1)):
                    return (*path, op)
                key = proto.key(child)
                if key not in seen:
                    seen.add(key)
                    nxt.append((child, (*path, op)))
        frontier = nxt
        if not frontier:
            return None
    return None


def polish(
    trace: Trace, invariant: str, *, budget_s: float = 5.0, kit: ProtocolKit | str | None = None
) -> Trace:
    """``trace`` with its tail replaced by a shorter failing one where a search within ``budget_s``
    CPU seconds finds it (longest prefix first, so cheap searches go first); else ``trace`` (also
    when its kit, by default the installed kit of its protocol, has no ``polish_space``).
    Returns a trace of plain ops (``minimise`` re-records it)."""
    kit = resolve(trace.protocol if kit is None else kit)
    if kit.polish_space is None:
        return trace
    proto = kit.polish_space(trace)
    deadline = time.process_time() + budget_s
    extras = _extras(trace, proto.own)
    steps = list(trace.steps)
    ops = _ops(trace)
    k = len(ops) - 2  # keep the first k ops, search for a tail shorter than the rest
    while k >= 0 and time.process_time() < deadline:
        cut = ops[k]  # index of the first step of the replaced tail
        try:
            root = proto.root(trace)
            for step in steps[:cut]:
                if step.action.get("op") != "cont":
                    proto.apply(root, step.action)
        except Exception:
            break
        tail = _search(proto, root, invariant, len(ops) - k - 1, extras, deadline, kit)
        if tail is not None:
            candidate = steps[:cut] + [Step(0, 0, dict(op)) for op in tail]
            if fails(trace, candidate, invariant):
                steps = candidate
                ops = _ops(with_steps(trace, steps))
        k = min(k - 1, len(ops) - 2)
    return with_steps(trace, steps)
