"""The counterexample a failing `check` leaves behind: minimal, replayed, with its pictures.

Hypothesis has already shrunk the rule sequence; an in-process run (the model or a mutant) is then
cut further by delta debugging over the recorded ops and a breadth-first polish of the tail
(`conformance.power.matrix.ddmin`: `conformance.engine.minimise` and `conformance.engine.polish`,
each candidate replayed). The result is replayed once more before it is written; a trace that no
longer fails the same way is not used. Beside ``<id>_<fingerprint>.ndjson`` go a PNG sequence
diagram and its Mermaid text (``.mmd``), which `summary.md` embeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from conformance.formats.trace_file import Trace
from conformance.targets.open import in_process
from conformance.trace.emit import emit_counterexample

#: CPU seconds the breadth-first polish may spend on one counterexample
POLISH_BUDGET_S = 5.0


@dataclass(frozen=True)
class Counterexample:
    trace: Trace
    path: Path  # the NDJSON file
    png: Path
    mermaid_path: Path
    mermaid: str
    shrunk_from: int  # steps before minimising


def minimal(trace: Trace, *, polish_budget_s: float = POLISH_BUDGET_S) -> Trace:
    """``trace`` minimised when it was recorded in process and the smaller one still violates the
    same invariant on replay; otherwise ``trace`` itself."""
    if not in_process(trace.header["target"]["name"]) or not trace.violated:
        return trace  # a real target's trace replays on that target only: keep what it did
    from conformance.power.matrix import ddmin
    from conformance.trace.replay import replay

    small = ddmin(trace, sorted(trace.violated), (), polish_budget_s=polish_budget_s)
    if small is trace:
        return trace
    again = replay(small, exact=False)
    if again.error is not None or not set(small.violated) & {v.invariant for v in again.violations}:
        return trace
    # re-recorded on the model: keep the in-process target it ran on (a mutant replays as itself)
    small.header = {**small.header, "target": dict(trace.header["target"])}
    return small


def write_counterexample(trace: Trace, run_dir: Path, *, shrink: bool = True) -> Counterexample:
    """Write the (minimal, with ``shrink``) counterexample and its PNG and Mermaid beside it."""
    from conformance.trace import render

    small = minimal(trace) if shrink else trace
    if len(small.steps) < len(trace.steps):
        print(f"minimised: {len(trace.steps)} -> {len(small.steps)} steps (each candidate replayed)")
    path = emit_counterexample(small, run_dir)
    png = render.image(small, path.with_suffix(".png"), "png")
    text = render.mermaid(small)
    mmd = path.with_suffix(".mmd")
    mmd.write_text(text)
    print(f"pictures: {png} {mmd}")
    return Counterexample(small, path, png, mmd, text, len(trace.steps))
