"""Writing a REFUTED counterexample to disk (design §5 naming: ``<invariant-id>_<fingerprint>``).

A classic counterexample carries a trace (`conformance.trace`): it is written as NDJSON, so
`groupcheck replay` and `show` work on it. Other counterexamples are canonical JSON of the model
inputs that reproduce the violation (heartbeats with owned sets and the scripted targets, or the
assignor's subscriptions) and the registry predicate's messages that confirmed it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from conformance.trace.format import Trace, counterexample_path, write_trace


def plain(counterexample: dict[str, Any]) -> dict[str, Any]:
    """The JSON-able part (a trace is summarised by its file name when written)."""
    return {k: v for k, v in counterexample.items() if not isinstance(v, Trace)}


def fingerprint(counterexample: dict[str, Any]) -> str:
    canonical = json.dumps(counterexample.get("steps") or counterexample.get("members"), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def write_counterexample(outcome: Any, directory: Path) -> Path:
    cx = dict(outcome.counterexample or {})
    trace = cx.get("trace")
    if isinstance(trace, Trace):
        return write_trace(trace, counterexample_path(trace, directory))
    cx = plain(cx)
    cx["invariant"] = outcome.invariant_id
    cx["variant"] = dict(sorted(outcome.variant.items()))
    cx["bound"] = outcome.bound
    path = directory / f"{outcome.invariant_id}_{fingerprint(cx)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cx, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
