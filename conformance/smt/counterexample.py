"""Writing a REFUTED counterexample to disk (design §5 naming: ``<invariant-id>_<fingerprint>``).

The file holds the model inputs that reproduce the violation (requests, scripted choices) and the
messages of the registry predicate that confirmed it, as canonical JSON.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def fingerprint(counterexample: dict[str, Any]) -> str:
    canonical = json.dumps(counterexample.get("steps"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def write_counterexample(outcome: Any, directory: Path) -> Path:
    cx = dict(outcome.counterexample or {})
    cx["invariant"] = outcome.invariant_id
    cx["variant"] = dict(sorted(outcome.variant.items()))
    cx["bound"] = outcome.bound
    path = directory / f"{outcome.invariant_id}_{fingerprint(cx)}.json"
    path.write_text(json.dumps(cx, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
