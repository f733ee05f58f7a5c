"""The JSON Schemas of the files people write or hand over: `specs/schemas/` (docs/hostile-input.md).

`invariants.schema.json` (specs/invariants.yaml), `scenario.schema.json` (specs/scenarios/*.yaml)
`trace-header.schema.json` (line 1 of a trace file) and `baseline.schema.json` (``--baseline``). They are generated here from the code's
own registries (variant keys and values, invariant kinds, checkers, the model's settings) and the
bounds of `conformance.strict`, so they cannot drift; `python -m conformance.schemas` rewrites them
and a test checks the committed files. The loaders check every file against them
(`conformance.schema_check`); editors can use them too (docs/scenarios.md#editor-support).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import typing
from typing import Any

from conformance import strict
from conformance.schema_check import SCHEMA_DIR

DRAFT = "https://json-schema.org/draft/2020-12/schema"
NAME = {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}  # client and assignor names
TOPIC = {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,249}$"}  # Kafka's legal topic names
TEXT = {"type": "string", "minLength": 1, "maxLength": 20_000}
ID = {"type": "string", "pattern": "^[a-z0-9_-]+(\\.[a-z0-9_]+)+$", "maxLength": 128}


def integer(lo: int, hi: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": lo, "maximum": hi}


def strings(item: dict[str, Any], most: int) -> dict[str, Any]:
    return {"type": "array", "items": item, "maxItems": most}


def mapping(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return out


MS = integer(0, strict.MAX_VIRTUAL_MS)
TIMEOUT = integer(0, strict.MAX_TIMEOUT_MS)
OPTIONAL_TEXT = {"type": ["string", "null"], "maxLength": 256}


# ---------------------------------------------------------------------------------- shared parts
def variants() -> dict[str, Any]:
    """Variant keys and values of `--variant` (mutant names are checked when the mutant is looked up)."""
    from conformance.engine.variants import variant_keys
    from conformance.protocols import KITS

    props: dict[str, Any] = {}
    for key, spec in sorted(variant_keys(KITS.values()).items()):
        if key in ("mutant", "mixed_mutant"):
            props[key] = {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,79}$"}
        else:
            props[key] = {"enum": list(spec.values)}
    return mapping(props)


def client() -> dict[str, Any]:
    """A virtual member of any protocol (each protocol's runner accepts its own subset)."""
    return mapping(
        {
            "name": NAME,
            "protocol": {"enum": ["classic", "consumer"]},
            "start": {"type": "boolean"},
            "topics": strings(TOPIC, strict.MAX_TOPICS),
            "assignors": strings(NAME, 8),
            "instance_id": OPTIONAL_TEXT,
            "group_id": {"type": "string", "maxLength": 256},
            "client_id": {"type": "string", "maxLength": 256},
            "join_version": integer(0, 9),
            "sync_version": integer(0, 5),
            "heartbeat_version": integer(0, 4),
            "leave_version": integer(0, 5),
            "commit_version": integer(0, 8),
            "commit_joined_generation": {"type": "boolean"},
            "version": integer(0, 1),
            "session_timeout_ms": TIMEOUT,
            "rebalance_timeout_ms": TIMEOUT,
            "server_assignor": OPTIONAL_TEXT,
            "regex": {
                "title": "topic regex of the safe shape (at most two quantifiers, none on a group)",
                "type": ["string", "null"],
                "maxLength": strict.MAX_REGEX,
                "pattern": strict.SAFE_REGEX,
            },
        },
        ("name",),
    )


def _setting(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(hint))}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return TIMEOUT
    if hint is str:
        return {"type": "string", "maxLength": 256}
    if origin in (tuple, frozenset):
        return strings({"type": "string", "maxLength": 256}, 64)
    raise TypeError(f"no schema for setting type {hint!r}")


def config() -> dict[str, Any]:
    """Coordinator settings: the fields of the classic and consumer models' configs, and the mixed
    run's `policy` and `tick_ms`."""
    from model.classic.state import ClassicConfig
    from model.consumer.txn import ConsumerCoordinatorConfig
    from model.mixed.state import MigrationPolicy

    props: dict[str, Any] = {}
    for cls in (ClassicConfig, ConsumerCoordinatorConfig):
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            props.setdefault(f.name, _setting(hints[f.name]))
    props["policy"] = {"enum": [p.value for p in MigrationPolicy]}
    props["tick_ms"] = integer(strict.MIN_EVERY_MS, strict.MAX_TICK_MS)
    return mapping(dict(sorted(props.items())))


def topics() -> dict[str, Any]:
    return {
        "type": "object",
        "propertyNames": TOPIC,
        "additionalProperties": integer(1, strict.MAX_PARTITIONS),
        "maxProperties": strict.MAX_TOPICS,
    }


# ---------------------------------------------------------------------------------- scenarios
def steps() -> dict[str, Any]:
    """One verb per step; the argument of each verb (the union over the protocols' runners)."""
    nothing = {"anyOf": [{"type": ["null", "boolean"]}, {"type": "object", "maxProperties": 0}]}
    topic_size = mapping(
        {"topic": TOPIC, "partitions": integer(1, strict.MAX_PARTITIONS)}, ("topic", "partitions")
    )
    verbs: dict[str, Any] = {
        "settle": {
            "anyOf": [
                {"type": "null"},
                strings(NAME, strict.MAX_CLIENTS),
                mapping({"bound_ms": MS}),
            ]
        },
        "run_for": {
            "anyOf": [
                integer(1, strict.MAX_VIRTUAL_MS),
                mapping(
                    {
                        "ms": integer(1, strict.MAX_VIRTUAL_MS),
                        "every": integer(strict.MIN_EVERY_MS, strict.MAX_VIRTUAL_MS),
                        "clients": strings(NAME, strict.MAX_CLIENTS),
                    },
                    ("ms",),
                ),
            ]
        },
        "advance": MS,
        "failover": nothing,
        "append_failure": nothing,
        "create_topic": topic_size,
        "add_partitions": topic_size,
        "delete_topic": TOPIC,
        "subscribe": mapping(
            {"client": NAME, "topics": strings(TOPIC, strict.MAX_TOPICS)}, ("client", "topics")
        ),
        "protocols": mapping({"client": NAME, "assignors": strings(NAME, 8)}, ("client", "assignors")),
        "send": mapping(
            {
                "client": NAME,
                "request": {"enum": ["heartbeat", "sync", "join"]},
                "generation": {"anyOf": [integer(-1, 2**31 - 1), {"const": "stale"}]},
                "member_id": {"type": "string", "maxLength": 256},
                "instance_id": OPTIONAL_TEXT,
                "version": integer(0, 9),
            },
            ("client", "request"),
        ),
        "stale_heartbeat": mapping({"client": NAME, "delta": integer(-(2**31), 2**31 - 1)}, ("client",)),
        "expect": expectations(),
    }
    for verb in (
        "step", "stall", "resume", "lose_response", "commit", "leave", "restart", "rejoin", "unsubscribe",
        "stale_subscription", "slow", "reconcile", "duplicate", "start", "stop", "crash",
    ):  # fmt: skip
        verbs[verb] = NAME
    step = {
        "title": "step verb",
        "type": "object",
        "properties": dict(sorted(verbs.items())),
        "additionalProperties": False,
        "minProperties": 1,
        "maxProperties": 1,
    }
    return {"type": "array", "items": step, "minItems": 1, "maxItems": strict.MAX_STEPS}


def expectations() -> dict[str, Any]:
    """What an `expect` step may assert (the union over the protocols' runners)."""
    text, count = {"type": ["string", "null"], "maxLength": 256}, {"type": ["integer", "null"]}

    def per_client(value: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "propertyNames": NAME, "additionalProperties": value, "maxProperties": 64}

    names = strings(NAME, strict.MAX_CLIENTS)
    return mapping(
        {
            "state": text, "protocol": text, "leader": text, "group_type": text,
            "generation": count, "group_epoch": count, "assignment_epoch": count, "members": count,
            "classic_members": count,
            "last_error": per_client(text), "phase": per_client(text), "client_state": per_client(text),
            "member_state": per_client(text), "epoch": per_client(count),
            "owned": per_client(strings({"type": "string", "maxLength": 256}, 4096)),
            "converged": names, "owns_nothing": names,
        }
    )  # fmt: skip


def scenario() -> dict[str, Any]:
    expectation = mapping(
        {
            "variants": {"$ref": "#/$defs/variants"},
            "violated": strings(ID, 64),
            "passes": {"type": "boolean"},
        },
        ("variants",),
    )
    body = mapping(
        {
            "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,79}$"},
            "title": TEXT,
            "source": TEXT,
            "protocol": {"enum": ["classic", "consumer", "mixed"]},
            "notes": TEXT,
            "topics": topics(),
            "clients": {"type": "array", "items": {"$ref": "#/$defs/client"}, "maxItems": strict.MAX_CLIENTS},
            "config": {"$ref": "#/$defs/config"},
            "variants": {"$ref": "#/$defs/variants"},
            "steps": steps(),
            "expect": {"type": ["array", "null"], "items": expectation, "maxItems": 64},
        },
        ("id", "title", "source", "protocol", "steps"),
    )
    return _document(
        "scenario", "A groupcheck scenario (specs/scenarios/*.yaml, docs/scenarios.md)", body,
        {"variants": variants(), "client": client(), "config": config()},
    )  # fmt: skip


# ---------------------------------------------------------------------------------- invariants
def invariants() -> dict[str, Any]:
    from conformance.specs import CHECKERS, NATURES
    from model.invariants import KINDS

    entry = mapping(
        {
            "id": ID,
            "kind": {"enum": list(KINDS)},
            "nature": {"enum": list(NATURES)},
            "protocol": {"type": "string", "pattern": "^[a-z0-9]+$"},
            "statement": TEXT,
            "source": TEXT,
            "checkers": {
                "type": "array",
                "items": {"enum": sorted(CHECKERS)},
                "minItems": 1,
                "uniqueItems": True,
            },  # fmt: skip
            "lemmas": strings(ID, 32),
            "bound": integer(0, 1_000_000),
        },
        ("id", "kind", "nature", "protocol", "statement", "source", "checkers"),
    )
    lemma = mapping({"id": ID, "statement": TEXT, "source": TEXT}, ("id", "statement", "source"))
    body = mapping(
        {
            "version": {"const": 1},
            "invariants": {"type": "array", "items": entry, "maxItems": 5000},
            "lemmas": {"type": "array", "items": lemma, "maxItems": 5000},
        },
        ("version", "invariants"),
    )
    return _document("invariants", "The groupcheck invariant catalogue (specs/invariants.yaml)", body, {})


# ---------------------------------------------------------------------------------- trace header
def trace_header() -> dict[str, Any]:
    from conformance.formats.trace_file import FORMAT, PROTOCOLS, VERSION
    from model.mixed.state import MigrationPolicy

    group_setup = mapping(
        {
            "topics": topics(),
            "clients": {"type": "array", "items": {"$ref": "#/$defs/client"}, "maxItems": strict.MAX_CLIENTS},
            "config": {"$ref": "#/$defs/config"},
        }
    )
    mixed_setup = mapping(
        {
            "policy": {"enum": [p.value for p in MigrationPolicy]},
            "seed": integer(strict.INT_MIN, strict.INT_MAX),
            "tick_ms": integer(strict.MIN_EVERY_MS, strict.MAX_TICK_MS),
            "classic_max_size": integer(1, 1_000),
            "consumer_max_size": integer(1, 1_000),
        }
    )
    short_text = {"type": "string", "maxLength": 256}
    body = mapping(
        {
            "kind": {"const": "header"},
            "format": {"const": FORMAT},
            "version": integer(1, VERSION),
            "groupcheck": short_text,
            "target": mapping({"name": short_text, "version": short_text}, ("name", "version")),
            "protocol": {"enum": list(PROTOCOLS)},
            "variants": {"$ref": "#/$defs/variants"},
            "seed": integer(strict.INT_MIN, strict.INT_MAX),
            "origin": {"type": "object", "properties": {"kind": short_text}, "required": ["kind"]},
            "setup": {"type": "object"},
        },
        (
            "kind",
            "format",
            "version",
            "groupcheck",
            "target",
            "protocol",
            "variants",
            "seed",
            "origin",
            "setup",
        ),
    )
    body["if"] = {"properties": {"protocol": {"const": "mixed"}}}
    body["then"] = {"properties": {"setup": mixed_setup}}
    body["else"] = {"properties": {"setup": group_setup}}
    return _document(
        "trace-header", f"Line 1 of a groupcheck trace, format version {VERSION} (docs/traces.md#format)", body,
        {"variants": variants(), "client": client(), "config": config()},
    )  # fmt: skip


# ---------------------------------------------------------------------------------- design scenarios
#: the virtual time one design scenario may run: its `advance` and `settle` ops together
#: (the driver judges every 100 ms tick; the committed scenarios use at most 150 s)
DESIGN_SCENARIO_MAX_MS = 1_800_000


def design_op(name: str, cls: Any) -> dict[str, Any]:
    """One op of the design-neutral workload (model/designs/ops.py), field by field."""
    from model.designs import ops as o

    label = {"type": "string", "minLength": 1, "maxLength": o.MAX_NAME, "pattern": "^[^\\x00-\\x1f]+$"}
    field_schema = {
        "member": label, "topic": label,
        "topics": {"type": "array", "items": label, "minItems": 1, "maxItems": 64},
        "regex": {"type": "boolean"},
        "ms": integer(0, o.MAX_MS),
        "partitions": integer(0, o.MAX_PARTITIONS),
        "version": integer(1, max(o.STRATEGIES)),
    }  # fmt: skip
    props: dict[str, Any] = {"op": {"const": name}}
    required = ["op"]
    for f in dataclasses.fields(cls):
        props[f.name] = field_schema[f.name]
        if f.default is dataclasses.MISSING:
            required.append(f.name)
    return mapping(props, tuple(required))


def design_scenario() -> dict[str, Any]:
    """A failure case of a weighed design (specs/scenarios/designs/, docs/designs.md)."""
    from model.designs import ops as o
    from model.designs.invariants import DESIGN_REGISTRY

    expectation = mapping(
        {
            "design": {"type": "string", "minLength": 1, "maxLength": 256},
            "violated": {"type": "array", "items": {"enum": sorted(DESIGN_REGISTRY)}, "minItems": 1},
            "passes": {"const": True},
        },
        ("design",),
    )
    expectation["oneOf"] = [{"required": ["violated"]}, {"required": ["passes"]}]
    body = mapping(
        {
            "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,79}$"},
            "title": TEXT,
            "source": TEXT,
            "notes": TEXT,
            "seed": integer(strict.INT_MIN, strict.INT_MAX),
            "topics": {
                "type": "object",
                "propertyNames": TOPIC,
                "additionalProperties": integer(1, o.MAX_PARTITIONS),
                "minProperties": 1,
                "maxProperties": strict.MAX_TOPICS,
            },
            "steps": {
                "type": "array",
                "minItems": 1,
                "maxItems": 500,
                "items": {
                    "title": "design op",
                    "type": "object",
                    "required": ["op"],
                    "properties": {"op": {"enum": sorted(o.OP_TYPES)}},
                    "allOf": [
                        {"if": {"properties": {"op": {"const": n}}}, "then": {"$ref": f"#/$defs/{n}"}}
                        for n in sorted(o.OP_TYPES)
                    ],
                },
            },
            "expect": {"type": "array", "minItems": 1, "maxItems": 64, "items": expectation},
        },
        ("id", "title", "source", "topics", "steps", "expect"),
    )
    defs = {n: design_op(n, cls) for n, cls in sorted(o.OP_TYPES.items())}
    return _document("design-scenario", "A design scenario (docs/designs.md#scenarios)", body, defs)


# ---------------------------------------------------------------------------------- baselines
def baseline() -> dict[str, Any]:
    from conformance.formats.trace_file import PROTOCOLS

    entry = mapping(
        {
            "protocol": {"enum": list(PROTOCOLS)},
            "signature": {"type": "string", "minLength": 1, "maxLength": 512},
            "reason": TEXT,
        },
        ("protocol", "signature", "reason"),
    )
    body = mapping(
        {
            "version": {"const": 1},
            "target": {"type": "string", "maxLength": 256},
            "divergences": {"type": "array", "items": entry, "maxItems": 10_000},
        },
        ("version", "divergences"),
    )
    return _document("baseline", "Known divergences of a target (--baseline, docs/keep-going.md)", body, {})


def _document(name: str, title: str, body: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    out = {"$schema": DRAFT, "$id": f"https://groupcheck.invalid/schemas/{name}.schema.json", "title": title}
    out.update(body)
    if defs:
        out["$defs"] = defs
    return out


SCHEMAS = {
    "invariants": invariants,
    "scenario": scenario,
    "trace-header": trace_header,
    "design-scenario": design_scenario,
    "baseline": baseline,
}


def render(name: str) -> str:
    return json.dumps(SCHEMAS[name](), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    SCHEMA_DIR.mkdir(parents=True, exist_ok=True)
    for schema_name in SCHEMAS:
        path = SCHEMA_DIR / f"{schema_name}.schema.json"
        path.write_text(render(schema_name), encoding="utf-8")
        sys.stdout.write(f"wrote {path}\n")
