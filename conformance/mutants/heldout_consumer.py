"""KIP-848 mutants of the second (held-out) bug catalogue, docs/bug-catalogue-heldout.md.

Each class overrides one rule of `model.consumer.coordinator.ConsumerCoordinator` or of
`model.consumer.client.VirtualConsumer` and reproduces one real bug that the first catalogue was
not built for; ``specs/bugs-heldout.yaml`` names the source of each.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.mutants.base import Mutant
from model.consumer.client import ClientState, VirtualConsumer
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatResponse
from model.consumer.records import TargetAssignmentEpochRecord, apply
from model.consumer.state import ConsumerCoordinatorState, ConsumerMember
from model.consumer.txn import _Txn
from model.errors import ErrorCode
from model.result import Result

# ---------------------------------------------------------------------------------- coordinator


class EmptyGroupKeepsAssignmentEpoch(ConsumerCoordinator):
    """KAFKA-20442: fencing the last members bumps the group epoch but leaves the assignment epoch
    behind, so an empty group has group epoch > assignment epoch."""

    def fence_member(self, txn: _Txn, member: ConsumerMember) -> None:
        emit = txn.emit

        def emit_but_epoch(record: object) -> None:
            if isinstance(record, TargetAssignmentEpochRecord) and not txn.require_group().members:
                return
            emit(record)

        txn.emit = emit_but_epoch  # type: ignore[method-assign]
        try:
            super().fence_member(txn, member)
        finally:
            del txn.emit


class TopicChangeNotNoticed(ConsumerCoordinator):
    """franz-go kfake PR #1259: a created, grown or deleted topic does not mark the subscribed groups
    for a metadata refresh, so no group epoch bump follows and the change is never assigned."""

    def _metadata_change(self, state: ConsumerCoordinatorState, topic: str, record: object) -> Result:
        result = Result()
        apply(state, record)
        result.records.append(record)
        return result


class RevocationBumpsMemberEpoch(ConsumerCoordinator):
    """KAFKA-19974: a member leaving UNREVOKED_PARTITIONS takes member epoch + 1 even while it must
    revoke again, so one partition can be owned by two members at the same epoch (Kafka 4.0/4.1,
    the model's ``bump_after_revocation=True``)."""

    def reconcile_member(
        self, txn: Any, member: ConsumerMember, owned: Any, now: int, subscription_changed: bool = False
    ) -> ConsumerMember:
        fixed = self.config
        self.config = replace(fixed, bump_after_revocation=True)
        try:
            return super().reconcile_member(txn, member, owned, now, subscription_changed)
        finally:
            self.config = fixed


class ClearedRegexNoBump(ConsumerCoordinator):
    """KAFKA-19899: a member whose regex subscription changes from a pattern to empty does not bump
    the group epoch, so it keeps the partitions the regex gave it."""

    def subscription_changed(self, member: ConsumerMember, updated: ConsumerMember) -> bool:
        if not updated.subscribed_topic_regex and member.subscribed_topic_regex:
            return member.subscribed_topic_names != updated.subscribed_topic_names
        return super().subscription_changed(member, updated)

    def update_regular_expressions(
        self, txn: Any, member: ConsumerMember, updated: ConsumerMember, now: int
    ) -> Any:
        bump, changed = super().update_regular_expressions(txn, member, updated, now)
        cleared = member.subscribed_topic_regex and not updated.subscribed_topic_regex
        return (False if cleared else bump), changed


# ---------------------------------------------------------------------------------- clients


class EmptyMemberSkipsLeave(VirtualConsumer):
    """librdkafka PR #4634: a consumer that owns no partition closes without its leave heartbeat,
    so the coordinator keeps the member (and may assign it partitions) until its session expires."""

    def leave(self) -> None:
        if self.state not in (ClientState.UNSUBSCRIBED, ClientState.FATAL) and not self.owned:
            self.target = None
            self.state = ClientState.UNSUBSCRIBED
            return
        super().leave()


class LeavingDiscardsResponse(VirtualConsumer):
    """librdkafka PR #4672: the answer to a heartbeat still in flight when the consumer starts
    leaving is discarded whole, member epoch included."""

    def on_response(self, response: ConsumerGroupHeartbeatResponse, now: int | None = None) -> None:
        request = self.inflight
        if (
            self.state == ClientState.LEAVING
            and request is not None
            and request.member_epoch >= 0
            and not self.crashed
        ):
            self.inflight = None
            return
        super().on_response(response, now)


class GroupNotFoundRetried(VirtualConsumer):
    """librdkafka PR #5488: GROUP_ID_NOT_FOUND is treated as retriable, so the consumer keeps
    heartbeating with its old epoch instead of rejoining."""

    def _on_error(self, code: ErrorCode | int, at: int) -> None:
        if code == ErrorCode.GROUP_ID_NOT_FOUND and self.state != ClientState.LEAVING:
            self.next_heartbeat_at = at + self.retry_backoff_ms
            return
        super()._on_error(code, at)


def _m(name: str, fault: str, source: str, **parts: Any) -> Mutant:
    return Mutant(name, "consumer", "heldout", fault, source, (), **parts)


HELDOUT_CONSUMER_MUTANTS: tuple[Mutant, ...] = (
    _m(
        "kafka-20442",
        "fencing the last member leaves the assignment epoch behind the group epoch",
        "KAFKA-20442 / apache/kafka PR #22045",
        coordinator=EmptyGroupKeepsAssignmentEpoch,
    ),
    _m(
        "kfake-1259",
        "a topic change does not trigger a metadata refresh or epoch bump",
        "twmb/franz-go PR #1259 (kfake)",
        coordinator=TopicChangeNotNoticed,
    ),
    _m(
        "kafka-19974",
        "leaving UNREVOKED_PARTITIONS bumps the member epoch",
        "KAFKA-19974 / apache/kafka PR #21107",
        coordinator=RevocationBumpsMemberEpoch,
    ),
    _m(
        "kafka-19899",
        "a regex cleared to empty does not bump the group epoch",
        "KAFKA-19899 / apache/kafka PR #21075",
        coordinator=ClearedRegexNoBump,
    ),
    _m(
        "librdkafka-4634",
        "a consumer with no partitions closes without a leave heartbeat",
        "confluentinc/librdkafka PR #4634",
        client=EmptyMemberSkipsLeave,
    ),
    _m(
        "librdkafka-4672",
        "a heartbeat answer arriving while leaving is discarded with its epoch",
        "confluentinc/librdkafka PR #4672",
        client=LeavingDiscardsResponse,
    ),
    _m(
        "librdkafka-5488",
        "GROUP_ID_NOT_FOUND is retried instead of rejoining",
        "confluentinc/librdkafka PR #5488",
        client=GroupNotFoundRetried,
    ),
)

__all__ = ["HELDOUT_CONSUMER_MUTANTS"]
