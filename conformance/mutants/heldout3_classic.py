"""Classic-coordinator mutants of the third held-out wave (``specs/bugs-heldout.yaml``, HB-45..HB-48).

Each class overrides one rule of `model.classic.coordinator.ClassicCoordinator` and reproduces one
real bug of Apache Kafka's classic group coordinator that no earlier catalogue, held-out wave or
mutant covers; the YAML entry of each names its JIRA issue and pull request.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.mutants.base import Mutant
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    OffsetCommitRequest,
)
from model.classic.records import TimerSet, apply
from model.classic.state import ClassicGroup, ClassicState, GroupState
from model.errors import ErrorCode
from model.result import Delivery, Result

S = GroupState
E = ErrorCode


class EmptyProtocolFirstMember(ClassicCoordinator):
    """KAFKA-6005: the first member of an empty group is accepted whatever protocol type and protocol
    list it declares; a member joining with an empty list (or type) fixes the group on nothing, and
    every later member with a real assignor is refused INCONSISTENT_GROUP_PROTOCOL."""

    def supports_protocols(self, group: ClassicGroup, protocol_type: str, names: tuple[str, ...]) -> bool:
        if group.state == S.EMPTY or not group.members:
            return True  # no check at all for the member that starts the group
        return super().supports_protocols(group, protocol_type, names)


class CommitNotAHeartbeat(ClassicCoordinator):
    """KAFKA-3470: an accepted OffsetCommit from a member of the current generation does not count as
    a sign of life; only Heartbeat (and the join and sync answers) start a new session, so a member
    that keeps committing but sends no Heartbeat is expired at its session timeout."""

    def handle_offset_commit(
        self, state: ClassicState, req: OffsetCommitRequest, ref: int, now: int
    ) -> Result:
        key = f"expire:{req.member_id}"
        group = state.groups.get(req.group_id)
        before = group.timers.get(key) if group is not None else None
        kept = (before.deadline, before.args) if before is not None else (None, ())
        result = super().handle_offset_commit(state, req, ref, now)
        rearmed = [
            r
            for r in result.records
            if isinstance(r, TimerSet) and r.group_id == req.group_id and r.key == key
        ]
        if rearmed:
            # the commit leaves the session deadline where it was: drop its re-arm and undo it
            result.records = [r for r in result.records if not any(r is t for t in rearmed)]
            apply(state, TimerSet(req.group_id, key, kept[0], kept[1]))
        return result


class RebalanceAnsweredIllegalGeneration(ClassicCoordinator):
    """KAFKA-2557: a Heartbeat of the current generation that arrives while the group is preparing a
    rebalance is answered ILLEGAL_GENERATION, as if the member's generation were stale, instead of
    REBALANCE_IN_PROGRESS; the member cannot tell a rebalance from having been left behind."""

    def handle_heartbeat(self, state: ClassicState, req: HeartbeatRequest, ref: int, now: int) -> Result:
        result = super().handle_heartbeat(state, req, ref, now)
        result.deliveries = [
            Delivery(d.ref, HeartbeatResponse(E.ILLEGAL_GENERATION))
            if d.ref == ref and d.response.error == E.REBALANCE_IN_PROGRESS
            else d
            for d in result.deliveries
        ]
        return result


class _UncheckedEmptyId(str):
    """The empty group id, passing the reference's "is a group id given" test (same hash and
    equality as ``""``, so the group is stored and found under the empty id)."""

    def __bool__(self) -> bool:
        return True


class EmptyGroupIdJoin(ClassicCoordinator):
    """KAFKA-2648: JoinGroup does not check that a group id is given; a JoinGroup with the empty group
    id creates a group of that name and joins it like any other, instead of being refused
    INVALID_GROUP_ID."""

    def handle_join_group(self, state: ClassicState, req: JoinGroupRequest, ref: int, now: int) -> Result:
        if req.group_id == "":
            req = replace(req, group_id=_UncheckedEmptyId(""))
        return super().handle_join_group(state, req, ref, now)


def _m(name: str, fault: str, source: str, **parts: Any) -> Mutant:
    return Mutant(name, "classic", "heldout", fault, source, (), **parts)


HELDOUT3_CLASSIC_MUTANTS: tuple[Mutant, ...] = (
    _m(
        "kafka-6005",
        "the first member of an empty group may declare no protocol type or no protocols",
        "KAFKA-6005 / apache/kafka PR #3957",
        coordinator=EmptyProtocolFirstMember,
    ),
    _m(
        "kafka-3470",
        "an accepted OffsetCommit does not start a new session for the committing member",
        "KAFKA-3470 / apache/kafka PR #1206",
        coordinator=CommitNotAHeartbeat,
    ),
    _m(
        "kafka-2557",
        "a current-generation Heartbeat during a rebalance is answered ILLEGAL_GENERATION",
        "KAFKA-2557 / apache/kafka PR #222",
        coordinator=RebalanceAnsweredIllegalGeneration,
    ),
    _m(
        "kafka-2648",
        "a JoinGroup with the empty group id is accepted and creates a group",
        "KAFKA-2648 / apache/kafka PR #362",
        coordinator=EmptyGroupIdJoin,
    ),
)
