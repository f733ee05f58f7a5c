"""z3 classic and client-assignor encodings: proofs, refutations confirmed by the model (with a
replayable trace), and differential tests of the encodings against the model."""

from __future__ import annotations

import random

import pytest
import z3

from conformance.formats.trace_file import read_trace, write_trace
from conformance.smt import claims as CL
from conformance.smt import classic as C
from conformance.smt.claims_check import cooperative_subscriptions, run_assignor
from conformance.smt.classic_replay import Action, new_driver
from conformance.smt.kip848_state import bits_of, value_of
from conformance.smt.prove import run_prove
from conformance.smt.solver import Limits, Verdict
from conformance.trace.replay import replay
from model.assignors.cooperative_sticky import held_back
from model.assignors.sticky import resolve_claims

LIMITS = Limits(seed=0, timeout_s=60, rlimit=100_000_000)
CLASSIC = ["classic.generation_monotonic", "classic.leader_sync_installs"]
CLIENT = ["client.cooperative_no_direct_transfer", "client.sticky_stale_claim_loses"]


def test_classic_and_client_rules_confirmed() -> None:
    run = run_prove(CLASSIC + CLIENT, {}, 3, 4, LIMITS)
    assert {i: run.verdict_of(i) for i in CLASSIC + CLIENT} == {
        i: Verdict.CONFIRMED for i in CLASSIC + CLIENT
    }


def test_generation_needs_its_lemma() -> None:
    from conformance.smt.classic_check import inductive_step

    o = inductive_step("classic.generation_monotonic", "leave", (), 2, {}, LIMITS)
    assert o.verdict == Verdict.UNKNOWN


def test_stale_sync_refuted_with_a_replayable_trace(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = run_prove(["classic.leader_sync_installs"], {"sync_generation_check": "false"}, 2, 2, LIMITS)
    assert run.verdict_of("classic.leader_sync_installs") == Verdict.REFUTED
    (row,) = [o for o in run.outcomes if o.verdict == Verdict.REFUTED]
    assert row.counterexample is not None
    path = write_trace(row.counterexample["trace"], tmp_path / "cx.ndjson")
    trace = read_trace(path)
    assert trace.header["variants"] == {"mutant": "stale-sync"}
    assert "classic.leader_sync_installs" in trace.violated
    again = replay(trace)
    assert again.verdict == "FAILED" and again.exact
    assert any(v.invariant == "classic.leader_sync_installs" for v in again.violations)


@pytest.mark.parametrize(
    ("variant", "invariant"), [({"sticky": "v0"}, CLIENT[1]), ({"cooperative_adjust": "false"}, CLIENT[0])]
)
def test_client_variants_refuted(variant: dict[str, str], invariant: str) -> None:
    run = run_prove([invariant], variant, 3, 4, LIMITS)
    assert run.verdict_of(invariant) == Verdict.REFUTED and not run.encoding_bugs
    (row,) = [o for o in run.outcomes if o.verdict == Verdict.REFUTED]
    assert row.counterexample is not None and row.counterexample["violations"]


# ----------------------------------------------------------------------------- differential tests


def _allowed(
    pre: C.ConcreteGroup, post: C.ConcreteGroup, action: Action, members: int, variant: dict[str, str]
) -> bool:
    """Some choice of the encoding's free inputs takes the abstract pre-state to the post-state."""
    g = C.fresh_group("pre", members)
    step = C.TRANSITIONS[action.kind](g, max(action.member, 0), "in", variant)
    s = z3.Solver()
    s.add(C.equals_concrete(g, pre), step.guard)
    s.add([z3.And(v >= 0, v < members) for k, v in step.inputs.items() if k.endswith("choice")])
    if action.kind == "sync":
        s.add(step.inputs["generation"] == action.generation)
    post_vars = C.fresh_group("post", members)
    s.add(C.group_eq(post_vars, step.post), C.equals_concrete(post_vars, post))
    return s.check() == z3.sat


@pytest.mark.parametrize("seed", range(2))
def test_classic_encoding_allows_every_model_step(seed: int) -> None:
    """Abstraction soundness: every step of random model runs is a step of the encoding, and the
    model's states satisfy the lemmas and the well-formedness the encoding assumes."""
    rng = random.Random(seed)
    members = 3
    variant = {"sync_generation_check": rng.choice(["true", "false"])}
    driver = new_driver(members, variant, seed=seed)
    pre = driver.abstract()
    kinds = set()
    for _ in range(40):
        present = [i for i in range(members) if pre.present[i]]
        options = [Action("join", rng.randrange(members)), Action("failover")]
        if pre.state == C.PREPARING:
            options += [Action("timer")] * 3
        if present:
            i = rng.choice(present)
            options += [Action("sync", i, max(0, pre.gen + rng.choice([-1, 0, 0, 1]))) for _ in range(3)]
            options.append(Action("leave", i))
        action = rng.choice(options)
        driver.apply(action)
        post = driver.abstract()
        assert _allowed(pre, post, action, members, variant), (action, pre, post)
        g = C.fresh_group("chk", members)
        s = z3.Solver()
        s.add(C.equals_concrete(g, post), z3.Not(z3.And(C.wellformed(g), C.persisted_behind(g))))
        assert s.check() == z3.unsat, post
        kinds.add((action.kind, post.state))
        pre = post
    assert len(kinds) >= 6  # the walk visited several rules and states


@pytest.mark.parametrize("seed", range(3))
def test_claim_resolution_matches_the_model(seed: int) -> None:
    rng = random.Random(seed)
    m, p = 3, 4
    for _ in range(30):
        claims = [frozenset(x for x in range(p) if rng.random() < 0.5) for _ in range(m)]
        gens = [rng.randint(-1, 3) for _ in range(m)]
        model_owner = resolve_claims(
            {f"m{i}": (tuple(("t", x) for x in sorted(c)), gens[i]) for i, c in enumerate(claims)}
        )
        c = CL.fresh_claims(m, p)
        s = z3.Solver()
        s.add([x == value_of(v) for x, v in zip(c.claims, claims, strict=True)])
        s.add([x == v for x, v in zip(c.generations, gens, strict=True)])
        owners = CL.resolved_owners(c, "v1")
        assert s.check() == z3.sat
        got = {
            ("t", x): f"m{i}" for i, o in enumerate(owners) for x in bits_of(s.model().eval(o).as_long(), p)
        }
        assert got == model_owner


@pytest.mark.parametrize("seed", range(3))
def test_adjustment_matches_the_model(seed: int) -> None:
    rng = random.Random(seed)
    m, p = 3, 5
    for _ in range(30):
        owned = [frozenset(x for x in range(p) if rng.random() < 0.3) for _ in range(m)]
        core = [frozenset(x for x in range(p) if rng.randrange(m) == i) for i in range(m)]
        subs = cooperative_subscriptions(owned)
        withheld = held_back({f"m{i}": [("t", x) for x in sorted(c)] for i, c in enumerate(core)}, subs)
        k = CL.fresh_cooperative(m, p)
        s = z3.Solver()
        s.add([x == value_of(v) for x, v in zip(k.owned, owned, strict=True)])
        s.add([x == value_of(v) for x, v in zip(k.core, core, strict=True)])
        final = CL.adjusted(k, True)
        assert s.check() == z3.sat
        for i in range(m):
            expected = core[i] - {x for _, x in withheld[f"m{i}"]}
            assert bits_of(s.model().eval(final[i]).as_long(), p) == expected


def test_model_assignor_confirms_a_direct_transfer_without_adjust() -> None:
    subs = cooperative_subscriptions([frozenset({0, 1, 2, 3}), frozenset()])
    _, violations = run_assignor(
        "client.cooperative_no_direct_transfer", subs, 4, {"cooperative_adjust": "false"}
    )
    assert violations
    _, fine = run_assignor("client.cooperative_no_direct_transfer", subs, 4, {})
    assert not fine


# ----------------------------------------------------------------------------- single owner


SINGLE_OWNER = ["classic.single_owner_consumer", "classic.single_owner_coordinator"]


def test_single_owner_confirmed_at_the_published_bound() -> None:
    run = run_prove(SINGLE_OWNER, {}, 4, 8, LIMITS)
    assert {i: run.verdict_of(i) for i in SINGLE_OWNER} == {i: Verdict.CONFIRMED for i in SINGLE_OWNER}
    assert {o.transition for o in run.outcomes} == {"initial", "join", "timer", "sync", "leave", "failover"}


def _double_owner(cx: dict[str, object], invariant: str) -> bool:
    """Read the counterexample's last state, independently of z3: a partition with two owners."""
    if invariant == "classic.single_owner_coordinator":
        stored = cx["stored"]
        assert isinstance(stored, dict)
        sets = [set(p) for p in stored.values()]
        return any(a & b for n, a in enumerate(sets) for b in sets[n + 1 :])
    answered = cx["answered"]
    assert isinstance(answered, dict)
    rows = [(r["generation"], set(r["partitions"])) for r in answered.values()]
    return any(g == h and g >= 0 and a & b for n, (g, a) in enumerate(rows) for h, b in rows[n + 1 :])


@pytest.mark.parametrize(
    ("variant", "invariant", "steps"),
    [
        ({"install_missing": "keep"}, "classic.single_owner_coordinator", 6),
        ({"install_missing": "keep"}, "classic.single_owner_consumer", 7),
        ({"sync_generation_check": "false"}, "classic.single_owner_consumer", 6),
    ],
)
def test_single_owner_broken_rule_has_a_counterexample(
    variant: dict[str, str], invariant: str, steps: int
) -> None:
    """The proof has teeth: with a broken rule the sync step is not inductive and bounded search
    finds a reachable double owner (z3's; not replayed on the model, so UNKNOWN, never a pass)."""
    run = run_prove([invariant], variant, 3, 4, LIMITS)
    assert run.verdict_of(invariant) == Verdict.UNKNOWN
    rows = {o.transition: o for o in run.outcomes}
    assert rows["sync"].detail.startswith("not inductive: sync can break")
    assert {t for t, o in rows.items() if o.verdict != Verdict.CONFIRMED} == {"sync", "bmc"}
    cx = rows["bmc"].counterexample
    assert cx is not None and len(cx["steps"]) == steps
    assert rows["bmc"].detail.startswith(f"z3 counterexample in {steps} steps")
    assert _double_owner(cx, invariant)


def test_stale_sync_leaves_the_stored_assignments_single_owner() -> None:
    """A stale SyncGroup installs a map that is still single-owner: only the consumer view breaks."""
    run = run_prove(SINGLE_OWNER, {"sync_generation_check": "false"}, 3, 4, LIMITS)
    assert run.verdict_of("classic.single_owner_coordinator") == Verdict.CONFIRMED
    assert run.verdict_of("classic.single_owner_consumer") == Verdict.UNKNOWN


def test_single_owner_steps_are_not_vacuous() -> None:
    """Every rule can fire from some state satisfying the consumer proof's lemmas (else its
    CONFIRMED would be empty), and the consumer invariant is not inductive without them."""
    from conformance.smt import classic_assign as A
    from conformance.smt.classic_assign_check import _choices_in_range, _conjuncts, inductive_step
    from conformance.smt.prove import catalogue_lemmas

    lemmas = catalogue_lemmas()["classic.single_owner_consumer"]
    for kind, fn in A.TRANSITIONS.items():
        pre = A.fresh("pre", 3, 4)
        step = fn(pre, 0, "in", {})
        s = z3.Solver()
        s.add([f(pre) for _, f in _conjuncts("classic.single_owner_consumer", lemmas)])
        s.add(step.guard, _choices_in_range(step, 3), z3.Not(A.agroup_eq(pre, step.post)))
        assert s.check() == z3.sat, kind
    bare = inductive_step("classic.single_owner_consumer", "sync", (), 3, 4, {}, LIMITS)
    assert bare.verdict == Verdict.UNKNOWN and bare.failed == ("classic.single_owner_consumer",)


def _assign_eq(a, c, dgen, dasg):  # type: ignore[no-untyped-def]
    """The encoding's state ``a`` equals the model's (group, stored, persisted) and the answers."""
    group, (asg, pasg) = c
    out = [C.equals_concrete(a.g, group)]
    out += [x == value_of(v) for x, v in zip(a.asg + a.pasg, asg + pasg, strict=True)]
    out += [x == v for x, v in zip(a.dgen, dgen, strict=True)]
    out += [x == value_of(v) for x, v in zip(a.dasg, dasg, strict=True)]
    return z3.And(out)


def _assign_step_allowed(kind, member, generation, pre, post, members, variant) -> bool:  # type: ignore[no-untyped-def]
    from conformance.smt import classic_assign as A

    a = A.fresh("pre", members, 2)
    step = A.TRANSITIONS[kind](a, max(member, 0), "in", variant)
    s = z3.Solver()
    s.add(_assign_eq(a, *pre), step.guard)
    s.add([z3.And(v >= 0, v < members) for k, v in step.inputs.items() if k.endswith("choice")])
    if kind == "sync":
        s.add(step.inputs["generation"] == generation)
    b = A.fresh("post", members, 2)
    s.add(A.agroup_eq(b, step.post), _assign_eq(b, *post))
    return s.check() == z3.sat


@pytest.mark.parametrize("seed", range(2))
def test_assignment_encoding_allows_every_model_step(seed: int) -> None:
    """Abstraction soundness of `classic_assign`: random model runs whose leader sends random
    single-owner maps; every step (a follower answered at the install counts as its own sync right
    after it) is a step of the encoding, and the model's states satisfy the consumer proof's lemmas."""
    from conformance.smt import classic_assign as A
    from conformance.smt.classic_assign_check import _conjuncts
    from conformance.smt.prove import catalogue_lemmas

    rng = random.Random(seed)
    members = 3
    variant = {"sync_generation_check": rng.choice(["true", "false"])}
    driver = new_driver(members, variant, seed=seed)
    dgen, dasg = [-1] * members, [frozenset()] * members
    pre = (driver.abstract(), driver.stored())
    lemmas = _conjuncts("classic.single_owner_consumer", catalogue_lemmas()["classic.single_owner_consumer"])
    answered = 0
    for _ in range(40):
        g = pre[0]
        present = [i for i in range(members) if g.present[i]]
        options = [Action("join", rng.randrange(members)), Action("failover")]
        if g.state == C.PREPARING:
            options += [Action("timer")] * 3
        for i in present:
            covered = [k for k in present if rng.random() < 0.8]
            owner = {p: rng.choice([*covered, None]) for p in (0, 1)} if covered else {}
            mapping = tuple((k, tuple(p for p, o in owner.items() if o == k)) for k in covered)
            gen = max(0, g.gen + rng.choice([-1, 0, 0, 0, 1]))
            options += [Action("sync", i, gen, mapping)] * 2 + [Action("leave", i)]
        action = rng.choice(options)
        driver.apply(action)
        post = (driver.abstract(), driver.stored())
        others = [(j, r, ps) for j, r, ps in driver.answers if j != action.member or action.kind != "sync"]
        own = [(j, r, ps) for j, r, ps in driver.answers if (j, r, ps) not in others]
        mid_gen, mid_asg = list(dgen), list(dasg)
        for j, r, ps in own:
            mid_gen[j], mid_asg[j] = r, ps
        assert _assign_step_allowed(
            action.kind,
            action.member,
            action.generation,
            (pre, dgen, dasg),
            (post, mid_gen, mid_asg),
            members,
            variant,
        ), (action, pre, post, driver.answers)
        for j, r, ps in others:
            nxt_gen, nxt_asg = list(mid_gen), list(mid_asg)
            nxt_gen[j], nxt_asg[j] = r, ps
            assert _assign_step_allowed(
                "sync", j, r, (post, mid_gen, mid_asg), (post, nxt_gen, nxt_asg), members, variant
            ), (action, j, r, ps)
            mid_gen, mid_asg = nxt_gen, nxt_asg
        dgen, dasg, pre = mid_gen, mid_asg, post
        answered += len(driver.answers)
        if variant["sync_generation_check"] == "true":
            a = A.fresh("chk", members, 2)
            s = z3.Solver()
            s.add(_assign_eq(a, post, dgen, dasg), z3.Not(z3.And([f(a) for _, f in lemmas])))
            assert s.check() == z3.unsat, (post, dgen, dasg)
    assert answered >= 3  # the walk reached installs and answers
