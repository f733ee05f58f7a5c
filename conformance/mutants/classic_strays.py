"""Generic classic mutants that each drop one check of a request a well-behaved consumer never sends:
the teeth of the stray-request promises (model/classic/stray_invariants.py, docs/invariants.md#stray-requests)."""

from __future__ import annotations

from dataclasses import replace

from conformance.mutants.base import Mutant
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import (
    JoinGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
)
from model.classic.records import GroupCreated, OffsetCommitRecord
from model.classic.state import ClassicGroup, ClassicState, GroupState
from model.classic.tx import Tx
from model.errors import ErrorCode
from model.result import Result

E = ErrorCode


class CommitFromAnyone(ClassicCoordinator):
    """A commit whose member id the group does not have, or that carries no identity at all, is
    stored as if it came from a member (ClassicGroup.java `validateOffsetCommit` skipped)."""

    def handle_offset_commit(
        self, state: ClassicState, req: OffsetCommitRequest, ref: int, now: int
    ) -> Result:
        group = state.groups.get(req.group_id)
        if group is None or not group.members or req.member_id in group.members:
            return super().handle_offset_commit(state, req, ref, now)
        member = next(iter(group.members.values()))  # commit in a member's name instead
        return super().handle_offset_commit(
            state,
            replace(
                req,
                member_id=member.member_id,
                generation_id=group.generation,
                group_instance_id=member.instance_id,
            ),
            ref,
            now,
        )


class CommitCreatesGroup(ClassicCoordinator):
    """A commit carrying a generation to a group that does not exist creates the group and stores
    the offsets (OffsetMetadataManager.java `validateOffsetCommit`: only a generation of -1 may)."""

    def handle_offset_commit(
        self, state: ClassicState, req: OffsetCommitRequest, ref: int, now: int
    ) -> Result:
        if req.group_id in state.groups or req.generation_id < 0:
            return super().handle_offset_commit(state, req, ref, now)
        tx = Tx(state)
        tx.emit(GroupCreated(req.group_id))
        results = []
        for p in req.partitions:
            tx.emit(OffsetCommitRecord(req.group_id, p.topic, p.partition, p.offset, p.metadata))
            results.append((p.topic, p.partition, E.NONE))
        tx.reply(ref, OffsetCommitResponse(tuple(results)))
        return tx.result


class CommitAnyPartition(ClassicCoordinator):
    """An offset for a partition that does not exist, or with metadata over
    offset.metadata.max.bytes, is answered NONE when the rest of the commit is valid."""

    def handle_offset_commit(
        self, state: ClassicState, req: OffsetCommitRequest, ref: int, now: int
    ) -> Result:
        result = super().handle_offset_commit(state, req, ref, now)
        group = state.groups.get(req.group_id)
        if (
            group is None
            or req.member_id not in group.members
            or req.generation_id != group.generation
            or group.state != GroupState.STABLE
        ):
            return result
        unchecked = (E.UNKNOWN_TOPIC_OR_PARTITION, E.OFFSET_METADATA_TOO_LARGE)
        result.deliveries = [
            replace(
                d,
                response=OffsetCommitResponse(
                    tuple((t, p, E.NONE if e in unchecked else e) for t, p, e in d.response.partitions)
                ),
            )
            if isinstance(d.response, OffsetCommitResponse)
            else d
            for d in result.deliveries
        ]
        return result


class JoinSessionUnchecked(ClassicCoordinator):
    """A JoinGroup's session timeout is taken whatever group.min/max.session.timeout.ms say
    (GroupMetadataManager.java `classicGroupJoin`'s INVALID_SESSION_TIMEOUT check skipped)."""

    def handle_join_group(self, state: ClassicState, req: JoinGroupRequest, ref: int, now: int) -> Result:
        cfg = self.config  # the bounds are ignored while the join is handled, not changed
        self.config = replace(cfg, min_session_timeout_ms=0, max_session_timeout_ms=2**31 - 1)
        try:
            return super().handle_join_group(state, req, ref, now)
        finally:
            self.config = cfg


class JoinProtocolsUnchecked(ClassicCoordinator):
    """A member joins a non-empty group with a protocol type or protocols the members do not share
    (ClassicGroup.java `supportsProtocols` skipped)."""

    def supports_protocols(self, group: ClassicGroup, protocol_type: str, names: tuple[str, ...]) -> bool:
        return bool(protocol_type) and bool(names)


class SyncProtocolUnchecked(ClassicCoordinator):
    """A SyncGroup naming another protocol type or name than the group's is served (KIP-559's check
    skipped)."""

    def validate_sync(self, group: ClassicGroup, req: SyncGroupRequest) -> ErrorCode:
        error = super().validate_sync(group, req)
        return E.NONE if error == E.INCONSISTENT_GROUP_PROTOCOL else error


class LeaveByInstanceIgnored(ClassicCoordinator):
    """A LeaveGroup naming a static member by group.instance.id alone is answered UNKNOWN_MEMBER_ID
    for it and removes nobody (KIP-345's administrative removal missing)."""

    def leave_one(self, tx: Tx, group: ClassicGroup, ident: MemberIdentity) -> ErrorCode:
        return E.UNKNOWN_MEMBER_ID if not ident.member_id else super().leave_one(tx, group, ident)


def _stray(name: str, fault: str, source: str, expect: str, coordinator: type) -> Mutant:
    return Mutant(name, "classic", "generic", fault, source, (expect,), coordinator=coordinator)


CLASSIC_STRAY_MUTANTS: tuple[Mutant, ...] = (
    _stray(
        "commit-from-anyone",
        "a commit from a member id the group does not have, or without identity, is stored",
        "Kafka protocol guide, OffsetCommit (UNKNOWN_MEMBER_ID); ClassicGroup.java validateOffsetCommit at apache/kafka 1eb7644",
        "classic.commit_needs_membership",
        CommitFromAnyone,
    ),
    _stray(
        "commit-creates-group",
        "a commit carrying a generation to a group that does not exist creates it",
        "OffsetMetadataManager.java validateOffsetCommit at apache/kafka 1eb7644 (ILLEGAL_GENERATION, GROUP_ID_NOT_FOUND)",
        "classic.commit_needs_membership",
        CommitCreatesGroup,
    ),
    _stray(
        "commit-any-partition",
        "an offset for a partition that does not exist, or with oversized metadata, is accepted",
        "Kafka protocol guide (UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE); KafkaApis.scala handleOffsetCommitRequest at apache/kafka 1eb7644",
        "classic.commit_partitions_checked",
        CommitAnyPartition,
    ),
    _stray(
        "join-session-unchecked",
        "a JoinGroup's session timeout outside group.min/max.session.timeout.ms is taken",
        "Kafka protocol guide (INVALID_SESSION_TIMEOUT); broker configs group.min.session.timeout.ms, group.max.session.timeout.ms",
        "classic.invalid_join_refused",
        JoinSessionUnchecked,
    ),
    _stray(
        "join-protocols-unchecked",
        "a member joins a non-empty group with a protocol type or protocols its members do not share",
        "Kafka protocol guide (INCONSISTENT_GROUP_PROTOCOL); ClassicGroup.java supportsProtocols at apache/kafka 1eb7644",
        "classic.invalid_join_refused",
        JoinProtocolsUnchecked,
    ),
    _stray(
        "sync-protocol-unchecked",
        "a SyncGroup naming another protocol type or name than the group's is served",
        "KIP-559 (SyncGroup v5 carries ProtocolType and ProtocolName; INCONSISTENT_GROUP_PROTOCOL)",
        "classic.sync_protocol_matches",
        SyncProtocolUnchecked,
    ),
    _stray(
        "leave-by-instance-ignored",
        "a LeaveGroup naming a static member by group.instance.id alone removes nobody",
        "KIP-345 (administrative removal by group.instance.id); GroupMetadataManager.java classicGroupLeave at apache/kafka 1eb7644",
        "classic.leave_by_instance_id",
        LeaveByInstanceIgnored,
    ),
)
