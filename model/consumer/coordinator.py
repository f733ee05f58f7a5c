"""The KIP-848 group coordinator: ConsumerGroupHeartbeat, OffsetCommit, timers, topic changes.

docs/protocol-reference.md#b2 (pipeline, GMM `consumerGroupHeartbeat` L1661-1816), #b4 (group-epoch bumps),
docs/protocol-reference.md#b5 (reconciliation, see `model.consumer.reconcile`), #b6 (ordered validation), #b7 (leave and
static membership, GMM L2204-2290, L2975, L3018, L3087), docs/protocol-reference.md#b8 (timers, GMM L3281, L3429),
docs/protocol-reference.md#b10 (full vs incremental requests), #b11 (assignors), #b12 (offsets, CoG L642), #b9 / KIP-1082
(member ids).

Handler contract (docs/model.md, `model.result`): a handler works on a scratch copy of the group, where
each record it emits is applied at once (as Kafka's runtime replays appended records into its
in-memory state); when the handler succeeds the same records are applied to ``state`` and returned
in the `Result`. A rejected request (a protocol error) emits no record and leaves ``state`` as it was,
as a failed Kafka write operation does. Errors are data in responses, never exceptions.

Every rule is a small method so that a mutant can subclass and override exactly one.

Divergences from Apache Kafka 4.0, all deliberate:

* Regular expressions (v1 ``SubscribedTopicRegex``) are resolved synchronously with Python ``re``
  against the current metadata image, and a changed regex bumps the group epoch in the same
  heartbeat. Kafka resolves new regexes asynchronously with RE2J (batched, at least 10 s apart) and
  bumps outside any heartbeat when the resolution lands (GMM L336, L2546).
* Topics are identified by name; a topic deleted and created again under the same name is the same
  topic to the model (Kafka gives it a new topic id).
* A commit with a negative epoch to a missing group stores offsets without creating Kafka's "simple"
  classic group (OMM L295-320).
* Subscription metadata is refreshed only when topics change or after a load, never periodically.
* ``member_id_validation="kip"`` checks the UUID format of client-provided ids as KIP-1082
  proposes; Apache Kafka 4.0 (``"kafka"``, the default) uses the id verbatim (docs/protocol-reference.md#b9).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Literal

from model.choice import Chooser, SeededChooser
from model.consumer.assignors import (
    ASSIGNORS,
    AssignmentMember,
    AssignorError,
    GroupAssignment,
    is_homogeneous,
    preferred_assignor,
)
from model.consumer.ids import is_valid_member_uuid, new_member_id
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    TopicPartition,
    to_topic_partitions,
)
from model.consumer.reconcile import CurrentAssignment, reconcile
from model.consumer.records import (
    AssignorUsedRecord,
    CurrentAssignmentTombstone,
    GroupEpochRecord,
    MemberSubscriptionTombstone,
    MetadataRefreshRecord,
    OffsetCommitRecord,
    SubscriptionMetadataRecord,
    TargetAssignmentEpochRecord,
    TargetAssignmentMemberRecord,
    TargetAssignmentMemberTombstone,
    TimerCancelled,
    TimerScheduled,
    TopicDeletedRecord,
    TopicRecord,
    apply,
    current_assignment_record,
    member_subscription_record,
    rebuild,
)
from model.consumer.state import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    REBALANCE,
    SESSION,
    ConsumerCoordinatorState,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Timer,
)
from model.errors import ErrorCode
from model.result import Result


@dataclass(frozen=True)
class ConsumerCoordinatorConfig:
    """Broker and group settings, Kafka 4.0 defaults (docs/protocol-reference.md#defaults, GCC L136-201), plus the
    model's variants (docs/protocol-reference.md#b6 rows 1-5 environment, #f, KIP-1082)."""

    session_timeout_ms: int = 45_000
    """group.consumer.session.timeout.ms"""
    heartbeat_interval_ms: int = 5_000
    """group.consumer.heartbeat.interval.ms"""
    max_size: int = 2**31 - 1
    """group.consumer.max.size"""
    assignors: tuple[str, ...] = ("uniform", "range")
    """group.consumer.assignors (first = default)"""
    offset_metadata_max_bytes: int = 4096
    """offset.metadata.max.bytes"""
    heartbeat_version: Literal[0, 1] = 1
    """Highest ConsumerGroupHeartbeat version served: 0 = Kafka 3.x, 1 = Kafka 4.0 (KIP-1082)."""
    member_id_validation: Literal["kafka", "kip"] = "kafka"
    """"kafka": a v1 member id is used verbatim (4.0); "kip": the UUID-format check KIP-1082 proposes."""
    consumer_protocol_enabled: bool = True
    """False: the API is off (docs/protocol-reference.md#b6 row 1, UNSUPPORTED_VERSION)."""
    availability: Literal["active", "inactive", "not_coordinator", "loading"] = "active"
    """docs/protocol-reference.md#b6 rows 4-5: service inactive / shard not hosted / shard loading."""
    validate_before_runtime: bool = False
    """Kafka 4.1 order: request validation (row 6) before the hosted/loading check (row 5)."""
    group_read_denied: frozenset[str] = frozenset()
    """Groups the principal may not READ (docs/protocol-reference.md#b6 row 2)."""
    topic_describe_denied: frozenset[str] = frozenset()
    """Topics the principal may not DESCRIBE/READ (docs/protocol-reference.md#b6 row 3; regex results are filtered by it)."""
    own_pending_is_free: bool = True
    """KAFKA-19449 fix (apache/kafka PR #20781, merged 2025-10, after 4.1; observed on 4.4.0 by
    `conformance/power/probe848.py`): a partition the member itself has pending revocation does not
    hold back its re-assignment to that member. False: Kafka 4.0/4.1 (docs/protocol-reference.md#b5), the
    ``kafka-19449`` mutant."""
    epoch_zero_rejoin: bool = True
    """KAFKA-19233 fix (apache/kafka PR #21305, merged 2026-01; observed on 4.4.0 by
    `conformance/power/probe848.py`): an epoch-0 heartbeat of a known member skips the epoch check,
    so a fenced member can rejoin at once, as KIP-848 specifies. False: Kafka 4.0 (docs/protocol-reference.md#b6 row
    12 note: FENCED_MEMBER_EPOCH until the session expires), the ``kafka-19233`` mutant."""
    bump_after_revocation: bool = False
    """False: KAFKA-19974 fix (apache/kafka PR #21107, merged 2025-12, Kafka 4.2+; observed on 4.4.0,
    `groupcheck check --target apache-kafka --protocol consumer --profile ci --seed 1`): a member
    leaving UNREVOKED_PARTITIONS keeps its member epoch while it must revoke again, instead of
    taking member epoch + 1. True: Kafka 4.0/4.1 (docs/protocol-reference.md#b5)."""
    initial_group_epoch: Literal[0, 1] = 0
    """0: a new group starts at epoch 0 (Kafka 4.0). 1: it starts at group and assignment epoch 1 with
    an empty target, so the first computed assignment is epoch 2 (KAFKA-20268, apache/kafka#21700,
    Kafka 4.3+; observed on 4.4.0)."""


class _Rejected(Exception):
    """Internal control flow: the request fails with a protocol error (Kafka's ApiException)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Txn:
    """A handler's scratch copy of one group; emitted records are applied to it at once and, on
    commit, to the real state."""

    def __init__(self, state: ConsumerCoordinatorState, group_id: str) -> None:
        self.state = state
        self.group_id = group_id
        existing = state.groups.get(group_id)
        self.scratch = ConsumerCoordinatorState(
            groups={} if existing is None else {group_id: existing.clone()},
            topics=state.topics,
            offsets={group_id: dict(state.offsets.get(group_id, {}))},
        )
        self.records: list[object] = []

    @property
    def group(self) -> ConsumerGroup | None:
        return self.scratch.groups.get(self.group_id)

    def require_group(self) -> ConsumerGroup:
        group = self.scratch.groups.get(self.group_id)
        if group is None:  # created by the request (epoch 0), materialised by its first record
            group = ConsumerGroup(self.group_id)
            self.scratch.groups[self.group_id] = group
        return group

    def emit(self, record: object) -> None:
        apply(self.scratch, record)
        self.records.append(record)

    def commit(self, result: Result) -> None:
        for record in self.records:
            apply(self.state, record)
        result.records.extend(self.records)


def _blank(value: str) -> bool:
    """Java ``trim().isEmpty()``: only characters <= U+0020."""
    return all(ord(c) <= 0x20 for c in value)


def _effective_regex(member: ConsumerMember) -> str | None:
    return member.subscribed_topic_regex or None


class ConsumerCoordinator:
    """The KIP-848 coordinator of one shard. Public entry points:

    * ``handle_consumer_group_heartbeat(state, request, ref, now) -> Result``
    * ``handle_offset_commit(state, request, ref, now) -> Result``
    * ``advance(state, now) -> Result`` (fire due timers)
    * ``create_topic`` / ``delete_topic`` / ``add_partitions`` (metadata image changes)
    * ``on_loaded(state, now)`` and ``failover(records, now)`` (coordinator failover)
    """

    def __init__(
        self, config: ConsumerCoordinatorConfig | None = None, chooser: Chooser | None = None
    ) -> None:
        self.config = config or ConsumerCoordinatorConfig()
        self.chooser: Chooser = chooser or SeededChooser(0)

    # ------------------------------------------------------------------ ConsumerGroupHeartbeat

    def handle_consumer_group_heartbeat(
        self, state: ConsumerCoordinatorState, request: ConsumerGroupHeartbeatRequest, ref: int, now: int
    ) -> Result:
        """docs/protocol-reference.md#b2: validate, then leave (#b7) or join/heartbeat; exactly one delivery, to ``ref``."""
        result = Result()
        txn = _Txn(state, request.group_id)
        try:
            response = self.consumer_group_heartbeat(txn, request, now)
        except _Rejected as rejected:
            response = ConsumerGroupHeartbeatResponse(
                error_code=rejected.code, error_message=rejected.message
            )
        else:
            txn.commit(result)
        result.reply(ref, response)
        return result

    def consumer_group_heartbeat(
        self, txn: _Txn, request: ConsumerGroupHeartbeatRequest, now: int
    ) -> ConsumerGroupHeartbeatResponse:
        """docs/protocol-reference.md#b6 rows 1-6 in order (rows 5 and 6 swapped in the 4.1 variant), then dispatch."""
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
        if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self.leave_group(txn, request, now)
        return self.join_or_heartbeat(txn, request, now)

    # -- environment (docs/protocol-reference.md#b6 rows 1-5)

    def check_api_enabled(self, request: ConsumerGroupHeartbeatRequest) -> None:
        """Row 1 (KA L2535-2541): API off, or a version the coordinator does not serve."""
        if (
            not self.config.consumer_protocol_enabled
            or not 0 <= request.version <= self.config.heartbeat_version
        ):
            raise _Rejected(ErrorCode.UNSUPPORTED_VERSION, "ConsumerGroupHeartbeat version not supported")

    def check_group_authorized(self, group_id: str) -> None:
        """Row 2: GROUP READ."""
        if group_id in self.config.group_read_denied:
            raise _Rejected(ErrorCode.GROUP_AUTHORIZATION_FAILED, "not authorized to read the group")

    def check_topics_authorized(self, request: ConsumerGroupHeartbeatRequest) -> None:
        """Row 3: every subscribed topic name needs TOPIC DESCRIBE."""
        names = request.subscribed_topic_names or ()
        if any(name in self.config.topic_describe_denied for name in names):
            raise _Rejected(
                ErrorCode.TOPIC_AUTHORIZATION_FAILED, "not authorized to describe a subscribed topic"
            )

    def check_service_active(self) -> None:
        """Row 4 (GCS L322)."""
        if self.config.availability == "inactive":
            raise _Rejected(ErrorCode.COORDINATOR_NOT_AVAILABLE, "coordinator not active")

    def check_shard_hosted(self) -> None:
        """Row 5 (CR L2121-2134)."""
        if self.config.availability == "not_coordinator":
            raise _Rejected(ErrorCode.NOT_COORDINATOR, "not the coordinator of this group")
        if self.config.availability == "loading":
            raise _Rejected(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "coordinator is loading")

    # -- request validation (GMM L1218-1257; docs/protocol-reference.md#b6 row 6)

    def validate_request(self, request: ConsumerGroupHeartbeatRequest) -> None:
        epoch = request.member_epoch
        if (request.version >= 1 or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH) and _blank(
            request.member_id
        ):
            raise _Rejected(ErrorCode.INVALID_REQUEST, "member id must not be empty")
        self.validate_member_id_format(request)
        if _blank(request.group_id):
            raise _Rejected(ErrorCode.INVALID_REQUEST, "group id must not be empty")
        if request.instance_id is not None and _blank(request.instance_id):
            raise _Rejected(ErrorCode.INVALID_REQUEST, "instance id must not be empty")
        if request.rack_id is not None and _blank(request.rack_id):
            raise _Rejected(ErrorCode.INVALID_REQUEST, "rack id must not be empty")
        if epoch == 0:
            if request.rebalance_timeout_ms == -1:
                raise _Rejected(ErrorCode.INVALID_REQUEST, "a join must carry the rebalance timeout")
            if request.topic_partitions is None or request.topic_partitions:
                raise _Rejected(ErrorCode.INVALID_REQUEST, "a join must report an empty owned set")
            if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
                raise _Rejected(ErrorCode.INVALID_REQUEST, "a join must carry topic names or a regex")
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if request.instance_id is None:
                raise _Rejected(ErrorCode.INVALID_REQUEST, "a static leave needs the instance id")
        elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise _Rejected(ErrorCode.INVALID_REQUEST, "invalid member epoch")
        if request.version < 1 and request.subscribed_topic_regex is not None:
            # The field does not exist in v0: such a request cannot be encoded. Model choice.
            raise _Rejected(ErrorCode.INVALID_REQUEST, "SubscribedTopicRegex needs version 1")
        if request.server_assignor is not None and request.server_assignor not in self.config.assignors:
            raise _Rejected(
                ErrorCode.UNSUPPORTED_ASSIGNOR, f"assignor {request.server_assignor} not supported"
            )

    def validate_member_id_format(self, request: ConsumerGroupHeartbeatRequest) -> None:
        """KIP-1082 as proposed: the server validates that a v1 member id is a UUID.
        Apache Kafka 4.0 does not (docs/protocol-reference.md#b9); that is the default ``member_id_validation="kafka"``."""
        if self.config.member_id_validation == "kip" and request.version >= 1:
            if not is_valid_member_uuid(request.member_id):
                raise _Rejected(ErrorCode.INVALID_REQUEST, "member id is not a valid UUID")

    # -- leave (docs/protocol-reference.md#b7)

    def leave_group(
        self, txn: _Txn, request: ConsumerGroupHeartbeatRequest, now: int
    ) -> ConsumerGroupHeartbeatResponse:
        """Row 7 and docs/protocol-reference.md#b7: -1 removes the member (fence); -2 parks a static member."""
        group = txn.group
        if group is None:
            raise _Rejected(ErrorCode.GROUP_ID_NOT_FOUND, "group not found")
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise _Rejected(ErrorCode.UNKNOWN_MEMBER_ID, "unknown member")
            self.fence_member(txn, member)
        else:
            member = self.static_member_for_leave(group, request)
            if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                self.static_temporary_leave(txn, member)
            else:
                self.fence_member(txn, member)
        return ConsumerGroupHeartbeatResponse(member_id=request.member_id, member_epoch=request.member_epoch)

    def static_member_for_leave(
        self, group: ConsumerGroup, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerMember:
        assert request.instance_id is not None
        member = group.static_member(request.instance_id)
        if member is None:
            raise _Rejected(ErrorCode.UNKNOWN_MEMBER_ID, "unknown instance id")
        if member.member_id != request.member_id:
            raise _Rejected(ErrorCode.FENCED_INSTANCE_ID, "instance id held by another member")
        return member

    def static_temporary_leave(self, txn: _Txn, member: ConsumerMember) -> None:
        """docs/protocol-reference.md#b7 (GMM L3018): epoch -2, assignment kept, pending revocations dropped, no bump, timers kept."""
        parked = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation=frozenset())
        txn.emit(current_assignment_record(txn.group_id, parked))

    def fence_member(self, txn: _Txn, member: ConsumerMember) -> None:
        """GMM `consumerGroupFenceMember` L3087: three tombstones, subscription metadata without the
        member, group epoch +1, the member's timers cancelled."""
        gid = txn.group_id
        txn.emit(CurrentAssignmentTombstone(gid, member.member_id))
        txn.emit(TargetAssignmentMemberTombstone(gid, member.member_id))
        txn.emit(MemberSubscriptionTombstone(gid, member.member_id))
        group = txn.require_group()
        metadata = self.compute_subscription_metadata(txn.scratch, group)
        if metadata != group.subscription_metadata:
            txn.emit(SubscriptionMetadataRecord(gid, tuple(sorted(metadata.items()))))
        self.bump_after_fence(txn, group)
        group = txn.require_group()
        if not group.members and group.assignment_epoch < group.group_epoch:
            # Kafka 4.4.0 `consumerGroupFenceMembers`: when the fenced members were all the group's
            # members, the (empty) target is written at the new epoch at once (a
            # ConsumerGroupTargetAssignmentMetadata record); seen on a restart, where ConsumerGroupDescribe
            # showed an expired group Empty at assignment epoch = group epoch
            txn.emit(TargetAssignmentEpochRecord(gid, group.group_epoch))
        for kind in (SESSION, REBALANCE):
            self.cancel_timer(txn, kind, member.member_id)

    def bump_after_fence(self, txn: _Txn, group: ConsumerGroup) -> None:
        """The group epoch +1 that makes the next target exclude the fenced member (docs/protocol-reference.md#b4)."""
        txn.emit(GroupEpochRecord(txn.group_id, group.group_epoch + 1))

    # -- join / heartbeat (docs/protocol-reference.md#b2)

    def join_or_heartbeat(
        self, txn: _Txn, request: ConsumerGroupHeartbeatRequest, now: int
    ) -> ConsumerGroupHeartbeatResponse:
        group = self.resolve_group(txn, request)
        self.check_group_capacity(group, request.member_id)
        member_id = self.assign_member_id(request)
        if request.instance_id is None:
            member = self.resolve_dynamic_member(group, member_id, request)
        else:
            member = self.resolve_static_member(txn, group, member_id, request)
        self.validate_regex(request, member)

        updated = self.updated_member(member, request)
        if updated != member or member.member_id not in txn.require_group().members:
            txn.emit(member_subscription_record(txn.group_id, updated))
        bump = self.group_epoch_bump_due(txn.require_group(), member, updated)
        self.maybe_update_subscription_metadata(txn, bump)

        if self.target_assignment_due(txn.require_group()):
            self.compute_target_assignment(txn)

        current = txn.require_group().members[member_id]
        reconciled = self.reconcile_member(txn, current, request.owned(), now)
        self.schedule_session_timeout(txn, member_id, now)

        response_assignment = None
        if self.assignment_in_response(request, member, reconciled):
            response_assignment = to_topic_partitions(reconciled.assigned)
        return ConsumerGroupHeartbeatResponse(
            member_id=member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.config.heartbeat_interval_ms,
            assignment=response_assignment,
        )

    def resolve_group(self, txn: _Txn, request: ConsumerGroupHeartbeatRequest) -> ConsumerGroup:
        """Row 8: epoch 0 may create the group; otherwise GROUP_ID_NOT_FOUND."""
        if txn.group is None and request.member_epoch != 0:
            raise _Rejected(ErrorCode.GROUP_ID_NOT_FOUND, "group not found")
        if txn.group is None and self.config.initial_group_epoch:
            epoch = self.config.initial_group_epoch
            txn.emit(GroupEpochRecord(txn.group_id, epoch))
            txn.emit(TargetAssignmentEpochRecord(txn.group_id, epoch))
        return txn.require_group()

    def check_group_capacity(self, group: ConsumerGroup, member_id: str) -> None:
        """Row 9 (GMM L1319): a non-member cannot join a full group."""
        if len(group.members) >= self.config.max_size and (not member_id or member_id not in group.members):
            raise _Rejected(ErrorCode.GROUP_MAX_SIZE_REACHED, "group is full")

    def assign_member_id(self, request: ConsumerGroupHeartbeatRequest) -> str:
        """docs/protocol-reference.md#b2 step 3 (GMM L1683): a v0 join with an empty id gets a coordinator-generated id."""
        if request.member_epoch == 0 and request.member_id == "" and request.version == 0:
            return new_member_id(self.chooser)
        return request.member_id

    def resolve_dynamic_member(
        self, group: ConsumerGroup, member_id: str, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerMember:
        """Row 10 and row 12 (GMM L2169)."""
        member = group.members.get(member_id)
        if member is None:
            if request.member_epoch != 0:
                raise _Rejected(ErrorCode.UNKNOWN_MEMBER_ID, "unknown member")
            return ConsumerMember(member_id)
        self.validate_member_epoch(member, request)
        return member

    def resolve_static_member(
        self, txn: _Txn, group: ConsumerGroup, member_id: str, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerMember:
        """Rows 11-12 (GMM L2204-2290): new static member, static rejoin replacing a -2 member, or an
        existing static member's heartbeat."""
        assert request.instance_id is not None
        existing = group.static_member(request.instance_id)
        if request.member_epoch == 0:
            if existing is None:
                return group.members.get(member_id) or ConsumerMember(member_id)
            self.check_instance_released(existing)
            new = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
            self.replace_static_member(txn, existing, new)
            return new
        if existing is None:
            raise _Rejected(ErrorCode.UNKNOWN_MEMBER_ID, "unknown instance id")
        if existing.member_id != member_id:
            raise _Rejected(ErrorCode.FENCED_INSTANCE_ID, "instance id held by another member")
        self.validate_member_epoch(existing, request)
        return existing

    def check_instance_released(self, existing: ConsumerMember) -> None:
        """Row 11 (GMM L1420): a static rejoin needs the current holder to have left with -2."""
        if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise _Rejected(ErrorCode.UNRELEASED_INSTANCE_ID, "instance id not released")

    def replace_static_member(self, txn: _Txn, old: ConsumerMember, new: ConsumerMember) -> None:
        """GMM `replaceMember`: tombstones for the old id, then the new id with the old subscription,
        target and current assignment. The old id's timers are left to fire as no-ops, as in Kafka."""
        gid = txn.group_id
        group = txn.require_group()
        target = group.target_of(old.member_id)
        txn.emit(CurrentAssignmentTombstone(gid, old.member_id))
        txn.emit(TargetAssignmentMemberTombstone(gid, old.member_id))
        txn.emit(MemberSubscriptionTombstone(gid, old.member_id))
        txn.emit(member_subscription_record(gid, new))
        txn.emit(TargetAssignmentMemberRecord(gid, new.member_id, tuple(sorted(target))))
        txn.emit(current_assignment_record(gid, new))

    def validate_member_epoch(self, member: ConsumerMember, request: ConsumerGroupHeartbeatRequest) -> None:
        """Row 12 (GMM L1362): the member's epoch, or its previous epoch with owned ⊆ assigned; epoch 0
        (a rejoin) passes since KAFKA-19233 (`epoch_zero_rejoin`)."""
        epoch = request.member_epoch
        if epoch == 0 and self.config.epoch_zero_rejoin:
            return
        if epoch > member.member_epoch:
            raise _Rejected(ErrorCode.FENCED_MEMBER_EPOCH, "member epoch is ahead of the coordinator's")
        if epoch < member.member_epoch:
            owned = request.owned()
            if epoch != member.previous_member_epoch or owned is None or not owned <= member.assigned:
                raise _Rejected(ErrorCode.FENCED_MEMBER_EPOCH, "member epoch is stale")

    def validate_regex(self, request: ConsumerGroupHeartbeatRequest, member: ConsumerMember) -> None:
        """Row 13: a new regex must compile (Kafka: RE2J; model: Python ``re``)."""
        regex = request.subscribed_topic_regex
        if regex and regex != member.subscribed_topic_regex:
            try:
                re.compile(regex)
            except re.error as exc:
                raise _Rejected(
                    ErrorCode.INVALID_REGULAR_EXPRESSION, f"invalid regular expression: {exc}"
                ) from None

    def updated_member(
        self, member: ConsumerMember, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerMember:
        """docs/protocol-reference.md#b2 step 5: provided fields replace stored ones; null / -1 mean unchanged."""
        return replace(
            member,
            instance_id=member.instance_id if request.instance_id is None else request.instance_id,
            rack_id=member.rack_id if request.rack_id is None else request.rack_id,
            rebalance_timeout_ms=(
                member.rebalance_timeout_ms
                if request.rebalance_timeout_ms == -1
                else request.rebalance_timeout_ms
            ),
            server_assignor=member.server_assignor
            if request.server_assignor is None
            else request.server_assignor,
            subscribed_topic_names=(
                member.subscribed_topic_names
                if request.subscribed_topic_names is None
                else frozenset(request.subscribed_topic_names)
            ),
            subscribed_topic_regex=(
                member.subscribed_topic_regex
                if request.subscribed_topic_regex is None
                else request.subscribed_topic_regex
            ),
        )

    # -- group epoch (docs/protocol-reference.md#b4)

    def group_epoch_bump_due(
        self, group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember
    ) -> bool:
        """docs/protocol-reference.md#b4: a new group (epoch 0), or the member's subscribed names or regex changed."""
        return group.group_epoch == 0 or self.subscription_changed(member, updated)

    def subscription_changed(self, member: ConsumerMember, updated: ConsumerMember) -> bool:
        """GMM `hasMemberSubscriptionChanged` L2294 (+ regex, resolved synchronously: any change bumps)."""
        return member.subscribed_topic_names != updated.subscribed_topic_names or _effective_regex(
            member
        ) != _effective_regex(updated)

    def maybe_update_subscription_metadata(self, txn: _Txn, bump: bool) -> None:
        """docs/protocol-reference.md#b2 step 6: on a bump or a due refresh, recompute the subscription metadata; a change also
        bumps. The epoch record follows the metadata record (GMM `updateSubscriptionMetadata`)."""
        group = txn.require_group()
        refresh_due = group.metadata_refresh_due
        if not (bump or refresh_due):
            return
        metadata = self.compute_subscription_metadata(txn.scratch, group)
        if metadata != group.subscription_metadata:
            bump = True
            txn.emit(SubscriptionMetadataRecord(txn.group_id, tuple(sorted(metadata.items()))))
        if bump:
            txn.emit(GroupEpochRecord(txn.group_id, group.group_epoch + 1))
        if refresh_due:
            txn.emit(MetadataRefreshRecord(txn.group_id, False))

    def subscribed_topics(self, state: ConsumerCoordinatorState, member: ConsumerMember) -> frozenset[str]:
        """The member's subscription: names (existing or not) plus regex matches in the image."""
        regex = _effective_regex(member)
        matched = (
            frozenset(t for t in state.topics if member.subscribes(t, self.config.topic_describe_denied))
            if regex
            else frozenset()
        )
        return member.subscribed_topic_names | matched

    def compute_subscription_metadata(
        self, state: ConsumerCoordinatorState, group: ConsumerGroup
    ) -> dict[str, int]:
        """CoG `computeSubscriptionMetadata`: partition count of every subscribed topic that exists."""
        wanted: set[str] = set()
        for member in group.members.values():
            wanted |= self.subscribed_topics(state, member)
        return {t: state.topics[t] for t in sorted(wanted) if t in state.topics}

    # -- target assignment (docs/protocol-reference.md#b2 step 7)

    def target_assignment_due(self, group: ConsumerGroup) -> bool:
        """GMM L1769: computed lazily when the group epoch is ahead of the assignment epoch."""
        return group.group_epoch > group.assignment_epoch

    def select_assignor(self, group: ConsumerGroup) -> str:
        """docs/protocol-reference.md#b11 selection (CoG L597), ties through the Chooser."""
        return preferred_assignor(
            (m.server_assignor for m in sorted(group.members.values(), key=lambda m: m.member_id)),
            self.config.assignors,
            self.chooser,
        )

    def assignment_specs(
        self, state: ConsumerCoordinatorState, group: ConsumerGroup
    ) -> dict[str, AssignmentMember]:
        denied = self.config.topic_describe_denied
        return {
            m.member_id: AssignmentMember(
                member_id=m.member_id,
                subscribed=frozenset(t for t in group.subscription_metadata if m.subscribes(t, denied)),
                current=group.target_of(m.member_id),
                instance_id=m.instance_id,
                rack_id=m.rack_id,
            )
            for m in group.members.values()
        }

    def run_assignor(
        self, name: str, members: dict[str, AssignmentMember], topics: dict[str, int], homogeneous: bool
    ) -> GroupAssignment:
        return ASSIGNORS[name](members, topics, homogeneous)

    def compute_target_assignment(self, txn: _Txn) -> None:
        """TAB `build` L434-509: run the assignor for the whole group; write only changed members,
        then the assignment epoch. An assignor failure is UNKNOWN_SERVER_ERROR (row 14)."""
        group = txn.require_group()
        name = self.select_assignor(group)
        homogeneous = is_homogeneous(self.subscribed_topics(txn.scratch, m) for m in group.members.values())
        specs = self.assignment_specs(txn.scratch, group)
        try:
            assignment = self.run_assignor(name, specs, dict(group.subscription_metadata), homogeneous)
        except AssignorError as exc:
            raise _Rejected(ErrorCode.UNKNOWN_SERVER_ERROR, f"assignor {name} failed: {exc}") from None
        for member_id in sorted(assignment):
            if assignment[member_id] != group.target_of(member_id):
                txn.emit(
                    TargetAssignmentMemberRecord(
                        txn.group_id, member_id, tuple(sorted(assignment[member_id]))
                    )
                )
        txn.emit(TargetAssignmentEpochRecord(txn.group_id, group.group_epoch))
        txn.emit(AssignorUsedRecord(txn.group_id, name))

    # -- reconciliation (docs/protocol-reference.md#b2 step 8)

    def current_partition_epoch(self, group: ConsumerGroup, tp: TopicPartition) -> int:
        """CoG `currentPartitionEpoch`: the holder's epoch, -1 when free."""
        return group.current_partition_epoch(tp)

    def reconcile_member(
        self, txn: _Txn, member: ConsumerMember, owned: frozenset[TopicPartition] | None, now: int
    ) -> ConsumerMember:
        """GMM `maybeReconcile` L2681 around the pure `reconcile` (docs/protocol-reference.md#b5); arms or cancels the
        rebalance timer when the member changed (docs/protocol-reference.md#b8)."""
        group = txn.require_group()
        if member.is_reconciled_to(group.assignment_epoch):
            return member
        current = CurrentAssignment(
            member.state,
            member.member_epoch,
            member.previous_member_epoch,
            member.assigned,
            member.pending_revocation,
        )
        nxt = reconcile(
            current,
            group.assignment_epoch,
            group.target_of(member.member_id),
            lambda tp: self.current_partition_epoch(group, tp),
            owned,
            self.config.own_pending_is_free,
            self.config.bump_after_revocation,
        )
        if nxt is None:
            raise _Rejected(
                ErrorCode.FENCED_MEMBER_EPOCH, "member in an unknown state must rejoin without partitions"
            )
        updated = replace(
            member,
            state=nxt.state,
            member_epoch=nxt.member_epoch,
            previous_member_epoch=nxt.previous_member_epoch,
            assigned=nxt.assigned,
            pending_revocation=nxt.pending_revocation,
        )
        if updated != member:
            txn.emit(current_assignment_record(txn.group_id, updated))
            if updated.state == MemberState.UNREVOKED_PARTITIONS:
                self.schedule_rebalance_timeout(txn, updated, now)
            else:
                self.cancel_timer(txn, REBALANCE, updated.member_id)
        return updated

    # -- response (docs/protocol-reference.md#b10)

    def is_full_request(self, request: ConsumerGroupHeartbeatRequest) -> bool:
        """docs/protocol-reference.md#b10: rebalance timeout, names or regex, and owned partitions all present."""
        return (
            request.rebalance_timeout_ms != -1
            and (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
            and request.topic_partitions is not None
        )

    def assignment_in_response(
        self, request: ConsumerGroupHeartbeatRequest, before: ConsumerMember, after: ConsumerMember
    ) -> bool:
        """docs/protocol-reference.md#b10 (GMM L1811-1813): join, full request, or the assigned set changed."""
        return request.member_epoch == 0 or self.is_full_request(request) or before.assigned != after.assigned

    # -- timers (docs/protocol-reference.md#b8)

    def session_timeout_ms(self, group_id: str) -> int:
        return self.config.session_timeout_ms

    def schedule_session_timeout(self, txn: _Txn, member_id: str, now: int) -> None:
        """Re-armed after every successful heartbeat (GMM L1797)."""
        deadline = now + self.session_timeout_ms(txn.group_id)
        txn.emit(TimerScheduled(txn.group_id, SESSION, member_id, deadline))

    def schedule_rebalance_timeout(self, txn: _Txn, member: ConsumerMember, now: int) -> None:
        """Armed with the member's epoch when it enters/stays in UNREVOKED_PARTITIONS after a change."""
        deadline = now + member.rebalance_timeout_ms
        txn.emit(TimerScheduled(txn.group_id, REBALANCE, member.member_id, deadline, member.member_epoch))

    def cancel_timer(self, txn: _Txn, kind: str, member_id: str) -> None:
        group = txn.group
        if group is not None and (kind, member_id) in group.timers:
            txn.emit(TimerCancelled(txn.group_id, kind, member_id))

    def advance(self, state: ConsumerCoordinatorState, now: int) -> Result:
        """Fire every timer with deadline <= ``now`` in deadline order; ties by (group id, kind,
        member id) — Kafka's timer order among equal deadlines is unspecified."""
        result = Result()
        while True:
            due = self._next_due_timer(state, now)
            if due is None:
                return result
            group_id, timer = due
            txn = _Txn(state, group_id)
            txn.emit(TimerCancelled(group_id, timer.kind, timer.member_id))
            if timer.kind == SESSION:
                self.on_session_timeout(txn, timer)
            else:
                self.on_rebalance_timeout(txn, timer)
            txn.commit(result)

    def _next_due_timer(self, state: ConsumerCoordinatorState, now: int) -> tuple[str, Timer] | None:
        def due() -> Iterator[tuple[int, str, str, str, Timer]]:
            for gid, group in state.groups.items():
                for t in group.timers.values():
                    if t.deadline <= now:
                        yield (t.deadline, gid, t.kind, t.member_id, t)

        best = min(due(), default=None, key=lambda d: d[:4])
        return None if best is None else (best[1], best[4])

    def on_session_timeout(self, txn: _Txn, timer: Timer) -> None:
        """GMM L3281: the member is fenced (removed, epoch +1); no-op if it is gone."""
        group = txn.group
        member = None if group is None else group.members.get(timer.member_id)
        if member is not None:
            self.fence_member(txn, member)

    def on_rebalance_timeout(self, txn: _Txn, timer: Timer) -> None:
        """GMM L3429-3470: fence only if the member's epoch still equals the armed epoch."""
        group = txn.group
        member = None if group is None else group.members.get(timer.member_id)
        if member is not None and member.member_epoch == timer.epoch:
            self.fence_member(txn, member)

    # ------------------------------------------------------------------ OffsetCommit (docs/protocol-reference.md#b12)

    def handle_offset_commit(
        self, state: ConsumerCoordinatorState, request: OffsetCommitRequest, ref: int, now: int
    ) -> Result:
        """docs/protocol-reference.md#a7 pre-checks per partition, then the group-level check (#b12) for every partition that
        passed them, then per-partition metadata size."""
        result = Result()
        txn = _Txn(state, request.group_id)
        group_error = self.offset_commit_group_error(state, request)
        topics: list[OffsetCommitResponseTopic] = []
        for topic in request.topics:
            parts: list[OffsetCommitResponsePartition] = []
            for p in topic.partitions:
                code = self.offset_commit_partition_precheck(state, request, topic.name, p.partition_index)
                if code is None:
                    code = group_error
                if (
                    code is None
                    and len((p.committed_metadata or "").encode()) > self.config.offset_metadata_max_bytes
                ):
                    code = ErrorCode.OFFSET_METADATA_TOO_LARGE
                if code is None:
                    code = ErrorCode.NONE
                    txn.emit(
                        OffsetCommitRecord(
                            request.group_id,
                            topic.name,
                            p.partition_index,
                            p.committed_offset,
                            p.committed_leader_epoch,
                            p.committed_metadata,
                        )
                    )
                parts.append(OffsetCommitResponsePartition(p.partition_index, code))
            topics.append(OffsetCommitResponseTopic(topic.name, tuple(parts)))
        txn.commit(result)
        result.reply(ref, OffsetCommitResponse(tuple(topics)))
        return result

    def offset_commit_partition_precheck(
        self, state: ConsumerCoordinatorState, request: OffsetCommitRequest, topic: str, partition: int
    ) -> ErrorCode | None:
        """KA L265-310: group ACL, topic ACL, unknown topic or partition."""
        if request.group_id in self.config.group_read_denied:
            return ErrorCode.GROUP_AUTHORIZATION_FAILED
        if topic in self.config.topic_describe_denied:
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if topic not in state.topics or not 0 <= partition < state.topics[topic]:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return None

    def offset_commit_group_error(
        self, state: ConsumerCoordinatorState, request: OffsetCommitRequest
    ) -> ErrorCode | None:
        """GCS L943-960 availability, then docs/protocol-reference.md#a7 missing-group rows and #b12 (CoG L642-674, L816)."""
        if self.config.availability == "inactive":
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.config.availability == "not_coordinator":
            return ErrorCode.NOT_COORDINATOR
        if self.config.availability == "loading":
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        epoch = request.generation_id_or_member_epoch
        group = state.groups.get(request.group_id)
        if group is None:
            if epoch < 0:
                return None
            return ErrorCode.GROUP_ID_NOT_FOUND if request.version >= 9 else ErrorCode.ILLEGAL_GENERATION
        if epoch < 0 and not group.members:
            return None
        member = group.members.get(request.member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if request.version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        if epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return None

    # ------------------------------------------------------------------ metadata image (docs/protocol-reference.md#b4)

    def create_topic(self, state: ConsumerCoordinatorState, topic: str, partitions: int) -> Result:
        """A topic appears; groups subscribed to it get a metadata refresh (GMM `onNewMetadataImage`)."""
        if topic in state.topics:
            raise ValueError(f"topic {topic} exists")
        return self._metadata_change(state, topic, TopicRecord(topic, partitions))

    def delete_topic(self, state: ConsumerCoordinatorState, topic: str) -> Result:
        if topic not in state.topics:
            raise ValueError(f"no topic {topic}")
        return self._metadata_change(state, topic, TopicDeletedRecord(topic))

    def add_partitions(self, state: ConsumerCoordinatorState, topic: str, total: int) -> Result:
        """Partition counts only grow (CreatePartitions)."""
        if state.topics.get(topic, total) >= total:
            raise ValueError(f"topic {topic} must exist and have fewer than {total} partitions")
        return self._metadata_change(state, topic, TopicRecord(topic, total))

    def _metadata_change(self, state: ConsumerCoordinatorState, topic: str, record: object) -> Result:
        result = Result()
        affected = sorted(gid for gid, g in state.groups.items() if self.group_watches_topic(state, g, topic))
        apply(state, record)
        result.records.append(record)
        for gid in affected:
            refresh = MetadataRefreshRecord(gid, True)
            apply(state, refresh)
            result.records.append(refresh)
        return result

    def group_watches_topic(self, state: ConsumerCoordinatorState, group: ConsumerGroup, topic: str) -> bool:
        """Groups subscribed to ``topic`` by name, or with any regex member (regexes are re-resolved)."""
        return topic in group.subscription_metadata or any(
            topic in m.subscribed_topic_names or _effective_regex(m) for m in group.members.values()
        )

    # ------------------------------------------------------------------ failover

    def on_loaded(self, state: ConsumerCoordinatorState, now: int) -> Result:
        """GMM `onLoaded`: arm every member's session timer and the rebalance timer of members in
        UNREVOKED_PARTITIONS."""
        result = Result()
        for gid in sorted(state.groups):
            txn = _Txn(state, gid)
            group = txn.require_group()
            for member_id in sorted(group.members):
                member = group.members[member_id]
                self.schedule_session_timeout(txn, member_id, now)
                if member.state == MemberState.UNREVOKED_PARTITIONS:
                    self.schedule_rebalance_timeout(txn, member, now)
            txn.commit(result)
        return result

    def failover(self, records: list[object], now: int) -> tuple[ConsumerCoordinatorState, Result]:
        """A new coordinator loads the durable records and re-arms timers (docs/protocol-reference.md#b8 "also at load")."""
        state = rebuild(records)
        return state, self.on_loaded(state, now)
