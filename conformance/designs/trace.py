"""The design trace: NDJSON, one JSON object per line, canonical bytes (sorted keys, no spaces).

Line 1 is the header (format, version, design and options, seed, set-up, origin); then one ``step``
line per op: the op, the virtual time after it, every member's tokens and partitions, the group's
generation and the predicates it violated; the last line is the verdict. Reading goes through
fixed field lists with size limits and names ``file:line`` on bad input. `replay` re-runs the ops
on any design: on the recorded one with the recorded options it must reproduce every step exactly
(or the trace is stale: ERROR); elsewhere it judges the design afresh.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance import strict
from conformance.errors import ToolError
from model.designs import DESIGNS, check_options, make_engine
from model.designs import ops as o
from model.designs.driver import Run, run
from model.designs.net import DesignError
from model.designs.view import DesignView

FORMAT, VERSION = "groupcheck-design-trace", 1
MAX_BYTES, MAX_LINES = 8_000_000, 20_000
HEADER_KEYS = {"kind", "format", "version", "design", "options", "seed", "setup", "origin"}
STEP_KEYS = {"kind", "n", "op", "now", "generation", "members", "violated"}
VERDICT_KEYS = {"kind", "verdict", "violated", "steps"}


class DesignTraceError(ToolError):
    """A design trace that cannot be read or replayed: ``file:line: reason``."""


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


@dataclass
class DesignTrace:
    design: str
    options: dict[str, str]
    seed: int
    topics: dict[str, int]
    ops: list[Any]
    origin: dict[str, Any] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    verdict: str = "PASSED"
    violated: tuple[str, ...] = ()
    path: Path | None = None


def _members(view: DesignView) -> list[list[Any]]:
    return [
        [m.name, m.token, sorted(f"{t}-{p}" for t, p in m.holds), m.alive, m.paused] for m in view.members
    ]


def trace_of(
    result: Run, *, options: dict[str, str], seed: int, topics: dict[str, int], origin: dict[str, Any]
) -> DesignTrace:
    by_step: dict[int, list[list[str]]] = {}
    for f in result.findings:
        by_step.setdefault(f.step, []).append([f.invariant, f.message, f.now])
    steps = [
        {
            "kind": "step",
            "n": i,
            "op": o.to_dict(op),
            "now": v.now,
            "generation": v.generation,
            "members": _members(v),
            "violated": by_step.get(i, []),
        }
        for i, (op, v) in enumerate(zip(result.ops, result.views, strict=False), 1)
    ]
    return DesignTrace(
        result.design, dict(options), seed, dict(topics), list(result.ops), dict(origin), steps,
        "FAILED" if result.findings else "PASSED", result.violated,
    )  # fmt: skip


def lines_of(trace: DesignTrace) -> list[str]:
    header = {
        "kind": "header", "format": FORMAT, "version": VERSION, "design": trace.design, "options": trace.options,
        "seed": trace.seed, "setup": {"topics": dict(sorted(trace.topics.items()))}, "origin": trace.origin,
    }  # fmt: skip
    out = [dumps(header)] + [dumps(s) for s in trace.steps]
    out.append(
        dumps(
            {
                "kind": "verdict",
                "verdict": trace.verdict,
                "violated": list(trace.violated),
                "steps": len(trace.steps),
            }
        )
    )
    return out


def write(trace: DesignTrace, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines_of(trace)), encoding="utf-8")
    trace.path = path
    return path


def _need(obj: dict[str, Any], keys: set[str], where: str) -> None:
    missing, extra = keys - set(obj), set(obj) - keys
    if missing or extra:
        raise DesignTraceError(f"{where}: fields {sorted(missing)} missing, {sorted(extra)} unknown")


def read(path: Path) -> DesignTrace:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DesignTraceError(f"{path}: cannot read: {exc.strerror}") from None
    if len(raw) > MAX_BYTES:
        raise DesignTraceError(f"{path}: larger than {MAX_BYTES} bytes")
    lines = raw.decode("utf-8", errors="replace").splitlines()
    if not lines or len(lines) > MAX_LINES:
        raise DesignTraceError(f"{path}:1: empty, or more than {MAX_LINES} lines")
    objs = []
    for i, line in enumerate(lines, 1):
        try:
            obj = strict.json_value(line)  # bounded nesting and integers (docs/hostile-input.md)
        except strict.Malformed as exc:
            raise DesignTraceError(exc.at(f"{path}:{i}")) from None
        if not isinstance(obj, dict):
            raise DesignTraceError(f"{path}:{i}: expected an object")
        objs.append(obj)
    head = objs[0]
    _need(head, HEADER_KEYS, f"{path}:1")
    if head["kind"] != "header" or head["format"] != FORMAT or head["version"] != VERSION:
        raise DesignTraceError(f"{path}:1: not a {FORMAT} v{VERSION} header")
    if (
        head["design"] not in DESIGNS
        or not isinstance(head["options"], dict)
        or not isinstance(head["seed"], int)
    ):
        raise DesignTraceError(f"{path}:1: field 'design', 'options' or 'seed' is invalid")
    topics = head["setup"].get("topics") if isinstance(head["setup"], dict) else None
    if not isinstance(topics, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and 0 <= v <= o.MAX_PARTITIONS for k, v in topics.items()
    ):
        raise DesignTraceError(f"{path}:1: field 'setup.topics' must map topic names to partition counts")
    try:
        options = check_options(head["design"], {str(k): str(v) for k, v in head["options"].items()})
    except DesignError as exc:
        raise DesignTraceError(f"{path}:1: {exc}") from None
    trace = DesignTrace(
        head["design"], options, head["seed"], dict(topics), [], dict(head["origin"]), path=path
    )
    tail = objs[-1]
    _need(tail, VERDICT_KEYS, f"{path}:{len(objs)}")
    if (
        tail["kind"] != "verdict"
        or tail["verdict"] not in ("PASSED", "FAILED")
        or tail["steps"] != len(objs) - 2
    ):
        raise DesignTraceError(f"{path}:{len(objs)}: a verdict line counting the steps must end the trace")
    for i, obj in enumerate(objs[1:-1], 2):
        _need(obj, STEP_KEYS, f"{path}:{i}")
        try:
            trace.ops.append(o.from_dict(obj["op"]))
        except o.OpError as exc:
            raise DesignTraceError(f"{path}:{i}: field 'op': {exc}") from None
        trace.steps.append(obj)
    trace.verdict, trace.violated = tail["verdict"], tuple(str(v) for v in tail["violated"])
    return trace


@dataclass
class Replay:
    design: str
    verdict: str  # FAILED | PASSED | FIXED | ERROR
    result: Run | None = None
    difference: str = ""

    @property
    def exit_code(self) -> int:
        return {"PASSED": 0, "FIXED": 0, "FAILED": 1}.get(self.verdict, 2)


def replay(trace: DesignTrace, design: str | None = None, options: dict[str, str] | None = None) -> Replay:
    """Re-run ``trace`` on ``design`` (default: the recorded one, with the recorded options)."""
    name = design or trace.design
    same = name == trace.design and options is None
    opts = trace.options if same else dict(options or {})
    try:
        engine = make_engine(name, trace.topics, opts, trace.seed)
        result = run(engine, trace.ops)
    except DesignError as exc:
        return Replay(name, "ERROR", difference=str(exc))
    if same:
        for step, view in zip(trace.steps, result.views, strict=False):
            if step["now"] != view.now or step["members"] != json.loads(dumps(_members(view))):
                return Replay(
                    name, "ERROR", result, f"step {step['n']} differs from the recording: stale trace"
                )
    if result.findings:
        return Replay(name, "FAILED", result)
    # FIXED: the recorded design no longer fails it; on another design a clean run is PASSED
    fixed = trace.verdict == "FAILED" and name == trace.design and opts == trace.options
    return Replay(name, "FIXED" if fixed else "PASSED", result)


def render(trace: DesignTrace) -> str:
    """A step table: op, time, what each member holds under which token, what was violated."""
    title = f"{trace.design} {dumps(trace.options) if trace.options else ''} seed {trace.seed} topics {dumps(trace.topics)}"
    out = [title.strip(), ""]
    for step in trace.steps:
        op = dict(step["op"])
        name = op.pop("op")
        args = " ".join(f"{k}={v}" for k, v in op.items() if v not in (None, False))
        holds = "; ".join(
            f"{m[0]}{'(dead)' if not m[3] else '(paused)' if m[4] else ''}@{m[1]}:{','.join(m[2]) or '-'}"
            for m in step["members"]
        )
        out.append(f"{step['n']:3d}. t={step['now']:>7} {name} {args}".rstrip())
        out.append(f"       gen={step['generation']} {holds}")
        for inv, msg, *at in step["violated"]:
            out.append(f"       VIOLATED {inv}{f' at t={at[0]}' if at else ''}: {msg}")
    out.append(f"verdict: {trace.verdict} {', '.join(trace.violated)}".rstrip())
    return "\n".join(out) + "\n"
