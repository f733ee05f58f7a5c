"""Held-out mutants of KIP-848 client implementations and of Kafka-compatible brokers' group
coordinators, docs/bug-catalogue-heldout.md.

Each class overrides one rule of `model.consumer.client.VirtualConsumer` (Java's new consumer,
franz-go's kgo) or of `model.classic.coordinator.ClassicCoordinator` (Redpanda, the seaweedfs Kafka
gateway) and reproduces one real bug; ``specs/bugs-heldout.yaml`` names the source of each.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.mutants.base import Mutant
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import JoinGroupRequest, JoinGroupResponse
from model.classic.records import MemberUpserted
from model.classic.state import ClassicGroup
from model.classic.tx import E, Tx
from model.consumer.client import RETRIABLE, ClientState, VirtualConsumer
from model.consumer.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from model.errors import ErrorCode

# ---------------------------------------------------------------------------------- KIP-848 clients


class RejoinSendsOnlyChanges(VirtualConsumer):
    """KAFKA-16190: the heartbeat that (re)joins with epoch 0 is built like any other, with only the
    fields that changed since the last request. A consumer that left and subscribes again with the
    same topics sends a join without its subscription and rebalance timeout, which the coordinator
    refuses (INVALID_REQUEST)."""

    def _rejoin(self) -> None:
        sent = self._sent
        super()._rejoin()
        self._sent = sent

    def _heartbeat_request(self, epoch: int, send_all: bool) -> ConsumerGroupHeartbeatRequest:
        return super()._heartbeat_request(epoch, send_all=False)


class LostResponseKeepsSentFields(VirtualConsumer):
    """franz-go PR #1270 (kgo): a heartbeat that fails (no answer, or a retriable error) does not
    reset what the consumer remembers having sent, so the next heartbeat is incremental and omits an
    unchanged owned set; the coordinator, which believes the lost answer's assignment delivered, does
    not send it again and the consumer never reconciles it."""

    def on_request_lost(self, now: int) -> None:
        sent = self._sent
        super().on_request_lost(now)
        self._sent = sent

    def _on_error(self, code: ErrorCode | int, at: int) -> None:
        sent = self._sent
        super()._on_error(code, at)
        if code in RETRIABLE:
            self._sent = sent


class RevocationAckWaitsAnInterval(VirtualConsumer):
    """franz-go PR #1340 (kgo): once a revocation completes, the consumer tears down and rebuilds its
    heartbeat session, which re-arms the heartbeat timer at a full interval; the heartbeat that
    acknowledges the revocation goes out one heartbeat interval later instead of at once, and the
    partitions stay blocked for their next owner meanwhile."""

    _ack_held = False
    _ack_at: int | None = None

    def complete_reconciliation(self) -> None:
        revoking = self.state == ClientState.RECONCILING and bool(self.owned - (self.target or frozenset()))
        super().complete_reconciliation()
        if revoking and self.state == ClientState.ACKNOWLEDGING:
            self._ack_held, self._ack_at = True, None

    def on_response(self, response: ConsumerGroupHeartbeatResponse, now: int | None = None) -> None:
        super().on_response(response, now)
        if self._ack_held and self._ack_at is None and self.state == ClientState.ACKNOWLEDGING:
            self._ack_at = self.next_heartbeat_at  # rebuilt at once: a full interval from this answer

    def next_request(self, now: int) -> ConsumerGroupHeartbeatRequest | None:
        if self._ack_held and self.state == ClientState.ACKNOWLEDGING and not self.crashed:
            if self.inflight is not None:
                return None
            if self._ack_at is None:  # slow callbacks completed since: rebuilt now
                self._ack_at = now + self.heartbeat_interval_ms
            if now < self._ack_at:
                return None
        request = super().next_request(now)
        if request is not None:
            self._ack_held, self._ack_at = False, None
        return request


# ---------------------------------------------------------------------------------- brokers


class EmptiedGroupStaysPreparing(ClassicCoordinator):
    """redpanda PR #25270: when the last member of a group is removed while KIP-394 pending member
    ids remain, the join timer's completion aborts (the group's rebalance timeout was computed over
    an empty member list and threw), so the group stays PreparingRebalance with no member instead of
    becoming Empty, until the pending ids come back or expire."""

    def complete_join(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        if not group.members and group.pending_members:
            return
        super().complete_join(tx, group, now)


class RejoinClearsAssignment(ClassicCoordinator):
    """seaweedfs PR #9143 (Kafka gateway): an accepted JoinGroup of a known member replaces its
    member entry, wiping the assignment the leader installed; a follower that rejoins a Stable group
    with unchanged metadata is answered the current generation and then syncs an empty assignment,
    with no rebalance to repair it."""

    def join_existing_member(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, ref: int, now: int
    ) -> None:
        super().join_existing_member(tx, group, req, ref, now)
        answered = next((d.response for d in tx.result.deliveries if d.ref == ref), None)
        if isinstance(answered, JoinGroupResponse) and answered.error != E.NONE:
            return
        member = group.members.get(req.member_id)
        if member is not None and member.assignment:
            tx.emit(MemberUpserted(group.group_id, replace(member, assignment=b"")))


def _m(name: str, protocol: str, fault: str, source: str, **parts: Any) -> Mutant:
    return Mutant(name, protocol, "heldout", fault, source, (), **parts)


HELDOUT2_OTHERS_MUTANTS: tuple[Mutant, ...] = (
    _m(
        "kafka-16190",
        "consumer",
        "a rejoin heartbeat carries only the fields changed since the last request",
        "KAFKA-16190 / apache/kafka PR #15401",
        client=RejoinSendsOnlyChanges,
    ),
    _m(
        "kgo-1270",
        "consumer",
        "a failed heartbeat does not make the next one a full request",
        "twmb/franz-go PR #1270 (kgo)",
        client=LostResponseKeepsSentFields,
    ),
    _m(
        "kgo-1340",
        "consumer",
        "a completed revocation is acknowledged one heartbeat interval later",
        "twmb/franz-go PR #1340 (kgo)",
        client=RevocationAckWaitsAnInterval,
    ),
    _m(
        "redpanda-25270",
        "classic",
        "a group emptied while pending ids remain stays PreparingRebalance",
        "redpanda-data/redpanda PR #25270",
        coordinator=EmptiedGroupStaysPreparing,
    ),
    _m(
        "seaweedfs-9143",
        "classic",
        "a known member's rejoin wipes its installed assignment",
        "seaweedfs/seaweedfs PR #9143",
        coordinator=RejoinClearsAssignment,
    ),
)

__all__ = ["HELDOUT2_OTHERS_MUTANTS"]
