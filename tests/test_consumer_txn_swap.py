"""A KIP-848 transaction's commit may adopt its scratch group and offsets instead of applying its
records to the real state again (`model.consumer.txn._Txn.commit`): runs must be the same either way."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.protocols.build import make_consumer_sim
from model.consumer.txn import _Txn


def walk(steps: int, seed: int, mutant: str) -> Iterator[Any]:
    """Heartbeats, time, commits, subscription changes, leaves, crashes, failovers, group deletion."""
    rng = random.Random(seed)
    clients = [{"name": f"c{i}", "topics": ["t"], "instance_id": "s" if i == 2 else None} for i in range(3)]
    sim = make_consumer_sim({"t": 4, "u": 2}, clients, {}, {"mutant": mutant} if mutant else {}, seed=seed)
    names = sorted(sim.clients)
    done = 0
    while done < steps:
        r, name = rng.random(), rng.choice(names)
        if r < 0.6:
            obs = sim.client_step(name)
        elif r < 0.75:
            obs = sim.advance(rng.choice((100, 1000, 5000, 50_000)))
        elif r < 0.83:
            obs = sim.commit(name)
        elif r < 0.88:
            obs = sim.subscribe(name, rng.choice((("t",), ("t", "u"), ("u",))))
        elif r < 0.92:
            obs = sim.leave(name)
        elif r < 0.95:
            obs = sim.restart(name)
        elif r < 0.98:
            obs = sim.failover()
        else:
            obs = sim.delete_group()
        if obs is not None:
            done += 1
            yield obs


def _run(swap: bool, seed: int, mutant: str) -> list[tuple[object, object]]:
    old = _Txn.SWAP
    _Txn.SWAP = swap
    try:
        return [(obs.deliveries, obs.after) for obs in walk(1500, seed, mutant)]
    finally:
        _Txn.SWAP = old


@pytest.mark.parametrize(
    ("seed", "mutant"), [(1, ""), (2, ""), (3, "kafka-16147"), (4, "leave-without-bump"), (5, "kfake-d2")]
)
def test_adopting_the_scratch_group_gives_the_same_run(seed: int, mutant: str) -> None:
    swapped, applied = _run(True, seed, mutant), _run(False, seed, mutant)
    assert len(swapped) == len(applied) == 1500
    assert any(world.committed for _, world in applied)  # offsets were committed (and deleted)
    for step, (a, b) in enumerate(zip(swapped, applied, strict=True), 1):
        assert a == b, f"step {step}"
