"""The KIP-848 group coordinator: ConsumerGroupHeartbeat, OffsetCommit, DeleteGroups, timers, topic changes.

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

* Regular expressions (v1 ``SubscribedTopicRegex``) compile with Python ``re``, not RE2J. They are
  resolved as Kafka does, off the heartbeat path (`model.consumer.regex_rules`), unless
  ``regex_resolution="sync"``: then in the heartbeat that brings them, and any regex change bumps.
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
from dataclasses import replace

from model.consumer.group_deletion import GroupDeletion
from model.consumer.ids import is_valid_member_uuid, new_member_id
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    to_topic_partitions,
)
from model.consumer.records import (
    CurrentAssignmentTombstone,
    GroupEpochRecord,
    MemberSubscriptionTombstone,
    TargetAssignmentEpochRecord,
    TargetAssignmentMemberRecord,
    TargetAssignmentMemberTombstone,
    TimerCancelled,
    current_assignment_record,
    member_subscription_record,
    rebuild,
)
from model.consumer.state import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    REGEX_RESOLUTION,
    SESSION,
    ConsumerCoordinatorState,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Timer,
)
from model.consumer.txn import _blank, _Rejected, _Txn
from model.errors import ErrorCode
from model.result import Result


class ConsumerCoordinator(GroupDeletion):
    """The KIP-848 coordinator of one shard. Public entry points:

    * ``handle_consumer_group_heartbeat(state, request, ref, now) -> Result``
    * ``handle_offset_commit(state, request, ref, now) -> Result``
    * ``handle_delete_groups(state, request, ref, now) -> Result`` (`model.consumer.group_deletion`)
    * ``advance(state, now) -> Result`` (fire due timers)
    * ``create_topic`` / ``delete_topic`` / ``add_partitions`` (metadata image changes)
    * ``on_loaded(state, now)`` and ``failover(records, now)`` (coordinator failover)
    """

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
        regex_bump, regex_changed = False, False
        if self.config.regex_resolution == "async":
            regex_bump, regex_changed = self.update_regular_expressions(txn, member, updated, now)
        if updated != member or member.member_id not in txn.require_group().members:
            txn.emit(member_subscription_record(txn.group_id, updated))
        bump = regex_bump or self.group_epoch_bump_due(txn.require_group(), member, updated)
        self.maybe_update_subscription_metadata(txn, bump, regex_changed)

        if self.target_assignment_due(txn.require_group()):
            self.compute_target_assignment(txn, now)

        current = txn.require_group().members[member_id]
        changed = regex_changed or self.subscription_changed(member, updated)
        reconciled = self.reconcile_member(txn, current, request.owned(), now, changed)
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

    # -- group epoch (docs/protocol-reference.md#b4)

    # -- target assignment (docs/protocol-reference.md#b2 step 7)

    # -- reconciliation (docs/protocol-reference.md#b2 step 8)

    # -- response (docs/protocol-reference.md#b10)

    # -- timers (docs/protocol-reference.md#b8)

    #: the order of timers that expire at the same instant: (group id, kind, member id) ascending,
    #: or descending when True. Kafka does not fix it: an expired timer task schedules a write
    #: event (coordinator-common CoordinatorTimerImpl.java, apache/kafka@03e726c), and tasks of
    #: one instant leave the timing wheel in the order of its buckets (server-common
    #: util/timer/TimingWheel.java, TimerTaskList.java), not by group or member; the oracle keeps
    #: both orders as hypotheses (docs/oracle.md#timer-ties)
    reverse_ties: bool = False

    def advance(self, state: ConsumerCoordinatorState, now: int) -> Result:
        """Fire every timer with deadline <= ``now`` in deadline order; ties as ``reverse_ties``."""
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
            elif timer.kind == REGEX_RESOLUTION:
                self.on_regex_resolution(txn, timer)
            else:
                self.on_rebalance_timeout(txn, timer)
            txn.commit(result)

    def _next_due_timer(self, state: ConsumerCoordinatorState, now: int) -> tuple[str, Timer] | None:
        def due() -> Iterator[tuple[int, str, str, str, Timer]]:
            for gid, group in state.groups.items():
                for t in group.timers.values():
                    if t.deadline <= now:
                        yield (t.deadline, gid, t.kind, t.member_id, t)

        timers = list(due())
        if not timers:
            return None
        first = min(d[0] for d in timers)
        tied = [d for d in timers if d[0] == first]
        pick = max if self.reverse_ties else min
        best = pick(tied, key=lambda d: d[1:4])
        return best[1], best[4]

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

    # ------------------------------------------------------------------ metadata image (docs/protocol-reference.md#b4)

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
            interval = self.config.assignment_interval_ms
            stamp = group.assignment_timestamp
            if interval > 0 and stamp is not None and stamp + interval > now:  # the recorded interval runs on
                self.schedule_assignment_interval(txn, stamp + interval)
            txn.commit(result)
        return result

    def failover(self, records: list[object], now: int) -> tuple[ConsumerCoordinatorState, Result]:
        """A new coordinator loads the durable records and re-arms timers (docs/protocol-reference.md#b8 "also at load")."""
        state = rebuild(records)
        return state, self.on_loaded(state, now)
