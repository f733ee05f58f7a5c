"""KIP-848 mixed groups (reference §B.13): classic members in consumer groups, online upgrade and
downgrade, as a coordinator facade that routes both APIs for one shard.

Facts from Apache Kafka's group coordinator, ``GroupMetadataManager.java`` (GMM), CoG / CG as in the
reference. Line numbers are the reference's (Kafka 4.0.0) where it gives them, else those of
apache/kafka trunk at 1eb7644 (Oct 2024, "@1eb7644"), the version read for this module; the
reference's B.13 states the same rules for 4.0. Where a later ConsumerGroup.java / GMM read through
the search index (version not pinned) differs, it says so:

* classic JoinGroup to a non-empty consumer group (GMM ``classicGroupJoin`` @1eb7644 L3995 →
  ``classicGroupJoinToConsumerGroup`` L1902): group full → GROUP_MAX_SIZE_REACHED; protocol type
  not ``consumer`` or no protocol name shared by every classic member (CoG
  ``supportsClassicProtocols``) → INCONSISTENT_GROUP_PROTOCOL; a dynamic v4+ join without member id
  gets MEMBER_ID_REQUIRED with a fresh id and nothing is stored (no pending set); otherwise the
  member is created/updated from the embedded subscription (topics, rack, owned partitions), the
  group epoch is bumped on a subscription change, the target is computed and the member reconciled
  with its reported owned partitions exactly like a ConsumerGroupHeartbeat (B.2); the response
  carries generation = member epoch, protocol type ``consumer``, protocol name = the member's first
  protocol, no leader and no member list; the join timer is cancelled, the session timer armed with
  the member's classic session timeout and a sync timer with its rebalance timeout.
* SyncGroup (``classicGroupSyncToConsumerGroup`` @1eb7644 L5361): member validation, not a classic
  member → UNKNOWN_MEMBER_ID, generation ≠ member epoch → ILLEGAL_GENERATION, protocol type/name
  mismatch → INCONSISTENT_GROUP_PROTOCOL, ``throwIfRebalanceInProgress`` (group epoch > member
  epoch and member not UNREVOKED_PARTITIONS → REBALANCE_IN_PROGRESS, join timer armed if absent);
  success answers the member's *assigned* partitions serialised with the version of its
  subscription, cancels the sync timer and re-arms the session timer.
* Heartbeat (``classicGroupHeartbeatToConsumerGroup``, reference L6038; @1eb7644 L5617): after the
  same validation the session timer is re-armed and REBALANCE_IN_PROGRESS is answered (join timer
  armed if absent) iff member epoch < group epoch, or the member is UNREVOKED_PARTITIONS, or it is
  UNRELEASED_PARTITIONS and no partition it waits for is still held (CoG
  ``waitingOnUnreleasedPartition``).
* LeaveGroup (``classicGroupLeaveToConsumerGroup`` @1eb7644 L5717): per member, unknown / not classic
  → UNKNOWN_MEMBER_ID, fenced instance → FENCED_INSTANCE_ID; removed members get the three
  tombstones and their timers cancelled; one group-epoch bump for the batch.
* Join and sync timers fence the member (``consumerGroupFenceMemberOperation``); classic members
  have no rebalance (revocation) timer (``maybeReconcile``: "members using classic protocol only
  have join timer and sync timer").
* Online upgrade (reference GMM L1073; @1eb7644 ``getOrMaybeCreateConsumerGroup`` L777,
  ``validateOnlineUpgrade`` L1154, ``convertToConsumerGroup`` L1178; CoG ``fromClassicGroup``): a
  ConsumerGroupHeartbeat with epoch 0 on a non-empty classic group converts it iff the policy
  enables upgrades, the protocol type is ``consumer`` and the group is not larger than
  ``group.consumer.max.size``; else GROUP_ID_NOT_FOUND. Parked JoinGroup/SyncGroup requests are
  answered REBALANCE_IN_PROGRESS; every member keeps its last assignment as assigned and target
  partitions at epoch = generation, STABLE; group epoch = assignment epoch = generation. A member's
  assignment carrying user data (a custom assignor) also refuses the upgrade, and an empty
  assignment (a member that never synced) is accepted (later CoG ``fromClassicGroup``; @1eb7644
  would fail to parse the empty assignment).
* Online downgrade (reference GMM L960; @1eb7644 ``validateOnlineDowngradeWithFencedMember`` L1050,
  ``convertToClassicGroup`` L1104; CG ``fromConsumerGroup`` L1367): when a consumer-protocol member
  leaves or is fenced and every other member uses the classic protocol, there is at least one, the
  policy enables downgrades and they fit ``group.max.size``, the group becomes a Stable classic
  group with generation = group epoch, each member's target assignment as its assignment, then a
  rebalance starts.
* Empty groups of the other type are replaced silently, whatever the policy
  (``maybeDeleteEmptyClassicGroup`` / ``maybeDeleteEmptyConsumerGroup`` @1eb7644 L6016, L6032).
* A classic static JoinGroup that replaces the last consumer-protocol member downgrades too when the
  policy allows and the group fits ``group.max.size`` (@1eb7644 L1078
  ``validateOnlineDowngradeWithReplacedMemberId``): the joiner takes the replaced member's target
  and the classic group stays Stable (no rebalance).
* Upgrading a classic group still in its first rebalance (no protocol selected) fails with
  UNKNOWN_SERVER_ERROR: CoG ``fromClassicGroup`` calls ``protocolName().get()`` unguarded (both
  versions read); the model's reading of how the runtime answers that exception.
* OffsetCommit from a classic member of a consumer group follows CoG ``validateOffsetCommit`` L816
  (any version, ILLEGAL_GENERATION on a wrong generation).

Divergences (documented): committed offsets live in the store of the group's current type and do
not follow a conversion (Kafka keeps one offset store per group id); Kafka 4.1+'s batch downgrade
on an admin LeaveGroup (``validateOnlineDowngradeWithFencedMembers``) and its rebalance after a
replacement with a changed subscription are not modelled. A rebalance timer armed at load for a
classic member is cancelled when it reconciles (GMM leaves it to fire as a no-op).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from model.choice import Chooser, SeededChooser
from model.classic.coordinator import ClassicCoordinator, Tx
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
from model.classic.messages import OffsetCommitRequest as ClassicOffsetCommitRequest
from model.classic.messages import OffsetCommitResponse as ClassicOffsetCommitResponse
from model.classic.records import GroupCreated, MemberUpserted
from model.classic.state import ClassicConfig
from model.classic.state import GroupState as ClassicGroupState
from model.classic.state import Member as ClassicMember
from model.consumer.coordinator import ConsumerCoordinator, ConsumerCoordinatorConfig, _Rejected, _Txn
from model.consumer.ids import new_member_id
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
    CurrentAssignmentTombstone,
    GroupEpochRecord,
    MemberSubscriptionTombstone,
    SubscriptionMetadataRecord,
    TargetAssignmentEpochRecord,
    TargetAssignmentMemberRecord,
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
    ConsumerCoordinatorState,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Timer,
)
from model.embedded import (
    Assignment,
    EmbeddedDecodeError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from model.errors import ErrorCode
from model.mixed.state import (
    ClassicGroupTombstone,
    ConsumerGroupDropped,
    MigrationPolicy,
    MixedState,
)
from model.mixed.state import apply as mixed_apply
from model.mixed.state import rebuild as mixed_rebuild
from model.result import Delivery, Result

CONSUMER_PROTOCOL_TYPE = "consumer"
"""``ConsumerProtocol.PROTOCOL_TYPE``."""

E = ErrorCode


@dataclass(frozen=True)
class MixedConfig:
    """Both coordinators' settings plus ``group.consumer.migration.policy`` (Kafka 4.0 default
    ``bidirectional``). ``classic.max_size`` is ``group.max.size`` (the downgrade limit) and
    ``consumer.max_size`` is ``group.consumer.max.size`` (the upgrade limit)."""

    policy: MigrationPolicy = MigrationPolicy.BIDIRECTIONAL
    classic: ClassicConfig = field(default_factory=ClassicConfig)
    consumer: ConsumerCoordinatorConfig = field(default_factory=ConsumerCoordinatorConfig)
    classic_rejoin_epoch: str = "group"
    """Which epoch a classic member of a consumer group must reach before its Heartbeat / SyncGroup
    stop answering REBALANCE_IN_PROGRESS: ``group`` (the group epoch; GMM
    ``classicGroupHeartbeatToConsumerGroup`` and ``throwIfRebalanceInProgress`` at apache/kafka
    @1eb7644 L5637 and at 0013464) or ``assignment`` (the target assignment epoch: what Apache Kafka
    4.4.0 answers, observed by the mixed oracle, `groupcheck check --target apache-kafka --protocol
    mixed`: after a classic LeaveGroup bumps the group epoch, the other classic members keep getting
    NONE until the next request that computes the new target assignment). Both are protocol-legal:
    the member rejoins once a new target exists either way."""


@dataclass(frozen=True)
class Downgrade:
    """A consumer group to turn into a classic group: what ``convertToClassicGroup`` needs."""

    group_id: str
    generation: int
    members: tuple[ConsumerMember, ...]
    targets: tuple[tuple[str, frozenset[tuple[str, int]]], ...]
    now: int
    rebalance: bool = True
    """A leave/fence downgrade rebalances; a static replacement does not (@1eb7644 L1104)."""


def subscription_version(metadata: bytes) -> int:
    """``ConsumerProtocol.deserializeVersion``: the int16 header, capped at the highest version 3."""
    if len(metadata) < 2:
        return 0
    version = int(struct.unpack(">h", metadata[:2])[0])
    return max(0, min(version, 3))


class MixedConsumerCoordinator(ConsumerCoordinator):
    """The KIP-848 engine extended with the classic protocol inside consumer groups (B.13).

    Overrides only what B.13 changes: a ConsumerGroupHeartbeat clears the classic metadata; classic
    members get their own session timeout and no rebalance timer; a static consumer-protocol join
    may replace a classic holder without the -2 rule; join/sync timers fence; fencing the last
    consumer-protocol member may downgrade (recorded in ``downgrades`` for the facade).
    """

    def __init__(
        self,
        config: ConsumerCoordinatorConfig | None = None,
        chooser: Chooser | None = None,
        policy: MigrationPolicy = MigrationPolicy.BIDIRECTIONAL,
        classic_max_size: int = 2**31 - 1,
    ) -> None:
        super().__init__(config, chooser)
        self.policy = policy
        self.classic_max_size = classic_max_size
        self.downgrades: list[Downgrade] = []
        self._now = 0
        self._loading = False

    # ------------------------------------------------------------------ consumer-protocol overrides

    def updated_member(
        self, member: ConsumerMember, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerMember:
        """GMM ``consumerGroupHeartbeat``: ``setClassicMemberMetadata(null)``."""
        return replace(super().updated_member(member, request), classic=None)

    def check_instance_released(self, existing: ConsumerMember) -> None:
        """GMM ``getOrMaybeSubscribeStaticConsumerGroupMember``: the -2 rule applies only when the
        holder uses the consumer protocol too (reference B.7)."""
        if existing.classic is None:
            super().check_instance_released(existing)

    def session_timeout_for(self, txn: _Txn, member_id: str) -> int:
        group = txn.group
        member = None if group is None else group.members.get(member_id)
        if member is not None and member.classic is not None:
            return member.classic.session_timeout_ms
        return self.session_timeout_ms(txn.group_id)

    def schedule_session_timeout(self, txn: _Txn, member_id: str, now: int) -> None:
        """Classic members use their JoinGroup session timeout (``classicProtocolSessionTimeout``),
        except at load: GMM ``onLoaded`` (@1eb7644 L3816) arms the consumer-group session timeout
        for every member, classic or not, until its next request re-arms its own."""
        timeout = (
            self.session_timeout_ms(txn.group_id)
            if self._loading
            else self.session_timeout_for(txn, member_id)
        )
        txn.emit(TimerScheduled(txn.group_id, SESSION, member_id, now + timeout))

    def schedule_rebalance_timeout(self, txn: _Txn, member: ConsumerMember, now: int) -> None:
        """Only consumer-protocol members get a rebalance timer from reconciliation (GMM
        ``maybeReconcile``); ``onLoaded`` arms it for every UNREVOKED_PARTITIONS member."""
        if member.classic is None or self._loading:
            super().schedule_rebalance_timeout(txn, member, now)

    def on_loaded(self, state: ConsumerCoordinatorState, now: int) -> Result:
        """GMM ``onLoaded`` (@1eb7644 L3811-3826), with the two timer rules above."""
        self._loading = True
        try:
            return super().on_loaded(state, now)
        finally:
            self._loading = False

    def on_rebalance_timeout(self, txn: _Txn, timer: Timer) -> None:
        """Join and sync timers fence the classic member (``consumerGroupFenceMemberOperation``)."""
        if timer.kind in (JOIN, SYNC):
            group = txn.group
            member = None if group is None else group.members.get(timer.member_id)
            if member is not None:
                self.fence_member(txn, member)
            return
        super().on_rebalance_timeout(txn, timer)

    def advance(self, state: ConsumerCoordinatorState, now: int) -> Result:
        """Timers fire at their deadline; a downgrade decided by one records that time."""
        self._now = now
        return super().advance(state, now)

    def fence_member(self, txn: _Txn, member: ConsumerMember) -> None:
        """GMM ``consumerGroupFenceMember``: downgrade when allowed, else remove (B.7) and also
        cancel the classic join and sync timers (GMM ``cancelTimers``)."""
        group = txn.require_group()
        if self.downgrade_allowed(group, member):
            self.downgrades.append(
                Downgrade(
                    txn.group_id,
                    group.group_epoch,
                    tuple(m for mid, m in sorted(group.members.items()) if mid != member.member_id),
                    tuple(
                        sorted(
                            (mid, group.target_of(mid)) for mid in group.members if mid != member.member_id
                        )
                    ),
                    self._now,
                )
            )
            txn.emit(ConsumerGroupTombstone(txn.group_id))
            return
        super().fence_member(txn, member)
        for kind in (JOIN, SYNC):
            self.cancel_timer(txn, kind, member.member_id)

    def downgrade_allowed(self, group: ConsumerGroup, leaving: ConsumerMember) -> bool:
        """``validateOnlineDowngradeWithFencedMember``: every other member is classic, there is one,
        the policy allows it, and they fit ``group.max.size``."""
        others = [m for mid, m in group.members.items() if mid != leaving.member_id]
        if leaving.classic is not None or any(m.classic is None for m in others):
            return False
        if not others or not self.policy.downgrade_enabled:
            return False
        return len(others) <= self.classic_max_size

    # ------------------------------------------------------------------ shared pieces

    def offset_commit_group_error(
        self, state: ConsumerCoordinatorState, request: OffsetCommitRequest
    ) -> ErrorCode | None:
        """CoG ``validateOffsetCommit`` (L642-674, L816): a classic member may use any version and a
        wrong generation is ILLEGAL_GENERATION (``validateMemberEpoch(..., useClassicProtocol)``)."""
        group = state.groups.get(request.group_id)
        member = None if group is None else group.members.get(request.member_id)
        error = super().offset_commit_group_error(state, request)
        if (
            member is None
            or member.classic is None
            or error
            not in (
                E.UNSUPPORTED_VERSION,
                E.STALE_MEMBER_EPOCH,
            )
        ):
            return error
        if request.generation_id_or_member_epoch != member.member_epoch:
            return E.ILLEGAL_GENERATION
        return None

    def precheck(self, request: ConsumerGroupHeartbeatRequest) -> None:
        """B.6 rows 1-6 in the order of ``consumer_group_heartbeat`` (before group resolution)."""
        self.check_api_enabled(request)
        self.check_group_authorized(request.group_id)
        self.check_topics_authorized(request)
        self.check_service_active()
        if self.config.validate_before_runtime:
            self.validate_request(request)
            self.check_shard_hosted()
        else:
            self.check_shard_hosted()
            self.validate_request(request)

    def arm_join_timeout_if_absent(self, txn: _Txn, member: ConsumerMember, now: int) -> None:
        """``scheduleConsumerGroupJoinTimeoutIfAbsent``: rebalance timeout of the member."""
        group = txn.require_group()
        if (JOIN, member.member_id) not in group.timers:
            txn.emit(TimerScheduled(txn.group_id, JOIN, member.member_id, now + member.rebalance_timeout_ms))

    def validate_classic_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None
    ) -> ConsumerMember:
        """GMM ``validateConsumerGroupMember`` then ``throwIfMemberDoesNotUseClassicProtocol``."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise _Rejected(E.UNKNOWN_MEMBER_ID, "unknown member")
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise _Rejected(E.UNKNOWN_MEMBER_ID, "unknown instance id")
            if member.member_id != member_id:
                raise _Rejected(E.FENCED_INSTANCE_ID, "instance id held by another member")
        if member.classic is None:
            raise _Rejected(E.UNKNOWN_MEMBER_ID, "member does not use the classic protocol")
        return member

    def waiting_on_unreleased_partition(self, group: ConsumerGroup, member: ConsumerMember) -> bool:
        """CoG ``waitingOnUnreleasedPartition``."""
        if member.state != MemberState.UNRELEASED_PARTITIONS:
            return False
        return any(
            tp not in member.assigned and group.current_partition_epoch(tp) != -1
            for tp in group.target_of(member.member_id)
        )

    rejoin_epoch: str = "group"
    """`MixedConfig.classic_rejoin_epoch` (set by the facade)."""

    def rejoin_target_epoch(self, group: ConsumerGroup) -> int:
        """The epoch a classic member is compared with (`MixedConfig.classic_rejoin_epoch`)."""
        return group.assignment_epoch if self.rejoin_epoch == "assignment" else group.group_epoch

    def classic_heartbeat_needs_rejoin(self, group: ConsumerGroup, member: ConsumerMember) -> bool:
        """Reference L6038: epoch behind the group, revoking, or unreleased with everything free."""
        return (
            member.member_epoch < self.rejoin_target_epoch(group)
            or member.state == MemberState.UNREVOKED_PARTITIONS
            or (
                member.state == MemberState.UNRELEASED_PARTITIONS
                and not self.waiting_on_unreleased_partition(group, member)
            )
        )

    def sync_rebalance_in_progress(self, group: ConsumerGroup, member: ConsumerMember) -> bool:
        """GMM ``throwIfRebalanceInProgress``."""
        return (
            self.rejoin_target_epoch(group) > member.member_epoch
            and member.state != MemberState.UNREVOKED_PARTITIONS
        )

    def join_generation(self, member: ConsumerMember) -> int:
        """The JoinGroup generation of a classic member is its member epoch."""
        return member.member_epoch

    # ------------------------------------------------------------------ classic APIs in a consumer group

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
            self.compute_target_assignment(txn)
        current = txn.require_group().members[member_id]
        reconciled = self.reconcile_member(txn, current, frozenset(subscription.owned_partitions), now)
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


class MixedCoordinator:
    """One shard serving classic and consumer groups with the B.13 rules.

    Entry points mirror the two coordinators: ``handle(state, request, ref, now)`` for any classic
    request or a ConsumerGroupHeartbeat, ``advance(state, to)``, ``create_topic``, ``failover``.
    """

    consumer_class: type[MixedConsumerCoordinator] = MixedConsumerCoordinator
    """The KIP-848 engine; a mutant subclass replaces one rule of it."""

    def __init__(self, config: MixedConfig | None = None, chooser: Chooser | None = None) -> None:
        self.config = config or MixedConfig()
        self.chooser: Chooser = chooser or SeededChooser(0)
        self.classic = ClassicCoordinator(self.config.classic, self.chooser)
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
        the consumer engine's B.12 rules (ILLEGAL_GENERATION for a classic member, any version)."""
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
        """B.2 with B.13 group resolution: an epoch-0 join on a classic group replaces it when empty
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
