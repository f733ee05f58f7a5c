"""The explorers finish: clamped times and ranked generations make the abstract state space finite
(docs/traces.md#explore-and-coverage), and the state counts at small bounds are pinned against a
plain breadth-first search that copies every state with `copy.deepcopy`."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from conformance.protocols.classic.abstraction import abstract_key
from conformance.protocols.classic.explore import (
    DEFAULT_OPS,
    _enabled,
    _fresh,
    classic_setup,
    explore_classic,
)
from conformance.protocols.classic.trace import apply_op
from conformance.protocols.consumer import explore as cx
from conformance.protocols.consumer.trace import action_of


def test_consumer_one_member_one_partition_finishes() -> None:
    r = cx.explore_consumer(1, 1, depth=1000, budget_s=300, cpu_clock=True)
    assert r.complete and not r.budget_hit and not r.found
    assert (r.states, r.levels_done) == (32, 10)


def test_classic_one_member_one_partition_finishes() -> None:
    r = explore_classic(1, 1, depth=1000, budget_s=300, cpu_clock=True)
    assert r.complete and not r.budget_hit and not r.found
    assert (r.states, r.levels_done) == (80, 16)


def _plain_consumer(members: int, partitions: int, depth: int) -> int:
    """Breadth-first search copying each state whole: the reference the explorer must match."""
    root = cx._fresh(cx.consumer_setup(members, partitions), {})
    seen = {cx.consumer_key(root)}
    frontier: list[Any] = [root]
    for _ in range(depth):
        nxt = []
        for sim in frontier:
            for op in cx._enabled(sim):
                child = cx._clone(sim)  # copy.deepcopy sharing only the frozen world snapshot
                before = len(child.log)
                obs = child.replay([action_of(op, "explore")])
                if not obs and len(child.log) == before and op["op"] != "stall":
                    continue
                key = cx.consumer_key(child)
                if key not in seen:
                    seen.add(key)
                    nxt.append(child)
        frontier = nxt
    return len(seen)


def _plain_classic(members: int, partitions: int, depth: int) -> int:
    root = _fresh(classic_setup(members, partitions, {}), {})
    seen = {abstract_key(root)}
    frontier: list[Any] = [root]
    for _ in range(depth):
        nxt = []
        for sim in frontier:
            for op in _enabled(sim, DEFAULT_OPS):
                child = copy.deepcopy(sim)
                if apply_op(child, op, "explore") is None:
                    continue
                key = abstract_key(child)
                if key not in seen:
                    seen.add(key)
                    nxt.append(child)
        frontier = nxt
    return len(seen)


def test_consumer_state_count_pinned_at_small_bound() -> None:
    fast = cx.explore_consumer(2, 1, depth=6, budget_s=300, cpu_clock=True)
    assert fast.levels_done == 6 and not fast.budget_hit
    assert fast.states == _plain_consumer(2, 1, 6) == 268


def test_classic_state_count_pinned_at_small_bound() -> None:
    fast = explore_classic(2, 1, depth=8, budget_s=300, cpu_clock=True)
    assert fast.levels_done == 8 and not fast.budget_hit
    assert fast.states == _plain_classic(2, 1, 8) == 373


def test_consumer_two_members_one_partition_finishes() -> None:
    """Past epochs by rank (`_past_ranks`): before, a stalled client's epoch fell further behind the
    group's with every rebalance of the other member and 2 x 1 never finished."""
    r = cx.explore_consumer(2, 1, depth=1000, budget_s=600, cpu_clock=True)
    assert r.complete and not r.budget_hit and not r.found
    assert (r.states, r.levels_done) == (5360, 30)


def test_ranked_epochs_merge_only_states_with_the_same_next_steps(monkeypatch: Any) -> None:
    """States that differ only in how far behind their past epochs lie get one key, and every op
    takes them to states with one key again (one step of a bisimulation, at every merge the search
    meets to depth 14 at 2 x 1)."""
    ranked = cx._past_ranks
    monkeypatch.setattr(cx, "_past_ranks", lambda sim, group: {})
    root = cx._fresh(cx.consumer_setup(2, 1), {})
    seen, frontier, states = {cx.consumer_key(root)}, [root], [root]
    for _ in range(14):
        nxt = []
        for sim in frontier:
            for child in _children(sim).values():
                key = cx.consumer_key(child)
                if key not in seen:
                    seen.add(key)
                    nxt.append(child)
        frontier = nxt
        states += nxt
    monkeypatch.setattr(cx, "_past_ranks", ranked)
    groups: dict[str, list[Any]] = {}
    for sim in states:
        groups.setdefault(cx.consumer_key(sim), []).append(sim)
    merged = [g for g in groups.values() if len(g) > 1]
    assert merged, "ranking merges some states at this bound"
    for group in merged:
        nexts = [{op: cx.consumer_key(c) for op, c in _children(sim).items()} for sim in group]
        assert all(n == nexts[0] for n in nexts[1:])


def _children(sim: Any) -> dict[str, Any]:
    out = {}
    for op in cx._enabled(sim):
        child = cx.clone(sim)
        before = len(child.log)
        obs = child.replay([action_of(op, "explore")])
        if obs or len(child.log) != before or op["op"] == "stall":
            out[cx._label(op)] = child
    return out


def test_a_kept_partitions_index_is_not_read_as_an_epoch() -> None:
    """KIP-1251 assignment epochs are (partition, epoch) pairs: only the epoch is made relative (the
    index of partition 1 read as an epoch made 2 x 2 look new after every rebalance)."""
    sim = cx._fresh(cx.consumer_setup(1, 2), {})
    group = type("G", (), {"group_epoch": 7, "members": {}})()
    norm = cx._Norm(sim, tuple(sim.clients), group)
    pairs = ((("t", 0), 5), (("t", 1), 7))
    assert norm.value(pairs, "assignment_epochs") == ((("t", 0), ("e", -2)), (("t", 1), ("e", 0)))


#: ops the classic explorer keeps when they observe nothing (`explore_classic`)
_SILENT = ("restart", "stale_subscription", "subscribe")


@pytest.mark.parametrize(
    ("members", "ops", "depth"),
    [
        (2, DEFAULT_OPS, 14),
        (1, ("step", "advance", "stall", "resume", "lose_response", "leave", "restart", "subscribe"), 12),
    ],
    ids=["2x1-default", "1x1-perturbing"],
)
def test_what_the_classic_key_leaves_out_changes_no_next_step(
    members: int, ops: tuple[str, ...], depth: int
) -> None:
    """The classic key leaves out the delivery rows no client or group is still at and the buffered
    answers a stalled client will not read on resuming. For every state the search meets (2 x 1
    to depth 14; 1 x 1 with the perturbing ops to depth 12), the same state with those removed
    takes every op to a state with the same key and the same verdicts (one step of a
    bisimulation; the copies share the chooser's state, so the check is of the key alone)."""
    from conformance.engine.checker import Checker
    from conformance.protocols.classic import abstraction as ab
    from conformance.protocols.classic.explore import clone

    def nexts(sim: Any) -> dict[str, Any]:
        out = {}
        for op in _enabled(sim, ops):
            child = clone(sim)
            obs = apply_op(child, op, "explore")
            if obs is not None or op["op"] in _SILENT:
                verdicts = (
                    [] if obs is None else sorted(v.invariant for v in Checker("classic").check(obs, 1))
                )
                out[repr(op)] = (abstract_key(child, symmetry=False), verdicts)
        return out

    root = _fresh(classic_setup(members, 1, {}, ops), {})
    seen, frontier, trimmed = {abstract_key(root)}, [root], 0
    for _ in range(depth):
        nxt = []
        for sim in frontier:
            for op in _enabled(sim, ops):
                child = clone(sim)
                if apply_op(child, op, "explore") is None and op["op"] not in _SILENT:
                    continue
                key = abstract_key(child)
                if key not in seen:
                    seen.add(key)
                    nxt.append(child)
        for sim in nxt:
            group = sim.port.group(sim.group_id)
            bare = clone(sim)
            bare.delivered = tuple(ab._live_deliveries(sim, group.generation if group is not None else 0))
            bare.buffered = {n: ab._awaited(sim, n) for n in sim.buffered}
            if (bare.delivered, bare.buffered) != (sim.delivered, sim.buffered):
                trimmed += 1
                assert abstract_key(bare, symmetry=False) == abstract_key(sim, symmetry=False)
                assert nexts(bare) == nexts(sim)
        frontier = nxt
    assert trimmed > 10, "states with something left out of the key at this bound"


def test_the_classic_key_keeps_what_the_stale_subscription_fault_left() -> None:
    """`classic.no_partition_held_twice` reads what a consumer kept and regained through the
    `stale_subscription` fault, so two states that differ only there are two states; without the
    fault the key is as it was."""
    from conformance.protocols.classic.explore import clone

    sim = _fresh(classic_setup(1, 1, {}), {})
    name = next(iter(sim.clients))
    plain = abstract_key(sim)
    assert abstract_key(clone(sim)) == plain
    kept = clone(sim)
    kept.clients[name].stale_kept = True
    assert abstract_key(kept) != plain
    holding = clone(sim)
    holding.clients[name].owned = (("t", 0),)
    regained = clone(holding)
    regained.clients[name].stale_regained = frozenset({("t", 0)})
    assert abstract_key(regained) != abstract_key(holding)
    regained.clients[name].owned = ()  # a reset or a leave drops what it held: nothing left to mark
    assert abstract_key(regained) == plain


def test_the_consumer_key_keeps_the_record_of_the_wire() -> None:
    """Three KIP-848 promises judge a consumer by the simulator's record of what it put on the wire
    (`model.consumer.owned_reports`), which a faulty consumer's own state need not determine: two
    states that differ only in that record are two states. For the reference model the record
    follows from the rest of the key wherever a rule reads it, so the pinned counts stay as they
    were (with the record of joining clients in the key too, 2 x 1 would finish at 5,560)."""
    sim = cx._fresh(cx.consumer_setup(1, 1), {})
    for _ in range(4):
        sim.replay([action_of({"op": "client_step", "name": "c1"}, "test")])
    assert sim.clients["c1"].state.name == "STABLE"
    assert sim.reports.last == sim.reports.held_then == {"c1": frozenset({("t", 0)})}
    plain = cx.consumer_key(sim)
    assert cx.consumer_key(cx.clone(sim)) == plain
    for change in (
        lambda r: r.last.__setitem__("c1", frozenset()),  # reported releasing t-0
        lambda r: r.held_then.__setitem__("c1", frozenset()),  # reported it before holding it
        lambda r: r.failed_last.add("c1"),  # its last heartbeat failed
    ):
        other = cx.clone(sim)
        change(other.reports)
        assert cx.consumer_key(other) != plain
    joining = cx._fresh(cx.consumer_setup(1, 1), {})  # its first heartbeat, a full join, sets the record
    blank = cx.consumer_key(joining)
    joining.reports.failed_last.add("c1")
    assert cx.consumer_key(joining) == blank


def test_the_consumer_key_keeps_which_member_id_sorts_first() -> None:
    """The server assignors break ties by member id (`model.consumer.assignors`), so two states that
    differ in which client's id sorts first are two states, though the key names ids by client."""
    from conformance.protocols.consumer.build import make_consumer_sim

    setup = cx.consumer_setup(2, 1)
    sims = {
        seed: make_consumer_sim(
            setup["topics"], setup["clients"], setup["config"], {}, seed=seed, where="test"
        )
        for seed in (0, 2)
    }
    order = {seed: sim.clients["c1"].member_id < sim.clients["c2"].member_id for seed, sim in sims.items()}
    assert order == {0: False, 2: True}
    assert cx.consumer_key(sims[0]) != cx.consumer_key(sims[2])
    assert cx.consumer_key(sims[0]) == cx.consumer_key(
        make_consumer_sim(setup["topics"], setup["clients"], setup["config"], {}, seed=1, where="test")
    )  # seed 1 sorts them as seed 0 does: one state


def test_the_consumer_key_names_members_no_client_holds_by_rank() -> None:
    """After a restart the coordinator keeps the old process's member until its session ends; the
    key names it by rank among such members, not by its random id, and keeps whether it sorts
    before or after the new process's id: runs that drew other ids in the same order are one state."""
    from conformance.protocols.consumer.build import make_consumer_sim

    setup = cx.consumer_setup(1, 1, ("restart",))
    keys: dict[bool, set[str]] = {True: set(), False: set()}
    for seed in range(8):
        sim = make_consumer_sim(
            setup["topics"], setup["clients"], setup["config"], {}, seed=seed, where="test"
        )
        for op in ({"op": "client_step", "name": "c1"}, {"op": "restart", "name": "c1"}):
            sim.replay([action_of(op, "test")])
        (ghost,) = sim.port.coordinator_state().groups[sim.group_id].members
        assert ghost != sim.clients["c1"].member_id
        keys[ghost < sim.clients["c1"].member_id].add(cx.consumer_key(sim))
    assert [len(k) for k in keys.values()] == [1, 1], "one key per order, whatever the ids"
    assert keys[True] != keys[False]
