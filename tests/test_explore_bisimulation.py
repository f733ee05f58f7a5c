"""The explorers' abstract keys merge only states no next step tells apart.

`explore` keeps the first concrete state that reaches a key. That is sound only if every concrete
state with that key takes every op to states with one key again and with the same verdicts: one
step of a bisimulation. Here every path to a small depth is run without merging (a tree, not a
graph), the concrete states are grouped by key (without symmetry, so ops name the same clients),
and within each group the next keys and verdicts are compared, for both protocols, with and
without the perturbing ops. The field-specific checks are in tests/test_explore_bounds.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conformance.engine.checker import Checker
from conformance.protocols.classic import explore as kx
from conformance.protocols.classic.abstraction import abstract_key
from conformance.protocols.classic.trace import apply_op
from conformance.protocols.consumer import explore as cx
from conformance.protocols.consumer.trace import action_of

#: how many states of one key are compared with its first
SAMPLE = 3


def _classic_children(ops: tuple[str, ...]) -> Callable[[Any], dict[str, tuple[Any, tuple[str, ...]]]]:
    def children(sim: Any) -> dict[str, tuple[Any, tuple[str, ...]]]:
        out = {}
        for op in kx._enabled(sim, ops):
            child = kx.clone(sim)
            obs = apply_op(child, op, "explore")
            if obs is None and op["op"] not in ("restart", "stale_subscription", "subscribe"):
                continue
            verdicts = (
                () if obs is None else tuple(sorted(v.invariant for v in Checker("classic").check(obs, 1)))
            )
            out[kx._label(op)] = (child, verdicts)
        return out

    return children


def _consumer_children(ops: tuple[str, ...]) -> Callable[[Any], dict[str, tuple[Any, tuple[str, ...]]]]:
    def children(sim: Any) -> dict[str, tuple[Any, tuple[str, ...]]]:
        out = {}
        for op in cx._enabled(sim, ops):
            child = cx.clone(sim)
            before = len(child.log)
            observations = child.replay([action_of(op, "explore")])
            if not observations and len(child.log) == before and op["op"] != "stall":
                continue
            checker = Checker("consumer")
            verdicts = tuple(
                sorted(v.invariant for n, o in enumerate(observations) for v in checker.check(o, n + 1))
            )
            out[cx._label(op)] = (child, verdicts)
        return out

    return children


def _merged_states_agree(
    root: Any, key: Callable[[Any], str], children: Any, depth: int, keys_apart: tuple[str, ...] = ()
) -> int:
    """Every path to ``depth``; the number of keys reached by two or more concrete states, each
    checked against the first state of its key: the same ops, verdicts and next keys (for an op
    starting with one of ``keys_apart``, the same verdicts)."""
    frontier, by_key = [root], {}
    for _ in range(depth):
        frontier = [child for sim in frontier for child, _ in children(sim).values()]
        for sim in frontier:
            by_key.setdefault(key(sim), []).append(sim)
    merged = [group for group in by_key.values() if len(group) > 1]

    def nexts(sim: Any) -> dict[str, Any]:
        return {
            op: (None if op.startswith(keys_apart) else key(c), v) for op, (c, v) in children(sim).items()
        }

    for group in merged:
        first = nexts(group[0])
        for other in group[1 : 1 + SAMPLE]:
            assert nexts(other) == first
    return len(merged)


def _classic_key(sim: Any) -> str:
    return abstract_key(sim, symmetry=False)


def _consumer_key(sim: Any) -> str:
    return cx.consumer_key(sim, symmetry=False)


PERTURBING_CLASSIC = tuple(
    o for o in kx.ALL_OPS if o != "stale_subscription"
)  # a cooperative assignor's fault
PERTURBING_CONSUMER = (*cx.CONSUMER_OPS, *cx.PERTURBATIONS)


@pytest.mark.parametrize(
    ("members", "ops", "depth"),
    [(2, kx.DEFAULT_OPS, 6), (1, PERTURBING_CLASSIC, 6)],
    ids=["2x1-default", "1x1-perturbing"],
)
def test_the_classic_key_merges_only_states_no_next_step_tells_apart(
    members: int, ops: tuple[str, ...], depth: int
) -> None:
    root = kx._fresh(kx.classic_setup(members, 1, {}, ops), {})
    assert _merged_states_agree(root, _classic_key, _classic_children(ops), depth) > 10


@pytest.mark.parametrize(
    ("members", "ops", "depth"),
    [(2, cx.CONSUMER_OPS, 4), (1, PERTURBING_CONSUMER, 5)],
    ids=["2x1-default", "1x1-perturbing"],
)
def test_the_consumer_key_merges_only_states_no_next_step_tells_apart(
    members: int, ops: tuple[str, ...], depth: int
) -> None:
    """A restart draws the new process's member id from the seeded chooser, whose state the key
    forgets, and whether that id sorts before or after the old process's member (kept until its
    session ends) is in the key (the assignors break ties by member id): two merged states can
    restart into states with two keys. Both are explored, so for ``restart`` only the verdicts are
    compared."""
    root = cx._fresh(cx.consumer_setup(members, 1, ops), {})
    assert _merged_states_agree(root, _consumer_key, _consumer_children(ops), depth, ("restart",)) > 10
