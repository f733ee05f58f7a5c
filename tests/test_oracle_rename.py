"""`adoption.rename` against a plain statement of what it does, on drawn model-like values.

The oracles rename a provisional member id on every id a target generates; the walk is written
for speed (`renamer`), so it is checked here against the obvious recursive definition, and for
the property the oracles rely on: a part that holds no ``old`` comes back as the same object.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any, NamedTuple

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.engine.oracle.adoption import rename, renamer


class Colour(Enum):
    RED = "c1"


class Pair(NamedTuple):
    left: Any
    right: Any


class Tag(str):
    pass


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: Any
    b: Any = None


@dataclasses.dataclass
class Loose:
    a: Any
    b: Any = None


OLD, NEW = "c1", "c9"


def plain(obj: Any) -> Any:
    """What `rename(obj, OLD, NEW)` means, written without any care for speed."""
    if isinstance(obj, str):
        if obj == OLD:
            return NEW
        return obj[: -len(OLD)] + NEW if obj.endswith(":" + OLD) else obj
    if isinstance(obj, Enum | bytes | int | float) or obj is None:
        return obj
    if isinstance(obj, dict):
        return {plain(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, Pair):
        return Pair(*(plain(v) for v in obj))
    if isinstance(obj, list | tuple | set | frozenset):
        return type(obj)(plain(v) for v in obj)
    if dataclasses.is_dataclass(obj):
        return type(obj)(**{f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)})
    return obj


words = st.sampled_from([OLD, NEW, "c2", f"expire:{OLD}", f"x{OLD}", f"{OLD}:x", ""])
atoms = st.one_of(
    words, words.map(Tag), st.integers(-3, 3), st.booleans(), st.none(), st.just(b"c1"), st.just(Colour.RED)
)
hashable = st.recursive(
    atoms, lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3), max_leaves=4
)
values = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.builds(Pair, inner, inner),
        st.dictionaries(hashable, inner, max_size=4),
        st.sets(hashable, max_size=3),
        st.builds(Frozen, inner, inner),
        st.builds(Loose, inner, inner),
    ),
    max_leaves=12,
)


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (``Tag("c1") == "c1"``, ``True == 1``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(k, j) and same(a[k], b[j]) for k, j in zip(a, b, strict=True))
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return bool(a == b)


def untouched_parts_are_kept(before: Any, after: Any) -> bool:
    """Where nothing was renamed, the very same object comes back (checked down the tree)."""
    if same(plain(before), before):
        return after is before
    if isinstance(before, list | tuple) and not isinstance(before, str):
        return all(untouched_parts_are_kept(b, a) for b, a in zip(before, after, strict=True))
    if dataclasses.is_dataclass(before):
        return all(
            untouched_parts_are_kept(getattr(before, f.name), getattr(after, f.name))
            for f in dataclasses.fields(before)
        )
    return True


@settings(max_examples=400, deadline=None)
@given(values)
def test_rename_is_the_plain_definition_and_keeps_untouched_parts(value: Any) -> None:
    out = rename(value, OLD, NEW)
    want = plain(value)
    assert same(out, want), (out, want)
    assert untouched_parts_are_kept(value, out)


def test_one_renamer_renames_several_values_and_leaves_the_originals() -> None:
    rename_c1 = renamer(OLD, NEW)
    timers = {("g", f"expire:{OLD}", 5): 3, ("g", "expire:c2", 5): 4}
    member = Frozen(OLD, (("range", b""),))
    assert rename_c1(timers) == {("g", f"expire:{NEW}", 5): 3, ("g", "expire:c2", 5): 4}
    assert rename_c1(member) == Frozen(NEW, (("range", b""),))
    assert rename_c1(member) is rename_c1(member)  # a frozen part is renamed once per rename
    assert timers[("g", f"expire:{OLD}", 5)] == 3 and member.a == OLD
    other = Frozen("c2", ("c3",))
    assert rename_c1(other) is other
