"""Incremental checking gives the verdicts of checking everything on every step.

`Checker` reuses an invariant's messages while the parts of the observation it declares it reads
are unchanged, and skips it where its ``when`` test fails (`conformance.engine.reuse`,
`model.invariant_reads`). Seeded random walks on the model and on mutants that break invariants
are checked both ways, step by step; the declarations are compared with what each predicate reads.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from conformance.engine.checker import Checker
from conformance.protocols.build import make_classic_sim, make_consumer_sim
from model.invariant_reads import check_paths, record_reads
from model.invariants import REGISTRY, load_all


def classic_walk(steps: int, seed: int, mutant: str = "") -> Iterator[Any]:
    """The observations of `benchmarks/model_throughput.py`'s classic walk (plus lost responses)."""
    rng = random.Random(seed)
    clients = [{"name": f"c{i}", "assignors": [a]} for i, a in enumerate(["range", "roundrobin", "sticky"])]
    variants = {"mutant": mutant} if mutant else {}
    sim = make_classic_sim({"t": 4, "u": 2}, clients, {}, variants, seed=seed)
    names = list(sim.clients)
    done = 0
    while done < steps:
        r = rng.random()
        name = rng.choice(names)
        if r < 0.78:
            obs = sim.client_step(name)
        elif r < 0.91:
            obs = sim.advance(rng.choice((100, 1000, 3000)))
        elif r < 0.96:
            obs = sim.stall(name, name not in sim.stalled)
        elif r < 0.98:
            obs = sim.lose_response(name)
        else:
            obs = sim.failover()
        if obs is not None:
            done += 1
            yield obs


def consumer_walk(steps: int, seed: int, mutant: str = "") -> Iterator[Any]:
    """The observations of `benchmarks/model_throughput.py`'s consumer walk."""
    rng = random.Random(seed)
    clients = [
        {"name": f"c{i}", "topics": ["t", "u"] if i % 2 else ["t"], "instance_id": "s" if i == 2 else None}
        for i in range(4)
    ]
    variants = {"mutant": mutant} if mutant else {}
    sim = make_consumer_sim({"t": 4, "u": 2}, clients, {}, variants, seed=seed)
    names = sorted(sim.clients)
    done = 0
    while done < steps:
        r = rng.random()
        name = rng.choice(names)
        if r < 0.75:
            obs = sim.client_step(name)
        elif r < 0.88:
            obs = sim.advance(rng.choice((100, 500, 1000, 3100)))
        elif r < 0.92:
            obs = sim.stall(name, not sim.clients[name].crashed)
        elif r < 0.95:
            sim.lose_response(name)
            obs = sim.client_step(name)
        elif r < 0.98:
            obs = sim.reconcile(name)
        else:
            obs = sim.failover()
        if obs is not None:
            done += 1
            yield obs


WALKS = {"classic": classic_walk, "consumer": consumer_walk}

#: (protocol, mutant): the model, and mutants whose walks break declared and guarded invariants
CASES = [
    ("classic", ""),
    ("classic", "answer-twice"),
    ("classic", "forget-persisted-field"),
    ("classic", "kafka-7824"),
    ("classic", "kafka-8104"),
    ("classic", "session-timer-halved"),
    ("classic", "skip-generation-bump"),
    ("consumer", ""),
    ("consumer", "kafka-16147"),
    ("consumer", "kafka-16251"),
    ("consumer", "kfake-d2"),
    ("consumer", "leave-without-bump"),
    ("consumer", "assignment-interval-ignored"),
]


def compare(protocol: str, mutant: str, steps: int, seed: int) -> int:
    """Check one walk incrementally and fully; assert the same outcome at every step. Returns the
    number of violations found."""
    fast, full = Checker(protocol), Checker(protocol, incremental=False)
    found = 0
    for step, obs in enumerate(WALKS[protocol](steps, seed, mutant), 1):
        got, want = fast.check(obs, step), full.check(obs, step)
        assert got == want, f"step {step}"
        assert (fast.last_checked, fast.last_sometimes) == (full.last_checked, full.last_sometimes)
        found += len(want)
    assert fast.hits == full.hits
    assert fast.deviations == full.deviations
    return found


def test_cases_name_real_mutants() -> None:
    from conformance.mutants import MUTANTS

    assert all(not m or MUTANTS[m].protocol == p for p, m in CASES)


@pytest.mark.parametrize(("protocol", "mutant"), CASES)
def test_incremental_verdicts_equal_full_checking(protocol: str, mutant: str) -> None:
    found = sum(compare(protocol, mutant, 600, seed) for seed in (1, 2))
    assert (found > 0) == bool(mutant), "a mutant walk must break something, the model's nothing"


@pytest.mark.parametrize(("protocol", "mutant"), CASES)
def test_declarations_cover_what_predicates_read(protocol: str, mutant: str) -> None:
    """Each predicate reads only its declared paths, and says nothing where its ``when`` fails."""
    load_all()
    declared = [inv for inv in REGISTRY.values() if inv.protocol == protocol]
    assert any(inv.reads is not None for inv in declared) and any(inv.when is not None for inv in declared)
    for obs in WALKS[protocol](300, 3, mutant):
        for inv in declared:
            messages, read = record_reads(inv.predicate, obs)
            assert messages == inv.check(obs), inv.id
            if inv.reads is not None:
                assert read <= set(inv.reads), f"{inv.id} reads {sorted(read - set(inv.reads))}"
            if inv.when is not None and not inv.when(obs):
                assert not messages, f"{inv.id} speaks where its when test fails"


def test_check_paths_rejects_unknown_paths() -> None:
    assert check_paths(["after.group", "now", "after.group"]) == ("after.group", "now")
    for bad in ("after", "group", "after.group.members", "before.", "event.ref"):
        with pytest.raises(ValueError):
            check_paths([bad])


def test_a_replaced_invariant_list_is_honoured() -> None:
    """A checker whose invariant list is changed after a check checks the new list."""
    walk = classic_walk(3, 1)
    checker = Checker("classic")
    checker.check(next(walk), 1)
    dropped = {inv.id for inv in checker.invariants[5:]}
    checker.invariants = checker.invariants[:5]
    checker.check(next(walk), 2)
    assert checker.last_checked[:5] == tuple(inv.id for inv in checker.invariants)
    assert not dropped & set(checker.last_checked)
