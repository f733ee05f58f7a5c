"""The records a KIP-848 coordinator appends, and `apply`, the only function that changes state.

Durable group records mirror the consumer-group records Kafka writes to `__consumer_offsets`
(`ConsumerGroupMetadata`, `ConsumerGroupPartitionMetadata`, `ConsumerGroupMemberMetadata`,
`ConsumerGroupTargetAssignmentMember`, `ConsumerGroupTargetAssignmentMetadata`,
`ConsumerGroupCurrentMemberAssignment`, their tombstones, and `OffsetCommit`); replaying them is
Kafka's load (GMM `replay`, CoG `updateMember`/`removeMember`, docs/protocol-reference.md#b2, #b7). Topic records
stand for the cluster metadata image (KRaft, not `__consumer_offsets`): they also survive failover,
so they are durable too. Timer and refresh records are volatile: Kafka keeps timers in memory and
re-arms them on load (`on_loaded` in the coordinator).

Partition epochs (CoG L1014-1110) are maintained on replay of current-assignment records, as Kafka
does; where Kafka throws on an inconsistent update (a partition added while held, or removed with a
different epoch) the model keeps going so that an invariant, not a crash, reports the problem.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import ClassVar

from model.consumer.messages import TopicPartition
from model.consumer.offset_records import OffsetCommitRecord, OffsetCommitTombstone
from model.consumer.regex_records import RegexResolvedRecord, RegexResolvedTombstone
from model.consumer.state import (
    LEAVE_GROUP_MEMBER_EPOCH,
    ClassicMemberMetadata,
    CommittedOffset,
    ConsumerCoordinatorState,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    ResolvedRegex,
    Timer,
)

# -- group records (durable, __consumer_offsets) -------------------------------------------------


@dataclass(frozen=True)
class GroupEpochRecord:
    """ConsumerGroupMetadata: the group epoch."""

    durable: ClassVar[bool] = True
    group_id: str
    epoch: int


@dataclass(frozen=True)
class SubscriptionMetadataRecord:
    """ConsumerGroupPartitionMetadata: partition count of every subscribed, existing topic."""

    durable: ClassVar[bool] = True
    group_id: str
    topics: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class MemberSubscriptionRecord:
    """ConsumerGroupMemberMetadata: the member's subscription and settings."""

    durable: ClassVar[bool] = True
    group_id: str
    member_id: str
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    server_assignor: str | None
    classic_member_metadata: ClassicMemberMetadata | None = None
    """Present iff the member uses the classic protocol (docs/protocol-reference.md#b13)."""


@dataclass(frozen=True)
class MemberSubscriptionTombstone:
    durable: ClassVar[bool] = True
    group_id: str
    member_id: str


@dataclass(frozen=True)
class TargetAssignmentMemberRecord:
    """ConsumerGroupTargetAssignmentMember: one member's target partitions."""

    durable: ClassVar[bool] = True
    group_id: str
    member_id: str
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class TargetAssignmentMemberTombstone:
    durable: ClassVar[bool] = True
    group_id: str
    member_id: str


@dataclass(frozen=True)
class TargetAssignmentEpochRecord:
    """ConsumerGroupTargetAssignmentMetadata: the assignment epoch."""

    durable: ClassVar[bool] = True
    group_id: str
    assignment_epoch: int
    timestamp: int | None = None
    """When the target was computed (Kafka 4.3+, KAFKA-20266); None where it is not recorded."""


@dataclass(frozen=True)
class CurrentAssignmentRecord:
    """ConsumerGroupCurrentMemberAssignment: epochs, state, assigned and pending-revocation sets."""

    durable: ClassVar[bool] = True
    group_id: str
    member_id: str
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: tuple[TopicPartition, ...]
    pending_revocation: tuple[TopicPartition, ...]
    assignment_epochs: tuple[tuple[TopicPartition, int], ...] | None = None
    """KIP-1251 AssignmentEpochs (Kafka 4.3+); None: derived from the member's previous record."""


def derive_assignment_epochs(
    old: ConsumerMember | None, record: CurrentAssignmentRecord
) -> tuple[tuple[TopicPartition, int], ...]:
    """A held partition keeps the epoch it was given at; a new one takes the record's member epoch
    (never below 0: KIP-1251 default for records written without epochs)."""
    known = dict(old.assignment_epochs) if old is not None else {}
    epoch = max(record.member_epoch, 0)
    held = set(record.assigned) | set(record.pending_revocation)
    return tuple(sorted((tp, known.get(tp, epoch)) for tp in held))


@dataclass(frozen=True)
class CurrentAssignmentTombstone:
    durable: ClassVar[bool] = True
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ConsumerGroupTombstone:
    """The group is deleted (CoG ``createGroupTombstoneRecords``): on a conversion to a classic group
    (docs/protocol-reference.md#b13), when an empty consumer group is replaced by a classic one, or
    by DeleteGroups (after its offsets' tombstones). Committed offsets are not group records."""

    durable: ClassVar[bool] = True
    group_id: str


# -- metadata image (durable: the cluster metadata log, survives coordinator failover) --------------


@dataclass(frozen=True)
class TopicRecord:
    """A topic exists with ``partitions`` partitions (created, or partitions added)."""

    durable: ClassVar[bool] = True
    topic: str
    partitions: int


@dataclass(frozen=True)
class TopicDeletedRecord:
    durable: ClassVar[bool] = True
    topic: str


# -- volatile (in-memory coordinator state) -------------------------------------------------------


@dataclass(frozen=True)
class TimerScheduled:
    durable: ClassVar[bool] = False
    group_id: str
    kind: str
    member_id: str
    deadline: int
    epoch: int | None = None
    regexes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TimerCancelled:
    durable: ClassVar[bool] = False
    group_id: str
    kind: str
    member_id: str


@dataclass(frozen=True)
class MetadataRefreshRecord:
    """Marks (``due=True``) or clears the group's subscription-metadata refresh (MG L417/L431)."""

    durable: ClassVar[bool] = False
    group_id: str
    due: bool


@dataclass(frozen=True)
class AssignorUsedRecord:
    """Which server assignor computed the current target (for invariants; not a Kafka record)."""

    durable: ClassVar[bool] = False
    group_id: str
    assignor: str | None


ConsumerRecord = (
    GroupEpochRecord
    | SubscriptionMetadataRecord
    | MemberSubscriptionRecord
    | MemberSubscriptionTombstone
    | TargetAssignmentMemberRecord
    | TargetAssignmentMemberTombstone
    | TargetAssignmentEpochRecord
    | CurrentAssignmentRecord
    | CurrentAssignmentTombstone
    | ConsumerGroupTombstone
    | OffsetCommitRecord
    | OffsetCommitTombstone
    | TopicRecord
    | TopicDeletedRecord
    | TimerScheduled
    | TimerCancelled
    | MetadataRefreshRecord
    | AssignorUsedRecord
)


def is_durable(record: object) -> bool:
    return bool(getattr(record, "durable", False))


def current_assignment_record(group_id: str, member: ConsumerMember) -> CurrentAssignmentRecord:
    return CurrentAssignmentRecord(
        group_id=group_id,
        member_id=member.member_id,
        member_epoch=member.member_epoch,
        previous_member_epoch=member.previous_member_epoch,
        state=member.state,
        assigned=tuple(sorted(member.assigned)),
        pending_revocation=tuple(sorted(member.pending_revocation)),
    )


def member_subscription_record(group_id: str, member: ConsumerMember) -> MemberSubscriptionRecord:
    return MemberSubscriptionRecord(
        group_id=group_id,
        member_id=member.member_id,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        rebalance_timeout_ms=member.rebalance_timeout_ms,
        subscribed_topic_names=tuple(sorted(member.subscribed_topic_names)),
        subscribed_topic_regex=member.subscribed_topic_regex,
        server_assignor=member.server_assignor,
        classic_member_metadata=member.classic,
    )


# -- apply -----------------------------------------------------------------------------------------


def _group(state: ConsumerCoordinatorState, group_id: str) -> ConsumerGroup:
    """The group, created empty on its first record (GMM replay creates persisted groups)."""
    group = state.groups.get(group_id)
    if group is None:
        group = ConsumerGroup(group_id)
        state.groups[group_id] = group
    return group


def _remove_partition_epochs(group: ConsumerGroup, member: ConsumerMember) -> None:
    for tp in member.held:
        if group.partition_epochs.get(tp) == member.member_epoch:
            del group.partition_epochs[tp]


def _add_partition_epochs(group: ConsumerGroup, member: ConsumerMember) -> None:
    for tp in member.held:
        group.partition_epochs[tp] = member.member_epoch


def _update_member(group: ConsumerGroup, new: ConsumerMember) -> None:
    """CoG `updateMember`: partition epochs follow the member, static map follows the instance id."""
    old = group.members.get(new.member_id)
    if old is not None:
        _remove_partition_epochs(group, old)
        if old.instance_id is not None and old.instance_id != new.instance_id:
            if group.static_members.get(old.instance_id) == old.member_id:
                del group.static_members[old.instance_id]
    _add_partition_epochs(group, new)
    if new.instance_id is not None:
        group.static_members[new.instance_id] = new.member_id
    group.members[new.member_id] = new


def _remove_member(group: ConsumerGroup, member_id: str) -> None:
    """CoG `removeMember`."""
    old = group.members.pop(member_id, None)
    if old is None:
        return
    _remove_partition_epochs(group, old)
    if old.instance_id is not None and group.static_members.get(old.instance_id) == member_id:
        del group.static_members[old.instance_id]


def _apply_group_record(group: ConsumerGroup, record: object) -> None:
    match record:
        case GroupEpochRecord(epoch=epoch):
            group.group_epoch = epoch
        case SubscriptionMetadataRecord(topics=topics):
            group.subscription_metadata = dict(topics)
        case MemberSubscriptionRecord():
            old = group.members.get(record.member_id) or ConsumerMember(record.member_id)
            _update_member(
                group,
                replace(
                    old,
                    instance_id=record.instance_id,
                    rack_id=record.rack_id,
                    rebalance_timeout_ms=record.rebalance_timeout_ms,
                    subscribed_topic_names=frozenset(record.subscribed_topic_names),
                    subscribed_topic_regex=record.subscribed_topic_regex,
                    server_assignor=record.server_assignor,
                    classic=record.classic_member_metadata,
                ),
            )
        case MemberSubscriptionTombstone(member_id=member_id):
            _remove_member(group, member_id)
        case TargetAssignmentMemberRecord(member_id=member_id, partitions=partitions):
            group.target[member_id] = frozenset(partitions)
        case TargetAssignmentMemberTombstone(member_id=member_id):
            group.target.pop(member_id, None)
        case TargetAssignmentEpochRecord(assignment_epoch=epoch, timestamp=timestamp):
            group.assignment_epoch = epoch
            if timestamp is not None:
                group.assignment_timestamp = timestamp
        case CurrentAssignmentRecord():
            old = group.members.get(record.member_id) or ConsumerMember(record.member_id)
            epochs = record.assignment_epochs
            _update_member(
                group,
                replace(
                    old,
                    member_epoch=record.member_epoch,
                    previous_member_epoch=record.previous_member_epoch,
                    state=record.state,
                    assigned=frozenset(record.assigned),
                    pending_revocation=frozenset(record.pending_revocation),
                    assignment_epochs=derive_assignment_epochs(old, record) if epochs is None else epochs,
                ),
            )
        case CurrentAssignmentTombstone(member_id=member_id):
            leaving = group.members.get(member_id)
            if leaving is not None:
                _update_member(
                    group,
                    replace(
                        leaving,
                        member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                        previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                        assigned=frozenset(),
                        pending_revocation=frozenset(),
                    ),
                )
        case TimerScheduled():
            timer = Timer(record.kind, record.member_id, record.deadline, record.epoch, record.regexes)
            group.timers[timer.key] = timer
        case TimerCancelled(kind=kind, member_id=member_id):
            group.timers.pop((kind, member_id), None)
        case MetadataRefreshRecord(due=due):
            group.metadata_refresh_due = due
        case AssignorUsedRecord(assignor=assignor):
            group.last_assignor = assignor
        case RegexResolvedRecord(regex=regex):
            group.resolved_regexes[regex] = ResolvedRegex(
                frozenset(record.topics), record.timestamp, record.version
            )
        case RegexResolvedTombstone(regex=regex):
            group.resolved_regexes.pop(regex, None)
        case _:
            raise TypeError(f"not a consumer group record: {record!r}")
    group.state = group.derived_state()


def apply(state: ConsumerCoordinatorState, record: object) -> ConsumerCoordinatorState:
    """Apply one record to ``state`` (in place) and return it. The only mutator of the model's state."""
    match record:
        case TopicRecord(topic=topic, partitions=partitions):
            state.topics_version += topic not in state.topics
            state.topics[topic] = partitions
        case TopicDeletedRecord(topic=topic):
            state.topics.pop(topic, None)
        case ConsumerGroupTombstone():
            state.groups.pop(record.group_id, None)
        case OffsetCommitRecord():
            state.offsets.setdefault(record.group_id, {})[(record.topic, record.partition)] = CommittedOffset(
                record.offset, record.leader_epoch, record.metadata
            )
        case OffsetCommitTombstone(group_id=g, topic=t, partition=p):
            committed = state.offsets.get(g, {})
            committed.pop((t, p), None)
            if not committed:
                state.offsets.pop(g, None)
        case _:
            group_id = getattr(record, "group_id", None)
            if not isinstance(group_id, str):
                raise TypeError(f"not a consumer group record: {record!r}")
            _apply_group_record(_group(state, group_id), record)
    return state


def replay(
    records: Iterable[object], state: ConsumerCoordinatorState | None = None
) -> ConsumerCoordinatorState:
    """Apply every record in order (durable and volatile) onto ``state`` (default: empty)."""
    state = ConsumerCoordinatorState() if state is None else state
    for record in records:
        apply(state, record)
    return state


def rebuild(records: Iterable[object]) -> ConsumerCoordinatorState:
    """Coordinator failover: a new coordinator loads only the durable records (timers are re-armed by
    `ConsumerCoordinator.on_loaded`). Volatile records in ``records`` are skipped."""
    # A loaded group starts with its metadata refresh due (MG: the refresh deadline starts expired);
    # that is the default of a group created by replay, since refresh records are volatile.
    return replay(r for r in records if is_durable(r))


def durable_view(state: ConsumerCoordinatorState) -> ConsumerCoordinatorState:
    """What a new coordinator loads, read off a state instead of its record log: the state with its
    volatile parts reset (timers gone, the metadata refresh due, no assignor remembered). Equals
    ``rebuild(records)`` for the records that produced ``state`` (a test checks it on random runs);
    used where only states are kept (the oracle's hypotheses beside a real coordinator)."""
    out = state.copy()
    # the topic-creation counter (Kafka: the metadata image's offset) is not a group record: a
    # compacted log keeps one record per live topic, so a loaded coordinator counts those
    out.topics_version = len(out.topics)
    for group in out.groups.values():
        group.timers = {}
        group.metadata_refresh_due = True
        group.last_assignor = None
    return out


def compaction_key(record: object) -> tuple[object, ...]:
    """The key a durable record is compacted under in ``__consumer_offsets`` (Kafka's record keys:
    ConsumerGroupMetadataKey, ...PartitionMetadataKey, ...MemberMetadataKey,
    ...TargetAssignmentMetadataKey, ...TargetAssignmentMemberKey, ...CurrentMemberAssignmentKey,
    OffsetCommitKey; group-coordinator/src/main/resources/common/message/). A tombstone shares its
    record's key. Topic records are keyed by topic name (the metadata image)."""
    match record:
        case (
            OffsetCommitRecord(group_id=g, topic=t, partition=p)
            | OffsetCommitTombstone(group_id=g, topic=t, partition=p)
        ):
            return ("offset", g, t, p)
        case TopicRecord(topic=t) | TopicDeletedRecord(topic=t):
            return ("topic", t)
        case GroupEpochRecord(group_id=g):
            return ("group", g)
        case SubscriptionMetadataRecord(group_id=g):
            return ("partition-metadata", g)
        case TargetAssignmentEpochRecord(group_id=g):
            return ("target-epoch", g)
        case RegexResolvedRecord(group_id=g, regex=r) | RegexResolvedTombstone(group_id=g, regex=r):
            return ("regex", g, r)
        case (
            MemberSubscriptionRecord(group_id=g, member_id=m)
            | MemberSubscriptionTombstone(group_id=g, member_id=m)
        ):
            return ("member", g, m)
        case (
            TargetAssignmentMemberRecord(group_id=g, member_id=m)
            | TargetAssignmentMemberTombstone(group_id=g, member_id=m)
        ):
            return ("target", g, m)
        case (
            CurrentAssignmentRecord(group_id=g, member_id=m)
            | CurrentAssignmentTombstone(group_id=g, member_id=m)
        ):
            return ("current", g, m)
    return ("unkeyed", id(record))


def compact(records: Iterable[object]) -> list[object]:
    """Log compaction: the durable records with only the latest per key, in log order. Loading the
    compacted log rebuilds the same state as loading all of it (each key's record sets its own
    fields), so a long run's failovers stay cheap."""
    durable = [r for r in records if is_durable(r)]
    last = {compaction_key(r): i for i, r in enumerate(durable)}
    return [r for i, r in enumerate(durable) if last[compaction_key(r)] == i]
