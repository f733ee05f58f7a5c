"""Violations found in the lake written as replayable NDJSON traces (design §5), and their replay.

A counterexample holds the violating trace's rows up to the violating step: a header line
(format, lake schema version, the run's configuration, seed and index), one line per step
(action, event, deliveries, world after) and a verdict line (invariant, step, message). The
swarm is deterministic in its configuration, so `replay_file` re-runs the configuration through
the model, compares every step's world with the recorded one and re-checks the invariant.
File name: `<invariant-id>_<fingerprint>.ndjson`, the fingerprint a hash of the recorded events.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.errors import UsageError

FORMAT = "groupcheck-lake-counterexample"
VERSION = 1


def _line(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def counterexample_lines(
    rows: Iterable[Mapping[str, Any]], invariant: str, step: int, message: str
) -> list[str]:
    ordered = sorted((r for r in rows if int(r["step"]) <= step), key=lambda r: int(r["step"]))
    if not ordered:
        raise ValueError("no rows for the counterexample")
    first = ordered[0]
    header = {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "trace_id": first["trace_id"],
        "protocol": first["protocol"],
        "config": json.loads(first["config"]),
        "before": json.loads(first["before"]) if first.get("before") else None,
    }
    lines = [_line(header)]
    for r in ordered:
        lines.append(
            _line(
                {
                    "type": "step",
                    "step": int(r["step"]),
                    "now": int(r["now"]),
                    "action": r["action"],
                    "event": json.loads(r["event"]),
                    "deliveries": json.loads(r["deliveries"]),
                    "world": json.loads(r["world"]),
                }
            )
        )
    lines.append(_line({"type": "verdict", "invariant": invariant, "step": step, "message": message}))
    return lines


def fingerprint(lines: list[str]) -> str:
    events = "\n".join(json.dumps(json.loads(ln).get("event"), sort_keys=True) for ln in lines[1:-1])
    return hashlib.sha256(events.encode()).hexdigest()[:12]


def write_counterexample(directory: Path, lines: list[str], invariant: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{invariant}_{fingerprint(lines)}.ndjson"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass
class ReplayResult:
    path: Path
    invariant: str
    step: int
    reproduced: bool
    diverged_at: int | None
    detail: str


def read_counterexample(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """(header, steps, verdict); malformed or truncated files are a tool error naming file:line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from exc
    lines = text.splitlines()
    parsed = []
    for i, ln in enumerate(lines, 1):
        try:
            obj = json.loads(ln)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{i}: not JSON ({exc.msg})") from exc
        if not isinstance(obj, dict) or "type" not in obj:
            raise UsageError(f"{path}:{i}: expected an object with a 'type'")
        parsed.append(obj)
    if not parsed or parsed[0]["type"] != "header" or parsed[0].get("format") != FORMAT:
        raise UsageError(f"{path}:1: not a {FORMAT} file")
    if parsed[0].get("version") != VERSION:
        raise UsageError(f"{path}:1: version {parsed[0].get('version')!r} not supported (expected {VERSION})")
    if parsed[-1]["type"] != "verdict":
        raise UsageError(f"{path}:{len(parsed)}: truncated: the last line is not a verdict")
    steps = parsed[1:-1]
    for i, s in enumerate(steps, 2):
        if s["type"] != "step" or s.get("step") != i - 1:
            raise UsageError(f"{path}:{i}: expected step {i - 1}")
    return parsed[0], steps, parsed[-1]


def replay_file(path: Path) -> ReplayResult:
    """Re-run the recorded configuration on the model; exact replay of every world, then the verdict."""
    from conformance.checker import Checker
    from conformance.pipeline import codec
    from conformance.pipeline.swarm_model import config_from_json, observations

    header, steps, verdict = read_counterexample(path)
    if "source" in header["config"]:
        raise UsageError(
            f"{path}:1: imported from {header['config']['source']}: replay that trace with groupcheck replay"
        )
    cfg = config_from_json(json.dumps(header["config"]))
    cfg = type(cfg)(**{**cfg.__dict__, "steps": len(steps)})
    _initial, observed = observations(cfg)
    checker = Checker(cfg.protocol)
    found: list[str] = []
    for recorded, (obs, _action) in zip(steps, observed, strict=False):
        if codec.to_jsonable(obs.after) != recorded["world"]:
            return ReplayResult(
                path, verdict["invariant"], verdict["step"], False, recorded["step"], "world differs"
            )
        found = [v.invariant for v in checker.check(obs, recorded["step"])]
        if recorded["step"] == verdict["step"]:
            break
    inv = verdict["invariant"]
    if inv.startswith("window."):
        from conformance.pipeline.swarm_model import run_one
        from conformance.pipeline.windows import python_window_checks

        bound = int(verdict.get("bound_ms", 60_000))
        hits = {(i, st) for _t, st, i, _m in python_window_checks(list(run_one(cfg)), bound)}
        ok = (inv, verdict["step"]) in hits
        return ReplayResult(
            path, inv, verdict["step"], ok, None, "violated again" if ok else "not violated on replay"
        )
    ok = inv in found
    return ReplayResult(
        path, inv, verdict["step"], ok, None, "violated again" if ok else "not violated on replay"
    )
