"""More classic-coordinator mutants of the second (held-out) bug catalogue, docs/bug-catalogue-heldout.md.

Each class overrides one rule of `model.classic.coordinator.ClassicCoordinator` and reproduces one
real bug of Apache Kafka's classic group coordinator that neither the first catalogue nor the
suite's invariants were built for; ``specs/bugs-heldout.yaml`` names the source of each.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.mutants.base import Mutant
from model.classic.coordinator import ClassicCoordinator, Tx
from model.classic.messages import JoinGroupRequest, OffsetCommitRequest
from model.classic.state import ClassicGroup, ClassicState, GroupState
from model.errors import ErrorCode
from model.result import Result

S = GroupState


class DroppedMemberTimerKept(ClassicCoordinator):
    """KAFKA-7196: the dynamic members a completed join phase drops keep their session timers; when
    one fires the coordinator handles it as a live member's expiry and rebalances the group again,
    although that member is long gone."""

    def complete_join(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        dropped: dict[str, int] = {}
        if group.state == S.PREPARING_REBALANCE:
            for member in group.members.values():
                timer = group.timers.get(f"expire:{member.member_id}")
                if member.awaiting_join is None and member.instance_id is None and timer is not None:
                    dropped[member.member_id] = timer.deadline
        super().complete_join(tx, group, now)
        for member_id, deadline in dropped.items():
            if member_id not in group.members:
                tx.timer(group, f"expire:{member_id}", deadline)

    def on_member_expired(self, tx: Tx, group: ClassicGroup, member_id: str, now: int) -> None:
        if member_id not in group.members and group.state != S.DEAD:
            self.after_member_removed(tx, group, now)  # the removal itself finds nothing to remove
            return
        super().on_member_expired(tx, group, member_id, now)


class StaticIdFromStateTime(ClassicCoordinator):
    """KAFKA-8715: a static member's new member id is its instance id and the time the group entered
    its current state, not a random suffix; two replacements while the group stays in one state get
    the same member id, so the process replaced second is not fenced."""

    def new_member_id(self, group: ClassicGroup, req: JoinGroupRequest) -> str:
        if req.group_instance_id is None:
            return super().new_member_id(group, req)
        # the model keeps no state timestamps; (generation, state) names the same stretch of time
        return f"{req.group_instance_id}-{group.generation}-{group.state.value}"


class NewMemberUnwatchedAfterJoin(ClassicCoordinator):
    """KAFKA-9752: when the join phase completes, a member that joined as new in it gets no session
    deadline (the rescheduled expiry is satisfied at once), so if it dies before its first heartbeat
    or SyncGroup it is not removed at its session timeout."""

    def complete_join(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        new = [m.member_id for m in group.members.values() if m.is_new]
        generation = group.generation
        super().complete_join(tx, group, now)
        if group.generation == generation or group.state != S.COMPLETING_REBALANCE:
            return
        for member_id in new:
            if member_id in group.members and f"expire:{member_id}" in group.timers:
                tx.timer(group, f"expire:{member_id}", None)


class AnsweredSyncNotRearmed(ClassicCoordinator):
    """apache/kafka PR #451: answering the parked SyncGroups does not start a new session for the
    members answered; a member whose session ran out while it waited for the leader (an expiry the
    coordinator ignores while the request is parked) is left with no session deadline at all."""

    def propagate_assignment(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        unwatched = self._parked_without_deadline(group)
        super().propagate_assignment(tx, group, now)
        self._drop_deadlines(tx, group, unwatched)

    def reset_assignments_with_error(self, tx: Tx, group: ClassicGroup, error: ErrorCode, now: int) -> None:
        unwatched = self._parked_without_deadline(group)
        super().reset_assignments_with_error(tx, group, error, now)
        self._drop_deadlines(tx, group, unwatched)

    @staticmethod
    def _parked_without_deadline(group: ClassicGroup) -> list[str]:
        return [
            m.member_id
            for m in group.members.values()
            if m.awaiting_sync is not None and f"expire:{m.member_id}" not in group.timers
        ]

    @staticmethod
    def _drop_deadlines(tx: Tx, group: ClassicGroup, member_ids: list[str]) -> None:
        for member_id in member_ids:
            if f"expire:{member_id}" in group.timers:
                tx.timer(group, f"expire:{member_id}", None)


class CommitToUnknownGroupStored(ClassicCoordinator):
    """KAFKA-2596: an OffsetCommit for a group the coordinator does not know is stored whatever its
    generation, so a member of a generation that no longer exists (the group was emptied and
    deleted) still commits offsets."""

    def handle_offset_commit(
        self, state: ClassicState, req: OffsetCommitRequest, ref: int, now: int
    ) -> Result:
        if req.group_id not in state.groups and req.generation_id >= 0:
            req = replace(req, generation_id=-1)  # stored as a commit from outside group management
        return super().handle_offset_commit(state, req, ref, now)


def _m(name: str, fault: str, source: str, **parts: Any) -> Mutant:
    return Mutant(name, "classic", "heldout", fault, source, (), **parts)


HELDOUT2_CLASSIC_MUTANTS: tuple[Mutant, ...] = (
    _m(
        "kafka-7196",
        "members dropped at join completion keep their session timers, which rebalance again",
        "KAFKA-7196 / apache/kafka PR #5556",
        coordinator=DroppedMemberTimerKept,
    ),
    _m(
        "kafka-8715",
        "a static member id is derived from the group's state time, so replacements can repeat it",
        "KAFKA-8715 / apache/kafka PR #7116",
        coordinator=StaticIdFromStateTime,
    ),
    _m(
        "kafka-9752",
        "a member new in the completed join phase gets no session deadline",
        "KAFKA-9752 / apache/kafka PR #8339",
        coordinator=NewMemberUnwatchedAfterJoin,
    ),
    _m(
        "kafka-pr-451",
        "a SyncGroup answer starts no new session for a member whose session ran out while parked",
        "apache/kafka PR #451",
        coordinator=AnsweredSyncNotRearmed,
    ),
    _m(
        "kafka-2596",
        "an OffsetCommit for an unknown group is stored even with a positive generation",
        "KAFKA-2596 / apache/kafka PR #267",
        coordinator=CommitToUnknownGroupStored,
    ),
)
