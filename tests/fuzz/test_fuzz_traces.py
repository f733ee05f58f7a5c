"""Generated trace files (mutated lines, headers, step actions, bytes): reading one either fails with
``file:line: reason`` or yields a trace within every bound, and `show`/`replay` end in the exit
code contract with one line on error, no traceback, within the deadline (docs/hostile-input.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from conformance import schema_check, strict
from conformance.cli.main import main
from conformance.formats import trace_limits
from conformance.formats.trace_file import TraceError, read_trace

from .support import FUZZ, PROFILE, unforeseen

ROOT = Path(__file__).resolve().parent.parent
SEEDS = sorted((ROOT / "golden").glob("*-model.ndjson")) + [
    ROOT / "regressions" / "consumer.assign_only_free_9ff9d75ee9ce.ndjson",
    ROOT / "regressions" / "classic.instance_fencing_6d2f58b343c6.ndjson",
]
DEADLINE_S = 60.0
#: replays asking for more ticks than this are only read and shown in the CI profile (a tick is ~3 ms)
REPLAY_TICKS = strict.MAX_TICKS if PROFILE == "fuzz-long" else 300

json_value = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False),
        st.text(max_size=12),
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
numbers = st.one_of(
    st.integers(-(2**64), 2**64),
    st.sampled_from([0, -1, 1, 9, 10, 1000, 3_600_000, 3_600_001, 2**31, 2**63 - 1, 2**63]),
)
HEADER_PATHS = [
    ("setup", "topics"), ("setup", "topics", "t"), ("setup", "clients"), ("setup", "clients", 0, "session_timeout_ms"),
    ("setup", "config"), ("setup", "tick_ms"), ("setup", "policy"), ("variants",), ("variants", "sticky"),
    ("seed",), ("target",), ("target", "version"), ("version",), ("origin",), ("protocol",),
]  # fmt: skip
ACTION_FIELDS = ["ms", "partitions", "tick_ms", "bound_ms", "client", "op", "topic", "offset", "extra_rounds"]


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        if (
            isinstance(obj, dict)
            and key in obj
            or isinstance(obj, list)
            and isinstance(key, int)
            and key < len(obj)
        ):
            obj = obj[key]
        else:
            return
    if isinstance(obj, dict) or isinstance(obj, list) and isinstance(path[-1], int) and path[-1] < len(obj):
        obj[path[-1]] = value


@st.composite
def hostile_trace(draw: st.DrawFn) -> bytes:
    seed = draw(st.sampled_from(SEEDS))
    lines = seed.read_text().splitlines()
    how = draw(st.sampled_from(["header", "action", "step", "line", "bytes", "nest", "truncate"]))
    if how == "header":
        head = json.loads(lines[0])
        _set(head, draw(st.sampled_from(HEADER_PATHS)), draw(st.one_of(json_value, numbers)))
        lines[0] = json.dumps(head)
    elif how == "action":
        i = draw(st.integers(1, len(lines) - 2))
        step = json.loads(lines[i])
        field = draw(st.sampled_from(ACTION_FIELDS))
        step["action"][field] = draw(numbers if field not in ("client", "op", "topic") else json_value)
        lines[i] = json.dumps(step)
    elif how == "step":
        i = draw(st.integers(1, len(lines) - 2))
        step = json.loads(lines[i])
        key = draw(st.sampled_from(["state", "event", "expected", "actual", "checks", "now", "n", "action"]))
        if key == "state" and isinstance(step.get("state"), dict) and draw(st.booleans()):
            _set(step, ("state", draw(st.sampled_from(sorted(step["state"]) or ["x"]))), draw(json_value))
        else:
            step[key] = draw(st.one_of(json_value, numbers))
        lines[i] = json.dumps(step)
    elif how == "line":
        lines[draw(st.integers(0, len(lines) - 1))] = json.dumps(draw(json_value))
    elif how == "nest":
        depth = draw(st.sampled_from([63, 64, 65, 1000, 100_000]))
        lines[draw(st.integers(0, len(lines) - 1))] = '{"kind":"step","x":' + "[" * depth + "]" * depth + "}"
    data = ("\n".join(lines) + "\n").encode()
    if how == "bytes":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    elif how == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    return data


def _accepted_is_within_bounds(trace: Any) -> int:
    """Nothing out of bounds got through: the header fits its schema, every action's bounded
    fields are in range, and the replay asks for at most `MAX_TICKS` ticks."""
    schema_check.check(trace.header, "trace-header")
    ticks = 0
    for step in trace.steps:
        trace_limits.check_action(step.action)
        ticks += trace_limits.ticks(trace.protocol, trace.header["setup"], step.action)
    assert ticks <= strict.MAX_TICKS
    return ticks


@FUZZ
@given(data=hostile_trace())
def test_a_hostile_trace_is_refused_by_line_or_kept_within_bounds(
    data: bytes, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path_factory.mktemp("trace") / "t.ndjson"
    path.write_bytes(data)
    try:
        trace = read_trace(path)
    except TraceError as exc:
        assert str(exc).startswith(f"{path}:"), str(exc)
        event("read: refused with file:line")
        trace = None
    ticks = _accepted_is_within_bounds(trace) if trace is not None else 0
    commands = [["show"], ["show", "--format", "mermaid"]] + ([["replay"]] if ticks <= REPLAY_TICKS else [])
    for verb, *options in commands:
        capsys.readouterr()
        start = time.monotonic()
        code = main([verb, str(path), *options])
        took = time.monotonic() - start
        err = capsys.readouterr().err
        assert code in (0, 1, 2), (verb, code)
        event(f"{verb}: exit {code}")
        assert not unforeseen(err), err
        assert took < DEADLINE_S
        if code == 2:
            assert err.count("\n") == 1, err
