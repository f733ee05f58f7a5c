"""Loading `specs/`: the invariant catalogue and named scenarios (docs/invariants.md, docs/scenarios.md).

Files are read under the strict discipline (`conformance.strict`: bounded size, nesting and
integers, safe loader, no aliases) and checked against `specs/schemas/` (docs/hostile-input.md);
positions come from the composed document, so every error names file:line and field. The
catalogue must match the model's registry exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conformance import schema_check, strict
from conformance.errors import SpecError
from conformance.resources import specs_dir
from model.invariants import KINDS, load_all

SPECS_DIR = specs_dir()  # the repository's specs/, installed as conformance._specs
CHECKERS = frozenset({"hypothesis", "z3", "trace", "spark", "scenario", "explore"})
INVARIANT_FIELDS = ("id", "kind", "nature", "protocol", "statement", "source", "checkers")
#: promise: what a client may rely on, from the protocol's documents; restatement: a rule of Kafka's code
NATURES = ("promise", "restatement")


@dataclass(frozen=True)
class InvariantSpec:
    id: str
    kind: str
    protocol: str
    statement: str
    source: str
    checkers: tuple[str, ...]
    line: int
    extra: dict[str, Any] = field(default_factory=dict)
    nature: str = "restatement"


def read_yaml(path: Path) -> tuple[Any, Any]:
    """(data, node) of a YAML file read under the strict discipline (conformance/strict.py): a
    syntax error, a non-UTF-8 byte, an alias, deep nesting or a huge integer is a SpecError with
    file:line."""
    return strict.yaml_document(path, SpecError)


def check_schema(data: Any, node: Any, schema: str, path: Path) -> None:
    """``data`` against specs/schemas/<schema>.schema.json; a SpecError naming file:line and field."""
    try:
        schema_check.check(data, schema)
    except strict.Malformed as exc:
        raise SpecError(exc.at(f"{path}:{strict.node_line(node, exc.path)}")) from None


def _item_lines(node: Any, key: str) -> list[int]:
    """1-based line of each item of the top-level list `key`."""
    if not isinstance(node, yaml.MappingNode):
        return []
    for k, v in node.value:
        if k.value == key and isinstance(v, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in v.value]
    return []


def load_invariants(path: Path | None = None, *, check_registry: bool = True) -> dict[str, InvariantSpec]:
    path = path or SPECS_DIR / "invariants.yaml"
    data, node = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("invariants"), list):
        raise SpecError(f"{path}:1: expected a mapping with an 'invariants' list")
    _missing_fields(data["invariants"], _item_lines(node, "invariants"), path)
    check_schema(data, node, "invariants", path)
    lines = _item_lines(node, "invariants")
    specs: dict[str, InvariantSpec] = {}
    for i, entry in enumerate(data["invariants"]):
        line = lines[i] if i < len(lines) else 1
        where = f"{path}:{line}"
        if not isinstance(entry, dict):
            raise SpecError(f"{where}: invariant entry must be a mapping")
        for name in INVARIANT_FIELDS:
            if name not in entry or entry[name] in (None, ""):
                raise SpecError(f"{where}: invariant {entry.get('id', '?')!r} lacks field '{name}'")
        unknown = set(entry) - set(INVARIANT_FIELDS) - {"lemmas", "bound"}
        if unknown:
            raise SpecError(f"{where}: invariant {entry['id']!r} has unknown field(s) {sorted(unknown)}")
        if entry["kind"] not in KINDS:
            raise SpecError(f"{where}: invariant {entry['id']!r}: kind {entry['kind']!r} not one of {KINDS}")
        checkers = entry["checkers"]
        if not isinstance(checkers, list) or not set(checkers) <= CHECKERS:
            raise SpecError(
                f"{where}: invariant {entry['id']!r}: checkers must be a list drawn from {sorted(CHECKERS)}"
            )
        if entry["id"] in specs:
            raise SpecError(
                f"{where}: invariant {entry['id']!r} declared twice (first at line {specs[entry['id']].line})"
            )
        extra = {k: entry[k] for k in ("lemmas", "bound") if k in entry}
        specs[entry["id"]] = InvariantSpec(
            str(entry["id"]),
            str(entry["kind"]),
            str(entry["protocol"]),
            str(entry["statement"]),
            str(entry["source"]),
            tuple(checkers),
            line,
            extra,
            str(entry["nature"]),
        )
    if check_registry:
        check_against_registry(specs, path)
    return specs


def _missing_fields(entries: list[Any], lines: list[int], path: Path) -> None:
    """An entry without one of the required fields, named by its id (before the schema's own words)."""
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        for name in INVARIANT_FIELDS:
            if name not in entry or entry[name] is None or entry[name] == "":
                line = lines[i] if i < len(lines) else 1
                shown = strict.short(entry.get("id", "?"))
                raise SpecError(f"{path}:{line}: invariant {shown} lacks field '{name}'")


def check_against_registry(specs: dict[str, InvariantSpec], path: Path) -> None:
    registry = load_all()
    present = {inv.protocol for inv in registry.values()}
    for inv_id, spec in specs.items():
        inv = registry.get(inv_id)
        if inv is None and spec.protocol not in present:
            continue  # that protocol's package is not part of this build yet
        if inv is None:
            raise SpecError(f"{path}:{spec.line}: invariant {inv_id!r} has no implementation in the model")
        if inv.kind != spec.kind or inv.protocol != spec.protocol:
            raise SpecError(
                f"{path}:{spec.line}: invariant {inv_id!r} is {spec.kind}/{spec.protocol} here "
                f"but {inv.kind}/{inv.protocol} in the code"
            )
    missing = sorted(set(registry) - set(specs))
    if missing:
        raise SpecError(f"{path}: implemented invariants missing from the catalogue: {', '.join(missing)}")


# ---------------------------------------------------------------------- scenarios
SCENARIO_FIELDS = ("id", "title", "source", "protocol", "steps")


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    source: str
    protocol: str
    steps: tuple[dict[str, Any], ...]
    step_lines: tuple[int, ...]
    topics: dict[str, int]
    clients: tuple[dict[str, Any], ...]
    config: dict[str, Any]
    variants: dict[str, str]
    expect: tuple[dict[str, Any], ...]
    path: Path


def load_scenario(path: Path) -> Scenario:
    data, node = read_yaml(path)
    if not isinstance(data, dict):
        raise SpecError(f"{path}:1: a scenario must be a mapping")
    check_schema(data, node, "scenario", path)
    _check_loops(data, node, path)
    for name in SCENARIO_FIELDS:
        if name not in data:
            raise SpecError(f"{path}:1: scenario lacks field '{name}'")
    known = set(SCENARIO_FIELDS) | {"topics", "clients", "config", "variants", "expect", "notes"}
    unknown = set(data) - known
    if unknown:
        raise SpecError(f"{path}:1: unknown scenario field(s) {sorted(unknown)}")
    steps = data["steps"]
    if not isinstance(steps, list) or not steps:
        raise SpecError(f"{path}:1: 'steps' must be a non-empty list")
    lines = _item_lines(node, "steps")
    for i, step in enumerate(steps):
        if not isinstance(step, dict) or len(step) != 1:
            line = lines[i] if i < len(lines) else 1
            raise SpecError(f"{path}:{line}: each step is a mapping with exactly one verb")
    expect = data.get("expect") or []
    if not isinstance(expect, list):
        raise SpecError(f"{path}:1: 'expect' must be a list")
    return Scenario(
        str(data["id"]),
        str(data["title"]),
        str(data["source"]),
        str(data["protocol"]),
        tuple(steps),
        tuple(lines),
        {str(k): int(v) for k, v in (data.get("topics") or {}).items()},
        tuple(data.get("clients") or ()),
        dict(data.get("config") or {}),
        {str(k): str(v) for k, v in (data.get("variants") or {}).items()},
        tuple(expect),
        path,
    )


#: the tick of a `run_for` step when it names none (the classic and consumer runners' defaults, the
#: mixed run's `tick_ms`)
DEFAULT_EVERY_MS = {"classic": 1000, "consumer": 250, "mixed": 1000}


def _check_loops(data: dict[str, Any], node: Any, path: Path) -> None:
    """The `run_for` loops of a scenario: the protocol's form (``ms``/``every`` mapping; a number of
    ms for mixed groups) and at most `strict.MAX_TICKS` iterations over all steps together."""
    protocol = data["protocol"]
    every = (data.get("config") or {}).get("tick_ms", DEFAULT_EVERY_MS[protocol])
    total = 0
    for i, step in enumerate(data["steps"]):
        ((verb, arg),) = step.items()
        if verb != "run_for":
            continue
        where = f"{path}:{strict.node_line(node, ('steps', i))}: steps[{i}].run_for"
        if (protocol == "mixed") != isinstance(arg, int):
            form = "a number of ms" if protocol == "mixed" else "a mapping {ms, every, clients}"
            raise SpecError(f"{where}: a {protocol} scenario takes {form}")
        ms, tick = (arg, every) if isinstance(arg, int) else (arg["ms"], arg.get("every", every))
        total += -(-ms // tick)
        if total > strict.MAX_TICKS:
            raise SpecError(f"{where}: the run_for steps add up to more than {strict.MAX_TICKS} ticks")


def load_scenarios(directory: Path | None = None) -> dict[str, Scenario]:
    directory = directory or SPECS_DIR / "scenarios"
    out: dict[str, Scenario] = {}
    for path in sorted(directory.glob("*.yaml")):
        sc = load_scenario(path)
        if sc.id in out:
            raise SpecError(f"{path}:1: scenario id {sc.id!r} also in {out[sc.id].path}")
        out[sc.id] = sc
    return out
