"""Type-tagged JSON for the model's plain data (requests, responses, events, deliveries).

Every frozen dataclass of the message and event modules becomes a JSON object whose ``type`` names
it (``classic.JoinGroupRequest``, ``consumer.HeartbeatEvent``, ``Delivery``); the protocol prefix
keeps the two ``OffsetCommitRequest`` classes apart. Field values follow the dataclass's type hints:
``bytes`` as lowercase hex, Kafka error codes by name (an unmodelled wire code stays a number),
tuples and frozensets as arrays (sets sorted). Decoding is driven by the same hints, so a value of
the wrong shape is reported with its field path instead of being guessed at.

Output is canonical: `dumps` sorts keys and uses fixed separators, so the same value always gives
the same bytes (design: determinism, same seed -> same trace file).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import types
import typing
from enum import Enum
from typing import Any

from model.errors import ErrorCode

#: module -> tag prefix. Events and messages of every protocol; a module that does not exist yet
#: (a protocol package still being written) is skipped.
MODULES: tuple[tuple[str, str], ...] = (
    ("model.result", ""),
    ("model.classic.messages", "classic."),
    ("model.classic.sim", "classic."),
    ("model.consumer.messages", "consumer."),
    ("model.consumer.world", "consumer."),
    ("model.mixed.world", "consumer."),
    ("model.consumer.sim", "consumer."),
    ("model.consumer.sim_specs", "consumer."),
)

#: Worlds, snapshots, simulators and settings are not codec types: only messages and events are.
_SKIP_SUFFIXES = ("World", "View", "Run", "Sim", "Port", "Config", "Result", "Snap", "State")
#: message types whose Kafka name ends like a skipped one
_MESSAGES = frozenset({"DeletableGroupResult"})


class CodecError(ValueError):
    """A value that does not fit the trace format; the message starts with the field path."""


_TYPES: dict[str, type] = {}
_TAGS: dict[type, str] = {}


def _load() -> None:
    if _TYPES:
        return
    for module_name, prefix in MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module_name.startswith(exc.name):
                continue
            raise
        for name, obj in sorted(vars(module).items()):
            if (
                isinstance(obj, type)
                and dataclasses.is_dataclass(obj)
                and obj.__module__ == module_name
                and (name in _MESSAGES or not name.endswith(_SKIP_SUFFIXES))
            ):
                tag = prefix + name
                _TYPES[tag] = obj
                _TAGS[obj] = tag


def registered() -> dict[str, type]:
    """Tag -> class of every type the codec knows (for the schema and the tests)."""
    _load()
    return dict(_TYPES)


def tag_of(cls: type) -> str:
    _load()
    try:
        return _TAGS[cls]
    except KeyError:
        raise CodecError(f"{cls.__name__} is not a trace type") from None


# ---------------------------------------------------------------------------------- encode
def encode(value: Any, path: str = "$") -> Any:
    """A JSON-ready value (dicts, lists, str, int, bool, None) for ``value``."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, int):
        return value
    if isinstance(value, bytes):
        return value.hex()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {"type": tag_of(type(value))}
        for f in dataclasses.fields(value):
            field_value = getattr(value, f.name)
            if f.metadata.get("omit_default") and field_value == f.default:
                continue  # a field added later: traces written before it stay byte for byte
            out[f.name] = encode(field_value, f"{path}.{f.name}")
        return out
    if isinstance(value, tuple | list):
        return [encode(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, frozenset | set):
        items = [encode(v, f"{path}[]") for v in value]
        return sorted(items, key=dumps)
    raise CodecError(f"{path}: cannot encode {type(value).__name__}")


def dumps(value: Any) -> str:
    """Canonical JSON text of an already JSON-ready value (sorted keys, no spaces, ASCII)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


# ---------------------------------------------------------------------------------- decode
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        module = importlib.import_module(cls.__module__)
        _HINTS[cls] = typing.get_type_hints(cls, vars(module))
    return _HINTS[cls]


def decode(data: Any, hint: Any = Any, path: str = "$") -> Any:
    """The value ``data`` (as produced by `encode`) means, read as type ``hint``."""
    _load()
    origin = typing.get_origin(hint)
    if hint is Any or hint is object:
        return _decode_any(data, path)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if data is None:
            if type(None) in options:
                return None
            raise CodecError(f"{path}: null where {_name(hint)} is required")
        if isinstance(data, dict) and "type" in data:
            return _decode_dataclass(data, path, options)
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return decode(data, option, path)
            except CodecError as exc:
                errors.append(str(exc))
        raise CodecError(errors[0] if len(errors) == 1 else f"{path}: expected {_name(hint)}")
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _decode_dataclass(data, path, (hint,))
    if hint is bytes:
        if not isinstance(data, str):
            raise CodecError(f"{path}: expected hex bytes, got {_kind(data)}")
        try:
            return bytes.fromhex(data)
        except ValueError:
            raise CodecError(f"{path}: {data[:20]!r} is not hex") from None
    if isinstance(hint, type) and issubclass(hint, Enum):
        if hint is ErrorCode and isinstance(data, int) and not isinstance(data, bool):
            return ErrorCode.of(data)
        if isinstance(data, str) and data in hint.__members__:
            return hint[data]
        raise CodecError(f"{path}: {data!r} is not a {hint.__name__}")
    if hint is bool:
        if not isinstance(data, bool):
            raise CodecError(f"{path}: expected a boolean, got {_kind(data)}")
        return data
    if hint is int:
        if not isinstance(data, int) or isinstance(data, bool):
            raise CodecError(f"{path}: expected an integer, got {_kind(data)}")
        return data
    if hint is str:
        if not isinstance(data, str):
            raise CodecError(f"{path}: expected a string, got {_kind(data)}")
        return data
    if origin in (tuple, frozenset, set, list) or hint in (tuple, frozenset, list):
        if not isinstance(data, list):
            raise CodecError(f"{path}: expected an array, got {_kind(data)}")
        args = typing.get_args(hint)
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(data):
                raise CodecError(f"{path}: expected {len(args)} items, got {len(data)}")
            return tuple(
                decode(v, a, f"{path}[{i}]") for i, (v, a) in enumerate(zip(data, args, strict=True))
            )
        item = args[0] if args else Any
        items = [decode(v, item, f"{path}[{i}]") for i, v in enumerate(data)]
        if origin in (frozenset, set) or hint is frozenset:
            return frozenset(items)
        return tuple(items)
    raise CodecError(f"{path}: unsupported field type {_name(hint)}")


def _decode_any(data: Any, path: str) -> Any:
    if isinstance(data, dict):
        if "type" not in data:
            raise CodecError(f"{path}: object without a 'type'")
        return _decode_dataclass(data, path, None)
    if isinstance(data, list):
        return tuple(_decode_any(v, f"{path}[{i}]") for i, v in enumerate(data))
    if isinstance(data, float):
        raise CodecError(f"{path}: floats are not part of the trace format")
    return data


def _decode_dataclass(data: Any, path: str, allowed: tuple[Any, ...] | None) -> Any:
    if not isinstance(data, dict):
        raise CodecError(f"{path}: expected an object, got {_kind(data)}")
    tag = data.get("type")
    cls = _TYPES.get(tag) if isinstance(tag, str) else None
    if cls is None:
        raise CodecError(f"{path}.type: unknown type {tag!r}")
    if allowed is not None and not any(cls is a for a in allowed):
        names = ", ".join(_name(a) for a in allowed if a is not type(None))
        raise CodecError(f"{path}.type: {tag} where {names} is expected")
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields) - {"type"})
    if unknown:
        raise CodecError(f"{path}: {tag} has no field {unknown[0]!r}")
    kwargs = {}
    for name, f in fields.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise CodecError(f"{path}: {tag} lacks field {name!r}")
            continue
        kwargs[name] = decode(data[name], hints[name], f"{path}.{name}")
    return cls(**kwargs)


def _kind(data: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(data), type(data).__name__
    )


def _name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
