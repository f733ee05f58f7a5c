"""`groupcheck prove --replay FILE`: re-run a stored KIP-848 or client counterexample on the model.

Classic counterexamples are trace files (`groupcheck replay`). KIP-848 counterexamples are the
heartbeats and leaves of members ``m0..`` with the scripted server-assignor targets; client ones are
the members' claims or owned partitions for one assignor call. Replaying runs them on the model's
coordinator (or assignor) with the recorded variant and reports what the registry predicate says:
FAILED (the violation reproduces, exit 1) or FIXED (it does not, exit 0). A file that cannot be read
is a tool error naming the file and field (exit 2).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.errors import UsageError


@dataclass
class FileReplay:
    invariant: str
    violations: list[str]

    @property
    def verdict(self) -> str:
        return "FAILED" if self.violations else "FIXED"


def _field(data: dict[str, Any], name: str, path: Path) -> Any:
    if name not in data:
        raise UsageError(f"{path}: counterexample lacks field {name!r}")
    return data[name]


def replay_file(path: Path) -> FileReplay:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a counterexample is a JSON object")
    protocol = _field(data, "protocol", path)
    invariant = str(_field(data, "invariant", path))
    variant = {str(k): str(v) for k, v in dict(data.get("variant") or {}).items()}
    try:
        if protocol == "consumer":
            return FileReplay(invariant, _consumer(data, invariant, variant, path))
        if protocol == "client":
            return FileReplay(invariant, _client(data, invariant, variant, path))
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{path}: malformed counterexample: {exc}") from None
    raise UsageError(f"{path}: protocol {protocol!r}: classic counterexamples are traces (groupcheck replay)")


def _consumer(data: dict[str, Any], invariant: str, variant: dict[str, str], path: Path) -> list[str]:
    from conformance.smt.kip848_check import variant_of
    from conformance.smt.kip848_replay import HeartbeatStep, replay

    members = int(str(_field(data, "bound", path)).split("x")[0])
    partitions = int(_field(data, "partitions", path))
    steps = []
    for s in _field(data, "steps", path):
        target = s.get("target")
        steps.append(
            HeartbeatStep(
                str(s["kind"]),
                int(str(s["member"])[1:]),
                int(s.get("member_epoch", 0)),
                None if s.get("owned") is None else frozenset(int(p) for p in s["owned"]),
                None
                if target is None
                else tuple(frozenset(int(p) for p in target.get(f"m{i}", [])) for i in range(members)),
            )
        )
    return replay(steps, invariant, variant_of(variant), members, partitions).violations


def _client(data: dict[str, Any], invariant: str, variant: dict[str, str], path: Path) -> list[str]:
    from conformance.smt.claims_check import cooperative_subscriptions, run_assignor, sticky_subscriptions

    partitions = int(_field(data, "partitions", path))
    members = _field(data, "members", path)
    names = sorted(members, key=lambda m: int(m[1:]))
    if data.get("rule") == "resolve_claims":
        subs = sticky_subscriptions(
            [frozenset(members[m]["claims"]) for m in names], [int(members[m]["generation"]) for m in names]
        )
    else:
        subs = cooperative_subscriptions([frozenset(members[m]["owned"]) for m in names])
    return run_assignor(invariant, subs, partitions, variant)[1]
