"""z3 KIP-848 encoding: proofs at small bounds, broken variants refuted and confirmed by the model,
and the differential test of the encoding against the model's coordinator on random states."""

from __future__ import annotations

import random

import pytest
import z3

from conformance.smt import kip848 as K
from conformance.smt import kip848_claims as KC
from conformance.smt import kip848_state as KS
from conformance.smt.kip848_check import bmc, confirm, inductive_step
from conformance.smt.kip848_replay import (
    GROUP,
    TOPIC,
    HeartbeatStep,
    ScriptedCoordinator,
    concrete_of,
    replay,
    same_state,
)
from conformance.smt.prove import run_prove
from conformance.smt.solver import Limits, Verdict
from model.consumer.messages import ConsumerGroupHeartbeatRequest, to_topic_partitions
from model.consumer.state import ConsumerCoordinatorState, ConsumerGroup, ConsumerMember, MemberState
from model.errors import ErrorCode

LIMITS = Limits(seed=0, timeout_s=60, rlimit=100_000_000)
KIP848 = sorted(KC.ENCODERS)


def test_all_kip848_invariants_confirmed_at_a_small_bound() -> None:
    run = run_prove(KIP848, {}, 2, 2, LIMITS)
    assert {inv: run.verdict_of(inv) for inv in KIP848} == {inv: Verdict.CONFIRMED for inv in KIP848}
    # every rule was checked, not just the base case
    rules = {(o.invariant_id, o.transition) for o in run.outcomes}
    assert ("consumer.single_partition_holder", "reconcile") in rules
    assert ("consumer.epoch_fencing", "heartbeat") in rules


def test_lemmas_are_needed() -> None:
    """Without its lemmas single_partition_holder is not inductive under reconciliation."""
    o = inductive_step("consumer.single_partition_holder", "reconcile", (), 2, 2, KS.Variant(), LIMITS)
    assert o.verdict == Verdict.UNKNOWN and "consumer.single_partition_holder" in o.failed


@pytest.mark.parametrize("slot", [0, 1])
def test_slots_are_symmetric(slot: int) -> None:
    """The prover checks per-member rules for slot 0; slot 1 gives the same verdict."""
    lemmas = ("consumer.valid_partition_epoch", "consumer.epoch_order", *KC.LEMMAS)
    pre = KS.fresh_group("pre", 2, 2)
    step = K.TRANSITIONS["reconcile"](pre, slot, "in", KS.Variant())
    s = z3.Solver()
    formulas = [KC.single_partition_holder] + [
        KC.ENCODERS[x].state if x in KC.ENCODERS else KC.LEMMAS[x]  # type: ignore[list-item]
        for x in lemmas
    ]
    s.add(*[f(pre) for f in formulas], step.guard, z3.Not(z3.And([f(step.post) for f in formulas])))
    assert s.check() == z3.unsat


BROKEN = [
    ({"reconcile_pending": "ignore"}, "consumer.single_partition_holder"),
    ({"leave_bump": "false"}, "consumer.legal_target_assignment"),
    ({"epoch_check": "false"}, "consumer.epoch_fencing"),
]


@pytest.mark.parametrize(("variant", "invariant"), BROKEN)
def test_broken_variant_refuted_and_replayable(variant: dict[str, str], invariant: str) -> None:
    run = run_prove([invariant], variant, 2, 2, LIMITS, depth=5)
    assert run.verdict_of(invariant) == Verdict.REFUTED
    (row,) = [o for o in run.outcomes if o.verdict == Verdict.REFUTED]
    assert row.counterexample is not None and not run.encoding_bugs
    # re-run the stored model inputs independently: the registry predicate fails on the model
    steps = [
        HeartbeatStep(
            s["kind"],
            int(s["member"][1:]),
            s.get("member_epoch", 0),
            None if s.get("owned") is None else frozenset(s["owned"]),
            None if "target" not in s else tuple(frozenset(s["target"][f"m{i}"]) for i in range(2)),
        )
        for s in row.counterexample["steps"]
    ]
    v = KS.Variant(
        reconcile_pending=variant.get("reconcile_pending", "respect"),
        leave_bump=variant.get("leave_bump", "true") == "true",
        epoch_check=variant.get("epoch_check", "true") == "true",
    )
    assert replay(steps, invariant, v, 2, 2).violations
    # ... and the same inputs on the correct model do not violate it
    assert not replay(steps, invariant, KS.Variant(), 2, 2).violations


def test_correct_rules_have_no_short_counterexample() -> None:
    assert bmc("consumer.single_partition_holder", 2, 2, KS.Variant(), LIMITS, 4).verdict == Verdict.CONFIRMED


def test_unconfirmed_counterexample_is_an_encoding_bug() -> None:
    """A 'counterexample' the model does not confirm must fail the run, not be reported REFUTED."""
    steps = [HeartbeatStep("heartbeat", 0, 0, frozenset(), (frozenset({0, 1}), frozenset()))]
    o = confirm("consumer.single_partition_holder", steps, [], KS.Variant(), 2, 2, 0.0)
    assert o.encoding_bug and o.verdict == Verdict.UNKNOWN


# ----------------------------------------------------------------------------- differential test

M, P = 3, 3


def _random_group(rng: random.Random) -> tuple[ConsumerCoordinatorState, KS.ConcreteGroup]:
    """An arbitrary (not necessarily reachable) group: the encoding must agree with the model's rules
    on every state, since the inductive step quantifies over all of them."""
    members: dict[str, ConsumerMember] = {}
    targets = {}
    slots = []
    ge = rng.randint(1, 6)
    ae = rng.randint(0, ge)
    empty: frozenset[int] = frozenset()
    for i in range(M):
        if rng.random() < 0.25:
            slots.append(KS.ConcreteMember(False, KS.STABLE, -1, -1, empty, empty, empty))
            continue
        assigned = frozenset(p for p in range(P) if rng.random() < 0.4)
        pending = frozenset(p for p in range(P) if rng.random() < 0.25 and p not in assigned)
        target = frozenset(p for p in range(P) if rng.random() < 0.4)
        state = rng.choice(KS.MEMBER_STATES)
        epoch = rng.choice([-2, 0, 1, 2, 3, 4, 5, ae, ae])
        prev = rng.choice([-1, 0, 1, 2, 3, epoch - 1])
        mid = f"m{i}"
        members[mid] = ConsumerMember(
            mid,
            rebalance_timeout_ms=60_000,
            subscribed_topic_names=frozenset({TOPIC}),
            member_epoch=epoch,
            previous_member_epoch=prev,
            state=MemberState(state),
            assigned=frozenset((TOPIC, p) for p in assigned),
            pending_revocation=frozenset((TOPIC, p) for p in pending),
        )
        targets[mid] = frozenset((TOPIC, p) for p in target)
        slots.append(KS.ConcreteMember(True, state, epoch, prev, assigned, pending, target))
    pe = tuple(rng.choice([-1, -1, -2, 0, 1, 2, 3]) for _ in range(P))
    group = ConsumerGroup(
        GROUP,
        group_epoch=ge,
        assignment_epoch=ae,
        members=members,
        target=targets,
        partition_epochs={(TOPIC, p): e for p, e in enumerate(pe) if e != -1},
        subscription_metadata={TOPIC: P},
        metadata_refresh_due=False,
    )
    group.state = group.derived_state()
    state = ConsumerCoordinatorState(groups={GROUP: group}, topics={TOPIC: P})
    return state, KS.ConcreteGroup(tuple(slots), ge, ae, pe)


def _solve_step(pre: KS.ConcreteGroup, make_step, fixed) -> tuple[KS.ConcreteGroup, z3.ModelRef, K.Step]:  # type: ignore[no-untyped-def]
    g = KS.fresh_group("pre", M, P)
    step = make_step(g)
    post = KS.fresh_group("post", M, P)
    s = z3.Solver()
    s.add(KS.equals_concrete(g, pre), step.guard, KS.group_eq(post, step.post))
    s.add(fixed(step))
    assert s.check() == z3.sat
    model = s.model()
    return KS.evaluate(model, post), model, step


@pytest.mark.parametrize("seed", range(2))
def test_heartbeat_encoding_agrees_with_the_model(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(80):
        state, pre = _random_group(rng)
        i = rng.randrange(M)
        slot = pre.members[i]
        epoch = 0 if not slot.present else rng.choice([0, 1, 2, 3, slot.epoch, slot.epoch, slot.prev])
        epoch = max(epoch, 0)
        owned = None if rng.random() < 0.3 else frozenset(p for p in range(P) if rng.random() < 0.4)
        if epoch == 0:
            owned = frozenset()
        present_after = [m.present or j == i for j, m in enumerate(pre.members)]
        owners = [rng.choice([j for j in range(M) if present_after[j]]) for _ in range(P)]
        target = tuple(frozenset(p for p in range(P) if owners[p] == j) for j in range(M))
        variant = rng.choice(
            [
                KS.Variant(),
                KS.Variant(reconcile_pending="ignore"),
                KS.Variant(epoch_check=False),
                KS.Variant(own_pending_free=False, epoch_zero_rejoin=False),  # Kafka 4.0's rules
            ]
        )

        coordinator = ScriptedCoordinator(variant)
        coordinator.next_target = {f"m{j}": frozenset((TOPIC, p) for p in target[j]) for j in range(M)}
        tps = None if owned is None else to_topic_partitions((TOPIC, p) for p in sorted(owned))
        if epoch == 0:
            request = ConsumerGroupHeartbeatRequest(
                GROUP,
                f"m{i}",
                0,
                rebalance_timeout_ms=60_000,
                subscribed_topic_names=(TOPIC,),
                topic_partitions=tps,
            )
        else:
            request = ConsumerGroupHeartbeatRequest(GROUP, f"m{i}", epoch, topic_partitions=tps)
        result = coordinator.handle_consumer_group_heartbeat(state, request, 1, 0)
        (delivery,) = result.deliveries
        model_after = concrete_of(state, M, P)

        def fixed(step: K.Step, owned=owned, epoch=epoch, target=target) -> z3.BoolRef:  # type: ignore[no-untyped-def]
            eqs = [step.inputs["epoch"] == epoch, step.inputs["owned_null"] == (owned is None)]
            eqs.append(step.inputs["owned"] == KS.value_of(owned or frozenset()))
            eqs += [step.inputs[f"target{j}"] == KS.value_of(target[j]) for j in range(M)]
            return z3.And(eqs)

        solved, model, step = _solve_step(
            pre, lambda g, i=i, v=variant: K.step_heartbeat(g, i, "in", v), fixed
        )
        accepted = z3.is_true(model.eval(step.outputs["accepted"], model_completion=True))
        assert accepted == (delivery.response.error_code == ErrorCode.NONE), (pre, request)
        assert same_state(model_after, solved), (pre, request, model_after, solved)


@pytest.mark.parametrize("seed", range(2))
def test_leave_encodings_agree_with_the_model(seed: int) -> None:
    rng = random.Random(100 + seed)
    checked = 0
    while checked < 40:
        state, pre = _random_group(rng)
        i = rng.randrange(M)
        if not pre.members[i].present:
            continue
        checked += 1
        static = rng.random() < 0.5
        variant = rng.choice([KS.Variant(), KS.Variant(leave_bump=False)])
        mid = f"m{i}"
        group = state.groups[GROUP]
        if static:  # epoch -2 needs an instance id (docs/protocol-reference.md#b7)
            group.members[mid] = ConsumerMember(**{**group.members[mid].__dict__, "instance_id": f"i{i}"})
            group.static_members[f"i{i}"] = mid
            request = ConsumerGroupHeartbeatRequest(GROUP, mid, -2, instance_id=f"i{i}")
            make = lambda g, i=i: K.step_static_leave(g, i, "in")  # noqa: E731
        else:
            request = ConsumerGroupHeartbeatRequest(GROUP, mid, -1)
            make = lambda g, i=i, v=variant: K.step_leave(g, i, "in", v)  # noqa: E731
        result = ScriptedCoordinator(variant).handle_consumer_group_heartbeat(state, request, 1, 0)
        assert result.deliveries[0].response.error_code == ErrorCode.NONE
        solved, _, _ = _solve_step(pre, make, lambda step: z3.BoolVal(True))
        assert same_state(concrete_of(state, M, P), solved), (pre, request)
