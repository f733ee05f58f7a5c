"""KIP-848 consumer-group rules as z3 formulas over M member slots and P partitions of one topic.

Partition sets are bit-vectors of width P (bit p = partition p of topic ``t``); epochs are integers.
A slot holds one member or nothing (``present``). The encoding follows the model one rule at a time:

* ``reconcile``: `model.consumer.reconcile.reconcile` / ``next_assignment`` (reference B.5, CAB
  `build` L131, `computeNextAssignment` L227), applied as the coordinator applies its record
  (`model.consumer.records._update_member`: partition epochs of the old holding are removed where
  they still carry the old member epoch, then the new holding is stamped with the new epoch, CoG
  L1014-1110);
* ``target``: a target assignment computed when the group epoch is ahead of the assignment epoch
  (GMM L1769, TAB L434-509) by *any* legal assignor: disjoint targets, none for absent slots, every
  partition assigned while some member exists (Kafka accepts custom server assignors through
  ``group.consumer.assignors``);
* ``join``: a new member with epoch 0 and nothing held; its subscription bumps the group epoch (B.4);
* ``bump``: a subscription or metadata change bumps the group epoch (B.4);
* ``fence``: a leave with epoch -1, a session timeout or a rebalance timeout, which all reach
  `ConsumerCoordinator.fence_member` (GMM `consumerGroupFenceMember` L3087): tombstones and +1;
* ``static_leave``: epoch -2 (B.7, GMM L3018): epoch -2, pending revocations dropped, no bump;
* ``heartbeat``: the coordinator's pipeline for one ConsumerGroupHeartbeat (B.2): epoch validation
  (B.6 row 12, GMM L1362), join, target when due, reconciliation; a rejected request changes nothing.
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
from functools import reduce
from typing import Any

import z3

STABLE, UNREVOKED, UNRELEASED, UNKNOWN = 0, 1, 2, 127
MEMBER_STATES = (STABLE, UNREVOKED, UNRELEASED, UNKNOWN)
NO_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


@dataclass(frozen=True)
class Variant:
    reconcile_pending: str = "respect"  # "ignore": pending revocations do not block assignment
    leave_bump: bool = True
    epoch_check: bool = True
    own_pending_free: bool = True  # False: Kafka 4.0 before KAFKA-19449
    epoch_zero_rejoin: bool = True  # False: Kafka 4.0 before KAFKA-19233
    bump_after_revocation: bool = False  # True: Kafka 4.0/4.1 before KAFKA-19974 (epoch + 1)


@dataclass(frozen=True)
class Member:
    present: Any
    state: Any
    epoch: Any
    prev: Any
    assigned: Any
    pending: Any
    target: Any

    @property
    def held(self) -> Any:
        return self.assigned | self.pending


@dataclass(frozen=True)
class Group:
    members: tuple[Member, ...]
    group_epoch: Any
    assignment_epoch: Any
    pe: tuple[Any, ...]  # partition epoch per partition, -1 = free

    @property
    def width(self) -> int:
        return len(self.pe)

    def replace_member(self, i: int, m: Member) -> Group:
        ms = list(self.members)
        ms[i] = m
        return Group(tuple(ms), self.group_epoch, self.assignment_epoch, self.pe)


def fresh_group(tag: str, members: int, partitions: int) -> Group:
    def member(i: int) -> Member:
        p = f"{tag}_m{i}_"
        return Member(
            z3.Bool(p + "present"),
            z3.Int(p + "state"),
            z3.Int(p + "epoch"),
            z3.Int(p + "prev"),
            z3.BitVec(p + "assigned", partitions),
            z3.BitVec(p + "pending", partitions),
            z3.BitVec(p + "target", partitions),
        )

    return Group(
        tuple(member(i) for i in range(members)),
        z3.Int(f"{tag}_group_epoch"),
        z3.Int(f"{tag}_assignment_epoch"),
        tuple(z3.Int(f"{tag}_pe{p}") for p in range(partitions)),
    )


# ----------------------------------------------------------------------------- helpers


def bv(value: int, width: int) -> Any:
    return z3.BitVecVal(value, width)


def zero(width: int) -> Any:
    return z3.BitVecVal(0, width)


def full(width: int) -> Any:
    return z3.BitVecVal((1 << width) - 1, width)


def bit(s: Any, p: int) -> Any:
    return z3.Extract(p, p, s) == 1


def from_bits(bools: Sequence[Any]) -> Any:
    """Bit-vector whose bit p is ``bools[p]``."""
    width = len(bools)
    return reduce(
        lambda acc, pb: acc | z3.If(pb[1], bv(1 << pb[0], width), zero(width)),
        enumerate(bools),
        zero(width),
    )


def subset(a: Any, b: Any) -> Any:
    return a & ~b == 0


def nonempty(a: Any) -> Any:
    return a != 0


def union(sets: Sequence[Any], width: int) -> Any:
    return reduce(lambda x, y: x | y, sets, zero(width))


def ite_member(c: Any, a: Member, b: Member) -> Member:
    return Member(*(z3.If(c, x, y) for x, y in zip(_fields(a), _fields(b), strict=True)))


def ite_group(c: Any, a: Group, b: Group) -> Group:
    return Group(
        tuple(ite_member(c, x, y) for x, y in zip(a.members, b.members, strict=True)),
        z3.If(c, a.group_epoch, b.group_epoch),
        z3.If(c, a.assignment_epoch, b.assignment_epoch),
        tuple(z3.If(c, x, y) for x, y in zip(a.pe, b.pe, strict=True)),
    )


def _fields(m: Member) -> tuple[Any, ...]:
    return (m.present, m.state, m.epoch, m.prev, m.assigned, m.pending, m.target)


def group_eq(a: Group, b: Group) -> Any:
    eqs = [a.group_epoch == b.group_epoch, a.assignment_epoch == b.assignment_epoch]
    eqs += [x == y for x, y in zip(a.pe, b.pe, strict=True)]
    for x, y in zip(a.members, b.members, strict=True):
        eqs += [u == v for u, v in zip(_fields(x), _fields(y), strict=True)]
    return z3.And(eqs)


def restamp(g: Group, old: Member, new: Member) -> tuple[Any, ...]:
    """Partition epochs after one member's current-assignment record (records `_update_member`)."""
    out = []
    for p, pe in enumerate(g.pe):
        removed = z3.If(z3.And(bit(old.held, p), pe == old.epoch), z3.IntVal(NO_EPOCH), pe)
        out.append(z3.If(bit(new.held, p), new.epoch, removed))
    return tuple(out)


def absent_member(width: int, target: Any | None = None) -> Member:
    return Member(
        z3.BoolVal(False),
        z3.IntVal(STABLE),
        z3.IntVal(NO_EPOCH),
        z3.IntVal(NO_EPOCH),
        zero(width),
        zero(width),
        zero(width) if target is None else target,
    )


# ----------------------------------------------------------------------------- well-formedness


def wellformed(g: Group) -> Any:
    """The domain: member states of B.3, present members at epoch >= -2 other than -1, absent slots
    empty. Checked inductive together with every invariant (it is one of the lemmas)."""
    w = g.width
    out = []
    for m in g.members:
        out.append(z3.Or([m.state == s for s in MEMBER_STATES]))
        out.append(z3.Implies(m.present, z3.And(m.epoch >= STATIC_LEAVE_EPOCH, m.epoch != NO_EPOCH)))
        out.append(
            z3.Implies(z3.Not(m.present), z3.And(m.assigned == 0, m.pending == 0, m.target == zero(w)))
        )
    return z3.And(out)


# ----------------------------------------------------------------------------- reconciliation (B.5)


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
    """``next_assignment`` of `model.consumer.reconcile`, cases 1-4 of reference B.5."""
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
    metadata (B.4; GMM L2294, L4161)."""
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
    """B.6 row 12 (GMM L1362): the member's epoch, or its previous epoch with owned ⊆ assigned; with
    ``rejoin``, epoch 0 too (KAFKA-19233)."""
    return z3.Or(
        z3.And(e == 0, z3.BoolVal(rejoin)),
        e == m.epoch,
        z3.And(e < m.epoch, e == m.prev, z3.Not(owned_null), subset(owned, m.assigned)),
    )


def step_heartbeat(g: Group, i: int, tag: str, variant: Variant, assignor: str = "any") -> Step:
    """One ConsumerGroupHeartbeat of slot i with epoch ``e`` >= 0 (B.2). A join (epoch 0 of an absent
    slot) reports an empty owned set (B.6 row 6). Output ``accepted``: the response has no error."""
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
    """A dynamic member's leave heartbeat (epoch -1): no epoch check, fenced (B.7)."""
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


def single_partition_holder(g: Group) -> Any:
    """consumer.single_partition_holder: held sets of members are disjoint; nothing both assigned and pending."""
    out = []
    ms = g.members
    for i, m in enumerate(ms):
        out.append(z3.Implies(m.present, m.assigned & m.pending == 0))
        for n in ms[i + 1 :]:
            out.append(z3.Implies(z3.And(m.present, n.present), m.held & n.held == 0))
    return z3.And(out)


def valid_partition_epoch(g: Group) -> Any:
    """consumer.valid_partition_epoch: a held partition carries its holder's epoch; a free one none."""
    out = []
    for p, pe in enumerate(g.pe):
        holders = [z3.And(m.present, bit(m.held, p)) for m in g.members]
        for m, h in zip(g.members, holders, strict=True):
            out.append(z3.Implies(h, pe == m.epoch))
        out.append(z3.Implies(z3.Not(z3.Or(holders)), pe == NO_EPOCH))
    return z3.And(out)


def epoch_order(g: Group) -> Any:
    """consumer.epoch_order (state part): member epoch <= assignment epoch <= group epoch."""
    out = [g.assignment_epoch <= g.group_epoch]
    out += [z3.Implies(m.present, m.epoch <= g.assignment_epoch) for m in g.members]
    return z3.And(out)


def epoch_order_step(pre: Group, i: int, step: Step) -> Any:
    """consumer.epoch_order (transition part): neither epoch decreases."""
    post = step.post
    return z3.And(post.group_epoch >= pre.group_epoch, post.assignment_epoch >= pre.assignment_epoch)


def valid_member_epoch(g: Group) -> Any:
    """consumer.valid_member_epoch (coordinator view): a member at the assignment epoch holds nothing
    that is in another member's target."""
    out = []
    for i, m in enumerate(g.members):
        others = union([n.target for j, n in enumerate(g.members) if j != i], g.width)
        out.append(z3.Implies(z3.And(m.present, m.epoch == g.assignment_epoch), m.held & others == 0))
    return z3.And(out)


def legal_target_assignment(g: Group) -> Any:
    """consumer.legal_target_assignment: targets disjoint, only for members, and covering every
    partition of the subscribed topic once computed for the current group epoch."""
    w = g.width
    ms = g.members
    out = []
    for i, m in enumerate(ms):
        out.append(z3.Implies(z3.Not(m.present), m.target == zero(w)))
        for n in ms[i + 1 :]:
            out.append(m.target & n.target == 0)
    some = z3.Or([m.present for m in ms])
    out.append(
        z3.Implies(
            z3.And(some, g.group_epoch == g.assignment_epoch),
            union([m.target for m in ms], w) == full(w),
        )
    )
    return z3.And(out)


def epoch_fencing_step(pre: Group, i: int, step: Step) -> Any:
    """consumer.epoch_fencing: a heartbeat with epoch > 0 that is neither the member's epoch nor its
    previous epoch with owned ⊆ assigned is rejected and changes nothing (B.6 row 12, GMM L1362).
    Only heartbeats carry an epoch; for the other rules the obligation is vacuous."""
    if "accepted" not in step.outputs:
        return z3.BoolVal(True)
    e = step.inputs["epoch"]
    m = pre.members[i]
    invalid = z3.And(
        m.present, e > 0, z3.Not(epoch_valid(m, e, step.inputs["owned"], step.inputs["owned_null"]))
    )
    return z3.Implies(invalid, z3.And(z3.Not(step.outputs["accepted"]), group_eq(step.post, pre)))


# ----------------------------------------------------------------------------- strengthening lemmas


def lemma_unrevoked_behind(g: Group) -> Any:
    """A member in UNREVOKED_PARTITIONS is behind the assignment epoch, and one epoch behind only
    when its assigned set is inside its target (so acknowledging cannot revoke again at the target)."""
    out = []
    for m in g.members:
        out.append(
            z3.Implies(
                z3.And(m.present, m.state == UNREVOKED),
                z3.And(
                    m.epoch < g.assignment_epoch,
                    z3.Implies(m.epoch + 1 == g.assignment_epoch, subset(m.assigned, m.target)),
                ),
            )
        )
    return z3.And(out)


def lemma_at_target_holds_own(g: Group) -> Any:
    """A member at the assignment epoch holds only partitions of its own target."""
    return z3.And(
        [
            z3.Implies(z3.And(m.present, m.epoch == g.assignment_epoch), subset(m.held, m.target))
            for m in g.members
        ]
    )


def lemma_epochs_nonnegative(g: Group) -> Any:
    """Group and assignment epochs are never negative."""
    return g.assignment_epoch >= 0


StateFormula = Callable[[Group], Any]

LEMMAS: dict[str, StateFormula] = {
    "kip848.wellformed": wellformed,
    "kip848.unrevoked_behind_target": lemma_unrevoked_behind,
    "kip848.at_target_holds_own": lemma_at_target_holds_own,
    "kip848.epochs_nonnegative": lemma_epochs_nonnegative,
}


@dataclass(frozen=True)
class Encoder:
    """The z3 form of one registry invariant: a state formula, and/or a transition obligation."""

    invariant_id: str
    state: StateFormula | None
    step: Callable[[Group, int, Step], Any] | None = None


ENCODERS: dict[str, Encoder] = {
    e.invariant_id: e
    for e in (
        Encoder("consumer.single_partition_holder", single_partition_holder),
        Encoder("consumer.valid_partition_epoch", valid_partition_epoch),
        Encoder("consumer.epoch_order", epoch_order, epoch_order_step),
        Encoder("consumer.valid_member_epoch", valid_member_epoch),
        Encoder("consumer.legal_target_assignment", legal_target_assignment),
        Encoder("consumer.epoch_fencing", None, epoch_fencing_step),
    )
}


def initial(g: Group) -> Any:
    """A group before its first member: epochs 0, every slot empty, every partition free."""
    out = [g.group_epoch == 0, g.assignment_epoch == 0]
    out += [z3.Not(m.present) for m in g.members]
    out += [pe == NO_EPOCH for pe in g.pe]
    out += [z3.And(m.assigned == 0, m.pending == 0, m.target == 0) for m in g.members]
    out += [z3.And(m.state == STABLE, m.epoch == NO_EPOCH, m.prev == NO_EPOCH) for m in g.members]
    return z3.And(out)


# ----------------------------------------------------------------------------- concrete values


@dataclass(frozen=True)
class ConcreteMember:
    present: bool
    state: int
    epoch: int
    prev: int
    assigned: frozenset[int]
    pending: frozenset[int]
    target: frozenset[int]


@dataclass(frozen=True)
class ConcreteGroup:
    members: tuple[ConcreteMember, ...]
    group_epoch: int
    assignment_epoch: int
    pe: tuple[int, ...]


def bits_of(value: int, width: int) -> frozenset[int]:
    return frozenset(p for p in range(width) if value >> p & 1)


def value_of(parts: frozenset[int]) -> int:
    return sum(1 << p for p in parts)


def evaluate(model: z3.ModelRef, g: Group) -> ConcreteGroup:
    w = g.width

    def num(x: Any) -> int:
        return int(model.eval(x, model_completion=True).as_long())

    def member(m: Member) -> ConcreteMember:
        return ConcreteMember(
            z3.is_true(model.eval(m.present, model_completion=True)),
            num(m.state),
            num(m.epoch),
            num(m.prev),
            bits_of(num(m.assigned), w),
            bits_of(num(m.pending), w),
            bits_of(num(m.target), w),
        )

    return ConcreteGroup(
        tuple(member(m) for m in g.members),
        num(g.group_epoch),
        num(g.assignment_epoch),
        tuple(num(p) for p in g.pe),
    )


def equals_concrete(g: Group, c: ConcreteGroup) -> Any:
    w = g.width
    out = [g.group_epoch == c.group_epoch, g.assignment_epoch == c.assignment_epoch]
    out += [x == v for x, v in zip(g.pe, c.pe, strict=True)]
    for m, cm in zip(g.members, c.members, strict=True):
        out += [
            m.present == z3.BoolVal(cm.present),
            m.state == cm.state,
            m.epoch == cm.epoch,
            m.prev == cm.prev,
            m.assigned == bv(value_of(cm.assigned), w),
            m.pending == bv(value_of(cm.pending), w),
            m.target == bv(value_of(cm.target), w),
        ]
    return z3.And(out)
