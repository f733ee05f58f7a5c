"""Named design scenarios: the failure cases the seeds name, as YAML under specs/scenarios/designs/.

A scenario is topics, a list of design-neutral ops and expectations per design (``name`` or
``name:key=value,...``): ``violated: [ids]`` (at least these predicates fail) or ``passes: true``
(none does). Files are read with the strict loader, checked against
specs/schemas/design-scenario.schema.json and decoded through the fixed op registry; their advance
and settle ops together run at most `DESIGN_SCENARIO_MAX_MS` of virtual time. A bad file is a
`SpecError` naming file:line and field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from conformance.errors import SpecError
from conformance.schemas import DESIGN_SCENARIO_MAX_MS
from conformance.specs import SPECS_DIR, check_schema, read_yaml
from model.designs import make_engine, parse_design
from model.designs import ops as o
from model.designs.driver import Run, run
from model.designs.invariants import DESIGN_REGISTRY
from model.designs.net import DesignError

DIRECTORY = SPECS_DIR / "scenarios" / "designs"
FIELDS = {"id", "title", "source", "topics", "steps", "expect", "notes", "seed"}
MAX_STEPS = 500


@dataclass
class Expectation:
    design: str
    options: dict[str, str]
    violated: tuple[str, ...] = ()
    passes: bool = False
    line: int = 0


@dataclass
class DesignScenario:
    id: str
    title: str
    source: str
    topics: dict[str, int]
    ops: list[Any]
    expect: list[Expectation]
    path: Path
    seed: int = 0
    notes: str = ""


@dataclass
class Outcome:
    expectation: Expectation
    result: Run
    met: bool
    why: str = ""


def _lines(node: Any, key: str) -> list[int]:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == key and isinstance(v, yaml.SequenceNode):
                return [item.start_mark.line + 1 for item in v.value]
    return []


def load(path: Path) -> DesignScenario:
    data, node = read_yaml(path)
    if not isinstance(data, dict):
        raise SpecError(f"{path}:1: a scenario is a mapping")
    check_schema(data, node, "design-scenario", path)
    unknown = sorted(set(data) - FIELDS)
    missing = sorted({"id", "title", "source", "topics", "steps", "expect"} - set(data))
    if unknown or missing:
        raise SpecError(f"{path}:1: field(s) {missing} missing, {unknown} unknown")
    topics = data["topics"]
    if not isinstance(topics, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and 0 < v <= o.MAX_PARTITIONS for k, v in topics.items()
    ):
        raise SpecError(f"{path}:1: field 'topics' must map topic names to partition counts")
    steps, lines = data["steps"], _lines(node, "steps")
    if not isinstance(steps, list) or not 0 < len(steps) <= MAX_STEPS:
        raise SpecError(f"{path}:1: field 'steps' must list 1-{MAX_STEPS} ops")
    ops = []
    for i, step in enumerate(steps):
        try:
            ops.append(o.from_dict(step))
        except o.OpError as exc:
            raise SpecError(f"{path}:{lines[i] if i < len(lines) else 1}: steps[{i}]: {exc}") from None
    virtual = sum(op.ms for op in ops if isinstance(op, o.Advance | o.Settle))
    if virtual > DESIGN_SCENARIO_MAX_MS:
        raise SpecError(
            f"{path}:1: steps: advance and settle run {virtual} ms in all, at most {DESIGN_SCENARIO_MAX_MS}"
        )
    expect, elines = [], _lines(node, "expect")
    if not isinstance(data["expect"], list) or not data["expect"]:
        raise SpecError(f"{path}:1: field 'expect' must list expectations")
    for i, item in enumerate(data["expect"]):
        where = f"{path}:{elines[i] if i < len(elines) else 1}"
        if not isinstance(item, dict) or set(item) - {"design", "violated", "passes"} or "design" not in item:
            raise SpecError(f"{where}: expect[{i}] needs 'design' and one of 'violated', 'passes'")
        try:
            name, options = parse_design(str(item["design"]))
        except DesignError as exc:
            raise SpecError(f"{where}: expect[{i}].design: {exc}") from None
        violated = item.get("violated", [])
        if not isinstance(violated, list) or any(v not in DESIGN_REGISTRY for v in violated):
            raise SpecError(f"{where}: expect[{i}].violated must list design invariant ids")
        if bool(violated) == bool(item.get("passes")):
            raise SpecError(f"{where}: expect[{i}] needs exactly one of 'violated' and 'passes: true'")
        expect.append(
            Expectation(
                name, options, tuple(violated), bool(item.get("passes")), int(where.rsplit(":", 1)[1])
            )
        )
    seed = data.get("seed", 0)
    if not isinstance(seed, int):
        raise SpecError(f"{path}:1: field 'seed' must be an integer")
    return DesignScenario(
        str(data["id"]),
        str(data["title"]),
        str(data["source"]),
        dict(topics),
        ops,
        expect,
        path,
        seed,
        str(data.get("notes", "")),
    )


def load_all(directory: Path | None = None) -> dict[str, DesignScenario]:
    out: dict[str, DesignScenario] = {}
    for path in sorted((directory or DIRECTORY).glob("*.yaml")):
        sc = load(path)
        if sc.id in out:
            raise SpecError(f"{path}:1: scenario id {sc.id!r} already used by {out[sc.id].path.name}")
        out[sc.id] = sc
    return out


def run_one(sc: DesignScenario, exp: Expectation) -> Outcome:
    result = run(make_engine(exp.design, sc.topics, exp.options, sc.seed), sc.ops)
    if exp.passes:
        met = not result.findings
        why = "" if met else f"violated {', '.join(result.violated)}"
    else:
        missing = [v for v in exp.violated if v not in result.violated]
        met = not missing
        why = "" if met else f"did not violate {', '.join(missing)}"
    return Outcome(exp, result, met, why)


def run_scenario(sc: DesignScenario) -> list[Outcome]:
    return [run_one(sc, exp) for exp in sc.expect]


def label(design: str, options: dict[str, str]) -> str:
    return design + (":" + ",".join(f"{k}={v}" for k, v in sorted(options.items())) if options else "")


__all__ = [
    "DIRECTORY",
    "DesignScenario",
    "Expectation",
    "Outcome",
    "label",
    "load",
    "load_all",
    "run_scenario",
]
