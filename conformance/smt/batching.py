"""Target assignment batching (Kafka 4.2+) as z3 formulas over M member slots of one group.

Kafka 4.2 added ``group.consumer.assignment.interval.ms`` (KAFKA-20291, apache/kafka PR #21720;
default 1000 ms): after a target is computed no new one is computed until the interval has passed,
and the check is made lazily by the next heartbeat that finds the group epoch ahead
(`GroupMetadataManager.maybeUpdateTargetAssignment` in Apache Kafka 4.4.0). The model's rule is
`GroupRules.target_assignment_due` / `compute_target_assignment` (docs/model.md).

The state keeps what the rule and `consumer.target_computed_on_next_heartbeat` read: the group and
assignment epochs, the member slots' epochs, the clock, the recorded computation time (KAFKA-20266)
and the deadline of the coordinator's ``assignment-interval`` timer. The interval is one symbolic
constant >= 0 (0: Kafka 4.0/4.1, no batching). Reconciliation is abstracted to its epoch effect: a
member's epoch moves to any value between its own and the assignment epoch.

Rules: ``heartbeat`` (a member's heartbeat at its own epoch, or a join at epoch 0: the join's
group-epoch bump, the target when due, reconciliation), ``leave`` (the fence of
`GroupRules.fence_member`: epoch + 1, the empty target at once when the last member goes),
``bump`` (a subscription or metadata change) and ``tick`` (time passes; expired timers fire).
Broken rules, one per registered mutant: ``wait=2`` (`assignment-interval-doubled`: the timer runs
twice the interval) and ``check=False`` (`assignment-interval-ignored`: a target at every bump).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import z3

NO_EPOCH = -1


@dataclass(frozen=True)
class Rule:
    wait: int = 1  # the timer's length in intervals (2: mutant assignment-interval-doubled)
    check: bool = True  # False: mutant assignment-interval-ignored


@dataclass(frozen=True)
class BGroup:
    present: tuple[Any, ...]
    epochs: tuple[Any, ...]
    group_epoch: Any
    assignment_epoch: Any
    now: Any
    stamped: Any  # a computation time is recorded (a batching coordinator computed a target)
    stamp: Any
    deadline: Any  # the assignment-interval timer's deadline (no timer once now >= deadline)
    interval: Any

    @property
    def size(self) -> int:
        return len(self.present)

    def fields(self) -> tuple[Any, ...]:
        return (
            *self.present,
            *self.epochs,
            self.group_epoch,
            self.assignment_epoch,
            self.now,
            self.stamped,
            self.stamp,
            self.deadline,
            self.interval,
        )

    def with_(self, **kw: Any) -> BGroup:
        values = {k: getattr(self, k) for k in self.__dataclass_fields__}
        values.update(kw)
        return BGroup(**values)


def fresh(tag: str, members: int, interval: Any | None = None) -> BGroup:
    return BGroup(
        tuple(z3.Bool(f"{tag}_present{i}") for i in range(members)),
        tuple(z3.Int(f"{tag}_epoch{i}") for i in range(members)),
        z3.Int(f"{tag}_group_epoch"),
        z3.Int(f"{tag}_assignment_epoch"),
        z3.Int(f"{tag}_now"),
        z3.Bool(f"{tag}_stamped"),
        z3.Int(f"{tag}_stamp"),
        z3.Int(f"{tag}_deadline"),
        z3.Int("interval") if interval is None else interval,
    )


def ite(c: Any, a: BGroup, b: BGroup) -> BGroup:
    return BGroup(
        *(
            tuple(z3.If(c, x, y) for x, y in zip(u, v, strict=True))
            if isinstance(u, tuple)
            else z3.If(c, u, v)
            for u, v in ((getattr(a, k), getattr(b, k)) for k in a.__dataclass_fields__)
        )
    )


def same(a: BGroup, b: BGroup) -> Any:
    return z3.And([x == y for x, y in zip(a.fields(), b.fields(), strict=True)])


def initial(g: BGroup) -> Any:
    """No group yet: epochs 0, every slot empty, nothing computed, the clock at 0."""
    out = [g.group_epoch == 0, g.assignment_epoch == 0, g.now == 0, z3.Not(g.stamped), g.interval >= 0]
    out += [z3.And(z3.Not(p), e == NO_EPOCH) for p, e in zip(g.present, g.epochs, strict=True)]
    return z3.And(out)


# ----------------------------------------------------------------------------- rules


@dataclass
class BStep:
    guard: Any
    post: BGroup
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)


def target_due(g: BGroup, rule: Rule) -> Any:
    """`target_assignment_due`: the group epoch is ahead and no assignment-interval timer runs."""
    ahead = g.group_epoch > g.assignment_epoch
    if not rule.check:
        return ahead
    return z3.And(ahead, z3.Or(z3.Not(g.stamped), g.now >= g.deadline))


def computed(g: BGroup, rule: Rule) -> BGroup:
    """`compute_target_assignment`: the epoch record carries ``now`` and the timer starts, when batching."""
    batching = g.interval > 0
    return g.with_(
        assignment_epoch=g.group_epoch,
        stamped=z3.Or(g.stamped, batching),
        stamp=z3.If(batching, g.now, g.stamp),
        deadline=z3.If(batching, g.now + rule.wait * g.interval, g.deadline),
    )


def step_heartbeat(g: BGroup, i: int, tag: str, rule: Rule) -> BStep:
    """Slot i heartbeats with its own epoch, or joins with epoch 0; ``reconciled`` is the member's
    new epoch (reconciliation moves it at most to the assignment epoch, never back)."""
    e = z3.Int(f"{tag}_epoch")
    reconciled = z3.Int(f"{tag}_reconciled")
    joining = z3.Not(g.present[i])
    g1 = ite(
        joining,
        g.with_(
            present=_set(g.present, i, z3.BoolVal(True)),
            epochs=_set(g.epochs, i, z3.IntVal(0)),
            group_epoch=g.group_epoch + 1,
        ),
        g,
    )
    g2 = ite(target_due(g1, rule), computed(g1, rule), g1)
    post = g2.with_(epochs=_set(g2.epochs, i, reconciled))
    guard = z3.And(
        z3.If(joining, e == 0, z3.And(e == g.epochs[i], e >= 0)),
        reconciled >= g1.epochs[i],
        reconciled <= g2.assignment_epoch,
    )
    return BStep(guard, post, {"epoch": e, "reconciled": reconciled}, {"accepted": z3.BoolVal(True)})


def step_leave(g: BGroup, i: int, tag: str, rule: Rule) -> BStep:
    """`fence_member`: the slot empties, epoch + 1; the last member's fence writes the empty target
    at the new epoch at once (no computation time recorded)."""
    epoch = g.group_epoch + 1
    present = _set(g.present, i, z3.BoolVal(False))
    empty = z3.Not(z3.Or(*present))
    post = g.with_(
        present=present,
        epochs=_set(g.epochs, i, z3.IntVal(NO_EPOCH)),
        group_epoch=epoch,
        assignment_epoch=z3.If(empty, epoch, g.assignment_epoch),
    )
    return BStep(g.present[i], post)


def step_bump(g: BGroup, i: int, tag: str, rule: Rule) -> BStep:
    """A subscription or metadata change bumps the group epoch (docs/protocol-reference.md#b4)."""
    return BStep(z3.BoolVal(True), g.with_(group_epoch=g.group_epoch + 1))


def step_tick(g: BGroup, i: int, tag: str, rule: Rule) -> BStep:
    """Time passes by ``ms`` >= 1; the assignment-interval timer fires when its deadline is reached
    (nothing else happens when it fires: the next heartbeat computes the target)."""
    ms = z3.Int(f"{tag}_ms")
    return BStep(ms >= 1, g.with_(now=g.now + ms), {"ms": ms})


def _set(values: tuple[Any, ...], i: int, v: Any) -> tuple[Any, ...]:
    return tuple(v if j == i else x for j, x in enumerate(values))


TransitionFn = Callable[[BGroup, int, str, Rule], BStep]
TRANSITIONS: dict[str, TransitionFn] = {
    "heartbeat": step_heartbeat,
    "leave": step_leave,
    "bump": step_bump,
    "tick": step_tick,
}


# ----------------------------------------------------------------------------- the invariant


def target_computed_step(pre: BGroup, i: int, step: BStep) -> Any:
    """consumer.target_computed_on_next_heartbeat (`model.consumer.progress_invariants`): after an
    accepted heartbeat with epoch >= 0 the assignment epoch is the group epoch unless the interval
    runs (configured interval > 0, a recorded computation, now < recorded time + interval); while it
    runs no target is computed. Only heartbeats are judged."""
    if "accepted" not in step.outputs:
        return z3.BoolVal(True)
    post = step.post
    batching = z3.And(pre.interval > 0, pre.stamped, pre.now < pre.stamp + pre.interval)
    judged = z3.And(step.outputs["accepted"], step.inputs["epoch"] >= 0)
    return z3.Implies(
        judged,
        z3.And(
            z3.Or(post.assignment_epoch == post.group_epoch, batching),
            z3.Implies(batching, post.assignment_epoch <= pre.assignment_epoch),
        ),
    )


def lemma_epochs_ordered(g: BGroup) -> Any:
    """The state part of consumer.epoch_order here: 0 <= assignment epoch <= group epoch, and a
    present member's epoch between 0 and the assignment epoch; an empty slot has no epoch."""
    out = [g.assignment_epoch >= 0, g.assignment_epoch <= g.group_epoch]
    for p, e in zip(g.present, g.epochs, strict=True):
        out.append(z3.If(p, z3.And(e >= 0, e <= g.assignment_epoch), e == NO_EPOCH))
    return z3.And(out)


def lemma_interval_clock(g: BGroup) -> Any:
    """The interval is never negative; a computation time is recorded only by a batching coordinator,
    lies in the past, and the timer runs exactly one interval from it."""
    return z3.And(
        g.interval >= 0,
        z3.Implies(g.stamped, z3.And(g.interval > 0, g.stamp <= g.now, g.deadline == g.stamp + g.interval)),
    )


LEMMAS: dict[str, Callable[[BGroup], Any]] = {
    "batching.epochs_ordered": lemma_epochs_ordered,
    "batching.interval_clock": lemma_interval_clock,
}

INVARIANT = "consumer.target_computed_on_next_heartbeat"
