"""Inductive steps and bounded model checking for the classic encoding (`conformance.smt.classic`).

Both classic invariants are transition invariants: the obligation is checked for every rule from
any state satisfying the lemmas the catalogue lists, and the lemmas are checked preserved. A failed
step starts bounded model checking from the empty group with two member slots (enough for the
generation and sync rules, and the size at which every leader election is forced, so the model's
seeded choices and the solver's agree); its counterexample is run on the model
(`conformance.smt.classic_replay`), compared state by state, and written as a trace.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import z3

from conformance.smt import classic as C
from conformance.smt.classic_replay import Action, new_driver, same, trace_of
from conformance.smt.induction import INITIAL, prove_obligations
from conformance.smt.outcome import Outcome, confirmed
from conformance.smt.solver import Limits, Verdict
from conformance.smt.unroll import unroll, violated_by_pick

INVARIANTS: tuple[str, ...] = tuple(sorted(C.ENCODERS))
BMC_MEMBERS = 2


def _choices_in_range(step: C.Step, members: int) -> Any:
    return z3.And([z3.And(v >= 0, v < members) for k, v in step.inputs.items() if k.endswith("choice")])


def _lemmas(lemmas: tuple[str, ...]) -> list[tuple[str, Any]]:
    out = []
    for name in lemmas:
        if name not in C.LEMMAS:
            raise KeyError(f"unknown classic lemma {name!r}")
        out.append((name, C.LEMMAS[name]))
    return out


def base_case(invariant_id: str, lemmas: tuple[str, ...], members: int, limits: Limits) -> Outcome:
    start = time.perf_counter()
    g = C.fresh_group("init", members)
    named = [(n, f(g)) for n, f in _lemmas(lemmas)]
    return prove_obligations(invariant_id, INITIAL, members, 0, [C.initial(g)], named, limits, lemmas, start)


def inductive_step(
    invariant_id: str,
    transition: str,
    lemmas: tuple[str, ...],
    members: int,
    variant: Mapping[str, str],
    limits: Limits,
) -> Outcome:
    start = time.perf_counter()
    enc = C.ENCODERS[invariant_id]
    pre = C.fresh_group("pre", members)
    step = C.TRANSITIONS[transition](pre, 0, "in", dict(variant))
    named = _lemmas(lemmas)
    assumptions = [*(f(pre) for _, f in named), step.guard, _choices_in_range(step, members)]
    obligations = [(n, f(step.post)) for n, f in named] + [(f"{invariant_id} (step)", enc.step(pre, 0, step))]
    return prove_obligations(
        invariant_id, transition, members, 0, assumptions, obligations, limits, lemmas, start
    )


def _options(g: C.Group, k: int, members: int, variant: Mapping[str, str]) -> list[tuple[str, int, C.Step]]:
    out = []
    for kind in ("join", "sync", "leave"):
        for i in range(members):
            out.append((kind, i, C.TRANSITIONS[kind](g, i, f"s{k}_{kind}{i}", dict(variant))))
    for kind in ("timer", "failover"):
        out.append((kind, -1, C.TRANSITIONS[kind](g, 0, f"s{k}_{kind}", dict(variant))))
    return out


def bmc(invariant_id: str, variant: Mapping[str, str], limits: Limits, depth: int) -> Outcome:
    start = time.perf_counter()
    members = BMC_MEMBERS
    enc = C.ENCODERS[invariant_id]
    found = unroll(
        lambda tag: C.fresh_group(tag, members),
        C.initial,
        lambda g, k: _options(g, k, members, variant),
        C.group_eq,
        lambda pre, post, sel, opts: violated_by_pick(sel, opts, lambda i, st: enc.step(pre, i, st)),
        limits,
        depth,
        step_guard=lambda st: _choices_in_range(st, members),
    )
    if found.model is None:
        verdict = Verdict.UNKNOWN if found.reason else Verdict.CONFIRMED
        detail = found.reason or f"no violation within {depth} steps"
        return Outcome(invariant_id, "bmc", members, 0, verdict, time.perf_counter() - start, detail)
    model = found.model
    actions = [
        Action(
            kind,
            i,
            model.eval(st.inputs["generation"], model_completion=True).as_long() if kind == "sync" else 0,
        )
        for kind, i, st in found.picked
    ]
    states = [C.evaluate(model, f) for f in found.frames]
    return confirm(invariant_id, actions, states, variant, time.perf_counter() - start)


def confirm(
    invariant_id: str,
    actions: list[Action],
    states: list[C.ConcreteGroup],
    variant: Mapping[str, str],
    seconds: float,
) -> Outcome:
    driver = new_driver(BMC_MEMBERS, dict(variant))
    mismatches = []
    for n, action in enumerate(actions, start=1):
        driver.apply(action)
        got = driver.abstract()
        if n < len(states) and not same(got, states[n]):
            mismatches.append(f"step {n} ({action.kind}): model {got} != solver {states[n]}")
    found = [v for v in driver.violations if v.invariant == invariant_id]
    trace = trace_of(driver, invariant_id)
    cx = {
        "protocol": "classic",
        "steps": [a.to_json() for a in actions],
        "violations": [f"step {v.step}: {v.message}" for v in found],
        "trace": trace,
    }
    why = "; ".join(mismatches) or ("" if found else "the model's predicate reports no violation")
    return confirmed(
        invariant_id,
        "bmc",
        BMC_MEMBERS,
        0,
        seconds,
        cx,
        unconfirmed=f"the model: {why}" if why else "",
        detail=f"{len(actions)} steps; model confirms: step {found[0].step}: {found[0].message}"
        if found
        else "",
    )


def prove(
    invariant_id: str,
    lemmas: tuple[str, ...],
    members: int,
    partitions: int,
    variant: Mapping[str, str],
    limits: Limits,
    depth: int,
) -> list[Outcome]:
    """Base case and every rule at ``members`` slots (partitions play no part in these rules)."""
    rows = [base_case(invariant_id, lemmas, members, limits)]
    for transition in C.ENCODERS[invariant_id].transitions:
        rows.append(inductive_step(invariant_id, transition, lemmas, members, variant, limits))
    if any(r.verdict != Verdict.CONFIRMED for r in rows):
        own = f"{invariant_id} (step)"
        if any(own in r.failed or (r.verdict != Verdict.CONFIRMED and not r.failed) for r in rows):
            rows.append(bmc(invariant_id, variant, limits, depth))
        else:
            broken = sorted({f for r in rows for f in r.failed})
            rows.append(
                Outcome(
                    invariant_id,
                    "bmc",
                    members,
                    0,
                    Verdict.UNKNOWN,
                    0.0,
                    f"not searched: only lemmas fail under this variant ({', '.join(broken)})",
                )
            )
    return rows
