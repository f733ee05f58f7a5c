"""What part of an observation an invariant reads, for incremental checking (docs/invariants.md).

An invariant may declare ``reads``: the parts of the observation its predicate looks at, as paths
``event``, ``deliveries``, ``now``, ``before`` (whether there is one), ``before.<field>`` and
``after.<field>`` (a field of the world). A pure predicate whose declared parts are the very same
objects as at its last evaluation gives the same messages, so a checker may reuse them
(`conformance.engine.checker.Checker`). `record_reads` runs a predicate on a recording proxy of the
observation and returns the paths it touched: the tests compare them with the declarations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

#: the value of ``before.<field>`` when the observation has no ``before``
NO_BEFORE = object()
#: the value of a path naming a field the world does not have (another protocol's world)
NO_FIELD = object()
TOP = ("event", "deliveries", "now", "before")


def check_paths(paths: Iterable[str]) -> tuple[str, ...]:
    """``paths`` sorted, or ValueError naming one that is not a path of an observation."""
    out = tuple(sorted(set(paths)))
    for p in out:
        head, _, field = p.partition(".")
        if not (p in TOP or (head in ("before", "after") and field and "." not in field)):
            raise ValueError(f"not an observation path: {p!r}")
    return out


def getter(path: str) -> Callable[[Any], Any]:
    """A function of an observation giving the value at ``path``."""
    head, _, field = path.partition(".")
    if path == "before":
        return lambda obs: obs.before is None
    if head == "before":
        return lambda obs: NO_BEFORE if obs.before is None else getattr(obs.before, field, NO_FIELD)
    if head == "after":
        return lambda obs: getattr(obs.after, field, NO_FIELD)
    return lambda obs: getattr(obs, path)


def changed(field: str) -> Callable[[Any], bool]:
    """A ``when`` test: the world's ``field`` after the step is not the very object it was before
    (for predicates that compare the two and find nothing when they are the same)."""

    def test(obs: Any) -> bool:
        return obs.before is None or getattr(obs.before, field) is not getattr(obs.after, field)

    test.__qualname__ = f"changed({field!r})"
    return test


class _Recorder:
    """Stands in for an observation or a world; logs each field read as ``prefix.field``."""

    __slots__ = ("_target", "_prefix", "_log")

    def __init__(self, target: Any, prefix: str, log: set[str]) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_prefix", prefix)
        object.__setattr__(self, "_log", log)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance() sees the real type
        return type(object.__getattribute__(self, "_target"))

    def __getattr__(self, name: str) -> Any:
        target = object.__getattribute__(self, "_target")
        prefix = object.__getattribute__(self, "_prefix")
        log = object.__getattribute__(self, "_log")
        attr = getattr(type(target), name, None)
        if isinstance(attr, property) and attr.fget is not None:
            return attr.fget(self)  # a property's own reads go through the proxy
        if callable(attr) and not isinstance(attr, (staticmethod, classmethod, type)):
            return attr.__get__(self)  # so do a method's
        if not prefix:
            if name in ("before", "after"):
                if name == "before":
                    log.add("before")  # whether there is one
                world = getattr(target, name)
                return None if world is None else _Recorder(world, name, log)
            log.add(name)
            return getattr(target, name)
        log.add(f"{prefix}.{name}")
        return getattr(target, name)


def record_reads(predicate: Callable[[Any], Iterable[str]], obs: Any) -> tuple[list[str], set[str]]:
    """``predicate``'s messages on ``obs`` and the observation paths it read on the way."""
    log: set[str] = set()
    messages = list(predicate(_Recorder(obs, "", log)))
    return messages, log
