"""Minimise a failing trace: drop ops while replay on the model still violates the same invariant.

Hypothesis shrinks rule sequences, but a rule like `settle` expands into many ops and scenarios are
written for readers, not for brevity. This delta-debugging pass (Zeller's ddmin, chunks halving to
single ops) works on the recorded ops themselves, replaying each candidate on the model; the
result is re-recorded, so it is an ordinary, exactly replayable trace.

    python -m conformance.trace.minimise IN.ndjson OUT_DIR [--invariant ID]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from conformance.formats.trace_file import Step, Trace, read_trace, write_trace
from conformance.protocols.classic.trace import to_trace
from conformance.trace.replay import replay


def _with_steps(trace: Trace, steps: list[Step]) -> Trace:
    renumbered = [replace(s, n=i) for i, s in enumerate(steps, 1)]
    return Trace(trace.header, renumbered, trace.verdict, trace.violated, trace.violations, trace.path)


def _fails(trace: Trace, steps: list[Step], invariant: str) -> bool:
    # not exact: dropping an op changes the events after it (with the exact replay only
    # drops that changed nothing later were ever accepted)
    result = replay(_with_steps(trace, steps), exact=False)
    return result.error is None and any(v.invariant == invariant for v in result.violations)


def flatten_consumer(trace: Trace) -> Trace:
    """A consumer trace whose ``settle`` actions are rewritten as the primitive ops they performed.

    A settle is one action whose observations follow on ``cont`` lines; ddmin cannot cut inside it,
    and it is not one op of `groupcheck explore` either. Each of its heartbeats becomes
    ``reconcile`` + ``client_step`` of that client (settle completes slow callbacks first; a
    ``reconcile`` of a client with nothing to finish is a no-op), each tick an ``advance``. So every
    op is one BFS edge (docs/mutants.md#shrinking). The settle's convergence bound is not kept, so a
    ``consumer.eventual_convergence`` violation may not survive; `minimise` then keeps the original.
    """
    from model.consumer.world import AdvanceEvent, HeartbeatEvent

    out: list[Step] = []
    now = 0
    in_settle = False
    for step in trace.steps:
        op = step.action.get("op")
        if op != "cont":
            in_settle = op == "settle"
        if not in_settle:
            out.append(step)
            now = step.now
            continue
        event = step.event
        if isinstance(event, HeartbeatEvent) and event.client is not None:
            out.append(replace(step, action={"op": "reconcile", "name": event.client}, event=None))
            out.append(replace(step, action={"op": "client_step", "name": event.client}))
        elif isinstance(event, AdvanceEvent):
            out.append(replace(step, action={"op": "advance", "ms": event.now - now}))
            now = event.now
        else:
            return trace  # something a primitive op cannot reproduce: leave the trace as it is
    return _with_steps(trace, out)


def minimise(trace: Trace, invariant: str | None = None) -> Trace:
    """The shortest-found sub-sequence of ``trace``'s ops that still violates ``invariant``."""
    target = invariant or sorted(trace.violated)[0]
    steps = list(trace.steps)
    if not _fails(trace, steps, target):
        raise ValueError(f"the trace does not violate {target} on the model")
    if trace.protocol == "consumer":
        flat = flatten_consumer(trace)
        if flat is not trace and _fails(flat, list(flat.steps), target):
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
            if candidate and _fails(trace, candidate, target):
                steps, changed = candidate, True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    final = replay(_with_steps(trace, steps), exact=False)
    cut = min(v.step for v in final.violations if v.invariant == target)
    kept = steps[:cut]  # steps are renumbered on replay: stop at the violating one
    final = replay(_with_steps(trace, kept), exact=False)
    if trace.protocol == "consumer":  # the kill matrix minimises consumer counterexamples too
        from conformance.protocols.consumer.trace import to_trace as consumer_to_trace

        return consumer_to_trace(
            final.sim,
            target="model",
            target_version=trace.header["target"]["version"],
            origin={"kind": "minimised", "of": trace.header["origin"], "invariant": target},
            violations=[(v.invariant, v.message, v.step) for v in final.violations],
        )
    return to_trace(
        final.sim,
        target="model",
        target_version=trace.header["target"]["version"],
        origin={"kind": "minimised", "of": trace.header["origin"], "invariant": target},
        violations=[(v.invariant, v.message, v.step) for v in final.violations],
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.trace.minimise")
    p.add_argument("file", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--invariant")
    args = p.parse_args(argv)
    from conformance.formats.trace_file import counterexample_path

    small = minimise(read_trace(args.file), args.invariant)
    path = write_trace(small, counterexample_path(small, args.out))
    print(f"{args.file}: {len(read_trace(args.file).steps)} steps -> {path}: {len(small.steps)} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
