"""Classic group coordinator handlers (docs/protocol-reference.md#a2 to #a8; Kafka 4.0 GMM `classicGroup*`).

Each public handler is ``handle_<api>(state, request, ref, now) -> Result``: ``ref`` names the
request so a parked JoinGroup/SyncGroup can be answered later by another handler or a timer. Every
rule is its own method so that a mutant (conformance/mutants) overrides exactly one of them.
"""

from __future__ import annotations

from dataclasses import replace

from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetCommitResponse,
    Request,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.classic.rebalance import RebalanceRules
from model.classic.records import (
    GroupCreated,
    MemberRemoved,
    MemberUpserted,
    OffsetCommitRecord,
    PendingMember,
    PendingSync,
)
from model.classic.state import ClassicGroup, ClassicState, Member
from model.classic.tx import E, S, Tx
from model.errors import ErrorCode
from model.result import Result


class ClassicCoordinator(RebalanceRules):
    """The classic protocol's rules. Holds configuration and the chooser, never state."""

    # ------------------------------------------------------------------ dispatch
    def handle(self, state: ClassicState, request: Request, ref: int, now: int) -> Result:
        if isinstance(request, JoinGroupRequest):
            return self.handle_join_group(state, request, ref, now)
        if isinstance(request, SyncGroupRequest):
            return self.handle_sync_group(state, request, ref, now)
        if isinstance(request, HeartbeatRequest):
            return self.handle_heartbeat(state, request, ref, now)
        if isinstance(request, LeaveGroupRequest):
            return self.handle_leave_group(state, request, ref, now)
        return self.handle_offset_commit(state, request, ref, now)

    # ------------------------------------------------------------------ validation

    # ------------------------------------------------------------------ JoinGroup
    def handle_join_group(self, state: ClassicState, req: JoinGroupRequest, ref: int, now: int) -> Result:
        tx = Tx(state)
        if not req.group_id:
            tx.reply(ref, JoinGroupResponse(E.INVALID_GROUP_ID, member_id=req.member_id))
            return tx.result
        cfg = self.config
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            tx.reply(ref, JoinGroupResponse(E.INVALID_SESSION_TIMEOUT, member_id=req.member_id))
            return tx.result
        group = state.groups.get(req.group_id)
        if group is None:
            if req.member_id:
                tx.reply(ref, JoinGroupResponse(E.UNKNOWN_MEMBER_ID, member_id=req.member_id))
                return tx.result
            tx.emit(GroupCreated(req.group_id))
            group = state.groups[req.group_id]
        if not self.accept_joining_member(group, req.member_id):
            if req.member_id in group.members:
                self.remove_member_and_update_group(tx, group, req.member_id, now)
            tx.reply(ref, JoinGroupResponse(E.GROUP_MAX_SIZE_REACHED, member_id=""))
            return tx.result
        if not req.member_id:
            self.join_new_member(tx, group, req, ref, now)
        else:
            self.join_existing_member(tx, group, req, ref, now)
        self.maybe_complete_join(tx, group, now)
        return tx.result

    def join_new_member(self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, ref: int, now: int) -> None:
        if group.state == S.DEAD:
            tx.reply(ref, JoinGroupResponse(E.COORDINATOR_NOT_AVAILABLE))
            return
        if not self.supports_protocols(group, req.protocol_type, tuple(n for n, _ in req.protocols)):
            tx.reply(ref, JoinGroupResponse(E.INCONSISTENT_GROUP_PROTOCOL))
            return
        new_id = self.new_member_id(group, req)
        if req.group_instance_id is not None:
            if req.group_instance_id in group.static_members:
                self.replace_static_member(tx, group, req, new_id, ref, now)
            else:
                self.add_member_and_rebalance(tx, group, req, new_id, ref, now)
        elif req.version >= 4:
            self.require_known_member_id(tx, group, req, new_id, ref, now)
        else:
            self.add_member_and_rebalance(tx, group, req, new_id, ref, now)

    def new_member_id(self, group: ClassicGroup, req: JoinGroupRequest) -> str:
        """A fresh member id: the instance id (static) or the client id, a dash and a UUID
        (CG `generateMemberId`)."""
        prefix = req.group_instance_id if req.group_instance_id is not None else req.client_id
        return f"{prefix}-{self.chooser.new_uuid()}"

    def require_known_member_id(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, new_id: str, ref: int, now: int
    ) -> None:
        """KIP-394: park the id in the pending set for one session timeout (GMM L4665)."""
        tx.emit(PendingMember(group.group_id, new_id, True))
        tx.timer(group, f"pending:{new_id}", now + req.session_timeout_ms)
        tx.reply(ref, JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id=new_id))

    def join_existing_member(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, ref: int, now: int
    ) -> None:
        mid = req.member_id
        if group.state == S.DEAD:
            tx.reply(ref, JoinGroupResponse(E.COORDINATOR_NOT_AVAILABLE, member_id=mid))
            return
        if not self.supports_protocols(group, req.protocol_type, tuple(n for n, _ in req.protocols)):
            tx.reply(ref, JoinGroupResponse(E.INCONSISTENT_GROUP_PROTOCOL, member_id=mid))
            return
        if mid in group.pending_members:
            tx.emit(PendingMember(group.group_id, mid, False))
            tx.timer(group, f"pending:{mid}", None)
            self.add_member_and_rebalance(tx, group, req, mid, ref, now)
            return
        error = self.validate_member(group, mid, req.group_instance_id)
        if error != E.NONE:
            tx.reply(ref, JoinGroupResponse(error, member_id=mid))
            return
        member = group.members[mid]
        same = member.protocols == req.protocols
        if group.state == S.PREPARING_REBALANCE:
            self.update_member_and_rebalance(tx, group, member, req, ref, now)
        elif group.state == S.COMPLETING_REBALANCE:
            if same:
                tx.reply(ref, self.join_response(group, mid, full=mid == group.leader))
            else:
                self.update_member_and_rebalance(tx, group, member, req, ref, now)
        elif group.state == S.STABLE:
            if mid == group.leader or not same:
                self.update_member_and_rebalance(tx, group, member, req, ref, now)
            else:
                tx.reply(ref, self.join_response(group, mid, full=False))
        else:  # Empty with members cannot happen; validate_member already failed
            tx.reply(ref, JoinGroupResponse(E.UNKNOWN_MEMBER_ID, member_id=mid))

    def add_member_and_rebalance(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, member_id: str, ref: int, now: int
    ) -> None:
        """`addMemberThenRebalanceOrCompleteJoin` (GMM L5138)."""
        member = Member(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.session_timeout_ms,
            req.effective_rebalance_timeout_ms,
            req.protocol_type,
            req.protocols,
            awaiting_join=ref,
            join_version=req.version,
            is_new=True,
        )
        if group.state == S.PREPARING_REBALANCE and group.previous_state == S.EMPTY:
            tx.set(group, new_member_added=True)
        if not group.members:
            tx.set(group, protocol_type=req.protocol_type)
        tx.emit(MemberUpserted(group.group_id, member))
        if group.leader is None:
            tx.set(group, leader=member_id)
        tx.timer(group, f"expire:{member_id}", now + self.config.new_member_join_timeout_ms)
        self.maybe_prepare_rebalance_or_complete_join(tx, group, now)

    def update_member_and_rebalance(
        self, tx: Tx, group: ClassicGroup, member: Member, req: JoinGroupRequest, ref: int, now: int
    ) -> None:
        """A parked JoinGroup of the same member is superseded silently (CG `updateMember` L1189)."""
        updated = replace(
            member,
            protocols=req.protocols,
            session_timeout_ms=req.session_timeout_ms,
            rebalance_timeout_ms=req.effective_rebalance_timeout_ms,
            awaiting_join=ref,
            join_version=req.version,
        )
        tx.emit(MemberUpserted(group.group_id, updated))
        self.maybe_prepare_rebalance_or_complete_join(tx, group, now)

    def replace_static_member(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, new_id: str, ref: int, now: int
    ) -> None:
        """KIP-345 replacement of a known instance by an unknown member id (docs/protocol-reference.md#a3-1; GMM L5519, CG L542)."""
        assert req.group_instance_id is not None
        old_id = group.static_members[req.group_instance_id]
        old = group.members[old_id]
        if old.awaiting_join is not None:
            tx.reply(old.awaiting_join, JoinGroupResponse(E.FENCED_INSTANCE_ID, member_id=old_id))
        if old.awaiting_sync is not None:
            tx.reply(old.awaiting_sync, SyncGroupResponse(E.FENCED_INSTANCE_ID))
        was_leader = group.leader == old_id
        previous_leader = group.leader or ""
        old_protocol = group.protocol
        tx.emit(MemberRemoved(group.group_id, old_id))
        tx.timer(group, f"expire:{old_id}", None)
        pending_sync = group.pending_sync | ({new_id} if old_id in group.pending_sync else set())
        new = replace(
            old,
            member_id=new_id,
            protocols=req.protocols,
            session_timeout_ms=req.session_timeout_ms,
            rebalance_timeout_ms=req.effective_rebalance_timeout_ms,
            awaiting_join=None,
            awaiting_sync=None,
            join_version=req.version,
        )
        tx.emit(MemberUpserted(group.group_id, new))
        if pending_sync != group.pending_sync:
            tx.emit(PendingSync(group.group_id, frozenset(pending_sync)))
        if was_leader:
            tx.set(group, leader=new_id)
        # the new id's heartbeat is scheduled at once with the (old) session timeout, in every state
        # (GMM updateStaticMemberThenRebalanceOrCompleteJoin: rescheduleClassicGroupMemberHeartbeat)
        tx.timer(group, f"expire:{new_id}", now + old.session_timeout_ms)
        if group.state == S.STABLE:
            if self.select_protocol(group, dry_run=True) == old_protocol:
                if not self.persist(tx, group):
                    self.revert_static_replacement(tx, group, old, new_id, ref, now)
                    return
                tx.timer(group, f"expire:{new_id}", now + new.session_timeout_ms)
                if req.version >= 9:
                    is_leader = group.leader == new_id
                    resp = replace(
                        self.join_response(group, new_id, full=is_leader), skip_assignment=is_leader
                    )
                else:
                    resp = replace(self.join_response(group, new_id, full=False), leader=previous_leader)
                tx.reply(ref, resp)
                return
            tx.emit(MemberUpserted(group.group_id, replace(new, awaiting_join=ref)))
            self.prepare_rebalance(tx, group, now)
        elif group.state == S.COMPLETING_REBALANCE:
            tx.emit(MemberUpserted(group.group_id, replace(new, awaiting_join=ref)))
            self.prepare_rebalance(tx, group, now)
        else:
            tx.emit(MemberUpserted(group.group_id, replace(new, awaiting_join=ref)))
            self.maybe_complete_join(tx, group, now)

    def revert_static_replacement(
        self, tx: Tx, group: ClassicGroup, old: Member, new_id: str, ref: int, now: int
    ) -> None:
        """The append of a Stable static replacement failed: the old member id is restored and the
        join answered with the append error (GMM updateStaticMemberThenRebalanceOrCompleteJoin,
        "Reverting to old member id"; COEH L52-76 maps the failure to COORDINATOR_NOT_AVAILABLE)."""
        pending = new_id in group.pending_sync
        tx.emit(MemberRemoved(group.group_id, new_id))
        tx.timer(group, f"expire:{new_id}", None)
        tx.emit(MemberUpserted(group.group_id, replace(old, awaiting_join=None, awaiting_sync=None)))
        if pending:
            tx.emit(PendingSync(group.group_id, frozenset(group.pending_sync | {old.member_id})))
        if group.leader == new_id:
            tx.set(group, leader=old.member_id)
        tx.timer(group, f"expire:{old.member_id}", now + old.session_timeout_ms)
        tx.reply(
            ref,
            JoinGroupResponse(
                E.COORDINATOR_NOT_AVAILABLE,
                generation_id=group.generation,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol,
                leader=group.leader or "",
                member_id="",
            ),
        )

    # ------------------------------------------------------------------ SyncGroup
    def handle_sync_group(self, state: ClassicState, req: SyncGroupRequest, ref: int, now: int) -> Result:
        """Validation order of the Scala `doSyncGroup` (docs/protocol-reference.md#do-sync-group) and #a4.

        SyncGroup v5+ must carry ProtocolType and ProtocolName: KafkaApis answers
        INCONSISTENT_GROUP_PROTOCOL before anything else when either is null (docs/protocol-reference.md#a2 item 1;
        KafkaApis.scala L1328, SyncGroupRequest.java L83 `areMandatoryProtocolTypeAndNamePresent`).
        """
        tx = Tx(state)
        if req.version >= 5 and (req.protocol_type is None or req.protocol_name is None):
            tx.reply(ref, SyncGroupResponse(E.INCONSISTENT_GROUP_PROTOCOL))
            return tx.result
        group = state.groups.get(req.group_id)
        if not req.group_id:
            tx.reply(ref, SyncGroupResponse(E.INVALID_GROUP_ID))
            return tx.result
        if group is None or group.state == S.EMPTY:
            tx.reply(ref, SyncGroupResponse(E.UNKNOWN_MEMBER_ID))
            return tx.result
        if group.state == S.DEAD:
            tx.reply(ref, SyncGroupResponse(E.COORDINATOR_NOT_AVAILABLE))
            return tx.result
        error = self.validate_sync(group, req)
        if error != E.NONE:
            tx.reply(ref, SyncGroupResponse(error))
            return tx.result
        if group.state == S.PREPARING_REBALANCE:
            tx.reply(ref, SyncGroupResponse(E.REBALANCE_IN_PROGRESS))
            return tx.result
        member = group.members[req.member_id]
        self.sync_received(tx, group, req.member_id)
        if group.state == S.COMPLETING_REBALANCE:
            tx.emit(MemberUpserted(group.group_id, replace(member, awaiting_sync=ref)))
            if req.member_id == group.leader:
                self.install_assignment(tx, group, req, now)
        else:  # Stable: the current assignment; unlike the Scala GroupCoordinator, GroupMetadataManager
            # `classicGroupSyncGroup` does not re-arm the member's session timer here
            tx.reply(
                ref,
                SyncGroupResponse(E.NONE, group.protocol_type, group.protocol, member.assignment),
            )
        return tx.result

    def validate_sync(self, group: ClassicGroup, req: SyncGroupRequest) -> ErrorCode:
        error = self.validate_member(group, req.member_id, req.group_instance_id)
        if error != E.NONE:
            return error
        if req.generation_id != group.generation:
            return E.ILLEGAL_GENERATION
        if req.protocol_type is not None and group.protocol_type is not None:
            if req.protocol_type != group.protocol_type:
                return E.INCONSISTENT_GROUP_PROTOCOL
        if req.protocol_name is not None and group.protocol is not None:
            if req.protocol_name != group.protocol:
                return E.INCONSISTENT_GROUP_PROTOCOL
        return E.NONE

    def sync_received(self, tx: Tx, group: ClassicGroup, member_id: str) -> None:
        if member_id in group.pending_sync:
            tx.emit(PendingSync(group.group_id, frozenset(group.pending_sync - {member_id})))
            if not group.pending_sync:
                tx.timer(group, "sync", None)

    def install_assignment(self, tx: Tx, group: ClassicGroup, req: SyncGroupRequest, now: int) -> None:
        """Leader's assignment: missing members get b"", non-members ignored; visible only once persisted."""
        given = dict(req.assignments)
        before = {mid: m.assignment for mid, m in group.members.items()}
        for mid, member in list(group.members.items()):
            tx.emit(MemberUpserted(group.group_id, replace(member, assignment=given.get(mid, b""))))
        if not self.persist(tx, group):
            for mid, member in list(group.members.items()):
                tx.emit(MemberUpserted(group.group_id, replace(member, assignment=before[mid])))
            self.reset_assignments_with_error(tx, group, E.COORDINATOR_NOT_AVAILABLE, now)
            self.prepare_rebalance(tx, group, now)
            return
        self.propagate_assignment(tx, group, now)
        tx.set(group, state=S.STABLE, previous_state=group.state)

    # ------------------------------------------------------------------ Heartbeat
    def handle_heartbeat(self, state: ClassicState, req: HeartbeatRequest, ref: int, now: int) -> Result:
        """docs/protocol-reference.md#a5 (GMM L5955, L6005)."""
        tx = Tx(state)
        group = state.groups.get(req.group_id)
        if not req.group_id:
            error = E.INVALID_GROUP_ID
        elif group is None:
            error = E.UNKNOWN_MEMBER_ID
        elif group.state == S.DEAD:
            error = E.COORDINATOR_NOT_AVAILABLE
        else:
            error = self.validate_member(group, req.member_id, req.group_instance_id)
            if error == E.NONE and req.generation_id != group.generation:
                error = E.ILLEGAL_GENERATION
            if error == E.NONE:
                if group.state == S.EMPTY:
                    error = E.UNKNOWN_MEMBER_ID
                else:
                    member = group.members[req.member_id]
                    tx.timer(group, f"expire:{req.member_id}", now + member.session_timeout_ms)
                    if group.state == S.PREPARING_REBALANCE:
                        error = E.REBALANCE_IN_PROGRESS
        tx.reply(ref, HeartbeatResponse(error))
        return tx.result

    # ------------------------------------------------------------------ LeaveGroup
    def handle_leave_group(self, state: ClassicState, req: LeaveGroupRequest, ref: int, now: int) -> Result:
        """docs/protocol-reference.md#a6 (GMM L6109, L6200). No generation check."""
        tx = Tx(state)
        group = state.groups.get(req.group_id)
        if group is None or group.state == S.DEAD:
            top = E.UNKNOWN_MEMBER_ID if group is None else E.COORDINATOR_NOT_AVAILABLE
            members = tuple(
                LeaveGroupMemberResponse(m.member_id, m.group_instance_id, top) for m in req.members
            )
            return self._leave_reply(tx, req, ref, top, members)
        results: list[LeaveGroupMemberResponse] = []
        removed = 0
        for ident in req.members:
            error = self.leave_one(tx, group, ident)
            if error == E.NONE and ident.member_id not in group.pending_members:
                removed += 1
            results.append(LeaveGroupMemberResponse(ident.member_id, ident.group_instance_id, error))
        if removed:
            self.after_member_removed(tx, group, now)
        top = results[0].error if req.version < 3 and results else E.NONE
        return self._leave_reply(tx, req, ref, top, tuple(results))

    def leave_one(self, tx: Tx, group: ClassicGroup, ident: MemberIdentity) -> ErrorCode:
        mid = ident.member_id
        if not mid:
            static_id = group.static_members.get(ident.group_instance_id or "")
            if ident.group_instance_id is None or static_id is None:
                return E.UNKNOWN_MEMBER_ID
            mid = static_id
        elif mid in group.pending_members:
            tx.emit(PendingMember(group.group_id, mid, False))
            tx.timer(group, f"pending:{mid}", None)
            return E.NONE
        else:
            error = self.validate_member(group, mid, ident.group_instance_id)
            if error != E.NONE:
                return error
        member = group.members[mid]
        if member.awaiting_join is not None:
            tx.reply(member.awaiting_join, JoinGroupResponse(E.UNKNOWN_MEMBER_ID, member_id=""))
        self.remove_member(tx, group, mid)
        return E.NONE

    def _leave_reply(
        self,
        tx: Tx,
        req: LeaveGroupRequest,
        ref: int,
        top: ErrorCode,
        members: tuple[LeaveGroupMemberResponse, ...],
    ) -> Result:
        tx.reply(ref, LeaveGroupResponse(top, members if req.version >= 3 else ()))
        return tx.result

    # ------------------------------------------------------------------ OffsetCommit
    def handle_offset_commit(
        self, state: ClassicState, req: OffsetCommitRequest, ref: int, now: int
    ) -> Result:
        """docs/protocol-reference.md#a7 (OMM L295, L443; CG L822)."""
        tx = Tx(state)
        group = state.groups.get(req.group_id)
        error = E.NONE
        create = False
        if group is None:
            if req.generation_id < 0:
                create = True
            else:
                error = E.GROUP_ID_NOT_FOUND if req.version >= 9 else E.ILLEGAL_GENERATION
        elif group.state == S.DEAD:
            error = E.COORDINATOR_NOT_AVAILABLE
        elif req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
            error = self.validate_member(group, req.member_id, req.group_instance_id)
            if error == E.NONE and req.generation_id != group.generation:
                error = E.ILLEGAL_GENERATION
            if error == E.NONE and group.state == S.COMPLETING_REBALANCE:
                error = E.REBALANCE_IN_PROGRESS
        elif group.state != S.EMPTY:
            error = E.UNKNOWN_MEMBER_ID
        results: list[tuple[str, int, ErrorCode]] = []
        for p in req.partitions:
            if state.topics.get(p.topic, 0) <= p.partition or p.partition < 0:
                results.append((p.topic, p.partition, E.UNKNOWN_TOPIC_OR_PARTITION))
            elif error != E.NONE:
                results.append((p.topic, p.partition, error))
            elif len((p.metadata or "").encode()) > self.config.offset_metadata_max_bytes:
                results.append((p.topic, p.partition, E.OFFSET_METADATA_TOO_LARGE))
            else:
                if create:
                    tx.emit(GroupCreated(req.group_id))
                    create = False
                tx.emit(OffsetCommitRecord(req.group_id, p.topic, p.partition, p.offset, p.metadata))
                results.append((p.topic, p.partition, E.NONE))
        group = state.groups.get(req.group_id)
        if group is not None and error == E.NONE and req.member_id in group.members:
            member = group.members[req.member_id]
            tx.timer(group, f"expire:{req.member_id}", now + member.session_timeout_ms)
        tx.reply(ref, OffsetCommitResponse(tuple(results)))
        return tx.result
