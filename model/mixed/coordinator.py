"""KIP-848 mixed groups: classic members in consumer groups, online upgrade and downgrade, as a
coordinator facade that routes both APIs for one shard.

The rules, with their Apache Kafka sources (``GroupMetadataManager.java`` and ``ConsumerGroup.java``)
and the commit the line numbers refer to, are listed in docs/mixed-groups.md.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace

from model.choice import Chooser, SeededChooser
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.classic.messages import OffsetCommitRequest as ClassicOffsetCommitRequest
from model.classic.messages import OffsetCommitResponse as ClassicOffsetCommitResponse
from model.classic.records import GroupCreated, MemberUpserted
from model.classic.state import GroupState as ClassicGroupState
from model.classic.state import Member as ClassicMember
from model.classic.tx import Tx
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from model.consumer.records import (
    ConsumerGroupTombstone,
    CurrentAssignmentRecord,
    GroupEpochRecord,
    TargetAssignmentEpochRecord,
    TargetAssignmentMemberRecord,
    TimerScheduled,
    member_subscription_record,
)
from model.consumer.state import (
    SESSION,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from model.consumer.txn import _Rejected
from model.embedded import (
    Assignment,
    EmbeddedDecodeError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from model.mixed.classic_requests import MixedConsumerCoordinator
from model.mixed.consumer_group import CONSUMER_PROTOCOL_TYPE, Downgrade, E, MixedConfig, subscription_version
from model.mixed.state import (
    ClassicGroupTombstone,
    ConsumerGroupDropped,
    MixedState,
)
from model.mixed.state import apply as mixed_apply
from model.mixed.state import rebuild as mixed_rebuild
from model.result import Delivery, Result

"""``ConsumerProtocol.PROTOCOL_TYPE``."""


class MixedCoordinator:
    """One shard serving classic and consumer groups with the docs/protocol-reference.md#b13 rules.

    Entry points mirror the two coordinators: ``handle(state, request, ref, now)`` for any classic
    request or a ConsumerGroupHeartbeat, ``advance(state, to)``, ``create_topic``, ``failover``.
    """

    consumer_class: type[MixedConsumerCoordinator] = MixedConsumerCoordinator
    """The KIP-848 engine; a mutant subclass replaces one rule of it."""
    classic_class: type[ClassicCoordinator] = ClassicCoordinator
    """The classic coordinator of classic groups; likewise replaceable."""

    def __init__(self, config: MixedConfig | None = None, chooser: Chooser | None = None) -> None:
        self.config = config or MixedConfig()
        self.chooser: Chooser = chooser or SeededChooser(0)
        self.classic = self.classic_class(self.config.classic, self.chooser)
        self.consumer = self.consumer_class(
            self.config.consumer, self.chooser, self.config.policy, self.config.classic.max_size
        )
        self.consumer.rejoin_epoch = self.config.classic_rejoin_epoch

    # ------------------------------------------------------------------ routing

    def handle(self, state: MixedState, request: object, ref: int, now: int) -> Result:
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            return self.handle_consumer_group_heartbeat(state, request, ref, now)
        if isinstance(request, JoinGroupRequest):
            return self.handle_join_group(state, request, ref, now)
        if isinstance(request, SyncGroupRequest):
            return self.handle_sync_group(state, request, ref, now)
        if isinstance(request, HeartbeatRequest):
            return self.handle_heartbeat(state, request, ref, now)
        if isinstance(request, LeaveGroupRequest):
            return self.handle_leave_group(state, request, ref, now)
        if isinstance(request, ClassicOffsetCommitRequest):
            return self.handle_classic_offset_commit(state, request, ref, now)
        if isinstance(request, OffsetCommitRequest):
            return self.consumer.handle_offset_commit(state.consumer, request, ref, now)
        raise TypeError(f"not a request the mixed coordinator serves: {request!r}")

    def handle_classic_offset_commit(
        self, state: MixedState, req: ClassicOffsetCommitRequest, ref: int, now: int
    ) -> Result:
        """A classic client's OffsetCommit: to its classic group, or, in a consumer group, through
        the consumer engine's docs/protocol-reference.md#b12 rules (ILLEGAL_GENERATION for a classic member, any version)."""
        if req.group_id not in state.consumer.groups:
            return self.classic.handle_offset_commit(state.classic, req, ref, now)
        topics: dict[str, list[OffsetCommitRequestPartition]] = {}
        for p in req.partitions:
            topics.setdefault(p.topic, []).append(
                OffsetCommitRequestPartition(p.partition, p.offset, -1, p.metadata)
            )
        inner = OffsetCommitRequest(
            req.group_id,
            tuple(OffsetCommitRequestTopic(t, tuple(ps)) for t, ps in topics.items()),
            req.generation_id,
            req.member_id,
            req.group_instance_id,
            version=req.version,
        )
        result = self.consumer.handle_offset_commit(state.consumer, inner, ref, now)
        (delivery,) = result.deliveries
        codes = delivery.response.errors()
        answer = ClassicOffsetCommitResponse(
            tuple((p.topic, p.partition, codes[(p.topic, p.partition)]) for p in req.partitions)
        )
        return Result([Delivery(ref, answer)], result.records)

    def _consumer_group(self, state: MixedState, group_id: str) -> ConsumerGroup | None:
        return state.consumer.groups.get(group_id)

    def handle_join_group(self, state: MixedState, req: JoinGroupRequest, ref: int, now: int) -> Result:
        """GMM ``classicGroupJoin``: non-empty consumer group → consumer engine; an empty consumer
        group is replaced by a classic group when the join creates one (member id "")."""
        group = self._consumer_group(state, req.group_id)
        if group is None or not req.group_id:
            return self.classic.handle_join_group(state.classic, req, ref, now)
        cfg = self.config.classic
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            result = Result()
            result.reply(ref, JoinGroupResponse(E.INVALID_SESSION_TIMEOUT, member_id=req.member_id))
            return result
        if not group.members:
            result = Result()
            # the empty consumer group goes either way; its tombstone is written only with a join that
            # creates the classic group: a member id is rejected and the tombstone dropped with it
            # (`ConsumerGroupDropped`, Kafka 4.4.0 as observed: the next heartbeat is GROUP_ID_NOT_FOUND)
            removal = (
                ConsumerGroupTombstone(req.group_id)
                if req.member_id == ""
                else ConsumerGroupDropped(req.group_id)
            )
            mixed_apply(state, removal)
            result.records.append(removal)
            result.extend(self.classic.handle_join_group(state.classic, req, ref, now))
            return result
        return self._consumer_call(
            state,
            now,
            lambda: self.consumer.run_classic(
                state,
                req.group_id,
                ref,
                now,
                lambda txn: self.consumer.classic_join(txn, req, now),
                lambda code: JoinGroupResponse(code, member_id=req.member_id),
            ),
        )

    def handle_sync_group(self, state: MixedState, req: SyncGroupRequest, ref: int, now: int) -> Result:
        group = self._consumer_group(state, req.group_id)
        if group is None or not req.group_id:
            return self.classic.handle_sync_group(state.classic, req, ref, now)
        if not group.members:
            result = Result()
            result.reply(ref, SyncGroupResponse(E.UNKNOWN_MEMBER_ID))
            return result
        return self.consumer.run_classic(
            state,
            req.group_id,
            ref,
            now,
            lambda txn: self.consumer.classic_sync(txn, req, now),
            lambda code: SyncGroupResponse(code),
        )

    def handle_heartbeat(self, state: MixedState, req: HeartbeatRequest, ref: int, now: int) -> Result:
        group = self._consumer_group(state, req.group_id)
        if group is None or not req.group_id:
            return self.classic.handle_heartbeat(state.classic, req, ref, now)
        return self.consumer.run_classic(
            state,
            req.group_id,
            ref,
            now,
            lambda txn: self.consumer.classic_heartbeat(txn, req, now),
            lambda code: HeartbeatResponse(code),
        )

    def handle_leave_group(self, state: MixedState, req: LeaveGroupRequest, ref: int, now: int) -> Result:
        group = self._consumer_group(state, req.group_id)
        if group is None or not req.group_id:
            return self.classic.handle_leave_group(state.classic, req, ref, now)
        return self.consumer.run_classic(
            state,
            req.group_id,
            ref,
            now,
            lambda txn: self.consumer.classic_leave(txn, req),
            lambda code: LeaveGroupResponse(code),
        )

    # ------------------------------------------------------------------ ConsumerGroupHeartbeat

    def handle_consumer_group_heartbeat(
        self, state: MixedState, request: ConsumerGroupHeartbeatRequest, ref: int, now: int
    ) -> Result:
        """docs/protocol-reference.md#b2 with #b13 group resolution: an epoch-0 join on a classic group replaces it when empty
        and upgrades it when allowed (GROUP_ID_NOT_FOUND otherwise); the conversion and the join are
        one write, so a join that fails leaves the classic group in place."""
        classic_group = state.classic.groups.get(request.group_id)
        if classic_group is None or request.member_epoch != 0:
            return self._consumer_call(
                state,
                now,
                lambda: self.consumer.handle_consumer_group_heartbeat(state.consumer, request, ref, now),
            )
        try:
            self.consumer.precheck(request)
            if classic_group.state != ClassicGroupState.EMPTY:
                self.validate_online_upgrade(state, request.group_id)
            else:
                self.validate_empty_replacement(state, request.group_id)
        except _Rejected as rejected:
            result = Result()
            result.reply(
                ref, ConsumerGroupHeartbeatResponse(error_code=rejected.code, error_message=rejected.message)
            )
            return result
        scratch = state.copy()
        result = Result()
        if classic_group.state == ClassicGroupState.EMPTY:
            self.delete_classic_group(scratch, result, request.group_id)
        else:
            self.convert_to_consumer_group(scratch, request.group_id, result, now)
        inner = self.consumer.handle_consumer_group_heartbeat(scratch.consumer, request, ref, now)
        response = inner.deliveries[-1].response
        if response.error_code != E.NONE:
            out = Result()
            out.reply(ref, response)
            return out
        result.extend(inner)
        for record in result.records:
            mixed_apply(state, record)
        return result

    def validate_empty_replacement(self, state: MixedState, group_id: str) -> None:
        """An empty classic group is replaced whatever the policy (``maybeDeleteEmptyClassicGroup``)."""

    def delete_classic_group(self, scratch: MixedState, result: Result, group_id: str) -> None:
        """The GroupMetadata tombstone (CG ``createGroupTombstoneRecords``)."""
        self._emit(scratch, result, ClassicGroupTombstone(group_id))

    def validate_online_upgrade(self, state: MixedState, group_id: str) -> None:
        """``validateOnlineUpgrade``: policy, protocol type ``consumer``, size; and the assignments
        must parse without custom user data (CoG ``fromClassicGroup``)."""
        group = state.classic.groups[group_id]
        if not self.config.policy.upgrade_enabled:
            raise _Rejected(E.GROUP_ID_NOT_FOUND, "online upgrade is disabled")
        if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise _Rejected(E.GROUP_ID_NOT_FOUND, "group does not use the consumer embedded protocol")
        if len(group.members) > self.config.consumer.max_size:
            raise _Rejected(E.GROUP_ID_NOT_FOUND, "group larger than group.consumer.max.size")
        if group.protocol is None:
            # A group in its first rebalance has no protocol yet: CoG ``fromClassicGroup`` calls
            # ``protocolName().get()``, whose NoSuchElementException the runtime answers with
            # UNKNOWN_SERVER_ERROR (no validation guards against it, 4.0 and @1eb7644).
            raise _Rejected(E.UNKNOWN_SERVER_ERROR, "classic group has no selected protocol yet")
        for member in group.members.values():
            try:
                if member.assignment:
                    if decode_assignment(member.assignment).user_data:
                        raise _Rejected(E.GROUP_ID_NOT_FOUND, "a custom assignor's user data would be lost")
                decode_subscription(member.metadata(group.protocol))
            except EmbeddedDecodeError:
                raise _Rejected(E.GROUP_ID_NOT_FOUND, "malformed embedded consumer protocol") from None

    def convert_to_consumer_group(self, scratch: MixedState, group_id: str, result: Result, now: int) -> None:
        """``convertToConsumerGroup`` + CoG ``fromClassicGroup`` / ``createConsumerGroupRecords``."""
        group = scratch.classic.groups[group_id]
        for member in sorted(group.members.values(), key=lambda m: m.member_id):
            if member.awaiting_join is not None:
                result.reply(
                    member.awaiting_join,
                    JoinGroupResponse(E.REBALANCE_IN_PROGRESS, member_id=member.member_id),
                )
            if member.awaiting_sync is not None:
                result.reply(member.awaiting_sync, SyncGroupResponse(E.REBALANCE_IN_PROGRESS))
        generation = group.generation
        converted: list[ConsumerMember] = []
        for member in sorted(group.members.values(), key=lambda m: m.member_id):
            sub = decode_subscription(member.metadata(group.protocol or ""))
            assigned = (
                frozenset(decode_assignment(member.assignment).partitions)
                if member.assignment
                else frozenset()
            )
            converted.append(
                ConsumerMember(
                    member_id=member.member_id,
                    instance_id=member.instance_id,
                    rack_id=sub.rack_id,
                    rebalance_timeout_ms=member.rebalance_timeout_ms,
                    subscribed_topic_names=frozenset(sub.topics),
                    member_epoch=generation,
                    previous_member_epoch=generation,
                    state=MemberState.STABLE,
                    assigned=assigned,
                    classic=ClassicMemberMetadata(
                        member.session_timeout_ms, member.protocols, member.client_id
                    ),
                )
            )
        self.delete_classic_group(scratch, result, group_id)
        for m in converted:
            self._emit(scratch, result, member_subscription_record(group_id, m))
        self._emit(scratch, result, GroupEpochRecord(group_id, generation))
        for m in converted:
            self._emit(
                scratch,
                result,
                TargetAssignmentMemberRecord(group_id, m.member_id, tuple(sorted(m.assigned))),
            )
        self._emit(scratch, result, TargetAssignmentEpochRecord(group_id, generation))
        for m in converted:
            self._emit(
                scratch,
                result,
                CurrentAssignmentRecord(
                    group_id,
                    m.member_id,
                    generation,
                    generation,
                    MemberState.STABLE,
                    tuple(sorted(m.assigned)),
                    (),
                ),
            )
        for m in converted:
            assert m.classic is not None
            self._emit(
                scratch,
                result,
                TimerScheduled(group_id, SESSION, m.member_id, now + m.classic.session_timeout_ms),
            )

    @staticmethod
    def _emit(state: MixedState, result: Result, record: object) -> None:
        mixed_apply(state, record)
        result.records.append(record)

    # ------------------------------------------------------------------ downgrade

    def _consumer_call(self, state: MixedState, now: int, call: Callable[[], Result]) -> Result:
        """Run a consumer-engine operation, then carry out the downgrades it decided."""
        self.consumer.downgrades.clear()
        self.consumer._now = now
        result = call()
        for plan in self.consumer.downgrades:
            result.extend(self.convert_to_classic_group(state, plan))
        self.consumer.downgrades.clear()
        return result

    def convert_to_classic_group(self, state: MixedState, plan: Downgrade) -> Result:
        """``convertToClassicGroup`` + CG ``fromConsumerGroup`` (@1eb7644 L1367): Stable, generation =
        group epoch, the first member added leads (hash-map order: a choice), the protocol is voted,
        each member's target is its assignment; GroupMetadata written; expiry timers armed; then a
        rebalance (the downgrade came from a member leaving)."""
        tx = Tx(state.classic)
        gid = plan.group_id
        tx.emit(GroupCreated(gid))
        group = state.classic.groups[gid]
        tx.set(
            group,
            generation=plan.generation,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            state=ClassicGroupState.STABLE,
        )
        for m in plan.members:
            assert m.classic is not None
            tx.emit(
                MemberUpserted(
                    gid,
                    ClassicMember(
                        m.member_id,
                        m.instance_id,
                        m.classic.client_id,
                        m.classic.session_timeout_ms,
                        m.rebalance_timeout_ms,
                        CONSUMER_PROTOCOL_TYPE,
                        m.classic.protocols,
                    ),
                )
            )
        tx.set(group, leader=self.chooser.pick("leader", sorted(group.members)))
        protocol = self.classic.select_protocol(group)
        tx.set(group, protocol=protocol)
        targets = dict(plan.targets)
        for mid in sorted(group.members):
            member = group.members[mid]
            version = subscription_version(member.metadata(protocol or ""))
            data = encode_assignment(Assignment(tuple(sorted(targets.get(mid, frozenset())))), version)
            tx.emit(MemberUpserted(gid, replace(member, assignment=data)))
        self.classic.persist(tx, group)
        for mid in sorted(group.members):
            tx.timer(group, f"expire:{mid}", plan.now + group.members[mid].session_timeout_ms)
        if plan.rebalance:
            self.classic.prepare_rebalance(tx, group, plan.now)
        return tx.result

    # ------------------------------------------------------------------ time, topics, failover

    def _next_consumer_deadline(self, state: MixedState) -> int | None:
        return min(
            (t.deadline for g in state.consumer.groups.values() for t in g.timers.values()), default=None
        )

    def advance(self, state: MixedState, to: int) -> Result:
        """Fire the timers of both engines in deadline order up to ``to``."""
        out = Result()
        while True:
            c = self._next_consumer_deadline(state)
            k = self.classic.next_deadline(state.classic)
            kd = None if k is None else k[0]
            due = [d for d in (c, kd) if d is not None and d <= to]
            if not due:
                return out
            at = min(due)
            if c == at:
                fire = functools.partial(self.consumer.advance, state.consumer, at)
                out.extend(self._consumer_call(state, at, fire))
            else:
                out.extend(self.classic.advance(state.classic, at))

    def create_topic(self, state: MixedState, topic: str, partitions: int) -> Result:
        """The metadata image is shared: both halves learn the topic."""
        result = self.classic.create_topic(state.classic, topic, partitions)
        result.extend(self.consumer.create_topic(state.consumer, topic, partitions))
        return result

    def failover(self, records: list[object], now: int) -> tuple[MixedState, Result]:
        """A new coordinator loads the durable records of both kinds and re-arms consumer timers."""
        state = mixed_rebuild(records, now)
        return state, self.consumer.on_loaded(state.consumer, now)
