"""Inductive steps and bounded model checking for the KIP-848 encoding (`conformance.smt.kip848`).

Induction: for each rule R, ``S(pre) ∧ guard_R ∧ ¬(S(post) ∧ step obligation)`` must be unsat, where S
is the invariant with the strengthening lemmas the catalogue lists for it; the base case is
``initial ⇒ S``. Slots are interchangeable (every formula is symmetric in the member slots), so a
per-member rule is checked for slot 0.

Bounded model checking: heartbeats and leaves (`step_heartbeat`, `step_leave`) unrolled from the
empty group for 1..k steps until the invariant fails, targets computed by the model's own ``range``
server assignor (the members ask for it), so a counterexample is plain requests; the trace is replayed on the model
(`conformance.smt.kip848_replay`) and reported REFUTED only if the model confirms it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import z3

from conformance.smt import kip848 as K
from conformance.smt import kip848_claims as KC
from conformance.smt import kip848_state as KS
from conformance.smt.induction import INITIAL, prove_obligations
from conformance.smt.kip848_replay import HeartbeatStep, replay
from conformance.smt.kip848_trace import trace_of
from conformance.smt.outcome import Outcome, confirmed
from conformance.smt.solver import Limits, Verdict
from conformance.smt.unroll import unroll, violated_by_pick


def strengthening(invariant_id: str, lemmas: tuple[str, ...]) -> list[tuple[str, K.StateFormula]]:
    """The invariant's state formula (if any) and its lemmas, by id."""
    out: list[tuple[str, K.StateFormula]] = []
    enc = KC.ENCODERS[invariant_id]
    if enc.state is not None:
        out.append((invariant_id, enc.state))
    for lemma in lemmas:
        if lemma in KC.LEMMAS:
            out.append((lemma, KC.LEMMAS[lemma]))
        elif lemma in KC.ENCODERS and KC.ENCODERS[lemma].state is not None:
            out.append((lemma, KC.ENCODERS[lemma].state))  # type: ignore[arg-type]
        else:
            raise KeyError(f"unknown KIP-848 lemma {lemma!r}")
    return out


def base_case(
    invariant_id: str, lemmas: tuple[str, ...], members: int, partitions: int, limits: Limits
) -> Outcome:
    start = time.perf_counter()
    g = KS.fresh_group("init", members, partitions)
    named = [(n, f(g)) for n, f in strengthening(invariant_id, lemmas)]
    return prove_obligations(
        invariant_id, INITIAL, members, partitions, [KC.initial(g)], named, limits, lemmas, start
    )


def inductive_step(
    invariant_id: str,
    transition: str,
    lemmas: tuple[str, ...],
    members: int,
    partitions: int,
    variant: KS.Variant,
    limits: Limits,
) -> Outcome:
    """CONFIRMED when the rule preserves the invariant and its lemmas; UNKNOWN (with the failing
    conjuncts) when a counterexample to induction exists or the solver gave up."""
    start = time.perf_counter()
    enc = KC.ENCODERS[invariant_id]
    pre = KS.fresh_group("pre", members, partitions)
    step = K.TRANSITIONS[transition](pre, 0, "in", variant)
    formulas = strengthening(invariant_id, lemmas)
    named = [(n, f(step.post)) for n, f in formulas]
    if enc.step is not None:
        named.append((f"{invariant_id} (step)", enc.step(pre, 0, step)))
    assumptions = [*(f(pre) for _, f in formulas), step.guard]
    return prove_obligations(
        invariant_id, transition, members, partitions, assumptions, named, limits, lemmas, start
    )


# ----------------------------------------------------------------------------- bounded model checking


def _options(g: KS.Group, s: int, variant: KS.Variant) -> list[tuple[str, int, K.Step]]:
    out = []
    for i in range(len(g.members)):
        out.append(("heartbeat", i, K.step_heartbeat(g, i, f"s{s}_hb{i}", variant, assignor="range")))
        out.append(("leave", i, K.step_leave(g, i, f"s{s}_lv{i}", variant)))
    return out


def _bits(model: z3.ModelRef, x: Any, width: int) -> frozenset[int]:
    return KS.bits_of(int(model.eval(x, model_completion=True).as_long()), width)


def bmc(
    invariant_id: str,
    members: int,
    partitions: int,
    variant: KS.Variant,
    limits: Limits,
    depth: int,
) -> Outcome:
    """Search 1..depth heartbeat/leave steps from the empty group for a violation; replay it."""
    start = time.perf_counter()
    enc = KC.ENCODERS[invariant_id]

    def bad(pre: KS.Group, post: KS.Group, sel: Any, opts: Any) -> Any:
        out = [] if enc.state is None else [z3.Not(enc.state(post))]
        if enc.step is not None:
            step = enc.step
            out.append(violated_by_pick(sel, opts, lambda i, st: step(pre, i, st)))
        return z3.Or(out)

    found = unroll(
        lambda tag: KS.fresh_group(tag, members, partitions),
        KC.initial,
        lambda g, k: _options(g, k, variant),
        KS.group_eq,
        bad,
        limits,
        depth,
    )
    if found.model is None:
        verdict = Verdict.UNKNOWN if found.reason else Verdict.CONFIRMED
        detail = found.reason or f"no violation within {depth} steps"
        return Outcome(invariant_id, "bmc", members, partitions, verdict, time.perf_counter() - start, detail)
    model = found.model
    steps = []
    for kind, i, st in found.picked:
        if kind == "leave":
            steps.append(HeartbeatStep("leave", i))
            continue
        null = z3.is_true(model.eval(st.inputs["owned_null"], model_completion=True))
        steps.append(
            HeartbeatStep(
                "heartbeat",
                i,
                model.eval(st.inputs["epoch"], model_completion=True).as_long(),
                None if null else _bits(model, st.inputs["owned"], partitions),
            )
        )
    states = [KS.evaluate(model, f) for f in found.frames]
    return confirm(invariant_id, steps, states, variant, members, partitions, time.perf_counter() - start)


def confirm(
    invariant_id: str,
    steps: list[HeartbeatStep],
    states: list[KS.ConcreteGroup],
    variant: KS.Variant,
    members: int,
    partitions: int,
    seconds: float,
) -> Outcome:
    """REFUTED only if the model, run on the same steps, reaches the same states and its predicate fails."""
    result = replay(steps, invariant_id, variant, members, partitions, states)
    cx: dict[str, Any] = {
        "protocol": "consumer",
        "group": "g",
        "topic": "t",
        "partitions": partitions,
        "steps": [s.to_json() for s in steps],
        "violations": result.violations,
    }
    why = "; ".join(result.mismatches) or (
        "" if result.violations else "the model's predicate reports no violation"
    )
    if not why:  # the same steps as a trace, on the registered mutant through the whole suite's checker
        trace, found = trace_of(steps, invariant_id, variant_dict(variant), partitions)
        cx["trace"] = trace
        if invariant_id not in trace.violated:
            why = f"the trace on mutant {trace.header['variants'].get('mutant')} does not violate it ({found[:1]})"
    return confirmed(
        invariant_id,
        "bmc",
        members,
        partitions,
        seconds,
        cx,
        unconfirmed=f"the model: {why}" if why else "",
        detail=f"{len(steps)} steps; model confirms: {result.violations[0]}" if not why else "",
    )


# ----------------------------------------------------------------------------- one invariant

INVARIANTS: tuple[str, ...] = tuple(sorted(KC.ENCODERS))

STEP_TRANSITIONS: dict[str, tuple[str, ...]] = {
    inv: ("heartbeat",) if KC.ENCODERS[inv].state is None else tuple(K.TRANSITIONS) for inv in KC.ENCODERS
}
"""Rules each invariant is checked against (a pure transition invariant only on heartbeats)."""


def variant_dict(variant: KS.Variant) -> dict[str, str]:
    """The ``--variant`` settings of ``variant`` (the inverse of `variant_of`)."""
    return {
        "reconcile_pending": variant.reconcile_pending,
        "leave_bump": str(variant.leave_bump).lower(),
        "epoch_check": str(variant.epoch_check).lower(),
    }


def variant_of(variant: Mapping[str, str]) -> KS.Variant:
    return KS.Variant(
        reconcile_pending=variant.get("reconcile_pending", "respect"),
        leave_bump=variant.get("leave_bump", "true") == "true",
        epoch_check=variant.get("epoch_check", "true") == "true",
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
    """Base case, the inductive step of every rule, and bounded model checking when a step fails."""
    v = variant_of(variant)
    rows = [base_case(invariant_id, lemmas, members, partitions, limits)]
    for transition in STEP_TRANSITIONS[invariant_id]:
        rows.append(inductive_step(invariant_id, transition, lemmas, members, partitions, v, limits))
    if any(r.verdict != Verdict.CONFIRMED for r in rows):
        rows.append(search(invariant_id, rows, members, partitions, v, limits, depth))
    return rows


def search(
    invariant_id: str,
    rows: list[Outcome],
    members: int,
    partitions: int,
    variant: KS.Variant,
    limits: Limits,
    depth: int,
) -> Outcome:
    """Bounded model checking when some step can break the invariant itself; when only lemmas break,
    the invariant's status follows theirs and no search is made (it stays UNKNOWN)."""
    own = {invariant_id, f"{invariant_id} (step)"}
    if any(own & set(r.failed) for r in rows) or any(
        not r.failed for r in rows if r.verdict != Verdict.CONFIRMED
    ):
        return bmc(invariant_id, members, partitions, variant, limits, depth)
    broken = sorted({f for r in rows for f in r.failed})
    return Outcome(
        invariant_id,
        "bmc",
        members,
        partitions,
        Verdict.UNKNOWN,
        0.0,
        f"not searched: only lemmas fail under this variant ({', '.join(broken)})",
    )
