"""Generated scenario and catalogue YAML: loading either fails with ``file:line:`` or gives a spec
within every bound, and running an accepted scenario ends in the exit-code contract without a
traceback (docs/hostile-input.md)."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import event, given, settings
from hypothesis import strategies as st

from conformance import schema_check, specs, strict
from conformance.cli.main import main
from conformance.errors import SpecError

from .support import FUZZ, unforeseen

SPECS = Path(specs.SPECS_DIR)
SEEDS = ["kafka-7026.yaml", "kafka-16147.yaml", "kip-848-rolling-upgrade.yaml", "leader-failure.yaml"]
DEADLINE_S = 120.0

scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=10), st.sampled_from([0, -1, 1, 10, 3_600_000, 3_600_001, "1e12", "c1", "t", "v9"]),
)  # fmt: skip
value = st.recursive(
    scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)  # fmt: skip
VERBS = ["run_for", "advance", "create_topic", "settle", "step", "send", "expect", "subscribe", "stall",
         "failover", "add_partitions", "stale_heartbeat", "start", "explode"]  # fmt: skip


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


def _put(obj: Any, path: tuple[Any, ...], new: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = new


def _plausible(draw: st.DrawFn, verb: str, names: list[str]) -> Any:
    """An argument of the right shape for ``verb`` (by the schema), with odd contents: unknown
    clients and topics, a verb of another protocol, edge values within the bounds."""
    name = draw(st.sampled_from([*names, "ghost"]))
    small = st.integers(0, 8000)
    shapes: dict[str, Any] = {
        "run_for": st.one_of(
            st.integers(1, 5000),
            st.fixed_dictionaries({"ms": st.integers(1, 5000)}, optional={"every": st.integers(10, 2000),
                                  "clients": st.lists(st.sampled_from([*names, "ghost"]), max_size=3)}),
        ),
        "advance": small,
        "create_topic": st.fixed_dictionaries({"topic": st.sampled_from(["t", "u"]), "partitions": st.integers(1, 8)}),
        "add_partitions": st.fixed_dictionaries({"topic": st.sampled_from(["t", "u"]), "partitions": st.integers(1, 8)}),
        "settle": st.one_of(st.just({}), st.lists(st.sampled_from([*names, "ghost"]), max_size=3),
                            st.fixed_dictionaries({"bound_ms": small})),
        "send": st.fixed_dictionaries(
            {"client": st.just(name), "request": st.sampled_from(["heartbeat", "sync", "join"])},
            optional={"generation": st.one_of(st.integers(-1, 5), st.just("stale")), "member_id": st.text(max_size=5)},
        ),
        "subscribe": st.fixed_dictionaries({"client": st.just(name), "topics": st.lists(st.sampled_from(["t", "u", "v"]), max_size=2)}),
        "stale_heartbeat": st.fixed_dictionaries({"client": st.just(name)}, optional={"delta": st.integers(-3, 3)}),
        "expect": st.fixed_dictionaries({}, optional={
            "state": st.sampled_from(["Stable", "Empty", None]), "generation": st.integers(0, 3), "members": st.integers(0, 3),
            "owned": st.just({name: ["t-0"]}), "last_error": st.just({name: "NONE"}), "epoch": st.just({name: 1}),
            "converged": st.just([name]), "phase": st.just({name: "stable"}),
        }),
        "failover": st.sampled_from([{}, True, None]),
        "delete_topic": st.sampled_from(["t", "u"]),
    }  # fmt: skip
    return draw(shapes.get(verb, st.just(name)))


@st.composite
def hostile_scenario(draw: st.DrawFn) -> bytes:
    data = yaml.safe_load((SPECS / "scenarios" / draw(st.sampled_from(SEEDS))).read_text())
    data["id"] = "fuzzed"
    how = draw(st.sampled_from(["value", "step", "plausible", "plausible", "text", "bytes"]))
    if how == "value":
        _put(data, draw(st.sampled_from(_paths(data))), draw(value))
    elif how == "step":
        at = draw(st.integers(0, len(data["steps"])))
        data["steps"].insert(at, {draw(st.sampled_from(VERBS)): draw(value)})
    elif how == "plausible":
        names = [str(c.get("name")) for c in data.get("clients") or []]
        for _ in range(draw(st.integers(1, 3))):
            verb = draw(
                st.sampled_from(
                    VERBS[:-1] + ["leave", "restart", "resume", "rejoin", "stop", "crash", "commit"]
                )
            )
            data["steps"].insert(
                draw(st.integers(0, len(data["steps"]))), {verb: _plausible(draw, verb, names)}
            )
    text = yaml.safe_dump(data, sort_keys=False).encode()
    if how == "text":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.text(max_size=6)).encode() + text[at:]
    elif how == "bytes":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.binary(min_size=1, max_size=4)) + text[at:]
    return text


@settings(FUZZ, max_examples=max(15, FUZZ.max_examples // 2))  # an accepted scenario runs (~0.2-2 s)
@given(text=hostile_scenario())
def test_a_hostile_scenario_is_refused_by_line_or_runs_within_the_contract(
    text: bytes, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    root = tmp_path_factory.mktemp("specs")
    (root / "scenarios").mkdir()
    (root / "invariants.yaml").write_text((SPECS / "invariants.yaml").read_text())
    path = root / "scenarios" / "fuzzed.yaml"
    path.write_bytes(text)
    try:
        scenario = specs.load_scenario(path)
    except SpecError as exc:
        assert str(exc).startswith(f"{path}:"), str(exc)
        event("load: refused with file:line")
        return
    data, _ = strict.yaml_document(path)
    schema_check.check(data, "scenario")  # nothing outside the schema got through
    monkeypatch.setattr(specs, "SPECS_DIR", root)
    capsys.readouterr()
    start = time.monotonic()
    code = main(["scenario", "run", scenario.id])
    err = capsys.readouterr().err
    assert code in (0, 1, 2), code
    event(f"scenario run: exit {code}")
    assert not unforeseen(err), err
    assert time.monotonic() - start < DEADLINE_S
    if code == 2:
        assert err.count("\n") == 1, err


CATALOGUE = yaml.safe_load((SPECS / "invariants.yaml").read_text())


@settings(FUZZ, max_examples=max(10, FUZZ.max_examples // 4))  # a catalogue takes ~0.4 s to load
@given(data=st.data())
def test_a_hostile_catalogue_is_refused_by_line_or_fits_its_schema(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    catalogue = copy.deepcopy(CATALOGUE)
    entry = data.draw(st.integers(0, len(catalogue["invariants"]) - 1))
    paths = [p for p in _paths(catalogue) if p[:2] == ("invariants", entry)] + [("version",), ("lemmas",)]
    _put(catalogue, data.draw(st.sampled_from(paths)), data.draw(value))
    path = tmp_path_factory.mktemp("catalogue") / "invariants.yaml"
    path.write_text(yaml.safe_dump(catalogue, sort_keys=False))
    try:
        loaded = specs.load_invariants(path)
    except SpecError as exc:
        assert str(exc).startswith(f"{path}:"), str(exc)
        event("refused with file:line")
        return
    event("accepted")
    assert all(isinstance(s.id, str) and s.checkers for s in loaded.values())
    schema_check.check(yaml.safe_load(path.read_text()), "invariants")
