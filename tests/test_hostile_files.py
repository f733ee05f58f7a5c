"""Hostile spec, scenario and trace files: exit 2 with one line naming file:line and field, never a
traceback, never a hang (docs/hostile-input.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import schemas, specs, strict
from conformance.cli.main import main
from conformance.schema_check import SCHEMA_DIR

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "tests" / "regressions" / "classic.instance_fencing_6d2f58b343c6.ndjson"
MIXED = ROOT / "tests" / "golden" / "mixed-model.ndjson"
SCENARIO = """id: broken
title: x
source: y
protocol: classic
topics: {t: 2}
clients: [{name: c1}]
steps:
  - settle: [c1]
"""


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.fixture
def spec_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "invariants.yaml").write_text(specs.SPECS_DIR.joinpath("invariants.yaml").read_text())
    monkeypatch.setattr(specs, "SPECS_DIR", tmp_path)
    return tmp_path


SCENARIO_CASES = [
    # (what, how the text changes, line, what the message says)
    ("topics a list", ("topics: {t: 2}", "topics: [t]"), 5, "topics: expected a mapping, got a list"),
    ("clients a number", ("clients: [{name: c1}]", "clients: 5"), 6, "clients: expected a list, got an integer"),
    ("config a list", ("steps:", "config: [1, 2]\nsteps:"), 7, "config: expected a mapping, got a list"),
    ("id a list", ("id: broken", "id: [a, b]"), 1, "id: expected a string, got a list"),
    ("run_for every 0", ("  - settle: [c1]", "  - run_for: {ms: 1000, every: 0}"), 8, "steps[0].run_for.every: 0 is out of range"),
    ("run_for every < 0", ("  - settle: [c1]", "  - run_for: {ms: 1000, every: -5}"), 8, "steps[0].run_for.every: -5 is out of range"),
    ("run_for ms 1e12", ("  - settle: [c1]", "  - run_for: {ms: 1e12}"), 8, "steps[0].run_for.ms: expected an integer"),
    ("run_for ms huge", ("  - settle: [c1]", "  - run_for: {ms: 1000000000000}"), 8, "steps[0].run_for.ms: 1000000000000 is out of range"),
    ("run_for too many ticks", ("  - settle: [c1]", "  - run_for: {ms: 3600000, every: 10}"), 8, f"more than {strict.MAX_TICKS} ticks"),
    ("mixed form in classic", ("  - settle: [c1]", "  - run_for: 1000"), 8, "a classic scenario takes a mapping"),
    ("advance < 0", ("  - settle: [c1]", "  - advance: -1000"), 8, "steps[0].advance: -1000 is out of range"),
    ("partitions < 0", ("  - settle: [c1]", "  - create_topic: {topic: u, partitions: -1}"), 8, "steps[0].create_topic.partitions: -1 is out of range"),
    ("unknown variant value", ("steps:", "variants: {sticky: v9}\nsteps:"), 7, "variants.sticky: 'v9' is not one of v0, v1"),
    ("unknown verb", ("  - settle: [c1]", "  - explode: c1"), 8, "steps[0]: unknown step verb 'explode'"),
    ("two verbs", ("  - settle: [c1]", "  - {settle: [c1], advance: 3}"), 8, "each step is a mapping with exactly one verb"),
    ("5000-digit integer", ("  - settle: [c1]", "  - advance: " + "9" * 5000), 8, "invalid YAML: an integer of 5000 digits"),
    ("alias", ("title: x", "title: &a x\nnotes: *a"), 3, "invalid YAML: aliases"),
    ("deep nesting", ("title: x", "title: " + "[" * 200 + "]" * 200), 2, "nested deeper than 64 levels"),
    ("duplicate key", ("title: x", "title: x\ntitle: y"), 3, "duplicate key 'title'"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("what", "change", "line", "message"), SCENARIO_CASES, ids=[c[0] for c in SCENARIO_CASES]
)
def test_a_bad_scenario_is_one_line_naming_file_line_and_field(
    spec_dir: Path,
    capsys: pytest.CaptureFixture[str],
    what: str,
    change: tuple[str, str],
    line: int,
    message: str,
) -> None:
    assert change[0] in SCENARIO
    (spec_dir / "scenarios" / "broken.yaml").write_text(SCENARIO.replace(*change))
    assert main(["specs", "validate"]) == 2, what
    err = _one_line_error(capsys)
    assert f"broken.yaml:{line}: " in err and message in err, err
    assert main(["scenario", "run", "broken"]) == 2  # a run never starts on a rejected file
    _one_line_error(capsys)


def test_a_non_utf8_byte_names_its_line(spec_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (spec_dir / "scenarios" / "broken.yaml").write_bytes(
        SCENARIO.encode().replace(b"title: x", b"title: x\xff")
    )
    assert main(["specs", "validate"]) == 2
    assert "broken.yaml:2: not UTF-8 text (byte 0xff)" in _one_line_error(capsys)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("checkers: [hypothesis, scenario, trace]", "checkers: [[hypothesis]]"), "checkers[0]: ['hypothesis'] is not one of"),
        (("  - id: classic.max_size\n", "  - id: [classic.max_size]\n"), "id: expected a string, got a list"),
        (("kind: safety", "kind: {a: 1}"), "kind: {'a': 1} is not one of"),
        (("version: 1\n", "version: 1\nversion: 2\n"), "duplicate key 'version'"),
    ],
)  # fmt: skip
def test_a_bad_catalogue_is_one_line(
    spec_dir: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], message: str
) -> None:
    text = (spec_dir / "invariants.yaml").read_text()
    assert change[0] in text
    (spec_dir / "invariants.yaml").write_text(text.replace(*change, 1))
    assert main(["specs", "validate"]) == 2
    err = _one_line_error(capsys)
    assert "invariants.yaml:" in err and message in err, err


# ---------------------------------------------------------------------------------- traces
def _with_line(tmp_path: Path, source: Path, index: int, line: str) -> Path:
    lines = source.read_text().splitlines()
    lines[index] = line
    path = tmp_path / "hostile.ndjson"
    path.write_text("\n".join(lines) + "\n")
    return path


def _header(source: Path, **setup: object) -> str:
    head = json.loads(source.read_text().splitlines()[0])
    head["setup"].update(setup)
    return json.dumps(head)


TRACE_CASES = [
    ("deep line", 1, '{"kind":"step","n":1,"now":0,"action":{"op":"x","y":' + "[" * 100_000 + "]" * 100_000 + "}}", ":2: nested deeper than 64 levels"),
    ("5000-digit integer", 1, '{"kind":"step","n":1,"now":' + "9" * 5000 + "}", ":2: an integer of 5000 digits"),
    ("NaN", 1, '{"kind":"step","n":1,"now":NaN}', ":2: NaN is not JSON"),
    ("duplicate key", 1, '{"kind":"step","kind":"verdict"}', ":2: duplicate key 'kind'"),
    ("setup topics wrong type", 0, _header(TRACE, topics={"t": "x"}), ":1: header field: setup.topics.t: expected an integer"),
    ("setup clients a number", 0, _header(TRACE, clients=5), ":1: header field: setup.clients: expected a list"),
    ("setup config a list", 0, _header(TRACE, config=[1, 2]), ":1: header field: setup.config: expected a mapping"),
    ("mixed tick_ms 0", 0, _header(MIXED, tick_ms=0), ":1: header field: setup.tick_ms: 0 is out of range"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "index", "line", "message"), TRACE_CASES, ids=[c[0] for c in TRACE_CASES])
@pytest.mark.parametrize("verb", ["replay", "show"])
def test_a_hostile_trace_is_one_line_naming_file_line_and_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    what: str,
    index: int,
    line: str,
    message: str,
    verb: str,
) -> None:
    source = MIXED if "mixed" in what else TRACE
    path = _with_line(tmp_path, source, index, line)
    assert main([verb, str(path)]) == 2, what
    err = _one_line_error(capsys)
    assert f"hostile.ndjson{message}" in err, err


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({"op": "advance", "ms": -1000}, "action.ms: -1000 is out of range"),
        (
            {"op": "create_topic", "topic": "u", "partitions": 10**9},
            "action.partitions: 1000000000 is out of range",
        ),
        ({"op": "settle", "bound_ms": 1000, "tick_ms": 0}, "action.tick_ms: 0 is out of range"),
        ({"op": "advance", "ms": "soon"}, "action.ms: expected an integer"),
        ({"op": "step", "client": ["c1"]}, "action.client: expected str, got list"),
    ],
)
def test_a_step_that_would_loop_without_end_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: dict[str, object], message: str
) -> None:
    step = json.loads(TRACE.read_text().splitlines()[1])
    step["action"] = action
    path = _with_line(tmp_path, TRACE, 1, json.dumps(step))
    assert main(["replay", str(path)]) == 2
    assert f"hostile.ndjson:2: {message}" in _one_line_error(capsys)


def test_a_mixed_trace_asking_for_too_many_ticks_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tick_ms 10 and an hour of run_for: 360,000 ticks, far more than a replay may take."""
    lines = MIXED.read_text().splitlines()
    lines[0] = _header(MIXED, tick_ms=10)
    step = next(json.loads(x) for x in lines if '"op":"run_for"' in x)
    at = next(i for i, x in enumerate(lines) if '"op":"run_for"' in x)
    step["action"]["ms"] = 3_600_000
    lines[at] = json.dumps(step)
    path = tmp_path / "hostile.ndjson"
    path.write_text("\n".join(lines) + "\n")
    assert main(["replay", str(path)]) == 2
    assert f"more than {strict.MAX_TICKS} ticks" in _one_line_error(capsys)


# ---------------------------------------------------------------------------------- schemas
@pytest.mark.parametrize("name", sorted(schemas.SCHEMAS))
def test_published_schemas_are_current(name: str) -> None:
    """specs/schemas/ is what `python -m conformance.schemas` writes (regenerate after a change)."""
    assert (SCHEMA_DIR / f"{name}.schema.json").read_text() == schemas.render(name)


def test_every_committed_spec_scenario_and_trace_fits_its_schema() -> None:
    from conformance.formats.trace_file import read_trace

    assert len(specs.load_scenarios()) > 30 and len(specs.load_invariants()) > 50
    traces = [p for d in ("tests", "reports") for p in (ROOT / d).rglob("*.ndjson")]
    read = [read_trace(p) for p in traces if '"format":"groupcheck-trace"' in p.read_text()[:400]]
    assert len(read) > 40


# ---------------------------------------------------------------------------------- other readers
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("text", [DEEP, '{"graph": ' + "9" * 5000 + "}", "[1, 2]", '{"graph": {"nodes": 5}}'])
def test_a_hostile_explore_graph_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    graph = tmp_path / "graph.json"
    graph.write_text(text)
    assert main(["replay", str(TRACE), "--coverage", str(graph)]) == 2
    assert str(graph) in _one_line_error(capsys)


@pytest.mark.parametrize(
    ("reader", "error"),
    [
        ("conformance.designs.trace:read", "DesignTraceError"),
        ("conformance.clients.traces:read_trace", "UsageError"),
    ],
)
def test_design_and_assignor_trace_readers_bound_their_lines(tmp_path: Path, reader: str, error: str) -> None:
    import importlib

    module, name = reader.split(":")
    path = tmp_path / "t.ndjson"
    path.write_text(DEEP + "\n" + "{}\n" + "{}\n")
    with pytest.raises(Exception, match=r"t.ndjson:1: nested deeper than 64 levels") as info:
        getattr(importlib.import_module(module), name)(path)
    assert type(info.value).__name__ == error


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ({"clients": 5}, "state.clients: expected a mapping"),
        ({"clients": {"c1": {"member_id": 7}}}, "state.clients: member_id must be a string"),
        ({"group": {"generation": 1}}, "state.group: a group with a generation needs a string 'state'"),
    ],
)
def test_a_state_summary_of_the_wrong_shape_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], state: dict[str, object], message: str
) -> None:
    step = json.loads(TRACE.read_text().splitlines()[1])
    step["state"] = state
    path = _with_line(tmp_path, TRACE, 1, json.dumps(step))
    assert main(["show", str(path)]) == 2
    assert f"hostile.ndjson:2: {message}" in _one_line_error(capsys)


CONSUMER = ROOT / "tests" / "regressions" / "consumer.assign_only_free_9ff9d75ee9ce.ndjson"


def test_a_backtracking_topic_regex_in_a_request_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The model matches topic regexes with Python's backtracking engine (Kafka uses RE2J)."""
    lines = CONSUMER.read_text().splitlines()
    at = next(i for i, x in enumerate(lines) if '"subscribed_topic_regex":null' in x)
    path = _with_line(
        tmp_path,
        CONSUMER,
        at,
        lines[at].replace('"subscribed_topic_regex":null', '"subscribed_topic_regex":"(a+)+$"', 1),
    )
    assert main(["replay", str(path)]) == 2
    assert (
        f"hostile.ndjson:{at + 1}: event: subscribed_topic_regex: regex '(a+)+$' is not of the safe shape"
        in _one_line_error(capsys)
    )


def test_a_backtracking_regex_in_a_scenario_client_is_refused(
    spec_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = SCENARIO.replace("protocol: classic", "protocol: consumer").replace(
        "{name: c1}", "{name: c1, regex: '(a|a)*x'}"
    )
    (spec_dir / "scenarios" / "broken.yaml").write_text(text)
    assert main(["specs", "validate"]) == 2
    assert (
        "broken.yaml:6: clients[0].regex: '(a|a)*x' is not a topic regex of the safe shape"
        in _one_line_error(capsys)
    )


@pytest.mark.parametrize("tag", ["type", "@e", "@"])
@pytest.mark.parametrize("verb", ["replay", "show"])
def test_a_trace_event_naming_a_callable_runs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tag: str, verb: str
) -> None:
    """The trace codec's counterpart of the lake row that named os.system (tests/pipeline/test_lake_model.py)."""
    marker = tmp_path / "ran"
    step = json.loads(TRACE.read_text().splitlines()[1])
    step["event"] = {
        tag: "model.choice:random._os.system",
        "v": f"touch {marker}",
        "command": f"touch {marker}",
    }
    path = _with_line(tmp_path, TRACE, 1, json.dumps(step))
    assert main([verb, str(path)]) == 2
    assert "hostile.ndjson:2: event" in _one_line_error(capsys)
    assert not marker.exists()
