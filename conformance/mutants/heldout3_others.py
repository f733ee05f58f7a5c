"""Held-out mutants of the third wave: group-coordination bugs of Kafka-compatible brokers and of
classic-protocol client libraries, ``specs/bugs-heldout.yaml``.

The broker mutants override one rule of `model.classic.coordinator.ClassicCoordinator` (Redpanda)
or of `model.consumer.coordinator.ConsumerCoordinator` (franz-go's kfake test broker); the client
mutants override how `model.classic.client.ClassicClient` handles one error of the group APIs
(kafka-python, sarama). Each reproduces one real bug; the yaml file names its sources.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.mutants.base import Mutant
from conformance.mutants.heldout_classic import IllegalGenerationDropsMemberId
from model.classic.client import ClassicClient, Phase
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import JoinGroupRequest
from model.classic.state import ClassicGroup, Member
from model.classic.tx import Tx
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from model.consumer.txn import _Txn
from model.errors import ErrorCode

E = ErrorCode

# ---------------------------------------------------------------------------------- brokers


class RejoinKeepsFirstTimeouts(ClassicCoordinator):
    """redpanda PR #23693: when a member that the group already knows joins again (its own member
    id, or an unknown id that takes over a known group.instance.id), the coordinator refreshes only
    its protocols. The session and rebalance timeouts (and the client id) stay those of the member's
    first JoinGroup, so a consumer restarted with other timeouts is expired, and waited for in a
    rebalance, by the old values."""

    def update_member_and_rebalance(
        self, tx: Tx, group: ClassicGroup, member: Member, req: JoinGroupRequest, ref: int, now: int
    ) -> None:
        super().update_member_and_rebalance(tx, group, member, _with_timeouts_of(req, member), ref, now)

    def replace_static_member(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, new_id: str, ref: int, now: int
    ) -> None:
        assert req.group_instance_id is not None
        old = group.members[group.static_members[req.group_instance_id]]
        super().replace_static_member(tx, group, _with_timeouts_of(req, old), new_id, ref, now)


def _with_timeouts_of(req: JoinGroupRequest, member: Member) -> JoinGroupRequest:
    """``req`` carrying the session and rebalance timeouts ``member`` already has."""
    return replace(
        req,
        session_timeout_ms=member.session_timeout_ms,
        rebalance_timeout_ms=member.rebalance_timeout_ms,
    )


class JoinWithOwnedAccepted(ConsumerCoordinator):
    """franz-go PR #1348 (kfake): a ConsumerGroupHeartbeat with member epoch 0 whose owned
    partitions are absent or not empty is accepted instead of refused with INVALID_REQUEST. For a
    member the group does not hold yet the claimed partitions are dropped; for a member rejoining in
    place they reach the reconciliation as the member's owned set. A client that leaks stale owned
    state into its joins is therefore never told its join is malformed."""

    def validate_request(self, request: ConsumerGroupHeartbeatRequest) -> None:
        if request.member_epoch == 0 and (request.topic_partitions is None or request.topic_partitions):
            request = replace(request, topic_partitions=())
        super().validate_request(request)

    def join_or_heartbeat(
        self, txn: _Txn, request: ConsumerGroupHeartbeatRequest, now: int
    ) -> ConsumerGroupHeartbeatResponse:
        if request.member_epoch == 0 and request.topic_partitions:
            group = txn.group
            if group is None or request.member_id not in group.members:
                request = replace(request, topic_partitions=())
        return super().join_or_heartbeat(txn, request, now)


# ---------------------------------------------------------------------------------- clients


class IllegalGenerationForgetsMemberId(IllegalGenerationDropsMemberId):
    """kafka-python PR #3017: ILLEGAL_GENERATION on a Heartbeat, SyncGroup or OffsetCommit resets
    the member id together with the generation, as UNKNOWN_MEMBER_ID does; the consumer rejoins as a
    new member while the coordinator still holds its old id. The fault KAFKA-13419 put in the Java
    consumer (`heldout_classic.IllegalGenerationDropsMemberId`), in another client."""


class LoadInProgressOnJoinIsFatal(ClassicClient):
    """sarama #2058 (PR #2214): COORDINATOR_LOAD_IN_PROGRESS (OffsetsLoadInProgress) answered to a
    JoinGroup or SyncGroup is not among the errors the consumer group retries; the join attempt
    fails and the error reaches the application, so the consumer stops instead of joining
    again once the coordinator has loaded the group."""

    def _on_error(self, error: ErrorCode) -> None:
        if error == E.COORDINATOR_LOAD_IN_PROGRESS and self.phase in (Phase.JOINING, Phase.SYNCING):
            self.last_error = error
            self.fatal_error = error
            self.phase = Phase.FATAL
            self.owned = ()
            return
        super()._on_error(error)


def _m(name: str, protocol: str, fault: str, source: str, **parts: Any) -> Mutant:
    return Mutant(name, protocol, "heldout", fault, source, (), **parts)


HELDOUT3_OTHERS_MUTANTS: tuple[Mutant, ...] = (
    _m(
        "redpanda-23693",
        "classic",
        "a known member's rejoin keeps the timeouts of its first JoinGroup",
        "redpanda-data/redpanda PR #23693",
        coordinator=RejoinKeepsFirstTimeouts,
    ),
    _m(
        "kfake-1348",
        "consumer",
        "an epoch-0 heartbeat reporting owned partitions is accepted",
        "twmb/franz-go PR #1348 (kfake)",
        coordinator=JoinWithOwnedAccepted,
    ),
    _m(
        "kafka-python-3017",
        "classic",
        "ILLEGAL_GENERATION resets the member id as well as the generation",
        "dpkp/kafka-python PR #3017",
        client=IllegalGenerationForgetsMemberId,
    ),
    _m(
        "sarama-2214",
        "classic",
        "COORDINATOR_LOAD_IN_PROGRESS on JoinGroup/SyncGroup stops the consumer",
        "IBM/sarama #2058 / PR #2214",
        client=LoadInProgressOnJoinIsFatal,
    ),
)

__all__ = ["HELDOUT3_OTHERS_MUTANTS"]
