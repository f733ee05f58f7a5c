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
from collections.abc import Callable
from enum import Enum
from typing import Any


def rename(obj: Any, old: str, new: str) -> Any:
    """Replace member id ``old`` by ``new`` everywhere in a model value (timer keys included).

    A part that holds no ``old`` comes back as the same object, so a large state with one renamed
    member is rebuilt only along the paths that lead to it. Frozen dataclasses (records, members,
    snapshots: tuples of immutable values all the way down in the model) are remembered per rename:
    the candidates of one operation share most of them, their durable records above all, and each
    is walked once."""
    return renamer(old, new)(obj)


def renamer(old: str, new: str) -> Callable[[Any], Any]:
    """`rename` of ``old`` to ``new`` as one function, for several values in a row.

    The oracles rename on every member id a target generates, and a hypothesis is mostly strings
    and integers in tuples and dicts: those are told apart by their exact type and looked at in
    their container's loop, not by a call each; any other type takes the general path below."""
    suffix = ":" + old
    cut = len(old)

    def one(v: Any) -> Any:
        t = type(v)
        if t is str:
            if v == old:
                return new
            if v.endswith(suffix):
                return v[:-cut] + new
            return v
        if t in _LEAVES:
            return v
        return walk(v, t)

    def items_of(obj: Any) -> list[tuple[Any, Any]] | None:
        out = None
        for i, (k, v) in enumerate(obj.items()):
            k2, v2 = one(k), one(v)
            if out is None and (k2 is not k or v2 is not v):
                out = list(obj.items())[:i]
            if out is not None:
                out.append((k2, v2))
        return out

    def parts_of(obj: Any) -> list[Any] | None:
        out = None
        for i, v in enumerate(obj):
            v2 = one(v)
            if out is None and v2 is not v:
                out = list(obj)[:i]
            if out is not None:
                out.append(v2)
        return out

    def walk(obj: Any, t: type) -> Any:
        if t is dict:
            items = items_of(obj)
            return obj if items is None else dict(items)
        if t is tuple or t is list or t is frozenset or t is set:
            parts = parts_of(obj)
            return obj if parts is None else t(parts)
        if isinstance(obj, str):  # a subclass of str
            if obj == old:
                return new
            return obj[:-cut] + new if obj.endswith(suffix) else obj
        if isinstance(obj, _ATOMS):
            return obj
        if isinstance(obj, dict):
            items = items_of(obj)
            return obj if items is None else dict(items)
        if isinstance(obj, list | tuple | frozenset | set):
            parts = parts_of(obj)
            if parts is None:
                return obj
            return t(*parts) if _is_named_tuple(obj) else t(parts)
        names, frozen = _kind(t)
        if names is None:
            return obj
        if frozen:
            key = (id(obj), old, new)
            hit = _SEEN.get(key)
            if hit is not None and hit[0] is obj:
                return hit[1]
        changed = {k: r for k in names if (r := one(v := getattr(obj, k))) is not v}
        out = t(**{**{k: getattr(obj, k) for k in names}, **changed}) if changed else obj
        if frozen:
            if len(_SEEN) >= _SEEN_MAX:
                _SEEN.clear()
            _SEEN[key] = (obj, out)  # holding obj keeps its id from being reused while cached
        return out

    return one


_ATOMS = (Enum, bytes, int, float, bool)
#: exact types that are never renamed (a `str` subclass or an `Enum` takes the general path)
_LEAVES = frozenset({int, bool, float, bytes, type(None)})
#: per type met: (its dataclass field names, None when not a dataclass; whether it is frozen)
_KINDS: dict[type, tuple[tuple[str, ...] | None, bool]] = {}
#: immutable parts already renamed: (id, old, new) -> (the part, its renamed form)
_SEEN: dict[tuple[int, str, str], tuple[Any, Any]] = {}
_SEEN_MAX = 200_000


def _kind(cls: type) -> tuple[tuple[str, ...] | None, bool]:
    try:
        return _KINDS[cls]
    except KeyError:
        names = tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else None
        params = getattr(cls, "__dataclass_params__", None)
        _KINDS[cls] = out = (names, bool(names is not None and params is not None and params.frozen))
        return out


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
