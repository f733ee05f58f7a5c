"""Inductive proof and bounded search for the single-owner invariants (`conformance.smt.classic_assign`).

Both invariants are state invariants: the base case says the empty group satisfies the invariant
and its lemmas, and every rule, from any state satisfying them, keeps them. A rule that is not
inductive starts bounded model checking from the empty group (two member slots, two partitions). A
violation found there is reported with its steps as an UNKNOWN verdict marked "z3 counterexample":
it is not replayed on the Python model (no registered mutant has these broken rules), so by the
rule of docs/proofs.md it is not REFUTED, and it is never a pass.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import z3

from conformance.smt import classic_assign as A
from conformance.smt.induction import INITIAL, prove_obligations
from conformance.smt.outcome import Outcome
from conformance.smt.solver import Limits, Verdict
from conformance.smt.unroll import unroll

INVARIANTS: tuple[str, ...] = tuple(sorted(A.INVARIANT_PREDICATES))
BMC_MEMBERS = 2
BMC_PARTITIONS = 2
BMC_MIN_DEPTH = 8
"""The shortest violations of the broken variants take 6 (install_missing) and 7 (stale sync) steps."""


def _choices_in_range(step: A.AStep, members: int) -> Any:
    out = [z3.And(v >= 0, v < members) for k, v in step.inputs.items() if k.endswith("choice")]
    return z3.And(out) if out else z3.BoolVal(True)


def _conjuncts(invariant_id: str, lemmas: tuple[str, ...]) -> list[tuple[str, Any]]:
    out = [(invariant_id, A.INVARIANT_PREDICATES[invariant_id])]
    for name in lemmas:
        fn = A.LEMMAS.get(name) or A.INVARIANT_PREDICATES.get(name)
        if fn is None:
            raise KeyError(f"unknown single-owner lemma {name!r}")
        out.append((name, fn))
    return out


def base_case(
    invariant_id: str, lemmas: tuple[str, ...], members: int, partitions: int, limits: Limits
) -> Outcome:
    start = time.perf_counter()
    a = A.fresh("init", members, partitions)
    named = [(n, f(a)) for n, f in _conjuncts(invariant_id, lemmas)]
    return prove_obligations(
        invariant_id, INITIAL, members, partitions, [A.initial(a)], named, limits, lemmas, start
    )


def inductive_step(
    invariant_id: str,
    transition: str,
    lemmas: tuple[str, ...],
    members: int,
    partitions: int,
    variant: Mapping[str, str],
    limits: Limits,
) -> Outcome:
    start = time.perf_counter()
    pre = A.fresh("pre", members, partitions)
    step = A.TRANSITIONS[transition](pre, 0, "in", dict(variant))
    conj = _conjuncts(invariant_id, lemmas)
    assumptions = [*(f(pre) for _, f in conj), step.guard, _choices_in_range(step, members)]
    obligations = [(n, f(step.post)) for n, f in conj]
    return prove_obligations(
        invariant_id, transition, members, partitions, assumptions, obligations, limits, lemmas, start
    )


def _options(a: A.AGroup, k: int, variant: Mapping[str, str]) -> list[tuple[str, int, A.AStep]]:
    out = []
    for kind in ("join", "sync", "leave"):
        for i in range(a.size):
            out.append((kind, i, A.TRANSITIONS[kind](a, i, f"s{k}_{kind}{i}", dict(variant))))
    for kind in ("timer", "failover"):
        out.append((kind, -1, A.TRANSITIONS[kind](a, 0, f"s{k}_{kind}", dict(variant))))
    return out


def _bits(model: z3.ModelRef, x: Any) -> list[int]:
    v = model.eval(x, model_completion=True).as_long()
    return [p for p in range(x.size()) if v >> p & 1]


def _describe(model: z3.ModelRef, kind: str, i: int, st: A.AStep) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": kind}
    if i >= 0:
        out["member"] = f"c{i}"
    if kind == "sync":
        out["generation"] = model.eval(st.inputs["generation"], model_completion=True).as_long()
        covered = [k for k in range(BMC_MEMBERS) if z3.is_true(model.eval(st.inputs[f"covered{k}"], True))]
        out["map"] = {f"c{k}": _bits(model, st.inputs[f"map{k}"]) for k in covered}
    return out


def _summary(steps: list[dict[str, Any]]) -> str:
    """One line: ``join c0, timer, sync c0 g1 {c0:[0, 1]}, ...``."""
    out = []
    for st in steps:
        text = " ".join(str(x) for x in (st["kind"], st.get("member", "")) if x)
        if st["kind"] == "sync":
            text += f" g{st['generation']}"
            if st["map"]:
                text += " {" + ", ".join(f"{m}:{p}" for m, p in st["map"].items()) + "}"
        out.append(text)
    return ", ".join(out)


def bmc(invariant_id: str, variant: Mapping[str, str], limits: Limits, depth: int) -> Outcome:
    start = time.perf_counter()
    depth = max(depth, BMC_MIN_DEPTH)
    inv = A.INVARIANT_PREDICATES[invariant_id]
    found = unroll(
        lambda tag: A.fresh(tag, BMC_MEMBERS, BMC_PARTITIONS),
        A.initial,
        lambda a, k: _options(a, k, variant),
        A.agroup_eq,
        lambda pre, post, sel, opts: z3.Not(inv(post)),
        limits,
        depth,
        step_guard=lambda st: _choices_in_range(st, BMC_MEMBERS),
    )
    seconds = time.perf_counter() - start
    if found.model is None:
        verdict = Verdict.UNKNOWN if found.reason else Verdict.CONFIRMED
        detail = found.reason or f"no violation within {depth} steps"
        return Outcome(invariant_id, "bmc", BMC_MEMBERS, BMC_PARTITIONS, verdict, seconds, detail)
    model = found.model
    steps = [_describe(model, kind, i, st) for kind, i, st in found.picked]
    last = found.frames[-1]
    told = {
        f"c{i}": {
            "generation": model.eval(last.dgen[i], True).as_long(),
            "partitions": _bits(model, last.dasg[i]),
        }
        for i in range(BMC_MEMBERS)
    }
    stored = {f"c{i}": _bits(model, last.asg[i]) for i in range(BMC_MEMBERS)}
    cx = {"protocol": "classic", "steps": steps, "stored": stored, "answered": told}
    return Outcome(
        invariant_id,
        "bmc",
        BMC_MEMBERS,
        BMC_PARTITIONS,
        Verdict.UNKNOWN,
        seconds,
        f"z3 counterexample in {len(steps)} steps (not replayed on the model): {_summary(steps)}",
        cx,
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
    """Base case and every rule at ``members`` slots x ``partitions``; bounded search if a rule fails."""
    rows = [base_case(invariant_id, lemmas, members, partitions, limits)]
    for transition in A.TRANSITIONS:
        rows.append(inductive_step(invariant_id, transition, lemmas, members, partitions, variant, limits))
    if any(r.verdict != Verdict.CONFIRMED for r in rows):
        rows.append(bmc(invariant_id, variant, limits, depth))
    return rows
