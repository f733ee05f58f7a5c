"""Proving `consumer.offset_commit_exact_epoch` for the commit rules of `conformance.smt.commit_epochs`.

With the correct rules two queries: Kafka 4.0's exact rule against the invariant read for an exact
coordinator, and the KIP-1251 rule against it read for a KIP-1251 coordinator. With
``commit_epochs=exact-only`` (the registered mutant ``commit-epochs-exact-only``: a coordinator
promising KIP-1251 that keeps the exact rule) the exact rule is checked against the KIP-1251
promise: the mutant's rule is Kafka 4.0's, so the one refutation shows both fail it. A violation is then looked for in the shape a short run reaches: m0 holds every partition
at epoch 1, m1 joins, m0 gives up the partitions of m1 and moves to epoch 2 keeping partition 0, and
commits it with epoch 1. That run is played on the simulator with the mutant
(`ConsumerSim.heartbeat_as`, `commit_as`) and judged by the suite's checker; only a confirmed
violation is REFUTED.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import z3

from conformance.smt import commit_epochs as C
from conformance.smt.counterexample import proof_trace
from conformance.smt.induction import prove_obligations
from conformance.smt.outcome import Outcome, confirmed
from conformance.smt.solver import Limits, Verdict, check, make_solver

INVARIANTS: tuple[str, ...] = (C.INVARIANT,)
MUTANT = "commit-epochs-exact-only"
RULES = {"exact": ("exact", False), "kip1251": ("assignment", True)}
"""Row name -> (the coordinator's rule, whether the invariant reads it as a KIP-1251 coordinator)."""


def prove(
    invariant_id: str,
    lemmas: tuple[str, ...],
    members: int,
    partitions: int,
    variant: Mapping[str, str],
    limits: Limits,
    depth: int,
) -> list[Outcome]:
    if variant.get("commit_epochs", "assignment") == "exact-only":
        return refute(invariant_id, members, partitions, limits)
    rows = []
    for name, (rule, kip1251) in RULES.items():
        start = time.perf_counter()
        c = C.fresh("c", partitions)
        rows.append(
            prove_obligations(
                invariant_id,
                name,
                members,
                partitions,
                [C.domain(c)],
                [(invariant_id, z3.Not(C.violated(c, C.answers(c, rule), kip1251)))],
                limits,
                lemmas,
                start,
            )
        )
    return rows


def _num(model: z3.ModelRef, x: Any) -> int:
    return int(model.eval(x, model_completion=True).as_long())


def refute(invariant_id: str, members: int, partitions: int, limits: Limits) -> list[Outcome]:
    start = time.perf_counter()
    c = C.fresh("c", partitions)
    s = make_solver(limits)
    s.add(C.domain(c), C.violated(c, C.answers(c, "exact"), True))
    result, reason = check(s)
    if result != z3.sat:
        verdict = Verdict.CONFIRMED if result == z3.unsat else Verdict.UNKNOWN
        return [
            Outcome(
                invariant_id, "exact-only", members, partitions, verdict, time.perf_counter() - start, reason
            )
        ]
    step = Outcome(
        invariant_id,
        "exact-only",
        members,
        partitions,
        Verdict.UNKNOWN,
        time.perf_counter() - start,
        f"rule can break {invariant_id}",
    )
    if members < 2 or partitions < 2:
        step.detail += "; no witness run at this bound (it needs 2 members and 2 partitions)"
        return [step]
    # the shape of the run that reaches it (module docstring)
    s.add(c.present, c.others, z3.Not(c.classic), c.version == 9, c.epoch == 2, c.commit_epoch == 1)
    s.add(c.partitions == 1, c.held & 1 == 1, c.since[0] == 1)
    result, reason = check(s)
    if result != z3.sat:
        step.detail += "; no witness of the run's shape" + (f" ({reason})" if reason else "")
        return [step]
    model = s.model()
    witness = {
        "member_epoch": _num(model, c.epoch),
        "commit_epoch": _num(model, c.commit_epoch),
        "partition": 0,
        "assigned_at": _num(model, c.since[0]),
    }
    return [step, confirm(invariant_id, witness, members, partitions, time.perf_counter() - start)]


def run_witness(witness: dict[str, int], partitions: int) -> tuple[Any, list[Any], dict[str, Any]]:
    """The run of the module docstring on the mutant; the simulator, the checker's violations, and
    the committer's epoch and partition-0 assignment epoch before the commit."""
    from conformance.engine.checker import Checker
    from conformance.protocols.build import make_consumer_sim

    sim = make_consumer_sim({"t": partitions}, [], {}, {"mutant": MUTANT}, where="prove")
    checker = Checker("consumer")
    violations: list[Any] = []
    everything = [["t", p] for p in range(partitions)]
    kept = [["t", p] for p in range((partitions + 1) // 2)]  # m0's range share next to m1
    actions = [
        lambda: sim.heartbeat_as("m0", 0, [], ["t"], "range"),
        lambda: sim.heartbeat_as("m1", 0, [], ["t"], "range"),
        lambda: sim.heartbeat_as("m0", 1, everything),
        lambda: sim.heartbeat_as("m0", 1, kept),
    ]
    for n, act in enumerate(actions, 1):
        obs = act()
        found = checker.check(obs, n)
        sim.note_checks(obs, checker.last_checked, [(v.invariant, v.message) for v in found], ())
        violations += found
    member = sim.port.coordinator_state().groups[sim.group_id].members["m0"]
    reached = {"member_epoch": member.member_epoch, "assigned_at": member.assignment_epoch(("t", 0))}
    obs = sim.commit_as("m0", witness["commit_epoch"], "t", witness["partition"])
    found = checker.check(obs, len(actions) + 1)
    sim.note_checks(obs, checker.last_checked, [(v.invariant, v.message) for v in found], ())
    return sim, violations + found, reached


def confirm(
    invariant_id: str, witness: dict[str, int], members: int, partitions: int, seconds: float
) -> Outcome:
    from conformance.protocols.consumer.trace import to_trace

    sim, violations, reached = run_witness(witness, partitions)
    found = [v for v in violations if v.invariant == invariant_id]
    trace = proof_trace(to_trace, sim, invariant_id, violations)
    cx: dict[str, Any] = {
        "protocol": "consumer",
        "group": sim.group_id,
        "topic": "t",
        "partitions": partitions,
        "witness": witness,
        "violations": [f"step {v.step}: {v.message}" for v in found],
        "trace": trace,
    }
    expected = {k: witness[k] for k in reached}
    why = (
        f"the run reached {reached}, the solver's state is {expected}"
        if reached != expected
        else ("" if found else "the checker reports no violation")
    )
    return confirmed(
        invariant_id,
        "witness",
        members,
        partitions,
        seconds,
        cx,
        unconfirmed=f"the model: {why}" if why else "",
        detail=f"model confirms: step {found[0].step}: {found[0].message}" if found else "",
    )
