"""Classic coordinator records and `apply`, the only writer of `ClassicState` (docs/model.md).

Durable records are the ones Kafka persists in `__consumer_offsets` (GroupMetadataValue with member
assignments, OffsetCommitValue; GMM L4343 replays them on load). Everything else is in-memory
coordinator state that a failover loses ("Handling Coordinator Failures", docs/protocol-reference.md#client-side-assignment; #a8
"an in-flight rebalance is not persisted").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from model.classic.state import ClassicGroup, ClassicState, GroupState, Member, Timer


@dataclass(frozen=True)
class GroupCreated:
    group_id: str
    durable = False


@dataclass(frozen=True)
class GroupUpdated:
    """Scalar group fields changed: (field name, new value) pairs."""

    group_id: str
    changes: tuple[tuple[str, Any], ...]
    durable = False


@dataclass(frozen=True)
class MemberUpserted:
    group_id: str
    member: Member
    durable = False


@dataclass(frozen=True)
class MemberRemoved:
    group_id: str
    member_id: str
    durable = False


@dataclass(frozen=True)
class PendingMember:
    """A KIP-394 MEMBER_ID_REQUIRED id added to (present=True) or removed from the pending set."""

    group_id: str
    member_id: str
    present: bool
    durable = False


@dataclass(frozen=True)
class PendingSync:
    group_id: str
    member_ids: frozenset[str]
    durable = False


@dataclass(frozen=True)
class TimerSet:
    """Arm (deadline set) or cancel (deadline None) timer `key` of a group."""

    group_id: str
    key: str
    deadline: int | None
    args: tuple[int, ...] = ()
    durable = False


@dataclass(frozen=True)
class AppendFault:
    """Fault injection: the next group-metadata append fails (armed) or the fault was consumed."""

    armed: bool
    durable = False


@dataclass(frozen=True)
class MemberMetadata:
    member_id: str
    instance_id: str | None
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataRecord:
    """GroupMetadataValue: what a new coordinator loads (GMM L4343)."""

    group_id: str
    generation: int
    protocol_type: str | None
    protocol: str | None
    leader: str | None
    members: tuple[MemberMetadata, ...]
    durable = True


@dataclass(frozen=True)
class OffsetCommitRecord:
    group_id: str
    topic: str
    partition: int
    offset: int
    metadata: str | None
    durable = True


@dataclass(frozen=True)
class TopicMetadata:
    """Cluster metadata (not a coordinator record): a topic created or grown to `partitions`."""

    topic: str
    partitions: int
    durable = True


@dataclass(frozen=True)
class GroupDeleted:
    """The group's metadata tombstone: the periodic cleanup deleted an Empty group without offsets."""

    group_id: str
    durable = True


Record = (
    GroupCreated
    | GroupDeleted
    | GroupUpdated
    | MemberUpserted
    | MemberRemoved
    | PendingMember
    | PendingSync
    | TimerSet
    | AppendFault
    | GroupMetadataRecord
    | OffsetCommitRecord
    | TopicMetadata
)

_GROUP_FIELDS = frozenset(
    {"state", "previous_state", "generation", "protocol_type", "protocol", "leader", "new_member_added"}
)


def apply(state: ClassicState, record: Record) -> None:
    """Apply one record. GroupMetadataRecord is a checkpoint: live state already holds it."""
    if isinstance(record, GroupCreated):
        state.groups[record.group_id] = ClassicGroup(record.group_id)
    elif isinstance(record, GroupDeleted):
        state.groups.pop(record.group_id, None)
    elif isinstance(record, GroupUpdated):
        group = state.groups[record.group_id]
        for name, value in record.changes:
            if name not in _GROUP_FIELDS:
                raise ValueError(f"GroupUpdated: unknown field {name}")
            setattr(group, name, value)
    elif isinstance(record, MemberUpserted):
        group = state.groups[record.group_id]
        member = record.member
        group.members[member.member_id] = member
        if member.instance_id is not None:
            group.static_members[member.instance_id] = member.member_id
    elif isinstance(record, MemberRemoved):
        group = state.groups[record.group_id]
        removed = group.members.pop(record.member_id, None)
        if removed is not None and removed.instance_id is not None:
            if group.static_members.get(removed.instance_id) == record.member_id:
                del group.static_members[removed.instance_id]
        group.pending_sync.discard(record.member_id)
    elif isinstance(record, PendingMember):
        group = state.groups[record.group_id]
        if record.present:
            group.pending_members.add(record.member_id)
        else:
            group.pending_members.discard(record.member_id)
    elif isinstance(record, PendingSync):
        state.groups[record.group_id].pending_sync = set(record.member_ids)
    elif isinstance(record, TimerSet):
        timers = state.groups[record.group_id].timers
        if record.deadline is None:
            timers.pop(record.key, None)
        else:
            timers[record.key] = Timer(record.deadline, record.args)
    elif isinstance(record, AppendFault):
        state.fail_next_append = record.armed
    elif isinstance(record, OffsetCommitRecord):
        state.offsets[(record.group_id, record.topic, record.partition)] = (record.offset, record.metadata)
    elif isinstance(record, TopicMetadata):
        state.topics[record.topic] = record.partitions
    elif isinstance(record, GroupMetadataRecord):
        pass
    else:  # pragma: no cover - exhaustive
        raise TypeError(f"not a classic record: {record!r}")


def load(durable: list[Any], now: int) -> ClassicState:
    """A new coordinator's state from the persisted records (GMM L4343 replay, L4226 onLoaded).

    Groups load as Stable with the last persisted generation (Empty when it has no members); every
    member's expiry timer is armed from the load time; nothing of an in-flight rebalance survives.
    """
    state = ClassicState()
    last: dict[str, GroupMetadataRecord] = {}
    for rec in durable:
        if isinstance(rec, GroupMetadataRecord):
            last[rec.group_id] = rec
        elif isinstance(rec, GroupDeleted):
            last.pop(rec.group_id, None)
        elif isinstance(rec, OffsetCommitRecord | TopicMetadata):
            apply(state, rec)
    for gid, meta in last.items():
        group = ClassicGroup(gid, generation=meta.generation, protocol_type=meta.protocol_type)
        group.protocol = meta.protocol
        group.leader = meta.leader if meta.members else None
        group.state = GroupState.STABLE if meta.members else GroupState.EMPTY
        for mm in meta.members:
            protocols = ((meta.protocol or "", mm.subscription),)
            member = Member(
                mm.member_id,
                mm.instance_id,
                mm.client_id,
                mm.session_timeout_ms,
                mm.rebalance_timeout_ms,
                meta.protocol_type or "",
                protocols,
                assignment=mm.assignment,
            )
            group.members[mm.member_id] = member
            if mm.instance_id is not None:
                group.static_members[mm.instance_id] = mm.member_id
            group.timers[f"expire:{mm.member_id}"] = Timer(now + mm.session_timeout_ms)
        state.groups[gid] = group
    return state
