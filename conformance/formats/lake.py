"""Type-tagged JSON for the model's frozen snapshots, so a Parquet row can rebuild an Observation.

The lake stores each step's world, event and deliveries as JSON text (columns `world`, `event`,
`deliveries`). Dataclasses carry their class as ``"@": "module:Name"``; enums, bytes, frozensets,
sets, lists, dicts and read-only mappings are tagged; tuples are plain JSON arrays (the model's containers are tuples).
Decoding looks tags up in a fixed registry (the dataclasses and enums the model package defines);
it never imports a module, follows an attribute or calls anything outside that registry, so a
hostile lake cannot run code. Text size, nesting depth and integer size are bounded; anything else
is a `LakeFormatError` naming the offending tag or limit (the row is quarantined with that reason).
Output is deterministic: sorted keys, frozensets in a canonical order, no whitespace.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import importlib
import json
import pkgutil
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


#: The packages whose modules' own dataclasses and enums a lake row may name (worlds, snapshots,
#: events, messages, states): the model's. Nothing outside them decodes.
LAKE_PACKAGES: tuple[str, ...] = ("model",)
MAX_TEXT = 8 * 1024 * 1024  # characters of one lake cell
MAX_DEPTH = 64  # nesting of JSON arrays and objects
MAX_INT = 2**63  # a value outside the signed 64-bit range is not a Kafka field

_REGISTRY: dict[str, Any] = {}


def _registry() -> dict[str, Any]:
    if not _REGISTRY:
        for package_name in LAKE_PACKAGES:
            package = importlib.import_module(package_name)
            names = [m.name for m in pkgutil.walk_packages(package.__path__, package_name + ".")]
            for module_name in [package_name, *sorted(names)]:
                module = importlib.import_module(module_name)
                _register(module_name, vars(module).values())
    return _REGISTRY


def _register(module_name: str, objects: Any) -> None:
    """Only classes the module defines itself (not ones it imports), and only data: dataclasses and enums."""
    for obj in objects:
        if (
            isinstance(obj, type)
            and obj.__module__ == module_name
            and (dataclasses.is_dataclass(obj) or issubclass(obj, enum.Enum))
        ):
            _REGISTRY[f"{module_name}:{obj.__qualname__}"] = obj


def _resolve(tag: Any) -> Any:
    if not isinstance(tag, str):
        raise LakeFormatError(f"type tag {tag!r} is not a string")
    module, _, name = tag.partition(":")
    if not (module == "model" or module.startswith("model.")) or not name:
        raise LakeFormatError(f"type tag {tag[:80]!r} is not a class of the model package")
    cls = _registry().get(tag)
    if cls is None:
        raise LakeFormatError(f"unknown type tag {tag[:80]!r}")
    return cls


def from_jsonable(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise LakeFormatError(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, list):
        return tuple(from_jsonable(v, depth + 1) for v in value)
    if isinstance(value, int) and not isinstance(value, bool) and not -MAX_INT <= value < MAX_INT:
        raise LakeFormatError("integer outside the signed 64-bit range")
    if not isinstance(value, dict):
        return value
    return _tagged(value, depth + 1)


def _items(value: dict[str, Any], key: str) -> list[Any]:
    items = value[key]
    if not isinstance(items, list):
        raise LakeFormatError(f"{key} holds {type(items).__name__}, not a list")
    return items


def _pairs(value: dict[str, Any], key: str) -> list[Any]:
    pairs = _items(value, key)
    if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise LakeFormatError(f"{key} holds something other than [key, value] pairs")
    return pairs


def _tagged(value: dict[str, Any], depth: int) -> Any:
    dec = from_jsonable
    if "@" in value:
        cls = _resolve(value["@"])
        if not dataclasses.is_dataclass(cls):
            raise LakeFormatError(f"type tag {value['@']!r} is not a dataclass")
        kwargs = {k: dec(v, depth) for k, v in value.items() if k != "@"}
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise LakeFormatError(f"{value['@']}: {exc}") from exc
    if "@e" in value:
        cls = _resolve(value["@e"])
        if not issubclass(cls, enum.Enum):
            raise LakeFormatError(f"type tag {value['@e']!r} is not an enum")
        try:
            return cls(value["v"])
        except (ValueError, KeyError, TypeError) as exc:
            raise LakeFormatError(f"{value['@e']}: bad enum value {value.get('v')!r}") from exc
    if "@b" in value:
        if not isinstance(value["@b"], str):
            raise LakeFormatError("bytes are not a base64 string")
        try:
            return base64.b64decode(value["@b"], validate=True)
        except (ValueError, TypeError) as exc:
            raise LakeFormatError("bad base64 bytes") from exc
    try:
        if "@fs" in value:
            return frozenset(dec(v, depth) for v in _items(value, "@fs"))
        if "@s" in value:
            return {dec(v, depth) for v in _items(value, "@s")}
        if "@l" in value:
            return [dec(v, depth) for v in _items(value, "@l")]
        if "@d" in value:
            return {dec(k, depth): dec(v, depth) for k, v in _pairs(value, "@d")}
        if "@mp" in value:
            return MappingProxyType({dec(k, depth): dec(v, depth) for k, v in _pairs(value, "@mp")})
    except TypeError as exc:  # an unhashable member of a set or key of a map
        raise LakeFormatError(f"unhashable value in a set or map: {exc}") from None
    raise LakeFormatError(f"untagged JSON object with keys {sorted(value)[:5]}")


def loads(text: str) -> Any:
    if not isinstance(text, str):
        raise LakeFormatError(f"a lake cell holds {type(text).__name__}, not JSON text")
    if len(text) > MAX_TEXT:
        raise LakeFormatError(f"a lake cell of {len(text)} characters (limit {MAX_TEXT})")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError, RecursionError, ValueError) as exc:
        raise LakeFormatError(f"not JSON: {str(exc)[:120]}") from None
    return from_jsonable(data)
