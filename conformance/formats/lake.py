"""Type-tagged JSON for the model's frozen snapshots, so a Parquet row can rebuild an Observation.

The lake stores each step's world, event and deliveries as JSON text (columns `world`, `event`,
`deliveries`). Dataclasses carry their class as ``"@": "module:Name"``; enums, bytes, frozensets,
sets, lists, dicts and read-only mappings are tagged; tuples are plain JSON arrays (the model's containers are tuples).
Decoding only resolves classes from the `model` package, so a lake cannot make the auditor import
arbitrary code; anything else is a `LakeFormatError` naming the offending tag.
Output is deterministic: sorted keys, frozensets in a canonical order, no whitespace.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import importlib
import json
from functools import lru_cache
from types import MappingProxyType
from typing import Any


class LakeFormatError(ValueError):
    """A value in the lake that does not decode (quarantined with this message as the reason)."""


def to_jsonable(value: Any) -> Any:
    if isinstance(value, enum.Enum):  # before int: IntEnum members must come back as members
        cls = type(value)
        return {"@e": f"{cls.__module__}:{cls.__qualname__}", "v": value.value}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return {"@b": base64.b64encode(value).decode("ascii")}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        out: dict[str, Any] = {"@": f"{cls.__module__}:{cls.__qualname__}"}
        for f in dataclasses.fields(value):
            out[f.name] = to_jsonable(getattr(value, f.name))
        return out
    if isinstance(value, tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, list):
        return {"@l": [to_jsonable(v) for v in value]}
    if isinstance(value, frozenset | set):
        items = sorted((to_jsonable(v) for v in value), key=_canonical)
        return {"@fs" if isinstance(value, frozenset) else "@s": items}
    if isinstance(value, dict | MappingProxyType):
        pairs = sorted(([to_jsonable(k), to_jsonable(v)] for k, v in value.items()), key=_canonical)
        return {"@d" if isinstance(value, dict) else "@mp": pairs}
    raise TypeError(f"cannot encode {type(value).__name__} for the trace lake")


def _canonical(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def dumps(value: Any) -> str:
    return json.dumps(to_jsonable(value), sort_keys=True, separators=(",", ":"))


@lru_cache(maxsize=256)
def _resolve(tag: str) -> Any:
    module, _, name = tag.partition(":")
    if not (module == "model" or module.startswith("model.")) or not name:
        raise LakeFormatError(f"type tag {tag!r} is not a class of the model package")
    try:
        obj: Any = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise LakeFormatError(f"unknown type tag {tag!r}") from exc
    return obj


def from_jsonable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(from_jsonable(v) for v in value)
    if not isinstance(value, dict):
        return value
    if "@" in value:
        cls = _resolve(value["@"])
        if not dataclasses.is_dataclass(cls):
            raise LakeFormatError(f"type tag {value['@']!r} is not a dataclass")
        kwargs = {k: from_jsonable(v) for k, v in value.items() if k != "@"}
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise LakeFormatError(f"{value['@']}: {exc}") from exc
    if "@e" in value:
        cls = _resolve(value["@e"])
        try:
            return cls(value["v"])
        except (ValueError, KeyError) as exc:
            raise LakeFormatError(f"{value['@e']}: bad enum value {value.get('v')!r}") from exc
    if "@b" in value:
        try:
            return base64.b64decode(value["@b"], validate=True)
        except (ValueError, TypeError) as exc:
            raise LakeFormatError("bad base64 bytes") from exc
    if "@fs" in value:
        return frozenset(from_jsonable(v) for v in value["@fs"])
    if "@s" in value:
        return {from_jsonable(v) for v in value["@s"]}
    if "@l" in value:
        return [from_jsonable(v) for v in value["@l"]]
    if "@d" in value:
        return {from_jsonable(k): from_jsonable(v) for k, v in value["@d"]}
    if "@mp" in value:
        return MappingProxyType({from_jsonable(k): from_jsonable(v) for k, v in value["@mp"]})
    raise LakeFormatError(f"untagged JSON object with keys {sorted(value)[:5]}")


def loads(text: str) -> Any:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError) as exc:
        raise LakeFormatError(f"not JSON: {exc}") from exc
    return from_jsonable(data)
