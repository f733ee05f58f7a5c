"""Writing a REFUTED counterexample to disk (named ``<invariant-id>_<fingerprint>``, docs/traces.md).

Every REFUTED outcome carries a trace (`conformance.trace`) made by running the solver's steps on the
model (classic: `classic_replay`; KIP-848: `kip848_trace`; client assignors: `claims_trace`), so
`groupcheck replay` and `show` work on each written file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.formats.trace_file import Trace, groupcheck_version, write_trace


def proof_trace(to_trace: Any, sim: Any, invariant_id: str, violations: list[Any]) -> Trace:
    """The trace of a counterexample run on the model (``to_trace``: the protocol's recorder),
    its origin the proof of ``invariant_id``."""
    return to_trace(  # type: ignore[no-any-return]
        sim,
        target="model",
        target_version=groupcheck_version(),
        origin={"kind": "prove", "invariant": invariant_id},
        violations=[(v.invariant, v.message, v.step) for v in violations],
    )


def plain(counterexample: dict[str, Any]) -> dict[str, Any]:
    """The JSON-able part (a trace is summarised by its file name when written)."""
    return {k: v for k, v in counterexample.items() if not isinstance(v, Trace)}


def write_counterexample(outcome: Any, directory: Path) -> Path:
    trace = (outcome.counterexample or {}).get("trace")
    if not isinstance(trace, Trace):
        raise ValueError(f"{outcome.invariant_id}: a REFUTED outcome without its trace")
    return write_trace(trace, directory / f"{outcome.invariant_id}_{trace.fingerprint()}.ndjson")
