"""Proving `consumer.target_computed_on_next_heartbeat` over the batching encoding (`conformance.smt.batching`).

Induction as for the other KIP-848 rules (`conformance.smt.induction`): the lemmas hold initially,
and every rule, from any state satisfying them, keeps them and (a heartbeat) meets the invariant's
obligation, for every interval >= 0. A rule that fails starts bounded model checking from the empty
group with the interval of the batching mutants (1000 ms): heartbeats, leaves and time steps. The
solver's steps are run on the model's simulator (members heartbeat at the epoch the coordinator
holds for them, owning what it holds), compared with the solver's epochs and computation times
after every step, and judged by the suite's checker; only a confirmed violation is REFUTED.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import z3

from conformance.smt import batching as B
from conformance.smt.counterexample import proof_trace
from conformance.smt.induction import INITIAL, prove_obligations
from conformance.smt.outcome import Outcome, confirmed
from conformance.smt.solver import Limits, Verdict
from conformance.smt.unroll import unroll, violated_by_pick

INVARIANTS: tuple[str, ...] = (B.INVARIANT,)
INTERVAL_MS = 1000
"""`group.consumer.assignment.interval.ms` of the bounded search: the mutants' variant value."""
SESSION_TIMEOUT_MS = 45_000
MAX_NOW_MS = 20_000
"""The search's clock stays below the session timeout: the encoding has no session expiry."""
MUTANT_OF: dict[tuple[str, str], str] = {
    ("assignment_interval_wait", "2x"): "assignment-interval-doubled",
    ("assignment_interval_check", "false"): "assignment-interval-ignored",
}


def rule_of(variant: Mapping[str, str]) -> B.Rule:
    return B.Rule(
        wait=2 if variant.get("assignment_interval_wait") == "2x" else 1,
        check=variant.get("assignment_interval_check", "true") == "true",
    )


def sim_variants(variant: Mapping[str, str]) -> dict[str, str]:
    """The simulator's ``--variant`` settings: the broken rule's registered mutant, else batching."""
    broken = [MUTANT_OF[(k, v)] for k, v in sorted(variant.items()) if (k, v) in MUTANT_OF]
    if len(broken) > 1:
        raise ValueError(f"a trace replays one mutant; variant {dict(variant)} breaks {len(broken)} rules")
    return {"mutant": broken[0]} if broken else {"assignment_interval": str(INTERVAL_MS)}


def _lemmas(lemmas: tuple[str, ...]) -> list[tuple[str, Any]]:
    out = []
    for name in lemmas:
        if name not in B.LEMMAS:
            raise KeyError(f"unknown batching lemma {name!r}")
        out.append((name, B.LEMMAS[name]))
    return out


def prove(
    invariant_id: str,
    lemmas: tuple[str, ...],
    members: int,
    partitions: int,
    variant: Mapping[str, str],
    limits: Limits,
    depth: int,
) -> list[Outcome]:
    """Base case and every rule at ``members`` slots; bounded search when a rule fails."""
    rule = rule_of(variant)
    named = _lemmas(lemmas)
    start = time.perf_counter()
    g = B.fresh("init", members)
    rows = [
        prove_obligations(
            invariant_id,
            INITIAL,
            members,
            partitions,
            [B.initial(g)],
            [(n, f(g)) for n, f in named],
            limits,
            lemmas,
            start,
        )
    ]
    for transition, fn in B.TRANSITIONS.items():
        start = time.perf_counter()
        pre = B.fresh("pre", members)
        step = fn(pre, 0, "in", rule)
        obligations = [(n, f(step.post)) for n, f in named]
        obligations.append((f"{invariant_id} (step)", B.target_computed_step(pre, 0, step)))
        rows.append(
            prove_obligations(
                invariant_id,
                transition,
                members,
                partitions,
                [*(f(pre) for _, f in named), step.guard],
                obligations,
                limits,
                lemmas,
                start,
            )
        )
    if any(r.verdict != Verdict.CONFIRMED for r in rows):
        rows.append(bmc(invariant_id, members, partitions, variant, limits, depth))
    return rows


def _options(g: B.BGroup, k: int, rule: B.Rule) -> list[tuple[str, int, B.BStep]]:
    out = [("tick", -1, B.step_tick(g, 0, f"s{k}_tick", rule))]
    for i in range(g.size):
        out.append(("heartbeat", i, B.step_heartbeat(g, i, f"s{k}_hb{i}", rule)))
        out.append(("leave", i, B.step_leave(g, i, f"s{k}_lv{i}", rule)))
    return out


def _num(model: z3.ModelRef, x: Any) -> int:
    return int(model.eval(x, model_completion=True).as_long())


def bmc(
    invariant_id: str, members: int, partitions: int, variant: Mapping[str, str], limits: Limits, depth: int
) -> Outcome:
    """Search 1..depth steps from the empty group for a heartbeat that breaks the invariant."""
    start = time.perf_counter()
    rule = rule_of(variant)
    interval = z3.IntVal(INTERVAL_MS)
    found = unroll(
        lambda tag: B.fresh(tag, members, interval),
        B.initial,
        lambda g, k: _options(g, k, rule),
        B.same,
        lambda pre, post, sel, opts: violated_by_pick(
            sel, opts, lambda i, st: B.target_computed_step(pre, i, st)
        ),
        limits,
        depth,
        frame_constraint=lambda g: g.now <= MAX_NOW_MS,
    )
    seconds = time.perf_counter() - start
    if found.model is None:
        verdict = Verdict.UNKNOWN if found.reason else Verdict.CONFIRMED
        detail = found.reason or f"no violation within {depth} steps"
        return Outcome(invariant_id, "bmc", members, partitions, verdict, seconds, detail)
    model = found.model
    steps = [
        {"kind": kind, "ms": _num(model, st.inputs["ms"])} if kind == "tick" else {"kind": kind, "member": i}
        for kind, i, st in found.picked
    ]
    states = [_abstract(model, f) for f in found.frames]
    return confirm(invariant_id, steps, states, variant, members, partitions, seconds)


def _abstract(model: z3.ModelRef, g: B.BGroup) -> dict[str, Any]:
    """The part of a state the model is compared on (member epochs are abstracted by the encoding)."""
    stamped = z3.is_true(model.eval(g.stamped, model_completion=True))
    return {
        "members": [i for i, p in enumerate(g.present) if z3.is_true(model.eval(p, model_completion=True))],
        "group_epoch": _num(model, g.group_epoch),
        "assignment_epoch": _num(model, g.assignment_epoch),
        "now": _num(model, g.now),
        "stamp": _num(model, g.stamp) if stamped else None,
    }


def run_steps(
    steps: list[dict[str, Any]], variant: Mapping[str, str], partitions: int, members: int
) -> tuple[Any, list[Any], list[dict[str, Any]]]:
    """Play ``steps`` on a traced simulator; the trace's simulator, every checker violation, and the
    model's state after each step in the solver's terms."""
    from conformance.engine.checker import Checker
    from conformance.protocols.build import make_consumer_sim

    config = {"session_timeout_ms": SESSION_TIMEOUT_MS}
    sim = make_consumer_sim({"t": partitions}, [], config, sim_variants(variant), where="prove")
    checker = Checker("consumer")
    violations: list[Any] = []
    states = [_model_state(sim, members)]
    for n, step in enumerate(steps, 1):
        if step["kind"] == "tick":
            obs = sim.advance(step["ms"])
        elif step["kind"] == "leave":
            obs = sim.heartbeat_as(f"m{step['member']}", -1)
        else:
            mid = f"m{step['member']}"
            group = sim.port.coordinator_state().groups.get(sim.group_id)
            member = None if group is None else group.members.get(mid)
            if member is None:
                obs = sim.heartbeat_as(mid, 0, [], ["t"], "range")
            else:
                held = sorted(member.assigned | member.pending_revocation)
                obs = sim.heartbeat_as(mid, member.member_epoch, [[t, p] for t, p in held])
        found = checker.check(obs, n)
        sim.note_checks(obs, checker.last_checked, [(v.invariant, v.message) for v in found], ())
        violations += found
        states.append(_model_state(sim, members))
    return sim, violations, states


def _model_state(sim: Any, members: int) -> dict[str, Any]:
    group = sim.port.coordinator_state().groups.get(sim.group_id)
    if group is None:
        return {"members": [], "group_epoch": 0, "assignment_epoch": 0, "now": sim.now, "stamp": None}
    return {
        "members": [i for i in range(members) if f"m{i}" in group.members],
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "now": sim.now,
        "stamp": group.assignment_timestamp,
    }


def confirm(
    invariant_id: str,
    steps: list[dict[str, Any]],
    states: list[dict[str, Any]],
    variant: Mapping[str, str],
    members: int,
    partitions: int,
    seconds: float,
) -> Outcome:
    """REFUTED only if the simulator reaches the solver's states and the checker reports the violation."""
    from conformance.protocols.consumer.trace import to_trace

    sim, violations, got = run_steps(steps, variant, partitions, members)
    mismatches = [
        f"step {n}: model {a} != solver {b}"
        for n, (a, b) in enumerate(zip(got, states, strict=True))
        if a != b
    ]
    found = [v for v in violations if v.invariant == invariant_id]
    trace = proof_trace(to_trace, sim, invariant_id, violations)
    cx: dict[str, Any] = {
        "protocol": "consumer",
        "group": sim.group_id,
        "topic": "t",
        "partitions": partitions,
        "assignment_interval_ms": INTERVAL_MS,
        "steps": steps,
        "violations": [f"step {v.step}: {v.message}" for v in found],
        "trace": trace,
    }
    why = "; ".join(mismatches[:2]) or ("" if found else "the checker reports no violation")
    return confirmed(
        invariant_id,
        "bmc",
        members,
        partitions,
        seconds,
        cx,
        unconfirmed=f"the model: {why}" if why else "",
        detail=f"{len(steps)} steps; model confirms: step {found[0].step}: {found[0].message}"
        if found
        else "",
    )
