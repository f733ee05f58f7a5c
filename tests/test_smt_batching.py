"""z3 encodings of assignment batching (Kafka 4.2+) and KIP-1251 commit epochs: proofs at the published
bound, no vacuous rule, the mutants' rules refuted and confirmed by the model, and differential tests
of both encodings against the model."""

from __future__ import annotations

import random

import pytest
import z3

from conformance.protocols.build import make_consumer_sim
from conformance.smt import batching as B
from conformance.smt import commit_epochs as C
from conformance.smt.batching_check import prove, run_steps
from conformance.smt.commit_epochs_check import run_witness
from conformance.smt.induction import INITIAL
from conformance.smt.prove import catalogue_lemmas, run_prove
from conformance.smt.solver import Limits, Verdict
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from model.consumer.state import ASSIGNMENT_INTERVAL
from model.consumer.txn import ConsumerCoordinatorConfig
from model.errors import ErrorCode

LIMITS = Limits(seed=0, timeout_s=60, rlimit=100_000_000)
BATCHING = B.INVARIANT
COMMITS = C.INVARIANT
LEMMAS = tuple(B.LEMMAS)


def test_both_invariants_proved_at_4x8() -> None:
    run = run_prove([BATCHING, COMMITS], {}, 4, 8, LIMITS)
    assert run.verdict_of(BATCHING) == Verdict.CONFIRMED
    assert run.verdict_of(COMMITS) == Verdict.CONFIRMED
    rules = {(o.invariant_id, o.transition) for o in run.outcomes}
    assert rules == {(BATCHING, r) for r in (INITIAL, *B.TRANSITIONS)} | {
        (COMMITS, "exact"),
        (COMMITS, "kip1251"),
    }
    assert catalogue_lemmas()[BATCHING] == LEMMAS


def test_the_heartbeat_needs_the_interval_lemma() -> None:
    """Without the timer's length tied to the recorded time the heartbeat is not inductive."""
    rows = prove(BATCHING, ("batching.epochs_ordered",), 2, 2, {}, LIMITS, 4)
    (hb,) = [o for o in rows if o.transition == "heartbeat"]
    assert hb.verdict == Verdict.UNKNOWN and f"{BATCHING} (step)" in hb.failed
    # the bounded search from the empty group finds nothing: the rule is right, the lemma was missing
    assert rows[-1].transition == "bmc" and rows[-1].verdict == Verdict.CONFIRMED


def _sat(*formulas: object) -> bool:
    s = z3.Solver()
    s.add(*formulas)
    return s.check() == z3.sat


@pytest.mark.parametrize("transition", list(B.TRANSITIONS))
def test_every_rule_can_fire(transition: str) -> None:
    pre = B.fresh("pre", 3)
    step = B.TRANSITIONS[transition](pre, 0, "in", B.Rule())
    assert _sat(*(f(pre) for f in B.LEMMAS.values()), step.guard)


def test_a_heartbeat_both_batches_and_computes() -> None:
    """Under the lemmas an accepted heartbeat can leave the group epoch ahead (the interval runs)
    and can compute the target: the obligation is not met by one branch alone."""
    pre = B.fresh("pre", 3)
    step = B.step_heartbeat(pre, 0, "in", B.Rule())
    base = [*(f(pre) for f in B.LEMMAS.values()), step.guard, pre.interval > 0]
    assert _sat(*base, step.post.group_epoch > step.post.assignment_epoch)
    assert _sat(*base, step.post.assignment_epoch > pre.assignment_epoch, pre.stamped)


@pytest.mark.parametrize(
    ("variant", "steps"),
    [({"assignment_interval_wait": "2x"}, 3), ({"assignment_interval_check": "false"}, 2)],
)
def test_batching_mutant_rules_refuted(variant: dict[str, str], steps: int) -> None:
    run = run_prove([BATCHING], variant, 4, 8, LIMITS)
    assert run.verdict_of(BATCHING) == Verdict.REFUTED and not run.encoding_bugs
    (row,) = [o for o in run.outcomes if o.verdict == Verdict.REFUTED]
    assert row.counterexample is not None and len(row.counterexample["steps"]) == steps
    # the same steps on the correct batching coordinator break nothing
    _, violations, _ = run_steps(row.counterexample["steps"], {}, 8, 4)
    assert BATCHING not in {v.invariant for v in violations}


def test_exact_rule_breaks_the_kip1251_promise() -> None:
    """The 4.0 exact rule, kept by a coordinator that promises KIP-1251 commits: refuted, and the
    witness commit is accepted by the correct KIP-1251 coordinator."""
    run = run_prove([COMMITS], {"commit_epochs": "exact-only"}, 4, 8, LIMITS)
    assert run.verdict_of(COMMITS) == Verdict.REFUTED and not run.encoding_bugs
    (row,) = [o for o in run.outcomes if o.verdict == Verdict.REFUTED]
    witness = row.counterexample["witness"]  # type: ignore[index]
    assert witness == {"member_epoch": 2, "commit_epoch": 1, "partition": 0, "assigned_at": 1}
    assert "STALE_MEMBER_EPOCH" in row.detail


def test_exact_rule_refuted_in_z3_alone() -> None:
    """Independently of the witness run: some commit the exact rule rejects is one KIP-1251 allows."""
    c = C.fresh("c", 2)
    assert _sat(C.domain(c), C.violated(c, C.answers(c, "exact"), True))
    assert not _sat(C.domain(c), C.violated(c, C.answers(c, "assignment"), True))
    assert not _sat(C.domain(c), C.violated(c, C.answers(c, "exact"), False))


def test_commit_refutation_needs_two_members() -> None:
    rows = run_prove([COMMITS], {"commit_epochs": "exact-only"}, 1, 8, LIMITS).outcomes
    assert [o.verdict for o in rows] == [Verdict.UNKNOWN] and "no witness run" in rows[0].detail


# ----------------------------------------------------------------------------- differential tests


def _concrete(sim: object, members: int) -> dict[str, object]:
    group = sim.port.coordinator_state().groups.get(sim.group_id)  # type: ignore[attr-defined]
    if group is None:
        return {
            "present": [False] * members,
            "epochs": [-1] * members,
            "ge": 0,
            "ae": 0,
            "stamp": None,
            "timer": None,
        }
    ids = [f"m{i}" for i in range(members)]
    return {
        "present": [i in group.members for i in ids],
        "epochs": [group.members[i].member_epoch if i in group.members else -1 for i in ids],
        "ge": group.group_epoch,
        "ae": group.assignment_epoch,
        "stamp": group.assignment_timestamp,
        "timer": group.timers.get((ASSIGNMENT_INTERVAL, "")),
    }


def _pin(g: B.BGroup, c: dict[str, object], now: int, interval: int) -> list[object]:
    stamp = c["stamp"]
    out = [g.now == now, g.group_epoch == c["ge"], g.assignment_epoch == c["ae"], g.interval == interval]
    out += [p == z3.BoolVal(v) for p, v in zip(g.present, c["present"], strict=True)]  # type: ignore[call-overload]
    out += [e == v for e, v in zip(g.epochs, c["epochs"], strict=True)]  # type: ignore[call-overload]
    if stamp is None:
        out.append(z3.Not(g.stamped))
    else:
        out += [g.stamped, g.stamp == stamp, g.deadline == stamp + interval]  # type: ignore[operator]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_batching_encoding_allows_every_model_step(seed: int) -> None:
    """Random heartbeats, leaves and time steps on the model's batching coordinator: every state is
    within the lemmas, and every step is a step of the encoding (same epochs, computation time)."""
    rng = random.Random(seed)
    members, interval = 3, 1000
    sim = make_consumer_sim({"t": 4}, [], {"session_timeout_ms": 45_000}, {"assignment_interval": "1000"})
    before = _concrete(sim, members)
    for _ in range(25):
        kind = rng.choice(["heartbeat", "heartbeat", "leave", "tick"])
        i = rng.randrange(members)
        if kind == "leave" and not before["present"][i]:  # type: ignore[index]
            kind = "heartbeat"
        now = sim.now
        if kind == "tick":
            ms = rng.choice([1, 100, 400, 999, 1000, 1500])
            sim.advance(ms)
        elif kind == "leave":
            sim.heartbeat_as(f"m{i}", -1)
        else:
            member = sim.port.coordinator_state().groups.get("g")
            m = None if member is None else member.members.get(f"m{i}")
            if m is None:
                sim.heartbeat_as(f"m{i}", 0, [], ["t"], "range")
            else:
                held = sorted(m.assigned | m.pending_revocation)
                sim.heartbeat_as(f"m{i}", m.member_epoch, [[t, p] for t, p in held])
        after = _concrete(sim, members)
        pre, post = B.fresh("pre", members), B.fresh("post", members)
        step = B.TRANSITIONS[kind](pre, i, "in", B.Rule())
        fixed = [*_pin(pre, before, now, interval), *_pin(post, after, sim.now, interval)]
        assert _sat(*fixed, *(f(pre) for f in B.LEMMAS.values()), *(f(post) for f in B.LEMMAS.values()))
        assert _sat(*fixed, step.guard, B.same(post, step.post)), (kind, i, before, after)
        timer = after["timer"]
        if after["stamp"] is not None and sim.now < after["stamp"] + interval:  # type: ignore[operator]
            assert timer is not None and timer.deadline == after["stamp"] + interval  # type: ignore[attr-defined, operator]
        before = after


CODES = {
    ErrorCode.NONE: C.NONE,
    ErrorCode.STALE_MEMBER_EPOCH: C.STALE,
    ErrorCode.UNKNOWN_MEMBER_ID: C.UNKNOWN_MEMBER,
    ErrorCode.UNSUPPORTED_VERSION: C.UNSUPPORTED,
}


@pytest.mark.parametrize("rule", ["exact", "assignment"])
def test_commit_encoding_answers_as_the_model(rule: str) -> None:
    """Commits of every epoch -1..3 and every partition set, by m0 (epoch 2, partitions 0-1 since
    epoch 1) and by an unknown member, on the model's coordinator with ``rule``: the encoding's
    answer per partition is the model's."""
    sim, _, reached = run_witness({"commit_epoch": 1, "partition": 0}, 4)
    assert reached == {"member_epoch": 2, "assigned_at": 1}
    state = sim.port.coordinator_state()
    coord = ConsumerCoordinator(ConsumerCoordinatorConfig(offset_commit_epochs=rule))  # type: ignore[arg-type]
    group = state.groups["g"]

    for member_id in ("m0", "m1", "zz"):
        m = group.members.get(member_id)
        for epoch in range(-1, 4):
            for mask in range(1, 16):
                parts = [p for p in range(4) if mask >> p & 1]
                request = OffsetCommitRequest(
                    "g", (OffsetCommitRequestTopic("t", tuple(OffsetCommitRequestPartition(p, 1) for p in parts)),),
                    epoch, member_id,
                )  # fmt: skip
                response = (
                    coord.handle_offset_commit(state.copy(), request, 1, sim.now).deliveries[0].response
                )
                got = {p.partition_index: CODES[p.error_code] for t in response.topics for p in t.partitions}
                c = C.fresh("c", 4)
                held = 0 if m is None else sum(1 << p for t, p in m.assigned | m.pending_revocation)
                pin = [
                    c.others == z3.BoolVal(any(k != member_id for k in group.members)),
                    c.present == z3.BoolVal(m is not None), z3.Not(c.classic), c.version == 9,
                    c.commit_epoch == epoch, c.epoch == (0 if m is None else m.member_epoch),
                    c.held == held, c.partitions == mask,
                ]  # fmt: skip
                for p, s in enumerate(c.since):
                    since = None if m is None else m.assignment_epoch(("t", p))
                    pin.append(s == (0 if since is None else since))
                answers = C.answers(c, rule)
                model = z3.Solver()
                model.add(*pin)
                assert model.check() == z3.sat
                solved = {p: model.model().eval(answers[p]).as_long() for p in parts}
                assert solved == got, (member_id, epoch, parts, rule)
