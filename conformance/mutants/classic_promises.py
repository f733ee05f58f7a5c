"""Generic classic mutants that each break one protocol promise and pass the model's other rules:
the teeth of the promises judged against what was sent (docs/invariants.md#judged-against-what-was-sent)."""

from __future__ import annotations

from dataclasses import replace

from conformance.mutants.base import Mutant
from model.classic.client import ClassicClient
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.classic.state import ClassicGroup, ClassicState, GroupState
from model.classic.tx import Tx
from model.embedded import decode_subscription, encode_subscription
from model.errors import ErrorCode
from model.result import Result


class SyncAssignmentsRotated(ClassicCoordinator):
    """The leader's assignments are installed one member along, so each member is handed
    another's (SyncGroupRequest.json Assignments)."""

    def install_assignment(self, tx: Tx, group: ClassicGroup, req: SyncGroupRequest, now: int) -> None:
        ids, given = [m for m, _ in req.assignments], [a for _, a in req.assignments]
        rotated = tuple(zip(ids, given[1:] + given[:1], strict=True))
        super().install_assignment(tx, group, replace(req, assignments=rotated), now)


class FollowerAnsweredEarly(ClassicCoordinator):
    """A follower's SyncGroup in CompletingRebalance is answered at once with an empty assignment
    instead of waiting for the leader's (Kafka protocol guide SyncGroup)."""

    def handle_sync_group(self, state: ClassicState, req: SyncGroupRequest, ref: int, now: int) -> Result:
        group = state.groups.get(req.group_id)
        if (
            group is not None
            and group.state == GroupState.COMPLETING_REBALANCE
            and req.member_id in group.members
            and req.member_id != group.leader
            and req.generation_id == group.generation
        ):
            tx = Tx(state)
            tx.reply(ref, SyncGroupResponse(ErrorCode.NONE, group.protocol_type, group.protocol, b""))
            return tx.result
        return super().handle_sync_group(state, req, ref, now)


class HeartbeatHidesRebalance(ClassicCoordinator):
    """A Heartbeat in PreparingRebalance is answered NONE instead of REBALANCE_IN_PROGRESS, so
    members do not learn that they must rejoin (Kafka protocol guide, Heartbeat errors)."""

    def handle_heartbeat(self, state: ClassicState, req: HeartbeatRequest, ref: int, now: int) -> Result:
        result = super().handle_heartbeat(state, req, ref, now)
        result.deliveries = [
            replace(d, response=HeartbeatResponse(ErrorCode.NONE))
            if isinstance(d.response, HeartbeatResponse)
            and d.response.error == ErrorCode.REBALANCE_IN_PROGRESS
            else d
            for d in result.deliveries
        ]
        return result


class CooperativeJoinHidesOwned(ClassicClient):
    """A cooperative consumer's JoinGroup subscription leaves out the partitions it still holds, so
    the leader may hand them to another member at once (KIP-429 OwnedPartitions)."""

    def _join_request(self) -> JoinGroupRequest:
        request = super()._join_request()
        if not self.cooperative or not self.owned:
            return request
        hidden = tuple(
            (name, encode_subscription(replace(decode_subscription(meta), owned_partitions=())))
            for name, meta in request.protocols
        )
        return replace(request, protocols=hidden)


CLASSIC_PROMISE_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "sync-assignments-rotated",
        "classic",
        "generic",
        "each member is handed the assignment the leader sent for another member",
        "Kafka protocol guide, SyncGroup; clients/src/main/resources/common/message/SyncGroupRequest.json (Assignments)",
        ("classic.sync_gives_leader_assignment",),
        coordinator=SyncAssignmentsRotated,
    ),
    Mutant(
        "follower-answered-early",
        "classic",
        "generic",
        "a follower's SyncGroup is answered with an empty assignment before the leader's arrives",
        "Kafka protocol guide, SyncGroup (followers wait for the leader's assignment); docs/protocol-reference.md#a4",
        ("classic.sync_gives_leader_assignment",),
        coordinator=FollowerAnsweredEarly,
    ),
    Mutant(
        "heartbeat-hides-rebalance",
        "classic",
        "generic",
        "a Heartbeat during PreparingRebalance is answered NONE, so members do not rejoin",
        "Kafka protocol guide, Heartbeat (REBALANCE_IN_PROGRESS); docs/protocol-reference.md#a5",
        ("classic.heartbeat_signals_rebalance",),
        coordinator=HeartbeatHidesRebalance,
    ),
    Mutant(
        "cooperative-join-hides-owned",
        "classic",
        "generic",
        "a cooperative consumer rejoins without reporting the partitions it still holds",
        "KIP-429 (the subscription carries the owned partitions; a partition moves only after its owner revoked it)",
        ("classic.no_partition_held_twice",),
        client=CooperativeJoinHidesOwned,
        variants=(("assignor", "cooperative-sticky"),),
    ),
)
