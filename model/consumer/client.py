"""A virtual KIP-848 consumer: the client side of ConsumerGroupHeartbeat as a pure state machine.

Behaves like Apache Kafka's Java consumer (AsyncKafkaConsumer; `clients/.../consumer/internals/`
`ConsumerMembershipManager`, `AbstractMembershipManager` L86, `ConsumerHeartbeatRequestManager`):

* joins with epoch 0 and a full request; v1 uses a client-generated member id drawn once from the
  Chooser and kept across rejoins (docs/protocol-reference.md#b9, KIP-1082); v0 joins with "" and adopts the coordinator's id;
* later heartbeats are incremental: a field is sent only when it differs from what was last sent
  (docs/protocol-reference.md#b10); after an error or a lost response everything is sent again (the "sent fields" reset);
* on an assignment it reconciles: revoked partitions are dropped and added ones taken, then the new
  owned set is acknowledged at once in the next heartbeat; with ``auto_reconcile=False`` the
  reconciliation waits for `complete_reconciliation` (slow revocation callbacks);
* FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: it releases every partition first, then rejoins with
  epoch 0 (KAFKA-16251: a fenced member releases before it heartbeats again);
* leave: epoch -1 (dynamic) or -2 (static, temporary); partitions are released before sending. A
  v0 member that never learnt its id cannot send a leave (the KIP-1082 motivation).

The client's ``owned`` set is the *consumer view* that invariants compare across clients.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from model.choice import Chooser
from model.consumer.ids import new_member_id
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    TopicPartition,
    to_topic_partitions,
)
from model.consumer.state import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH
from model.errors import ErrorCode

RETRIABLE = frozenset(
    {
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)
REJOIN = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.GROUP_ID_NOT_FOUND})


class ClientState(Enum):
    """The consumer's membership state (a subset of Java's `MemberState`)."""

    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    RECONCILING = "RECONCILING"
    ACKNOWLEDGING = "ACKNOWLEDGING"
    STABLE = "STABLE"
    LEAVING = "LEAVING"
    FATAL = "FATAL"


@dataclass(frozen=True)
class ClientView:
    """What the consumer believes: its id, epoch and owned partitions (the consumer view)."""

    name: str
    group_id: str
    member_id: str
    member_epoch: int
    owned: frozenset[TopicPartition]
    state: str
    instance_id: str | None
    active: bool
    """Running and wanting to be in the group (not crashed, left or failed)."""
    declared: tuple[frozenset[str] | None, str | None, int | None] = (None, None, None)
    """What the consumer last told the coordinator about itself: its subscribed topic names, its
    regex ("" for none) and its rebalance timeout, None where it has not sent one since it last
    started over (a failed or lost request makes it send every field again)."""


@dataclass
class _SentFields:
    rebalance_timeout_ms: int | None = None
    names: tuple[str, ...] | None = None
    regex: str | None = None
    server_assignor: str | None = None
    rack_id: str | None = None
    owned: frozenset[TopicPartition] | None = None


class VirtualConsumer:
    """One consumer process. ``next_request(now)`` / ``on_response(response)`` drive it; the harness
    decides when requests are sent and whether responses arrive (``on_request_lost`` otherwise)."""

    def __init__(
        self,
        name: str,
        group_id: str,
        chooser: Chooser,
        *,
        topics: tuple[str, ...] = (),
        regex: str | None = None,
        instance_id: str | None = None,
        rack_id: str | None = None,
        version: int = 1,
        rebalance_timeout_ms: int = 300_000,
        server_assignor: str | None = None,
        auto_reconcile: bool = True,
        retry_backoff_ms: int = 100,
        subscribed: bool = True,
    ) -> None:
        self.name = name
        self.group_id = group_id
        self.topics = tuple(topics)
        self.regex = regex
        self.instance_id = instance_id
        self.rack_id = rack_id
        self.version = version
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.server_assignor = server_assignor
        self.auto_reconcile = auto_reconcile
        self.retry_backoff_ms = retry_backoff_ms
        self.member_id = new_member_id(chooser) if version >= 1 else ""
        self.member_epoch = 0
        self.owned: frozenset[TopicPartition] = frozenset()
        self.target: frozenset[TopicPartition] | None = None
        self.state = ClientState.JOINING if subscribed else ClientState.UNSUBSCRIBED
        self.crashed = False
        self.inflight: ConsumerGroupHeartbeatRequest | None = None
        self.heartbeat_interval_ms = 0
        self.next_heartbeat_at = 0
        self._sent = _SentFields()
        self._sent_at = 0
        self._last_view: tuple[tuple[Any, ...], ClientView] | None = None

    # ---------------------------------------------------------------- view

    def view(self) -> ClientView:
        """The consumer view; the last one while each field is still equal to what it was then."""
        active = not self.crashed and self.state not in (ClientState.UNSUBSCRIBED, ClientState.FATAL)
        fields = (
            self.name,
            self.group_id,
            self.member_id,
            self.member_epoch,
            self.owned,
            self.state.value,
            self.instance_id,
            active,
            self._declared(),
        )
        last = self._last_view
        if last is not None and last[0] == fields:
            return last[1]
        view = ClientView(*fields)
        self._last_view = (fields, view)
        return view

    def _declared(self) -> tuple[frozenset[str] | None, str | None, int | None]:
        sent = self._sent
        names = None if sent.names is None else frozenset(sent.names)
        return (names, sent.regex, sent.rebalance_timeout_ms)

    # ---------------------------------------------------------------- application actions

    def subscribe(self, topics: tuple[str, ...] = (), regex: str | None = None) -> None:
        """Change the subscription; an unsubscribed consumer (re)joins."""
        self.topics = tuple(topics)
        self.regex = regex
        if self.state == ClientState.UNSUBSCRIBED:
            self._rejoin()

    def leave(self) -> None:
        """close()/unsubscribe(): leave with -1, or -2 for a static member (temporary leave)."""
        if self.state not in (ClientState.UNSUBSCRIBED, ClientState.FATAL):
            self.state = ClientState.LEAVING

    def crash(self) -> None:
        """The process stalls: it sends nothing and keeps believing what it believed (a zombie)."""
        self.crashed = True

    def resume(self) -> None:
        self.crashed = False

    def complete_reconciliation(self) -> None:
        """Revocation/assignment callbacks are done: adopt the received assignment, acknowledge it."""
        if self.state == ClientState.RECONCILING and self.target is not None:
            self.owned = self.target
            self.target = None
            self.state = ClientState.ACKNOWLEDGING

    # ---------------------------------------------------------------- protocol

    def next_request(self, now: int) -> ConsumerGroupHeartbeatRequest | None:
        """The heartbeat to send now, if any (at most one in flight)."""
        if self.crashed or self.inflight is not None:
            return None
        if self.state in (ClientState.UNSUBSCRIBED, ClientState.FATAL):
            return None
        if self.state == ClientState.LEAVING:
            request = self._leave_request()
        elif self.state == ClientState.JOINING:
            self.owned = frozenset()
            self.target = None
            request = self._heartbeat_request(0, send_all=True)
        elif self.state == ClientState.ACKNOWLEDGING or now >= self.next_heartbeat_at:
            request = self._heartbeat_request(self.member_epoch, send_all=False)
        else:
            return None
        if request is not None:
            self.inflight = request
            self._sent_at = now
        return request

    def _leave_request(self) -> ConsumerGroupHeartbeatRequest | None:
        self.owned = frozenset()  # release before leaving
        self.target = None
        if self.member_id == "":
            self.state = ClientState.UNSUBSCRIBED  # v0 join never answered: nothing to name in a leave
            return None
        epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH if self.instance_id is not None else LEAVE_GROUP_MEMBER_EPOCH
        return ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            instance_id=self.instance_id,
            version=self.version,
        )

    def _heartbeat_request(self, epoch: int, send_all: bool) -> ConsumerGroupHeartbeatRequest:
        sent = self._sent
        names = tuple(sorted(set(self.topics)))
        regex = self.regex if self.version >= 1 else None
        req_timeout = -1
        if send_all or sent.rebalance_timeout_ms != self.rebalance_timeout_ms:
            req_timeout = sent.rebalance_timeout_ms = self.rebalance_timeout_ms
        req_names = None
        if send_all or sent.names != names:
            req_names = sent.names = names
        req_regex = None
        if send_all:
            req_regex = sent.regex = regex
        elif self.version >= 1 and (sent.regex or "") != (regex or ""):
            req_regex = sent.regex = regex or ""
        req_assignor = None
        if self.server_assignor is not None and (send_all or sent.server_assignor != self.server_assignor):
            req_assignor = sent.server_assignor = self.server_assignor
        req_rack = None
        if self.rack_id is not None and (send_all or sent.rack_id != self.rack_id):
            req_rack = sent.rack_id = self.rack_id
        req_owned = None
        if send_all or sent.owned != self.owned:
            sent.owned = self.owned
            req_owned = to_topic_partitions(self.owned)
        return ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            instance_id=self.instance_id,
            rack_id=req_rack,
            rebalance_timeout_ms=req_timeout,
            subscribed_topic_names=req_names,
            subscribed_topic_regex=req_regex,
            server_assignor=req_assignor,
            topic_partitions=req_owned,
            version=self.version,
        )

    def on_response(self, response: ConsumerGroupHeartbeatResponse, now: int | None = None) -> None:
        """Process the response to the in-flight request (``now`` defaults to its send time)."""
        request = self.inflight
        self.inflight = None
        at = self._sent_at if now is None else now
        if request is None or self.crashed:
            return
        if request.member_epoch < 0:  # answer to a leave: done, whatever it says
            self._left(request.member_epoch)
            return
        if response.error_code != ErrorCode.NONE:
            self._on_error(ErrorCode.of(response.error_code), at)
            return
        if response.member_id:
            self.member_id = response.member_id
        self.member_epoch = response.member_epoch
        self.heartbeat_interval_ms = response.heartbeat_interval_ms
        self.next_heartbeat_at = at + response.heartbeat_interval_ms
        if self.state == ClientState.LEAVING:
            return
        if self.state == ClientState.JOINING:
            self.state = ClientState.STABLE
        elif self.state == ClientState.ACKNOWLEDGING and request.owned() == self.owned:
            self.state = ClientState.STABLE  # the acknowledgement reached the coordinator
        assigned = response.assigned()
        if assigned is not None and (assigned != self.owned or self.state == ClientState.RECONCILING):
            self.target = assigned
            self.state = ClientState.RECONCILING
            if self.auto_reconcile:
                self.complete_reconciliation()

    def on_request_lost(self, now: int) -> None:
        """The in-flight request got no response (timeout / disconnect): resend everything later."""
        request = self.inflight
        self.inflight = None
        if request is None or self.crashed:
            return
        if request.member_epoch < 0:
            self._left(request.member_epoch)
            return
        self._sent = _SentFields()
        self.next_heartbeat_at = now + self.retry_backoff_ms

    def _on_error(self, code: ErrorCode | int, at: int) -> None:
        self._sent = _SentFields()
        if code in REJOIN:
            if self.state == ClientState.LEAVING:
                self._left(LEAVE_GROUP_MEMBER_EPOCH)
            else:
                self._rejoin()
                self.next_heartbeat_at = at
        elif code in RETRIABLE:
            self.next_heartbeat_at = at + self.retry_backoff_ms
        else:
            self.owned = frozenset()
            self.target = None
            self.state = ClientState.FATAL

    def _rejoin(self) -> None:
        """Release every partition (onPartitionsLost), then join again with epoch 0 and the same id."""
        self.owned = frozenset()
        self.target = None
        self.member_epoch = 0
        self._sent = _SentFields()
        self.state = ClientState.JOINING

    def _left(self, epoch: int) -> None:
        self.owned = frozenset()
        self.target = None
        self.member_epoch = epoch
        self.state = ClientState.UNSUBSCRIBED

    # ---------------------------------------------------------------- offsets

    def commit_request(self, offset: int) -> OffsetCommitRequest | None:
        """An OffsetCommit v9 for every owned partition, carrying the member epoch (docs/protocol-reference.md#b12)."""
        if not self.owned or self.member_epoch <= 0:
            return None
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(self.owned):
            by_topic.setdefault(topic, []).append(partition)
        return OffsetCommitRequest(
            group_id=self.group_id,
            topics=tuple(
                OffsetCommitRequestTopic(t, tuple(OffsetCommitRequestPartition(p, offset) for p in ps))
                for t, ps in by_topic.items()
            ),
            generation_id_or_member_epoch=self.member_epoch,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
        )
