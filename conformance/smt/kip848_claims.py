"""The KIP-848 z3 encoding's claims: invariants, transition properties, strengthening lemmas and encoders."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3

from conformance.smt.kip848 import StateFormula, Step, epoch_valid
from conformance.smt.kip848_state import (
    NO_EPOCH,
    STABLE,
    UNREVOKED,
    Group,
    bit,
    full,
    group_eq,
    subset,
    union,
    wellformed,
    zero,
)


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
    previous epoch with owned ⊆ assigned is rejected and changes nothing (docs/protocol-reference.md#b6 row 12, GMM L1362).
    Only heartbeats carry an epoch; for the other rules the obligation is vacuous."""
    if "accepted" not in step.outputs:
        return z3.BoolVal(True)
    e = step.inputs["epoch"]
    m = pre.members[i]
    invalid = z3.And(
        m.present, e > 0, z3.Not(epoch_valid(m, e, step.inputs["owned"], step.inputs["owned_null"]))
    )
    return z3.Implies(invalid, z3.And(z3.Not(step.outputs["accepted"]), group_eq(step.post, pre)))


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
