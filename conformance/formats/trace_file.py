"""The groupcheck trace file: versioned NDJSON, one JSON object per line (docs/traces.md#format).

Line 1 is the header (format name and version, groupcheck version, target and its version,
protocol, variants, seed, where the run came from, and the set-up a replay rebuilds). Then one
``step`` line per step: the action the driver took, the event it caused (who sent which request),
the responses the model expected and the target actually gave, and the checks run with their
verdicts. The last line is the ``verdict`` with every violated invariant id. Bytes are canonical
(sorted keys, no spaces, no wall clock), so one run always writes the same file.

`read_trace` rejects malformed, truncated and future-version files with ``file:line: reason``
(a tool error, exit 2).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance import schema_check, strict
from conformance.errors import ToolError
from conformance.formats import trace_limits
from conformance.formats.codec import CodecError, decode, dumps
from model.result import Delivery

FORMAT = "groupcheck-trace"
VERSION = 1
KINDS = ("header", "step", "verdict")
VERDICTS = ("PASSED", "FAILED")
PROTOCOLS = ("classic", "consumer", "mixed")
HEADER_KEYS = {
    "kind": str,
    "format": str,
    "version": int,
    "groupcheck": str,
    "target": dict,
    "protocol": str,
    "variants": dict,
    "seed": int,
    "origin": dict,
    "setup": dict,
}
STEP_KEYS = {
    "kind": str,
    "n": int,
    "now": int,
    "action": dict,
    "event": (dict, type(None)),
    "expected": (list, type(None)),
    "actual": (list, type(None)),
    "checks": dict,
    "state": (dict, type(None)),
}
DELIVERIES = tuple[Delivery, ...]  # a step's expected and actual answers
MAX_TRACE_BYTES = 64 * 1024 * 1024
MAX_LINE_CHARS = 8 * 1024 * 1024
VERDICT_KEYS = {"kind": str, "verdict": str, "violated": list, "violations": list, "steps": int}


class TraceError(ToolError):
    """A trace file that cannot be read: the message is ``file:line: reason``."""


@dataclass
class Check:
    """One violated check of a step."""

    id: str
    message: str


@dataclass
class Step:
    n: int
    now: int
    action: dict[str, Any]
    event: Any = None
    expected: tuple[Any, ...] | None = None
    actual: tuple[Any, ...] | None = None
    checked: tuple[str, ...] = ()
    violated: tuple[Check, ...] = ()
    sometimes: tuple[str, ...] = ()
    state: dict[str, Any] | None = None
    line: int = 0


@dataclass
class Trace:
    header: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    verdict: str = "PASSED"
    violated: tuple[str, ...] = ()
    violations: tuple[tuple[str, str, int], ...] = ()
    path: Path | None = None

    @property
    def protocol(self) -> str:
        return str(self.header["protocol"])

    def fingerprint(self) -> str:
        """12 hex digits of the hash of the steps and verdict (not the header): names the file."""
        body = "".join(line + "\n" for line in lines_of(self)[1:])
        return hashlib.sha256(body.encode()).hexdigest()[:12]


# ---------------------------------------------------------------------------------- write
def groupcheck_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("groupcheck")
    except PackageNotFoundError:  # running from a source tree
        return "0.0.0+source"


def header(
    *,
    protocol: str,
    target: str,
    target_version: str,
    variants: dict[str, str],
    seed: int,
    origin: dict[str, Any],
    setup: dict[str, Any],
) -> dict[str, Any]:
    return {
        "kind": "header",
        "format": FORMAT,
        "version": VERSION,
        "groupcheck": groupcheck_version(),
        "target": {"name": target, "version": target_version},
        "protocol": protocol,
        "variants": dict(sorted(variants.items())),
        "seed": seed,
        "origin": origin,
        "setup": json.loads(json.dumps(setup)),
    }


@dataclass
class LogEntry:
    """One op a recording simulator logged: the op, its observation (None for a client-only op), the
    time, and the checks the driver ran on it (classic, consumer and mixed runs)."""

    op: dict[str, Any]
    obs: Any
    now: int
    checked: tuple[str, ...] = ()
    violated: tuple[tuple[str, str], ...] = ()
    sometimes: tuple[str, ...] = ()


class CheckedLog:
    """Mixin of the recording simulators: ``log`` is a list of `LogEntry`; the driver's verdicts on an
    observation are attached to the entry that produced it."""

    log: list[LogEntry]

    def note_checks(
        self,
        obs: Any,
        checked: tuple[str, ...],
        violated: list[tuple[str, str]],
        sometimes: tuple[str, ...],
    ) -> None:
        for entry in reversed(self.log):
            if entry.obs is obs:
                entry.checked, entry.violated, entry.sometimes = checked, tuple(violated), sometimes
                return


def trace_of_log(
    sim: Any,
    summary: Any,
    *,
    protocol: str,
    target: str,
    target_version: str,
    origin: dict[str, Any],
    violations: list[tuple[str, str, int]],
) -> Trace:
    """The trace of a recording simulator (classic, consumer and mixed runs): one step per entry of
    ``sim.log`` (its op, observation, time and checks), the state after it as ``summary`` renders
    it, the header from ``sim``'s variants, seed and set-up, and the driver's verdict."""
    steps = []
    for n, e in enumerate(sim.log, 1):
        obs = e.obs
        deliveries = None if obs is None else tuple(obs.deliveries)
        steps.append(
            Step(
                n,
                e.now,
                e.op,
                None if obs is None else obs.event,
                deliveries,
                deliveries,
                e.checked,
                tuple(Check(i, m) for i, m in e.violated),
                e.sometimes,
                None if obs is None else summary(obs.after),
            )
        )
    head = header(
        protocol=protocol,
        target=target,
        target_version=target_version,
        variants=sim.variants,
        seed=sim.seed,
        origin=origin,
        setup=sim.setup,
    )
    violated = tuple(sorted({i for i, _, _ in violations}))
    return Trace(head, steps, "FAILED" if violated else "PASSED", violated, tuple(violations))


def step_line(step: Step) -> dict[str, Any]:
    from conformance.formats.codec import encode

    return {
        "kind": "step",
        "n": step.n,
        "now": step.now,
        "action": step.action,
        "event": encode(step.event) if step.event is not None else None,
        "expected": None if step.expected is None else encode(step.expected),
        "actual": None if step.actual is None else encode(step.actual),
        "checks": {
            "checked": list(step.checked),
            "violated": [{"id": c.id, "message": c.message} for c in step.violated],
            "sometimes": list(step.sometimes),
        },
        "state": step.state,
    }


def lines_of(trace: Trace) -> list[str]:
    out = [dumps(trace.header)]
    out += [dumps(step_line(s)) for s in trace.steps]
    out.append(
        dumps(
            {
                "kind": "verdict",
                "verdict": trace.verdict,
                "violated": sorted(trace.violated),
                "violations": [{"id": i, "message": m, "step": n} for i, m, n in trace.violations],
                "steps": len(trace.steps),
            }
        )
    )
    return out


def to_bytes(trace: Trace) -> bytes:
    return "".join(line + "\n" for line in lines_of(trace)).encode("ascii")


def write_trace(trace: Trace, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(to_bytes(trace))
    return path


def counterexample_path(trace: Trace, directory: Path) -> Path:
    """``<dir>/<invariant-id>_<fingerprint>.ndjson`` (the first violated id names the file)."""
    first = sorted(trace.violated)[0] if trace.violated else "passed"
    return directory / f"{first}_{trace.fingerprint()}.ndjson"


# ---------------------------------------------------------------------------------- read
def read_trace(path: Path) -> Trace:
    """Parse and validate a trace file; any problem is a TraceError naming file:line."""
    text = strict.utf8(strict.read_bytes(path, MAX_TRACE_BYTES, TraceError), path, TraceError)
    if not text:
        raise TraceError(f"{path}:1: empty file (truncated: no header line)")
    lines = text.split("\n")
    truncated_tail = lines[-1] != ""
    if not truncated_tail:
        lines.pop()
    trace: Trace | None = None
    seen_verdict = False
    ticks = 0
    for number, line in enumerate(lines, 1):
        where = f"{path}:{number}"
        if truncated_tail and number == len(lines):
            raise TraceError(f"{where}: truncated: the last line has no newline")
        if seen_verdict:
            raise TraceError(f"{where}: content after the verdict line")
        if len(line) > MAX_LINE_CHARS:
            raise TraceError(f"{where}: a line of {len(line)} characters (limit {MAX_LINE_CHARS})")
        try:
            obj = strict.json_value(line)
        except strict.Malformed as exc:
            raise TraceError(exc.at(where)) from None
        if not isinstance(obj, dict):
            raise TraceError(f"{where}: each line must be a JSON object")
        kind = obj.get("kind")
        if number == 1:
            trace = Trace(_read_header(obj, where), path=path)
            continue
        assert trace is not None
        if kind == "step":
            trace.steps.append(_read_step(obj, where, len(trace.steps) + 1))
            ticks += trace_limits.ticks(trace.protocol, trace.header["setup"], trace.steps[-1].action)
            if ticks > strict.MAX_TICKS:
                raise TraceError(
                    f"{where}: replaying the trace up to here takes more than {strict.MAX_TICKS} ticks"
                )
        elif kind == "verdict":
            _read_verdict(obj, where, trace)
            seen_verdict = True
        else:
            raise TraceError(f"{where}: kind {kind!r} (expected 'step' or 'verdict')")
    if trace is None:
        raise TraceError(f"{path}:1: empty file (truncated: no header line)")
    if not seen_verdict:
        raise TraceError(f"{path}:{len(lines) + 1}: truncated: no verdict line")
    return trace


def _keys(obj: dict[str, Any], spec: dict[str, Any], where: str, what: str) -> None:
    for key, kind in spec.items():
        if key not in obj:
            raise TraceError(f"{where}: {what} lacks field '{key}'")
        value = obj[key]
        bad = isinstance(value, bool) and kind is int
        if bad or not isinstance(value, kind):
            raise TraceError(f"{where}: {what} field '{key}' has the wrong type ({type(value).__name__})")
    unknown = sorted(set(obj) - set(spec))
    if unknown:
        raise TraceError(f"{where}: {what} has unknown field '{unknown[0]}'")


def _read_header(obj: dict[str, Any], where: str) -> dict[str, Any]:
    if obj.get("kind") != "header":
        raise TraceError(f"{where}: the first line must be the header (kind 'header')")
    if obj.get("format") != FORMAT:
        raise TraceError(f"{where}: not a groupcheck trace (format {obj.get('format')!r})")
    version = obj.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TraceError(f"{where}: header field 'version' must be a positive integer")
    if version > VERSION:
        raise TraceError(
            f"{where}: format version {version} is newer than this groupcheck reads (up to {VERSION}); upgrade groupcheck"
        )
    _keys(obj, HEADER_KEYS, where, "header")
    if obj["protocol"] not in PROTOCOLS:
        raise TraceError(f"{where}: unknown protocol {obj['protocol']!r}")
    target = obj["target"]
    if not isinstance(target.get("name"), str) or not isinstance(target.get("version"), str):
        raise TraceError(f"{where}: header field 'target' needs string 'name' and 'version'")
    for k, v in obj["variants"].items():
        if not isinstance(v, str):
            raise TraceError(f"{where}: variant {k!r} must be a string")
    try:
        schema_check.check(obj, "trace-header")
    except strict.Malformed as exc:
        raise TraceError(exc.at(f"{where}: header field")) from None
    return obj


def _read_step(obj: dict[str, Any], where: str, expected_n: int) -> Step:
    _keys(obj, STEP_KEYS, where, "step")
    if obj["n"] != expected_n:
        raise TraceError(f"{where}: step number {obj['n']} out of order (expected {expected_n})")
    action = obj["action"]
    if not isinstance(action.get("op"), str):
        raise TraceError(f"{where}: step action needs a string 'op'")
    try:
        trace_limits.check_action(action)
        trace_limits.check_state(obj["state"])
        trace_limits.check_regexes(action, "action")
        trace_limits.check_regexes(obj["event"], "event")
    except strict.Malformed as exc:
        raise TraceError(exc.at(where)) from None
    checks = obj["checks"]
    _keys(checks, {"checked": list, "violated": list, "sometimes": list}, where, "checks")
    violated = []
    for v in checks["violated"]:
        if (
            not isinstance(v, dict)
            or not isinstance(v.get("id"), str)
            or not isinstance(v.get("message"), str)
        ):
            raise TraceError(f"{where}: checks.violated entries need string 'id' and 'message'")
        violated.append(Check(v["id"], v["message"]))
    try:
        if obj["event"] is not None and not isinstance(obj["event"], dict):
            raise CodecError("event: expected an object with a 'type'")
        event = None if obj["event"] is None else decode(obj["event"], path="event")
        expected = None if obj["expected"] is None else decode(obj["expected"], DELIVERIES, "expected")
        actual = None if obj["actual"] is None else decode(obj["actual"], DELIVERIES, "actual")
        if "request" in action:
            decode(action["request"], path="action.request")
    except CodecError as exc:
        raise TraceError(f"{where}: {exc}") from None
    return Step(
        obj["n"],
        obj["now"],
        action,
        event,
        expected,
        actual,
        tuple(str(c) for c in checks["checked"]),
        tuple(violated),
        tuple(str(s) for s in checks["sometimes"]),
        obj["state"],
        int(where.rsplit(":", 1)[1]),
    )


def _read_verdict(obj: dict[str, Any], where: str, trace: Trace) -> None:
    _keys(obj, VERDICT_KEYS, where, "verdict")
    if obj["verdict"] not in VERDICTS:
        raise TraceError(f"{where}: verdict {obj['verdict']!r} (expected one of {', '.join(VERDICTS)})")
    if obj["steps"] != len(trace.steps):
        raise TraceError(
            f"{where}: truncated: verdict says {obj['steps']} steps, file has {len(trace.steps)}"
        )
    violations = []
    for v in obj["violations"]:
        if not isinstance(v, dict) or not isinstance(v.get("id"), str):
            raise TraceError(f"{where}: each violation needs a string 'id'")
        if type(v.get("step", 0)) is not int:
            raise TraceError(f"{where}: violations: 'step' must be an integer")
        violations.append((v["id"], str(v.get("message", "")), int(v.get("step", 0))))
    if any(not isinstance(i, str) for i in obj["violated"]):
        raise TraceError(f"{where}: 'violated' must list invariant ids")
    if (obj["verdict"] == "FAILED") != bool(obj["violated"]):
        raise TraceError(f"{where}: verdict {obj['verdict']} does not match violated {obj['violated']}")
    trace.verdict = obj["verdict"]
    trace.violated = tuple(obj["violated"])
    trace.violations = tuple(violations)
