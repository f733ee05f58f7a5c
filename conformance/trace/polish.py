"""BFS polish: replace a minimised trace's tail by a shorter op sequence, found breadth-first.

Delta debugging (`conformance.trace.minimise`) only drops ops, so it stops at a 1-minimal
sub-sequence of what the random run happened to do; a shorter counterexample may need ops the run
never took (a stall instead of two members' joins, one member instead of two). This pass searches
for one: from the state after each prefix of the trace, longest prefix first, a breadth-first
search over `groupcheck explore`'s ops (`conformance.protocols.classic.explore._enabled` for classic traces,
`conformance.protocols.consumer.explore._enabled` for consumer ones: one op = one BFS edge, so lengths
stay in explore's unit) plus the trace's own ops (a failover, a raw request, a restart, an
unsubscribe: whatever the run needed that explore's alphabet lacks), looking for a violation of
the same invariant in fewer ops than the tail it replaces. States are deduplicated by explore's
abstractions without symmetry (the trace's own ops name clients). Every candidate is checked by
replaying it (`minimise._fails`), so the pass can only shorten a trace that still fails.

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
from conformance.formats.trace_file import Step, Trace
from conformance.trace.minimise import _fails, _with_steps

#: classic explore op kinds the polish adds only when the trace itself used that kind
OPTIONAL_KINDS = ("lose_response", "leave", "restart")


@dataclass
class _Protocol:
    """What the search needs from one protocol's simulator and explorer."""

    root: Callable[[Trace], Any]
    apply: Callable[[Any, dict[str, Any]], list[Any] | None]  # observations; None: the op did nothing
    enabled: Callable[[Any], list[dict[str, Any]]]
    clone: Callable[[Any], Any]
    key: Callable[[Any], str]
    own: tuple[str, ...]  # explore's op kinds: the trace's ops of other kinds are added verbatim


def _classic(trace: Trace) -> _Protocol:
    from conformance.protocols.build import make_classic_sim
    from conformance.protocols.classic.abstraction import abstract_key
    from conformance.protocols.classic.explore import DEFAULT_OPS, _enabled, clone
    from conformance.protocols.classic.trace import CLIENT_OPS, apply_op
    from conformance.trace.replay import sim_from_trace

    used = {s.action.get("op") for s in trace.steps}
    kinds = (*DEFAULT_OPS, *(k for k in OPTIONAL_KINDS if k in used))

    def root(t: Trace) -> Any:
        return sim_from_trace(t, make_classic_sim, dict(t.header["variants"]), "polish")

    def apply(sim: Any, op: dict[str, Any]) -> list[Any] | None:
        obs = apply_op(sim, op, "polish")
        sim.log.clear()
        sim.port.records.clear()  # the log of records, not state
        if obs is None:
            return [] if op.get("op") in CLIENT_OPS else None
        return [obs]

    return _Protocol(
        root,
        apply,
        lambda sim: _enabled(sim, kinds),
        clone,
        lambda sim: abstract_key(sim, symmetry=False),
        (*DEFAULT_OPS, *OPTIONAL_KINDS),
    )


def _consumer(trace: Trace) -> _Protocol:
    from conformance.protocols.build import make_consumer_sim
    from conformance.protocols.consumer.explore import CONSUMER_OPS, _clone, _enabled, consumer_key
    from conformance.protocols.consumer.trace import action_of
    from conformance.trace.replay import sim_from_trace

    def root(t: Trace) -> Any:
        return sim_from_trace(t, make_consumer_sim, dict(t.header["variants"]), "polish")

    def apply(sim: Any, op: dict[str, Any]) -> list[Any] | None:
        before = len(sim.log)
        observations = list(sim.replay([action_of(op, "polish")]))
        sim.port.records = list(sim.port.records)
        if not observations and len(sim.log) == before and op.get("op") != "stall":
            return None
        return observations

    # a settle is many ops (and no explore edge): never added whole
    own = (*CONSUMER_OPS, "cont", "settle")
    return _Protocol(root, apply, _enabled, _clone, lambda sim: consumer_key(sim, symmetry=False), own)


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
    proto: _Protocol,
    root: Any,
    target: str,
    depth: int,
    extras: list[dict[str, Any]],
    deadline: float,
    protocol: str,
) -> tuple[dict[str, Any], ...] | None:
    """A shortest op path (at most ``depth`` ops) from ``root`` to a violation of ``target``."""
    checker = Checker(protocol)
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


def polish(trace: Trace, invariant: str, *, budget_s: float = 5.0) -> Trace:
    """``trace`` with its tail replaced by a shorter failing one where a search within ``budget_s``
    CPU seconds finds it (longest prefix first, so cheap searches go first); else ``trace``.
    Returns a trace of plain ops (``minimise`` re-records it)."""
    if trace.protocol == "classic":
        proto = _classic(trace)
    elif trace.protocol == "consumer":
        proto = _consumer(trace)
    else:
        return trace
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
        tail = _search(proto, root, invariant, len(ops) - k - 1, extras, deadline, trace.protocol)
        if tail is not None:
            candidate = steps[:cut] + [Step(0, 0, dict(op)) for op in tail]
            if _fails(trace, candidate, invariant):
                steps = candidate
                ops = _ops(_with_steps(trace, steps))
        k = min(k - 1, len(ops) - 2)
    return _with_steps(trace, steps)
