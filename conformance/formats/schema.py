"""The JSON Schema of the trace format, generated from the codec's types (so it cannot drift).

`python -m conformance.formats.schema` rewrites `conformance/formats/trace-v1.schema.json`; a test
checks the committed file equals what this module generates and validates written traces with it.
Each line of a trace file is one instance of the schema.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from enum import Enum
from typing import Any

from conformance.formats.codec import _hints, registered, tag_of
from conformance.formats.trace_file import FORMAT, PROTOCOLS, VERSION
from conformance.resources import package_dir
from model.errors import ErrorCode

SCHEMA_PATH = package_dir("conformance.formats") / f"trace-v{VERSION}.schema.json"  # package data


def _value(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if hint is Any or hint is object:  # in the codec's types only responses are untyped: a tagged value
        return {"$ref": "#/$defs/any_value"}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_value(a) for a in typing.get_args(hint)]}
    if hint is type(None):
        return {"type": "null"}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return {"$ref": f"#/$defs/{tag_of(hint)}"}
    if hint is bytes:
        return {"type": "string", "pattern": "^([0-9a-f]{2})*$"}
    if hint is ErrorCode:
        return {"anyOf": [{"enum": [e.name for e in ErrorCode]}, {"type": "integer"}]}
    if isinstance(hint, type) and issubclass(hint, Enum):
        return {"enum": [e.name for e in hint]}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is str:
        return {"type": "string"}
    args = typing.get_args(hint)
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        return {
            "type": "array",
            "prefixItems": [_value(a) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin in (tuple, frozenset, set, list):
        return {"type": "array", "items": _value(args[0]) if args else {}}
    raise TypeError(f"no schema for {hint!r}")


def _defs() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tag, cls in sorted(registered().items()):
        hints = _hints(cls)
        props: dict[str, Any] = {"type": {"const": tag}}
        for f in dataclasses.fields(cls):
            props[f.name] = _value(hints[f.name])
        out[tag] = {
            "type": "object",
            "properties": props,
            # a field the codec omits at its default (added later) may be absent
            "required": [
                "type",
                *[f.name for f in dataclasses.fields(cls) if not f.metadata.get("omit_default")],
            ],
            "additionalProperties": False,
        }
    out["any_value"] = {"anyOf": [{"$ref": f"#/$defs/{tag}"} for tag in sorted(registered())]}
    return out


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required if required is not None else sorted(props),
        "additionalProperties": False,
    }


def schema() -> dict[str, Any]:
    string, integer = {"type": "string"}, {"type": "integer"}
    ids = {"type": "array", "items": string}
    header = _obj(
        {
            "kind": {"const": "header"},
            "format": {"const": FORMAT},
            "version": {"const": VERSION},
            "groupcheck": string,
            "target": _obj({"name": string, "version": string}),
            "protocol": {"enum": list(PROTOCOLS)},
            "variants": {"type": "object", "additionalProperties": string},
            "seed": integer,
            "origin": {"type": "object", "properties": {"kind": string}, "required": ["kind"]},
            "setup": {"type": "object"},
        }
    )
    deliveries = {"anyOf": [{"type": "null"}, {"type": "array", "items": {"$ref": "#/$defs/Delivery"}}]}
    step = _obj(
        {
            "kind": {"const": "step"},
            "n": {"type": "integer", "minimum": 1},
            "now": integer,
            "action": {
                "type": "object",
                "properties": {"op": string, "client": string, "request": {"$ref": "#/$defs/any_value"}},
                "required": ["op"],
            },
            "event": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/any_value"}]},
            "expected": deliveries,
            "actual": deliveries,
            "checks": _obj(
                {
                    "checked": ids,
                    "violated": {"type": "array", "items": _obj({"id": string, "message": string})},
                    "sometimes": ids,
                }
            ),
            "state": {"anyOf": [{"type": "null"}, {"type": "object"}]},
        }
    )
    verdict = _obj(
        {
            "kind": {"const": "verdict"},
            "verdict": {"enum": ["PASSED", "FAILED"]},
            "violated": ids,
            "violations": {
                "type": "array",
                "items": _obj({"id": string, "message": string, "step": integer}),
            },
            "steps": {"type": "integer", "minimum": 0},
        }
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://groupcheck.invalid/trace-v{VERSION}.schema.json",
        "title": f"groupcheck trace, format version {VERSION}: each NDJSON line is one instance",
        "oneOf": [
            {"$ref": "#/$defs/header_line"},
            {"$ref": "#/$defs/step_line"},
            {"$ref": "#/$defs/verdict_line"},
        ],
        "$defs": {"header_line": header, "step_line": step, "verdict_line": verdict, **_defs()},
    }


def render() -> str:
    return json.dumps(schema(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    SCHEMA_PATH.write_text(render())
    sys.stdout.write(f"wrote {SCHEMA_PATH}\n")
