"""Re-running a KIP-848 z3 counterexample on the Python model (docs/proofs.md: nothing is REFUTED that the
model does not confirm).

A counterexample is a list of heartbeats (and leaves) of members ``m0..m{M-1}`` of group ``g`` on
topic ``t`` with P partitions; the members ask for the ``range`` server assignor, whose targets the
bounded model checker computes exactly. The model's coordinator runs them, for a broken variant
with the one rule overridden that the variant breaks. (The differential test also scripts the
targets: the inductive proofs allow any legal assignor.) After every step the model's
group is compared with the solver's state (a mismatch is an encoding bug), and the registry's own
predicate must report the violation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.mutants.consumer import LeaveWithoutBump, NoEpochCheck, PendingRevocationIsFree
from conformance.smt.kip848_state import NO_EPOCH, STABLE, ConcreteGroup, ConcreteMember, Variant
from model.consumer.assignors import AssignmentMember, GroupAssignment
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartition, to_topic_partitions
from model.consumer.state import ConsumerCoordinatorState, ConsumerGroup, ConsumerMember
from model.consumer.txn import ConsumerCoordinatorConfig, _Txn
from model.consumer.world import HeartbeatEvent, capture_world, observe
from model.invariants import load_all
from model.observation import Observation

GROUP = "g"
TOPIC = "t"


class ScriptedCoordinator(ConsumerCoordinator):
    """The model's coordinator with the solver's target assignments and a variant's broken rule."""

    def __init__(self, variant: Variant) -> None:
        super().__init__(
            ConsumerCoordinatorConfig(
                own_pending_is_free=variant.own_pending_free,
                epoch_zero_rejoin=variant.epoch_zero_rejoin,
                bump_after_revocation=variant.bump_after_revocation,
            )
        )
        self.variant = variant
        self.next_target: dict[str, frozenset[TopicPartition]] | None = None

    def run_assignor(
        self, name: str, members: Mapping[str, AssignmentMember], topics: Mapping[str, int], homogeneous: bool
    ) -> GroupAssignment:
        if self.next_target is None:  # the members' own choice (``range``, named in their joins)
            return super().run_assignor(name, members, topics, homogeneous)
        return {mid: self.next_target.get(mid, frozenset()) for mid in members}

    def current_partition_epoch(self, group: ConsumerGroup, tp: TopicPartition) -> int:
        if self.variant.reconcile_pending == "ignore":  # the registered KAFKA-16147 mutant's rule
            return PendingRevocationIsFree.current_partition_epoch(self, group, tp)
        return super().current_partition_epoch(group, tp)

    def validate_member_epoch(self, member: ConsumerMember, request: ConsumerGroupHeartbeatRequest) -> None:
        if self.variant.epoch_check:
            super().validate_member_epoch(member, request)
        else:
            NoEpochCheck.validate_member_epoch(self, member, request)

    def bump_after_fence(self, txn: _Txn, group: ConsumerGroup) -> None:
        if self.variant.leave_bump:
            super().bump_after_fence(txn, group)
        else:
            LeaveWithoutBump.bump_after_fence(self, txn, group)


MUTANT_OF: dict[tuple[str, str], str] = {
    ("reconcile_pending", "ignore"): "kafka-16147",
    ("epoch_check", "false"): "skip-fencing-check",
    ("leave_bump", "false"): "leave-without-bump",
}
"""The registered mutant (`conformance.mutants`, ``--variant mutant=NAME``) with a broken variant's
one rule: a counterexample's trace names it, so `groupcheck replay` rebuilds the same coordinator."""


@dataclass(frozen=True)
class HeartbeatStep:
    """One event of a counterexample: member ``member`` (slot index) sends a heartbeat or leaves."""

    kind: str  # "heartbeat" | "leave"
    member: int
    epoch: int = 0
    owned: frozenset[int] | None = None
    target: tuple[frozenset[int], ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "member": f"m{self.member}"}
        if self.kind == "heartbeat":
            out["member_epoch"] = self.epoch
            out["owned"] = None if self.owned is None else sorted(self.owned)
            if self.target is not None:
                out["target"] = {f"m{i}": sorted(t) for i, t in enumerate(self.target)}
        return out


def member_id(i: int) -> str:
    return f"m{i}"


def request_of(step: HeartbeatStep) -> ConsumerGroupHeartbeatRequest:
    mid = member_id(step.member)
    if step.kind == "leave":
        return ConsumerGroupHeartbeatRequest(GROUP, mid, -1)
    owned = None if step.owned is None else to_topic_partitions((TOPIC, p) for p in sorted(step.owned))
    if step.epoch == 0:
        return ConsumerGroupHeartbeatRequest(
            GROUP,
            mid,
            0,
            rebalance_timeout_ms=60_000,
            subscribed_topic_names=(TOPIC,),
            server_assignor="range",
            topic_partitions=owned,
        )
    return ConsumerGroupHeartbeatRequest(GROUP, mid, step.epoch, topic_partitions=owned)


def concrete_of(state: ConsumerCoordinatorState, members: int, partitions: int) -> ConcreteGroup:
    """The model's group in the solver's terms (absent slots in the encoding's canonical form)."""
    group = state.groups.get(GROUP)
    empty: frozenset[int] = frozenset()
    if group is None:
        absent = ConcreteMember(False, STABLE, NO_EPOCH, NO_EPOCH, empty, empty, empty)
        return ConcreteGroup((absent,) * members, 0, 0, (NO_EPOCH,) * partitions)

    def parts(s: frozenset[TopicPartition]) -> frozenset[int]:
        return frozenset(p for t, p in s if t == TOPIC)

    slots = []
    for i in range(members):
        m = group.members.get(member_id(i))
        target = parts(group.target_of(member_id(i)))
        if m is None:
            slots.append(ConcreteMember(False, STABLE, NO_EPOCH, NO_EPOCH, empty, empty, target))
        else:
            slots.append(
                ConcreteMember(
                    True,
                    int(m.state),
                    m.member_epoch,
                    m.previous_member_epoch,
                    parts(m.assigned),
                    parts(m.pending_revocation),
                    target,
                )
            )
    pe = tuple(group.partition_epochs.get((TOPIC, p), NO_EPOCH) for p in range(partitions))
    return ConcreteGroup(tuple(slots), group.group_epoch, group.assignment_epoch, pe)


@dataclass
class Replay:
    """What the model did with a counterexample."""

    violations: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    states: list[ConcreteGroup] = field(default_factory=list)
    observations: list[Observation[Any]] = field(default_factory=list)

    @property
    def confirmed(self) -> bool:
        return bool(self.violations) and not self.mismatches


def same_state(model: ConcreteGroup, solver: ConcreteGroup) -> bool:
    """Equal up to the fields of absent slots the encoding keeps canonical (prev of present members
    included: the model keeps Kafka's previous epoch)."""
    if (model.group_epoch, model.assignment_epoch, model.pe) != (
        solver.group_epoch,
        solver.assignment_epoch,
        solver.pe,
    ):
        return False
    for a, b in zip(model.members, solver.members, strict=True):
        if a.present != b.present or a.target != b.target:
            return False
        if a.present and a != b:
            return False
    return True


def replay(
    steps: list[HeartbeatStep],
    invariant_id: str,
    variant: Variant,
    members: int,
    partitions: int,
    expected: list[ConcreteGroup] | None = None,
) -> Replay:
    """Run ``steps`` on the model; collect the registry predicate's messages for ``invariant_id``."""
    predicate = load_all()[invariant_id]
    coordinator = ScriptedCoordinator(variant)
    state = ConsumerCoordinatorState()
    coordinator.create_topic(state, TOPIC, partitions)
    out = Replay()
    before = capture_world(state)
    out.states.append(concrete_of(state, members, partitions))
    for n, step in enumerate(steps, start=1):
        coordinator.next_target = (
            None
            if step.target is None
            else {member_id(i): frozenset((TOPIC, p) for p in t) for i, t in enumerate(step.target)}
        )
        request = request_of(step)
        result = coordinator.handle_consumer_group_heartbeat(state, request, n, n)
        after = capture_world(state)
        obs = observe(before, HeartbeatEvent(n, request), result, after, n)
        out.observations.append(obs)
        out.violations += [f"step {n}: {msg}" for msg in predicate.check(obs)]
        now = concrete_of(state, members, partitions)
        out.states.append(now)
        if expected is not None and n < len(expected) and not same_state(now, expected[n]):
            out.mismatches.append(f"step {n}: model state {now} differs from the solver's {expected[n]}")
        before = after
    return out
