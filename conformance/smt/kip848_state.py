"""The KIP-848 z3 encoding's state: member slots, groups, partition bit-vectors and their helpers.

Partition sets are bit-vectors of width P (bit p = partition p of topic ``t``); epochs are integers.
Concrete members and groups are what a z3 model evaluates to, for replay on the Python model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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


def wellformed(g: Group) -> Any:
    """The domain: member states of docs/protocol-reference.md#b3, present members at epoch >= -2 other than -1, absent slots
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
