"""KIP-848 consumer-group rules as z3 formulas over M member slots and P partitions of one topic.

Partition sets are bit-vectors of width P (bit p = partition p of topic ``t``); epochs are integers.
A slot holds one member or nothing (``present``). The encoding follows the model one rule at a time:

* ``reconcile``: `model.consumer.reconcile.reconcile` / ``next_assignment`` (docs/protocol-reference.md#b5, CAB
  `build` L131, `computeNextAssignment` L227), applied as the coordinator applies its record
  (`model.consumer.records._update_member`: partition epochs of the old holding are removed where
  they still carry the old member epoch, then the new holding is stamped with the new epoch, CoG
  L1014-1110);
* ``target``: a target assignment computed when the group epoch is ahead of the assignment epoch
  (GMM L1769, TAB L434-509) by *any* legal assignor: disjoint targets, none for absent slots, every
  partition assigned while some member exists (Kafka accepts custom server assignors through
  ``group.consumer.assignors``);
* ``join``: a new member with epoch 0 and nothing held; its subscription bumps the group epoch (docs/protocol-reference.md#b4);
* ``bump``: a subscription or metadata change bumps the group epoch (docs/protocol-reference.md#b4);
* ``fence``: a leave with epoch -1, a session timeout or a rebalance timeout, which all reach
  `ConsumerCoordinator.fence_member` (GMM `consumerGroupFenceMember` L3087): tombstones and +1;
* ``static_leave``: epoch -2 (docs/protocol-reference.md#b7, GMM L3018): epoch -2, pending revocations dropped, no bump;
* ``heartbeat``: the coordinator's pipeline for one ConsumerGroupHeartbeat (docs/protocol-reference.md#b2): epoch validation
  (docs/protocol-reference.md#b6 row 12, GMM L1362), join, target when due, reconciliation; a rejected request changes nothing.
  The macro step of bounded model checking; every counterexample is replayed on the model with it.

The rules are the model's defaults, Apache Kafka 4.4.0's: an epoch-0 heartbeat of a known member
passes the epoch check (KAFKA-19233, apache/kafka PR #21305) and a member's own pending revocation
does not hold its partition back from that member (KAFKA-19449, PR #20781). ``Variant`` switches
each back to Kafka 4.0's rule (``epoch_zero_rejoin=False``, ``own_pending_free=False``).

The differential test (`tests/test_smt_kip848.py`) runs ``heartbeat`` and ``fence`` against the
model's coordinator on randomized concrete states and inputs.

Broken variants (configuration of the encoding, mirrored by model subclasses in
`conformance.smt.kip848_replay`): ``reconcile_pending=ignore`` (a partition only pending revocation
counts as free), ``leave_bump=false`` (a fence does not bump the group epoch), ``epoch_check=false``
(heartbeat epochs are not validated).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from conformance.smt.kip848_state import (
    NO_EPOCH,
    STABLE,
    STATIC_LEAVE_EPOCH,
    UNKNOWN,
    UNRELEASED,
    UNREVOKED,
    Group,
    Member,
    Variant,
    _fields,
    absent_member,
    bv,
    from_bits,
    full,
    ite_group,
    ite_member,
    nonempty,
    restamp,
    subset,
    union,
    zero,
)

# ----------------------------------------------------------------------------- helpers


# ----------------------------------------------------------------------------- well-formedness


# ----------------------------------------------------------------------------- reconciliation (docs/protocol-reference.md#b5)


@dataclass(frozen=True)
class Reconciled:
    member: Member
    changed: Any
    fenced: Any


def free_partitions(g: Group, variant: Variant) -> Any:
    """Partitions with no partition epoch (CoG `currentPartitionEpoch` = -1)."""
    free = from_bits([pe == NO_EPOCH for pe in g.pe])
    if variant.reconcile_pending == "ignore":
        # KAFKA-16147 (`conformance.mutants.consumer.PendingRevocationIsFree`): only a partition
        # someone has *assigned* keeps its epoch; one that is only pending revocation reads as free
        free = free | ~union([z3.If(m.present, m.assigned, zero(g.width)) for m in g.members], g.width)
    return free


def free_for(g: Group, m: Member, variant: Variant) -> Any:
    """Free partitions as member ``m`` sees them: its own pending revocations too since KAFKA-19449
    (`model.consumer.reconcile.next_assignment`, ``own_pending_is_free``)."""
    free = free_partitions(g, variant)
    return free | m.pending if variant.own_pending_free else free


def next_assignment(
    m: Member, e: Any, target_epoch: Any, target: Any, free: Any, owned: Any, owned_null: Any
) -> Member:
    """``next_assignment`` of `model.consumer.reconcile`, cases 1-4 of docs/protocol-reference.md#b5."""
    keep = m.assigned & target
    revoke = m.assigned & ~keep
    wanted = target & ~keep
    unreleased = wanted & ~free
    add = wanted & free
    case1 = z3.And(nonempty(revoke), z3.Or(owned_null, nonempty(owned & revoke)))
    case2 = z3.And(z3.Not(case1), nonempty(add))
    state = z3.If(
        case1,
        z3.IntVal(UNREVOKED),
        z3.If(nonempty(unreleased), z3.IntVal(UNRELEASED), z3.IntVal(STABLE)),
    )
    return Member(
        m.present,
        state,
        z3.If(case1, e, target_epoch),
        m.epoch,
        z3.If(case2, keep | add, keep),
        z3.If(case1, revoke, zero(m.assigned.size())),
        m.target,
    )


def reconcile(
    m: Member, target_epoch: Any, free: Any, owned: Any, owned_null: Any, bump: bool = False
) -> Reconciled:
    """``reconcile`` of `model.consumer.reconcile`, behind the coordinator's "already reconciled" skip;
    ``bump``: the pre-KAFKA-19974 epoch + 1 when leaving UNREVOKED_PARTITIONS."""
    st = m.state
    reconciled = z3.And(st == STABLE, m.epoch == target_epoch)
    waiting = z3.And(st == UNREVOKED, z3.Or(owned_null, nonempty(owned & m.pending)))
    fenced = z3.And(st == UNKNOWN, z3.Or(owned_null, nonempty(owned)))
    e = z3.If(
        st == STABLE,
        m.epoch,
        z3.If(
            st == UNREVOKED, m.epoch + 1 if bump else m.epoch, z3.If(st == UNRELEASED, m.epoch, target_epoch)
        ),
    )
    nxt = next_assignment(m, e, target_epoch, m.target, free, owned, owned_null)
    # the coordinator writes a record only when the member changed (`reconcile_member`)
    differs = z3.Or([x != y for x, y in zip(_fields(nxt), _fields(m), strict=True)])
    changed = z3.And(z3.Not(z3.Or(reconciled, waiting, fenced)), differs)
    return Reconciled(ite_member(changed, nxt, m), changed, fenced)


# ----------------------------------------------------------------------------- transitions


@dataclass
class Step:
    """One transition: ``guard`` on the pre-state and inputs, the post-state, and named inputs
    and outputs (for counterexamples)."""

    guard: Any
    post: Group
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)


def _owned_inputs(tag: str, width: int) -> tuple[Any, Any]:
    return z3.BitVec(f"{tag}_owned", width), z3.Bool(f"{tag}_owned_null")


def legal_target(g: Group, targets: Sequence[Any], present: Sequence[Any]) -> Any:
    """Any legal server assignor result: disjoint, only members, complete while a member exists."""
    w = g.width
    out = []
    n = len(targets)
    for i in range(n):
        out.append(z3.Implies(z3.Not(present[i]), targets[i] == zero(w)))
        for j in range(i + 1, n):
            out.append(targets[i] & targets[j] == 0)
    out.append(z3.Implies(z3.Or(list(present)), union(list(targets), w) == full(w)))
    return z3.And(out)


def range_targets(present: Sequence[Any], width: int) -> tuple[Any, ...]:
    """The model's ``range`` assignor for one topic (RA L272; `model.consumer.assignors.range_assignor`):
    members in member-id order (``m0 < m1 < ...``) get contiguous ranges, the first P mod n one more.
    Bounded model checking uses it so that counterexamples need no scripted assignor."""
    n = len(present)
    out = []
    for i in range(n):
        t: Any = zero(width)
        for mask in range(1, 1 << n):
            if not mask >> i & 1:
                continue
            order = [j for j in range(n) if mask >> j & 1]
            quota, extra = divmod(width, len(order))
            start = 0
            for k, j in enumerate(order):
                size = quota + (1 if k < extra else 0)
                if j == i:
                    value = sum(1 << p for p in range(start, start + size))
                start += size
            same = z3.And([present[j] if mask >> j & 1 else z3.Not(present[j]) for j in range(n)])
            t = z3.If(same, bv(value, width), t)
        out.append(t)
    return tuple(out)


def with_target(g: Group, targets: Sequence[Any]) -> Group:
    ms = tuple(
        Member(m.present, m.state, m.epoch, m.prev, m.assigned, m.pending, t)
        for m, t in zip(g.members, targets, strict=True)
    )
    return Group(ms, g.group_epoch, g.group_epoch, g.pe)


def step_target(g: Group, tag: str) -> Step:
    targets = [z3.BitVec(f"{tag}_target{i}", g.width) for i in range(len(g.members))]
    guard = z3.And(
        g.group_epoch > g.assignment_epoch, legal_target(g, targets, [m.present for m in g.members])
    )
    return Step(guard, with_target(g, targets), {f"target{i}": t for i, t in enumerate(targets)})


def step_reconcile(g: Group, i: int, tag: str, variant: Variant) -> Step:
    owned, owned_null = _owned_inputs(tag, g.width)
    m = g.members[i]
    r = reconcile(
        m, g.assignment_epoch, free_for(g, m, variant), owned, owned_null, variant.bump_after_revocation
    )
    post = g.replace_member(i, r.member)
    post = Group(post.members, g.group_epoch, g.assignment_epoch, restamp(g, m, r.member))
    post = ite_group(r.changed, post, g)
    guard = z3.And(m.present, m.epoch >= 0)
    return Step(guard, post, {"owned": owned, "owned_null": owned_null}, {"fenced": r.fenced})


def joined_member(g: Group, i: int) -> Member:
    m = g.members[i]
    return Member(
        z3.BoolVal(True),
        z3.IntVal(STABLE),
        z3.IntVal(0),
        z3.IntVal(NO_EPOCH),
        zero(g.width),
        zero(g.width),
        m.target,
    )


def step_join(g: Group, i: int, tag: str) -> Step:
    post = g.replace_member(i, joined_member(g, i))
    post = Group(post.members, g.group_epoch + 1, g.assignment_epoch, g.pe)
    return Step(z3.Not(g.members[i].present), post)


def step_bump(g: Group, tag: str) -> Step:
    """A group-epoch bump without a membership change: a subscription change or new subscription
    metadata (docs/protocol-reference.md#b4; GMM L2294, L4161)."""
    return Step(z3.BoolVal(True), Group(g.members, g.group_epoch + 1, g.assignment_epoch, g.pe))


def fenced_group(g: Group, i: int, variant: Variant) -> Group:
    m = g.members[i]
    gone = absent_member(g.width)
    post = g.replace_member(i, gone)
    bump = 1 if variant.leave_bump else 0
    epoch = g.group_epoch + bump
    # Kafka 4.4.0 consumerGroupFenceMembers: fencing the last member writes the (empty) target at the
    # new epoch at once (model.consumer.coordinator.fence_member)
    empty = z3.Not(z3.Or(*[x.present for x in post.members]))
    assignment = z3.If(z3.And(empty, g.assignment_epoch < epoch), epoch, g.assignment_epoch)
    return Group(post.members, epoch, assignment, restamp(g, m, gone))


def step_fence(g: Group, i: int, tag: str, variant: Variant) -> Step:
    return Step(g.members[i].present, fenced_group(g, i, variant))


def step_static_leave(g: Group, i: int, tag: str) -> Step:
    m = g.members[i]
    parked = Member(
        m.present, m.state, z3.IntVal(STATIC_LEAVE_EPOCH), m.prev, m.assigned, zero(g.width), m.target
    )
    post = g.replace_member(i, parked)
    post = Group(post.members, g.group_epoch, g.assignment_epoch, restamp(g, m, parked))
    return Step(m.present, post)


def epoch_valid(m: Member, e: Any, owned: Any, owned_null: Any, rejoin: bool = False) -> Any:
    """docs/protocol-reference.md#b6 row 12 (GMM L1362): the member's epoch, or its previous epoch with owned ⊆ assigned; with
    ``rejoin``, epoch 0 too (KAFKA-19233)."""
    return z3.Or(
        z3.And(e == 0, z3.BoolVal(rejoin)),
        e == m.epoch,
        z3.And(e < m.epoch, e == m.prev, z3.Not(owned_null), subset(owned, m.assigned)),
    )


def step_heartbeat(g: Group, i: int, tag: str, variant: Variant, assignor: str = "any") -> Step:
    """One ConsumerGroupHeartbeat of slot i with epoch ``e`` >= 0 (docs/protocol-reference.md#b2). A join (epoch 0 of an absent
    slot) reports an empty owned set (docs/protocol-reference.md#b6 row 6). Output ``accepted``: the response has no error."""
    w = g.width
    e = z3.Int(f"{tag}_epoch")
    owned, owned_null = _owned_inputs(tag, w)
    targets = [z3.BitVec(f"{tag}_target{j}", w) for j in range(len(g.members))]
    m = g.members[i]
    joining = z3.Not(m.present)
    checked = epoch_valid(m, e, owned, owned_null, rejoin=variant.epoch_zero_rejoin)
    valid = z3.If(joining, e == 0, checked if variant.epoch_check else True)
    # join: the member record and the group-epoch bump
    g1 = ite_group(joining, step_join(g, i, tag).post, g)
    # target assignment when due (computed by any legal assignor)
    due = g1.group_epoch > g1.assignment_epoch
    g2 = ite_group(due, with_target(g1, targets), g1)
    # reconciliation of this member
    m2 = g2.members[i]
    r = reconcile(
        m2, g2.assignment_epoch, free_for(g2, m2, variant), owned, owned_null, variant.bump_after_revocation
    )
    g3 = g2.replace_member(i, r.member)
    g3 = Group(g3.members, g2.group_epoch, g2.assignment_epoch, restamp(g2, m2, r.member))
    g3 = ite_group(r.changed, g3, g2)
    accepted = z3.And(valid, z3.Not(r.fenced))
    post = ite_group(accepted, g3, g)
    guard = z3.And(
        e >= 0,
        z3.Implies(e == 0, z3.And(z3.Not(owned_null), owned == 0)),
        z3.Implies(due, legal_target(g1, targets, [x.present for x in g1.members])),
    )
    if assignor == "range":
        ranged = range_targets([x.present for x in g1.members], w)
        guard = z3.And(guard, z3.Implies(due, z3.And([t == r for t, r in zip(targets, ranged, strict=True)])))
    inputs: dict[str, Any] = {"epoch": e, "owned": owned, "owned_null": owned_null}
    inputs.update({f"target{j}": t for j, t in enumerate(targets)})
    return Step(guard, post, inputs, {"accepted": accepted, "target_due": due})


def step_leave(g: Group, i: int, tag: str, variant: Variant) -> Step:
    """A dynamic member's leave heartbeat (epoch -1): no epoch check, fenced (docs/protocol-reference.md#b7)."""
    return step_fence(g, i, tag, variant)


TransitionFn = Callable[[Group, int, str, Variant], Step]

TRANSITIONS: dict[str, TransitionFn] = {
    "join": lambda g, i, tag, v: step_join(g, i, tag),
    "bump": lambda g, i, tag, v: step_bump(g, tag),
    "target": lambda g, i, tag, v: step_target(g, tag),
    "reconcile": step_reconcile,
    "fence": step_fence,
    "static_leave": lambda g, i, tag, v: step_static_leave(g, i, tag),
    "heartbeat": step_heartbeat,
}
"""Rules checked one by one in the inductive step (a heartbeat is join, target and reconcile in
sequence, so it preserves whatever each of them preserves; it is also checked whole)."""

PER_MEMBER = {"join", "reconcile", "fence", "static_leave", "heartbeat"}


# ----------------------------------------------------------------------------- invariants (one encoder per id)


# ----------------------------------------------------------------------------- strengthening lemmas


StateFormula = Callable[[Group], Any]


# ----------------------------------------------------------------------------- concrete values
