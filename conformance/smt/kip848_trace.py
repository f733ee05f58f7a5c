"""A KIP-848 z3 counterexample as a replayable trace (every REFUTED result is a trace, docs/proofs.md).

The solver's steps are heartbeats and leaves of members ``m0..`` that no virtual consumer sends:
each becomes a `ConsumerSim.heartbeat_as` action on a simulator built like any other (`make_consumer_sim`)
on the registered mutant with the broken variant's one rule (`kip848_replay.MUTANT_OF`). The members
ask for the ``range`` server assignor, whose targets the bounded model checker computes exactly, so no
scripted target is needed. The suite's `Checker` judges every step; `groupcheck replay` and `show`
work on the written file.
"""

from __future__ import annotations

from collections.abc import Mapping

from conformance.engine.checker import Checker, Violation
from conformance.formats.trace_file import Trace
from conformance.protocols.build import make_consumer_sim
from conformance.protocols.consumer.trace import to_trace
from conformance.smt.counterexample import proof_trace
from conformance.smt.kip848_replay import GROUP, MUTANT_OF, TOPIC, HeartbeatStep, member_id


def mutant_variants(variant: Mapping[str, str]) -> dict[str, str]:
    """``{"mutant": NAME}`` for the one broken rule of ``variant`` (empty for the sound rules)."""
    broken = [MUTANT_OF[(k, v)] for k, v in sorted(variant.items()) if (k, v) in MUTANT_OF]
    if len(broken) > 1:
        raise ValueError(f"a trace replays one mutant; variant {dict(variant)} breaks {len(broken)} rules")
    return {"mutant": broken[0]} if broken else {}


def trace_of(
    steps: list[HeartbeatStep], invariant_id: str, variant: Mapping[str, str], partitions: int
) -> tuple[Trace, list[Violation]]:
    """Run ``steps`` on the simulator and return the trace and every violation the checker saw."""
    sim = make_consumer_sim({TOPIC: partitions}, [], {}, mutant_variants(variant), where="prove")
    assert sim.group_id == GROUP
    sim.variants = mutant_variants(variant)
    checker = Checker("consumer")
    violations: list[Violation] = []
    for n, step in enumerate(steps, 1):
        if step.kind == "leave":
            obs = sim.heartbeat_as(member_id(step.member), -1)
        else:
            owned = None if step.owned is None else [[TOPIC, p] for p in sorted(step.owned)]
            topics = [TOPIC] if step.epoch == 0 else None
            obs = sim.heartbeat_as(
                member_id(step.member), step.epoch, owned, topics, "range" if step.epoch == 0 else None
            )
        found = checker.check(obs, n)
        sim.note_checks(obs, checker.last_checked, [(v.invariant, v.message) for v in found], ())
        violations += found
    trace = proof_trace(to_trace, sim, invariant_id, violations)
    return trace, violations
