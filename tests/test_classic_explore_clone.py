"""The classic explorer's copy (`conformance.protocols.classic.explore.clone`) shares nothing that
a step changes: a container of the simulator, its port or a client that both the copy and the
original hold would carry one branch's changes into every other branch of the search."""

from __future__ import annotations

from dataclasses import is_dataclass
from enum import Enum
from typing import Any

import conformance.protocols  # noqa: F401  (installs the kits)
from conformance.protocols.classic.explore import ALL_OPS, _enabled, _fresh, classic_setup, clone
from conformance.protocols.classic.trace import apply_op

#: read-only for a run (the set-up, the variants), checked at every use (the snapshot cache), or
#: replaced whole and never changed in place (a client's config: `dataclasses.replace`)
SHARED_ON_PURPOSE = {"setup", "variants", "_snap_cache", "config"}
IMMUTABLE = (int, str, float, bool, type(None), tuple, frozenset, bytes, Enum)


def _frozen(v: Any) -> bool:
    params = getattr(type(v), "__dataclass_params__", None)
    return isinstance(v, IMMUTABLE) or (is_dataclass(v) and params is not None and params.frozen)


def _shared(a: Any, b: Any, where: str) -> list[str]:
    return [
        f"{where}.{k}"
        for k, v in vars(a).items()
        if k not in SHARED_ON_PURPOSE and getattr(b, k, None) is v and not _frozen(v)
    ]


def test_a_copy_shares_no_mutable_part_with_its_original() -> None:
    sim = _fresh(classic_setup(2, 2, {}, ALL_OPS, 1), {})
    for op in _enabled(sim, ALL_OPS)[:4]:
        apply_op(sim, op, "test")
    copy = clone(sim)
    shared = _shared(sim, copy, "sim") + _shared(sim.port, copy.port, "port")
    for name, c in sim.clients.items():
        shared += _shared(c, copy.clients[name], f"client {name}")
    assert shared == []


def test_a_deviation_seen_in_one_branch_stays_there() -> None:
    sim = _fresh(classic_setup(2, 1, {}), {})
    copy = clone(sim)
    copy.deviations.add("a deviation only this branch met")
    assert sim.deviations == set()
