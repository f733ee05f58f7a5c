"""A classic trace with its ``converge`` ops rewritten as the single ops they performed: the
classic kit's ``minimise_view`` (the twin of `conformance.protocols.consumer.trace.flatten_consumer`).

A converge is one recorded op whose observations follow on ``cont`` lines, so delta debugging
(`conformance.engine.minimise`) can keep or drop it only whole. Hypothesis reaches a Stable group
most cheaply through one converge, so a shrunk counterexample is often a converge of about a
hundred observations, the one op that matters, and a second converge cut short at the violation.
Rewritten, each member's request is a ``step``, each tick an ``advance`` and each resumed member a
``resume``, which ddmin cuts one by one. The ``Quiet`` marks that open and close a converge are
left out: without them no convergence bound runs, so a `classic.eventual_convergence` violation, or
one that needed the faults a converge disarms, does not survive, and `minimise` keeps the trace as
it was (it replays the rewritten trace first). What the rewritten trace replays into is recorded
afresh by the kit, so a minimised trace never depends on this rewriting being exact.
"""

from __future__ import annotations

from dataclasses import replace

from conformance.engine.minimise import flatten_macro
from conformance.formats.trace_file import Step, Trace
from model.classic.sim import Advance, Quiet, Send, Stall


def _converge_op(step: Step, previous: Step | None) -> list[Step] | None:
    """The single op that made one observation of a converge (none for a ``Quiet`` mark)."""
    event = step.event
    if isinstance(event, Quiet):
        return []
    if isinstance(event, Send) and event.how == "client":
        return [replace(step, action={"op": "step", "client": event.client})]
    if isinstance(event, Advance):
        return [replace(step, action={"op": "advance", "ms": event.ms})]
    if isinstance(event, Stall) and not event.stalled:
        return [replace(step, action={"op": "resume", "client": event.client})]
    return None


def flatten_classic(trace: Trace) -> Trace:
    """``trace`` with each converge as single ops (the trace itself when it has no converge, or
    one whose observations no single op reproduces)."""
    return flatten_macro(trace, "converge", _converge_op)
