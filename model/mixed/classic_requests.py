"""Classic requests of a classic member inside a consumer group: JoinGroup, SyncGroup, Heartbeat,
LeaveGroup (Kafka's ``GroupMetadataManager.classicGroupJoinToConsumerGroup``, ``classicGroupSyncToConsumerGroup``,
``classicGroupHeartbeatToConsumerGroup``, ``classicGroupLeaveToConsumerGroup``; facts in docs/mixed-groups.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.consumer.ids import new_member_id
from model.consumer.records import (
    ConsumerGroupTombstone,
    CurrentAssignmentTombstone,
    GroupEpochRecord,
    MemberSubscriptionTombstone,
    SubscriptionMetadataRecord,
    TargetAssignmentMemberTombstone,
    TimerScheduled,
    member_subscription_record,
)
from model.consumer.state import (
    JOIN,
    REBALANCE,
    SESSION,
    SYNC,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerMember,
)
from model.consumer.txn import _Rejected, _Txn
from model.embedded import (
    Assignment,
    EmbeddedDecodeError,
    decode_subscription,
    encode_assignment,
)
from model.errors import ErrorCode
from model.mixed.consumer_group import (
    CONSUMER_PROTOCOL_TYPE,
    Downgrade,
    E,
    MixedConsumerBase,
    subscription_version,
)
from model.mixed.state import (
    MixedState,
)
from model.result import Result


class MixedConsumerCoordinator(MixedConsumerBase):
    """The consumer coordinator of a mixed group: `MixedConsumerBase` plus the classic APIs, each a
    pure step over the transaction."""

    def classic_join(self, txn: _Txn, req: JoinGroupRequest, now: int) -> JoinGroupResponse:
        group = txn.require_group()
        before = group.clone()
        unknown = req.member_id == ""
        member_id = new_member_id(self.chooser) if unknown else req.member_id
        self.check_group_capacity(group, member_id)
        self.check_classic_protocols(group, req)
        if unknown and req.group_instance_id is None and req.version >= 4:
            return JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id=member_id)
        try:
            subscription = decode_subscription(req.protocols[0][1])
        except EmbeddedDecodeError as exc:
            raise _Rejected(E.UNKNOWN_SERVER_ERROR, f"malformed subscription: {exc}") from None
        if req.group_instance_id is None:
            member = group.members.get(member_id) or ConsumerMember(member_id)
        else:
            member = self.resolve_classic_static_member(txn, group, member_id, req, unknown)
        group = txn.require_group()
        updated = replace(
            member,
            instance_id=req.group_instance_id if req.group_instance_id is not None else member.instance_id,
            rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(
                member.rebalance_timeout_ms if req.rebalance_timeout_ms == -1 else req.rebalance_timeout_ms
            ),
            subscribed_topic_names=frozenset(subscription.topics),
            classic=ClassicMemberMetadata(req.session_timeout_ms, req.protocols, req.client_id),
        )
        if updated != member or member.member_id not in group.members:
            txn.emit(member_subscription_record(txn.group_id, updated))
        bump = self.group_epoch_bump_due(txn.require_group(), member, updated)
        self.maybe_update_subscription_metadata(txn, bump)
        if self.target_assignment_due(txn.require_group()):
            self.compute_target_assignment(txn, now)
        current = txn.require_group().members[member_id]
        changed = self.subscription_changed(member, updated)
        reconciled = self.reconcile_member(
            txn, current, frozenset(subscription.owned_partitions), now, changed
        )
        replaced = None if req.group_instance_id is None else before.static_member(req.group_instance_id)
        if (
            replaced is not None
            and replaced.member_id != member_id
            and self.downgrade_on_replacement(before, replaced)
        ):
            self.downgrade_replacing(txn, before, replaced, reconciled, now)
        else:
            self.cancel_timer(txn, JOIN, member_id)
            self.schedule_session_timeout(txn, member_id, now)
            txn.emit(TimerScheduled(txn.group_id, SYNC, member_id, now + req.effective_rebalance_timeout_ms))
        return JoinGroupResponse(
            E.NONE,
            generation_id=self.join_generation(reconciled),
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=req.protocols[0][0],
            leader="",
            member_id=member_id,
        )

    def downgrade_on_replacement(self, before: ConsumerGroup, replaced: ConsumerMember) -> bool:
        """``validateOnlineDowngradeWithReplacedMemberId`` (@1eb7644 L1078), on the group as it was
        before the join: the replaced member is the only consumer-protocol member, the policy allows
        downgrades, and the group fits ``group.max.size``."""
        if replaced.classic is not None:
            return False
        if any(m.classic is None for mid, m in before.members.items() if mid != replaced.member_id):
            return False
        return self.policy.downgrade_enabled and len(before.members) <= self.classic_max_size

    def downgrade_replacing(
        self, txn: _Txn, before: ConsumerGroup, replaced: ConsumerMember, joining: ConsumerMember, now: int
    ) -> None:
        """``convertToClassicGroup`` with a joining member: it takes the replaced member's target
        (CG ``fromConsumerGroup``); the group epoch is the one before this join; no rebalance."""
        others = tuple(m for mid, m in sorted(before.members.items()) if mid != replaced.member_id)
        targets = [(m.member_id, before.target_of(m.member_id)) for m in others]
        targets.append((joining.member_id, before.target_of(replaced.member_id)))
        members = tuple(sorted((*others, joining), key=lambda m: m.member_id))
        self.downgrades.append(
            Downgrade(txn.group_id, before.group_epoch, members, tuple(sorted(targets)), now, rebalance=False)
        )
        txn.emit(ConsumerGroupTombstone(txn.group_id))

    def check_classic_protocols(self, group: ConsumerGroup, req: JoinGroupRequest) -> None:
        """CoG ``supportsClassicProtocols``: type ``consumer`` and one name every classic member has."""
        names = {name for name, _ in req.protocols}
        ok = req.protocol_type == CONSUMER_PROTOCOL_TYPE and bool(names)
        if ok and group.members:
            classic = [m.classic for m in group.members.values() if m.classic is not None]
            ok = any(all(name in {n for n, _ in c.protocols} for c in classic) for name in names)
        if not ok:
            raise _Rejected(E.INCONSISTENT_GROUP_PROTOCOL, "protocols not supported by the group")

    def resolve_classic_static_member(
        self, txn: _Txn, group: ConsumerGroup, member_id: str, req: JoinGroupRequest, unknown: bool
    ) -> ConsumerMember:
        """``getOrMaybeSubscribeStaticConsumerGroupMember`` with ``useClassicProtocol``: an unknown
        member id takes over the instance (whatever protocol its holder speaks); a known one must
        hold the instance."""
        assert req.group_instance_id is not None
        existing = group.static_member(req.group_instance_id)
        if unknown:
            if existing is None:
                return ConsumerMember(member_id)
            new = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
            self.replace_static_member(txn, existing, new)
            return new
        if existing is None:
            raise _Rejected(E.UNKNOWN_MEMBER_ID, "unknown instance id")
        if existing.member_id != member_id:
            raise _Rejected(E.FENCED_INSTANCE_ID, "instance id held by another member")
        return existing

    def classic_sync(self, txn: _Txn, req: SyncGroupRequest, now: int) -> SyncGroupResponse:
        group = txn.require_group()
        member = self.validate_classic_member(group, req.member_id, req.group_instance_id)
        if req.generation_id != member.member_epoch:
            raise _Rejected(E.ILLEGAL_GENERATION, "generation is not the member epoch")
        assert member.classic is not None
        protocol_name = member.classic.protocols[0][0]
        if req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise _Rejected(E.INCONSISTENT_GROUP_PROTOCOL, "protocol type")
        if req.protocol_name is not None and req.protocol_name != protocol_name:
            raise _Rejected(E.INCONSISTENT_GROUP_PROTOCOL, "protocol name")
        if self.sync_rebalance_in_progress(group, member):
            self.arm_join_timeout_if_absent(txn, member, now)
            return SyncGroupResponse(E.REBALANCE_IN_PROGRESS)
        self.cancel_timer(txn, SYNC, member.member_id)
        self.schedule_session_timeout(txn, member.member_id, now)
        version = subscription_version(member.classic.protocols[0][1])
        assignment = encode_assignment(
            Assignment(tuple(sorted(self.sync_partitions(group, member)))), version
        )
        return SyncGroupResponse(E.NONE, req.protocol_type, req.protocol_name, assignment)

    def sync_partitions(self, group: ConsumerGroup, member: ConsumerMember) -> frozenset[tuple[str, int]]:
        """``prepareAssignment``: the member's assigned partitions (never those pending revocation)."""
        return member.assigned

    def classic_heartbeat(self, txn: _Txn, req: HeartbeatRequest, now: int) -> HeartbeatResponse:
        group = txn.require_group()
        member = self.validate_classic_member(group, req.member_id, req.group_instance_id)
        if req.generation_id != member.member_epoch:
            raise _Rejected(E.ILLEGAL_GENERATION, "generation is not the member epoch")
        self.schedule_session_timeout(txn, member.member_id, now)
        if self.classic_heartbeat_needs_rejoin(group, member):
            self.arm_join_timeout_if_absent(txn, member, now)
            return HeartbeatResponse(E.REBALANCE_IN_PROGRESS)
        return HeartbeatResponse(E.NONE)

    def classic_leave(self, txn: _Txn, req: LeaveGroupRequest) -> LeaveGroupResponse:
        group = txn.require_group()
        results: list[LeaveGroupMemberResponse] = []
        removed = False
        for ident in req.members:
            try:
                if ident.group_instance_id is None:
                    member = self.validate_classic_member(group, ident.member_id, None)
                else:
                    static = group.static_member(ident.group_instance_id)
                    if static is None:
                        raise _Rejected(E.UNKNOWN_MEMBER_ID, "unknown instance id")
                    member = static
                    if ident.member_id and member.member_id != ident.member_id:
                        raise _Rejected(E.FENCED_INSTANCE_ID, "instance id held by another member")
                    if member.classic is None:
                        raise _Rejected(E.UNKNOWN_MEMBER_ID, "member does not use the classic protocol")
            except _Rejected as rejected:
                results.append(
                    LeaveGroupMemberResponse(ident.member_id, ident.group_instance_id, rejected.code)
                )
                continue
            gid = txn.group_id
            txn.emit(CurrentAssignmentTombstone(gid, member.member_id))
            txn.emit(TargetAssignmentMemberTombstone(gid, member.member_id))
            txn.emit(MemberSubscriptionTombstone(gid, member.member_id))
            for kind in (SESSION, REBALANCE, JOIN, SYNC):
                self.cancel_timer(txn, kind, member.member_id)
            removed = True
            results.append(LeaveGroupMemberResponse(member.member_id, ident.group_instance_id, E.NONE))
            group = txn.require_group()
        if removed:
            group = txn.require_group()
            metadata = self.compute_subscription_metadata(txn.scratch, group)
            if metadata != group.subscription_metadata:
                txn.emit(SubscriptionMetadataRecord(txn.group_id, tuple(sorted(metadata.items()))))
            txn.emit(GroupEpochRecord(txn.group_id, group.group_epoch + 1))
        top = results[0].error if req.version < 3 and results else E.NONE
        return LeaveGroupResponse(top, tuple(results) if req.version >= 3 else ())

    def run_classic(
        self,
        state: MixedState,
        group_id: str,
        ref: int,
        now: int,
        handler: Callable[[_Txn], object],
        error: Callable[[ErrorCode], object],
    ) -> Result:
        """Run a classic handler on the consumer group's transaction; a rejection changes nothing."""
        result = Result()
        txn = _Txn(state.consumer, group_id)
        try:
            response = handler(txn)
        except _Rejected as rejected:
            response = error(rejected.code)
        else:
            txn.commit(result)
        result.reply(ref, response)
        return result
