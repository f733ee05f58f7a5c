"""Proving and refuting the client-side assignor rules of `conformance.smt.claims`.

Each rule is a function of the leader's inputs, so its proof is one query: no input (of the bounded
domain) makes the rule's output violate the invariant. A counterexample is an assignor call (the
members' subscriptions); it is reported REFUTED only when the model's assignor, run on exactly those
subscriptions, produces an assignment that the registry predicate rejects.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import z3

from conformance.smt import claims as C
from conformance.smt.claims_trace import trace_of
from conformance.smt.kip848_state import bits_of
from conformance.smt.outcome import Outcome, confirmed
from conformance.smt.solver import Limits, Verdict, check, make_solver
from model.assignors.base import COOPERATIVE, EAGER, get_assignor
from model.assignors.invariants import AssignmentObservation
from model.embedded import Subscription, encode_cooperative_user_data, encode_sticky_user_data
from model.invariants import load_all

TOPIC = "t"
STICKY = "client.sticky_stale_claim_loses"
COOP = "client.cooperative_no_direct_transfer"
INVARIANTS: tuple[str, ...] = (COOP, STICKY)
RULE = {STICKY: "resolve_claims", COOP: "adjust"}


def _num(model: z3.ModelRef, x: Any) -> int:
    return int(model.eval(x, model_completion=True).as_long())


def sticky_subscriptions(claims: list[frozenset[int]], generations: list[int]) -> dict[str, Subscription]:
    """Eager sticky members claiming ``claims`` with their generation in the subscription field
    (v2+, KIP-792) and the claim in V0 user data (no generation), as a pre-KIP-341 leader reads it."""
    return {
        f"m{i}": Subscription(
            topics=(TOPIC,),
            user_data=encode_sticky_user_data([(TOPIC, p) for p in sorted(c)], None),
            generation_id=g,
        )
        for i, (c, g) in enumerate(zip(claims, generations, strict=True))
    }


def cooperative_subscriptions(owned: list[frozenset[int]], generation: int = 1) -> dict[str, Subscription]:
    return {
        f"m{i}": Subscription(
            topics=(TOPIC,),
            user_data=encode_cooperative_user_data(generation),
            owned_partitions=tuple((TOPIC, p) for p in sorted(o)),
            generation_id=generation,
        )
        for i, o in enumerate(owned)
    }


def run_assignor(
    invariant_id: str, subscriptions: dict[str, Subscription], partitions: int, variant: Mapping[str, str]
) -> tuple[AssignmentObservation, list[str]]:
    """The model's assignor (with the variant's option) on ``subscriptions``, and the predicate's messages."""
    if invariant_id == STICKY:
        assignor = get_assignor("sticky", user_data_version=0 if variant.get("sticky") == "v0" else 1)
        protocol, name = EAGER, "sticky"
    else:
        assignor = get_assignor(
            "cooperative-sticky", adjust=variant.get("cooperative_adjust", "true") == "true"
        )
        protocol, name = COOPERATIVE, "cooperative-sticky"
    counts = {TOPIC: partitions}
    obs = AssignmentObservation(counts, subscriptions, assignor.assign(counts, subscriptions), protocol, name)
    return obs, list(load_all()[invariant_id].check(obs))


def prove(
    invariant_id: str,
    lemmas: tuple[str, ...],
    members: int,
    partitions: int,
    variant: Mapping[str, str],
    limits: Limits,
    depth: int,
) -> list[Outcome]:
    start = time.perf_counter()
    s = make_solver(limits)
    if invariant_id == STICKY:
        c = C.fresh_claims(members, partitions)
        s.add(C.claims_domain(c))
        s.add(z3.Not(C.sticky_stale_claim_loses(c, C.resolved_owners(c, variant.get("sticky", "v1")))))
        # member 0 is the fresh leader of the witness's trace (`claims_trace`)
        shaping = z3.And(C.survives_balancing_with_fresh_leader(c), z3.And([g >= 0 for g in c.generations]))
    else:
        k = C.fresh_cooperative(members, partitions)
        s.add(C.core_is_assignment(k))
        adjust = variant.get("cooperative_adjust", "true") == "true"
        s.add(z3.Not(C.cooperative_no_direct_transfer(k, C.adjusted(k, adjust))))
        shaping = z3.And(C.forces_a_move(k), k.owned[0] == 0)
    result, reason = check(s)
    rule = RULE[invariant_id]
    if result == z3.unsat:
        return [
            Outcome(invariant_id, rule, members, partitions, Verdict.CONFIRMED, time.perf_counter() - start)
        ]
    if result == z3.unknown:
        return [
            Outcome(
                invariant_id, rule, members, partitions, Verdict.UNKNOWN, time.perf_counter() - start, reason
            )
        ]
    # a violating input exists; look for one the model's whole assignor must reproduce
    s.add(shaping)
    result, reason = check(s)
    seconds = time.perf_counter() - start
    step = Outcome(
        invariant_id, rule, members, partitions, Verdict.UNKNOWN, seconds, f"rule can break {invariant_id}"
    )
    if result != z3.sat:
        step.detail += "; no witness the assignor's later passes keep" + (f" ({reason})" if reason else "")
        return [step]
    model = s.model()
    if invariant_id == STICKY:
        claims = [bits_of(_num(model, x), partitions) for x in c.claims]
        generations = [_num(model, g) for g in c.generations]
        subs = sticky_subscriptions(claims, generations)
        inputs: dict[str, Any] = {
            f"m{i}": {"claims": sorted(claims[i]), "generation": generations[i]} for i in range(members)
        }
    else:
        owned = [bits_of(_num(model, x), partitions) for x in k.owned]
        subs = cooperative_subscriptions(owned)
        inputs = {f"m{i}": {"owned": sorted(owned[i]), "generation": 1} for i in range(members)}
    obs, violations = run_assignor(invariant_id, subs, partitions, variant)
    cx = {
        "protocol": "client",
        "rule": rule,
        "assignor": obs.assignor,
        "topic": TOPIC,
        "partitions": partitions,
        "members": inputs,
        "assignments": {m: [p for _, p in a.partitions] for m, a in sorted(obs.assignments.items())},
        "violations": violations,
    }
    why = "" if violations else "the model's assignor"
    if not why:  # the same call made by a leader in a classic run, judged by the whole suite's checker
        trace, _found = trace_of(invariant_id, obs.assignor, TOPIC, partitions, subs, variant)
        cx["trace"] = trace
        if invariant_id not in trace.violated:
            why = f"the leader's call in a classic run on mutant {trace.header['variants'].get('mutant')}"
    detail = f"model confirms: {violations[0]}" if not why else ""
    return [
        step,
        confirmed(
            invariant_id, "witness", members, partitions, time.perf_counter() - start, cx,
            unconfirmed=why, detail=detail,
        ),
    ]  # fmt: skip
