"""Adopting a target's legal choice into a model hypothesis.

Where the protocol lets the coordinator choose, an oracle keeps the model's hypotheses open and
takes the target's choice once an answer shows it, if it is legal (docs/oracle.md#choices). Two mechanisms are
shared by the oracles:

* `rename`: a member id the coordinator generated replaces the model's own (provisional or
  request-derived) id everywhere in a hypothesis, timer keys included;
* `derive`: a copy of a model coordinator (mutants included) with a hook class in front of its
  own, through which the oracle offers the protocol's freedom (the classic leader choice) or
  installs the target's choice (the KIP-848 server assignor's).

What counts as legal, and what an answer reveals, is each protocol's (`protocols/*/judge.py`,
`protocols/consumer/adoption.py`).
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any


def rename(obj: Any, old: str, new: str) -> Any:
    """Replace member id ``old`` by ``new`` everywhere in a model value (timer keys included).

    A part that holds no ``old`` comes back as the same object, so a large state with one renamed
    member is rebuilt only along the paths that lead to it. Frozen dataclasses (records, members,
    snapshots: tuples of immutable values all the way down in the model) are remembered per rename:
    the candidates of one operation share most of them, their durable records above all, and each
    is walked once."""
    if isinstance(obj, str):
        if obj == old:
            return new
        if obj.endswith(":" + old):
            return obj[: -len(old)] + new
        return obj
    if obj is None or isinstance(obj, _ATOMS):
        return obj
    if isinstance(obj, dict):
        items = [(rename(k, old, new), rename(v, old, new)) for k, v in obj.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(items, obj.items(), strict=True)):
            return obj
        return dict(items)
    frozen = _is_frozen(type(obj))
    if frozen:
        key = (id(obj), old, new)
        hit = _SEEN.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
    out = _rename_parts(obj, old, new)
    if frozen:
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        _SEEN[key] = (obj, out)  # holding obj keeps its id from being reused while cached
    return out


def _rename_parts(obj: Any, old: str, new: str) -> Any:
    if isinstance(obj, list | tuple | frozenset | set):
        parts = [rename(v, old, new) for v in obj]
        if all(a is b for a, b in zip(parts, obj, strict=True)):
            return obj
        return type(obj)(parts) if not _is_named_tuple(obj) else type(obj)(*parts)
    names = _field_names(type(obj))
    if names is None:
        return obj
    changed = {k: r for k in names if (r := rename(v := getattr(obj, k), old, new)) is not v}
    if not changed:
        return obj
    kind: Any = type(obj)
    return kind(**{**{k: getattr(obj, k) for k in names}, **changed})


_ATOMS = (Enum, bytes, int, float, bool)
#: the field names of each dataclass met (None: not a dataclass): the oracles rename often
_FIELDS: dict[type, tuple[str, ...] | None] = {}
#: immutable parts already renamed: (id, old, new) -> (the part, its renamed form)
_SEEN: dict[tuple[int, str, str], tuple[Any, Any]] = {}
_SEEN_MAX = 200_000


def _is_frozen(cls: type) -> bool:
    params = getattr(cls, "__dataclass_params__", None)
    return bool(params is not None and params.frozen)


def _field_names(cls: type) -> tuple[str, ...] | None:
    try:
        return _FIELDS[cls]
    except KeyError:
        names = tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else None
        _FIELDS[cls] = names
        return names


def _is_named_tuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def derive(coordinator: Any, hook: type, prefix: str) -> Any:
    """A copy of ``coordinator`` whose class is ``hook`` in front of the coordinator's own class
    (named ``prefix`` + that class's name); its attributes are the coordinator's."""
    base = type(coordinator)
    cls: Any = type(f"{prefix}{base.__name__}", (hook, base), {})
    out = cls.__new__(cls)
    out.__dict__.update(coordinator.__dict__)
    return out
