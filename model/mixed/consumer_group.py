"""The KIP-848 consumer coordinator extended with classic members: JoinGroup, SyncGroup, Heartbeat
and LeaveGroup of a classic member inside a consumer group (KIP-848, "Upgrade"; Kafka's
``GroupMetadataManager.classicGroupJoinToConsumerGroup`` and its siblings, cited per method).
The facts and their Kafka line numbers are listed in `model.mixed.coordinator`'s docstring.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace

from model.choice import Chooser
from model.classic.state import ClassicConfig
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    OffsetCommitRequest,
)
from model.consumer.records import (
    ConsumerGroupTombstone,
    TimerScheduled,
)
from model.consumer.state import (
    JOIN,
    SESSION,
    SYNC,
    ConsumerCoordinatorState,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Timer,
)
from model.consumer.txn import ConsumerCoordinatorConfig, _Rejected, _Txn
from model.errors import ErrorCode
from model.mixed.state import (
    MigrationPolicy,
)
from model.result import Result

CONSUMER_PROTOCOL_TYPE = "consumer"


E = ErrorCode


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


class MixedConsumerBase(ConsumerCoordinator):
    """The KIP-848 engine extended with the classic protocol inside consumer groups (docs/protocol-reference.md#b13); the
    classic requests themselves are `model.mixed.classic_requests.MixedConsumerCoordinator`.

    Overrides only what docs/protocol-reference.md#b13 changes: a ConsumerGroupHeartbeat clears the classic metadata; classic
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
        holder uses the consumer protocol too (docs/protocol-reference.md#b7)."""
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
        """GMM ``consumerGroupFenceMember``: downgrade when allowed, else remove (docs/protocol-reference.md#b7) and also
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
        """docs/protocol-reference.md#b6 rows 1-6 in the order of ``consumer_group_heartbeat`` (before group resolution)."""
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
