"""The design predicates on hand-made views, and their catalogue."""

from __future__ import annotations

import pytest

from conformance.designs.catalogue import load
from conformance.errors import SpecError
from model.designs import ops as o
from model.designs.invariants import (
    DESIGN_REGISTRY,
    eventually_owned,
    generation_monotonic,
    members_survive,
    single_owner,
    upgrade_completes,
)
from model.designs.view import DesignView, MemberView
from model.observation import Observation


def member(
    name: str, token: int | None, *parts: int, alive: bool = True, paused: bool = False, **kw: object
) -> MemberView:
    return MemberView(
        name,
        kw.pop("incarnation", 1),
        alive,
        paused,
        token,
        frozenset(("t", p) for p in parts),
        frozenset({"t"}),
        **kw,
    )  # type: ignore[arg-type]


def view(
    *members: MemberView, generation: int | None = 1, checkpoint: bool = False, **kw: object
) -> DesignView:
    return DesignView("d", 0, (("t", 2),), members, generation, checkpoint=checkpoint, **kw)  # type: ignore[arg-type]


def check(pred, after: DesignView, before: DesignView | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    return list(pred(Observation(before, None, (), after, 0)))


def test_single_owner_is_per_generation_and_physical_without_one() -> None:
    assert check(single_owner, view(member("A", 1, 0), member("B", 2, 0))) == []
    assert check(single_owner, view(member("A", 2, 0), member("B", 2, 0))) == [
        "t-0 held by A and B under generation 2"
    ]
    assert check(single_owner, view(member("A", None, 1), member("B", None, 1)))[0].endswith(
        "with no generation"
    )
    assert check(single_owner, view(member("A", None, 1, paused=True), member("B", None, 1))) == []
    assert check(single_owner, view(member("A", None, 1, alive=False), member("B", None, 1))) == []


def test_generation_monotonic_allows_failover_and_resets() -> None:
    before = view(member("A", 3, 0), generation=3)
    assert check(generation_monotonic, view(member("A", 2, 0), generation=2), before)
    assert check(generation_monotonic, view(member("A", 2, 0), generation=2, failover=True), before) == []
    assert check(generation_monotonic, view(member("A", -1), generation=3), before) == []
    assert check(generation_monotonic, view(member("A", 1, incarnation=2), generation=3), before) == []


def test_liveness_only_at_checkpoints() -> None:
    lonely = view(member("A", 1, 0))
    assert check(eventually_owned, lonely) == []
    assert check(eventually_owned, view(member("A", 1, 0), checkpoint=True)) == [
        "after the quiet period 1 partition(s) unowned: t-1"
    ]
    assert check(eventually_owned, view(member("A", 1, 0, 1), checkpoint=True)) == []
    assert check(members_survive, view(member("A", 1, fatal=True), checkpoint=True)) == [
        "A stopped on a fatal error and will not rejoin"
    ]
    mixed = view(member("A", 1, 0, 1, prefers="roundrobin"), checkpoint=True, strategy="range")
    assert check(upgrade_completes, mixed) == [
        "every member runs roundrobin but the group still assigns with range"
    ]


def test_catalogue_matches_the_registry(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert set(load()) == set(DESIGN_REGISTRY)
    short = tmp_path / "c.yaml"
    short.write_text("invariants:\n  - {id: design.single_owner, kind: safety, statement: s, source: s}\n")
    with pytest.raises(SpecError, match="missing from the catalogue"):
        load(short)


def test_ops_decode_through_a_fixed_registry() -> None:
    join = o.Join("A", ("a", "t"), True, 2)
    assert o.from_dict(o.to_dict(join)) == join
    for bad, field in (
        ({"op": "join"}, "member"),
        ({"op": "advance", "ms": -1}, "ms"),
        ({"op": "explode"}, "op"),
        ({"op": "join", "member": "A", "x": 1}, "x"),
    ):
        with pytest.raises(o.OpError, match=field):
            o.from_dict(bad)
    assert o.strategies_of(2) == ("roundrobin", "range")
