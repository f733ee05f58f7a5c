"""One mixed-group model hypothesis beside a real target (the mixed oracle keeps a list of them).

Besides the model state (both halves: classic and KIP-848 groups): which protocol-legal variant its
coordinator runs (`ORIGINS`), its clock, the classic durable records a restart loads, and what it
adopted from the target's answers (revealed targets it must keep, classic members whose JoinGroup
reconciliation no answer has shown yet, kafka-compat notes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.protocols.consumer.assignment import Pin
from model.consumer.messages import TopicPartition
from model.consumer.reconcile import CurrentAssignment
from model.mixed.state import MixedState
from model.result import Result

#: The protocol-legal model variants the first answers decide between (an index per hypothesis):
#: where a new group's epochs start (0: Kafka 4.0, 1: Kafka 4.3+, KAFKA-20268) and which epoch a
#: classic member of a consumer group must reach (`MixedConfig.classic_rejoin_epoch`).
#: ``group.consumer.migration.policy`` too, unless the target's launcher states it: a coordinator
#: that refuses an online upgrade (GROUP_ID_NOT_FOUND) may run policy ``disabled`` or ``downgrade``,
#: which is legal; the answers select the policy and a policy other than Kafka's default
#: ``bidirectional`` is a kafka-compat note.
POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")
ORIGINS = {
    i: (origin, rejoin, policy)
    for i, (policy, rejoin, origin) in enumerate(
        (p, r, o) for p in POLICIES for r in ("group", "assignment") for o in (0, 1)
    )
}


@dataclass(frozen=True)
class Unrevealed:
    """A classic member's reconciliation at its JoinGroup, which the answer shows only as a generation:
    Kafka computes the target and reconciles the member in the JoinGroup (GMM
    ``classicGroupJoinToConsumerGroup`` steps 2-3, apache/kafka@1eb7644 L2030-2061; the response
    carries ``updatedMember.memberEpoch()`` only, L2078-2081) and its SyncGroup writes nothing and
    returns the assigned partitions (``classicGroupSyncToConsumerGroup`` -> ``prepareAssignment``,
    L5361-5407). Until then, which partitions the reconciliation gave is open: a later adoption of the
    target's assignor choice may redo it (`MixedAdoption._rereconcile`). ``start`` is the member's
    current assignment before the JoinGroup, ``owned`` what its subscription reported owning."""

    start: CurrentAssignment
    owned: frozenset[TopicPartition] | None
    generation: int
    assignment_epoch: int


@dataclass
class MHypo:
    """A mixed-group model hypothesis (module docstring)."""

    state: MixedState
    origin: int  # the ORIGINS key of the coordinator this hypothesis runs
    now: int = 0
    adoptions: int = 0
    notes: tuple[str, ...] = ()
    #: the classic half's durable records: each group's last GroupMetadata record or tombstone, what
    #: a restarted coordinator loads for a classic group (`mixed_failover`; the consumer half is
    #: rebuilt from its state, `model.consumer.records.durable_view`)
    durable: tuple[object, ...] = ()
    #: what the target's answers revealed of members' targets since assignment epoch ``pin_epoch``
    #: (`consumer.adoption.pin_revealed`: a later adoption keeps it)
    pins: Mapping[str, Pin] = field(default_factory=dict)
    pin_epoch: int = -1
    #: classic members reconciled at a JoinGroup whose partitions no answer has shown yet
    unrevealed: Mapping[str, Unrevealed] = field(default_factory=dict)
    #: consumer timers of one instant fire in reverse tie order (`ConsumerCoordinator.reverse_ties`)
    ties_reversed: bool = False

    def copy(self) -> MHypo:
        return dataclasses.replace(self, state=self.state.copy())

    def track(self, result: Result) -> Result:
        """Keep the classic durable records ``result`` wrote (see ``durable``); returns ``result``."""
        from conformance.protocols.mixed.failover import track_durable

        self.durable = track_durable(self.durable, result.records)
        return result


@dataclass
class MixedTiming:
    late_ms: int = 500
    answer_deadline_ms: int = 5000
    max_hypotheses: int = 48


def member_ids(state: MixedState) -> set[str]:
    out: set[str] = set()
    for g in state.consumer.groups.values():
        out |= set(g.members)
    for cg in state.classic.groups.values():
        out |= set(cg.members) | set(getattr(cg, "pending_members", ()))
    return out


def classic_deadlines(group: Any) -> list[tuple[int]]:
    """The armed timers of a classic group (`model.classic.state` ``Group.timers``)."""
    return [(int(tm.deadline),) for tm in group.timers.values()]
