"""State, records and replay of a coordinator serving both group types (KIP-848 mixed groups, docs/protocol-reference.md#b13).

One coordinator shard holds classic groups (`model.classic.state.ClassicState`) and consumer groups
(`model.consumer.state.ConsumerCoordinatorState`) side by side; a group id lives in exactly one of
them (GMM keeps a single ``groups`` map keyed by group id). Converting a group is a tombstone for
the old type followed by the records of the new one, as Kafka writes them:

* upgrade (GMM ``convertToConsumerGroup``): ``ClassicGroupTombstone`` (Kafka: the GroupMetadata
  tombstone, CG ``createGroupTombstoneRecords``), then the consumer-group records of
  CoG ``createConsumerGroupRecords``;
* downgrade (GMM ``convertToClassicGroup``): ``ConsumerGroupTombstone`` (CoG
  ``createGroupTombstoneRecords``), then a GroupMetadata record (CG ``createClassicGroupRecords``).

`apply` is the only mutator; it dispatches a record to the classic or the consumer `apply`.
Failover (`rebuild`) loads the durable records of both kinds; classic groups load from their last
GroupMetadata record unless a later tombstone deleted them (GMM ``replay`` of a tombstone removes
the group).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

from model.classic import records as classic_records
from model.classic.state import ClassicGroup, ClassicState
from model.consumer import records as consumer_records
from model.consumer.state import ConsumerCoordinatorState


class MigrationPolicy(Enum):
    """``group.consumer.migration.policy`` (GCC; Kafka 4.0 default ``bidirectional``,
    docs/protocol-reference.md#defaults). ``ConsumerGroupMigrationPolicy.isUpgradeEnabled`` / ``isDowngradeEnabled``."""

    DISABLED = "disabled"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    BIDIRECTIONAL = "bidirectional"

    @property
    def upgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.UPGRADE, MigrationPolicy.BIDIRECTIONAL)

    @property
    def downgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.DOWNGRADE, MigrationPolicy.BIDIRECTIONAL)


@dataclass(frozen=True)
class ClassicGroupTombstone:
    """The classic group is deleted: on an upgrade, or when an empty classic group is replaced by a
    consumer group (GMM ``maybeDeleteEmptyClassicGroup``)."""

    durable: ClassVar[bool] = True
    group_id: str


@dataclass(frozen=True)
class ConsumerGroupDropped:
    """An empty consumer group removed from the coordinator's memory with NO tombstone written.

    Kafka's ``classicGroupJoinToClassicGroup`` first calls ``maybeDeleteEmptyConsumerGroup`` (tombstones
    into the request's record list, then ``removeGroup`` at once); a JoinGroup with a member id then
    finds no classic group (``getOrMaybeCreateClassicGroup(groupId, false)`` throws) and is answered
    UNKNOWN_MEMBER_ID with ``EMPTY_RESULT``, dropping the tombstones (GroupMetadataManager, apache/kafka
    mirror 1eb7644 L4039-4052 and L6032; the same calls in the released kafka-group-coordinator-4.4.0
    jar). The group is gone until the next load, which reads it back from the log: volatile here."""

    durable: ClassVar[bool] = False
    group_id: str


_CLASSIC_TYPES = (
    classic_records.GroupCreated,
    classic_records.GroupUpdated,
    classic_records.MemberUpserted,
    classic_records.MemberRemoved,
    classic_records.PendingMember,
    classic_records.PendingSync,
    classic_records.TimerSet,
    classic_records.AppendFault,
    classic_records.GroupMetadataRecord,
    classic_records.OffsetCommitRecord,
    classic_records.TopicMetadata,
)


def is_classic_record(record: object) -> bool:
    return isinstance(record, _CLASSIC_TYPES)


@dataclass
class MixedState:
    """Both halves of one shard. Topics are mirrored in both (the metadata image is shared)."""

    classic: ClassicState = field(default_factory=ClassicState)
    consumer: ConsumerCoordinatorState = field(default_factory=ConsumerCoordinatorState)

    def group_type(self, group_id: str) -> str | None:
        """ "classic", "consumer" or None (no such group)."""
        if group_id in self.consumer.groups:
            return "consumer"
        if group_id in self.classic.groups:
            return "classic"
        return None

    def copy(self) -> MixedState:
        """An independent copy (members and timers are replaced, never mutated, by apply)."""
        classic = ClassicState(
            groups={gid: _clone_classic(g) for gid, g in self.classic.groups.items()},
            offsets=dict(self.classic.offsets),
            topics=dict(self.classic.topics),
            fail_next_append=self.classic.fail_next_append,
        )
        return MixedState(classic=classic, consumer=self.consumer.copy())


def _clone_classic(group: ClassicGroup) -> ClassicGroup:
    return ClassicGroup(
        group_id=group.group_id,
        state=group.state,
        previous_state=group.previous_state,
        generation=group.generation,
        protocol_type=group.protocol_type,
        protocol=group.protocol,
        leader=group.leader,
        members=dict(group.members),
        static_members=dict(group.static_members),
        pending_members=set(group.pending_members),
        pending_sync=set(group.pending_sync),
        new_member_added=group.new_member_added,
        timers=dict(group.timers),
    )


def apply(state: MixedState, record: object) -> MixedState:
    """Apply one record (classic, consumer or conversion) to ``state`` in place; return it."""
    if isinstance(record, ClassicGroupTombstone):
        state.classic.groups.pop(record.group_id, None)
    elif isinstance(record, ConsumerGroupDropped):
        state.consumer.groups.pop(record.group_id, None)
    elif is_classic_record(record):
        classic_records.apply(state.classic, record)  # type: ignore[arg-type]
    else:
        consumer_records.apply(state.consumer, record)
    return state


def replay(records: Iterable[object], state: MixedState | None = None) -> MixedState:
    """Apply every record in order (durable and volatile) onto ``state`` (default: empty)."""
    state = MixedState() if state is None else state
    for record in records:
        apply(state, record)
    return state


def rebuild(records: Iterable[object], now: int) -> MixedState:
    """Failover: a new coordinator loads the durable records of both kinds.

    Consumer groups replay their durable records (tombstones included, so a downgraded group is
    gone). Classic groups load from their last GroupMetadata record (`model.classic.records.load`,
    which also arms member expiry at ``now``), ignoring records older than the group's last
    tombstone. Consumer-group timers are re-armed by the coordinator's ``on_loaded``.
    """
    durable = [r for r in records if getattr(r, "durable", False)]
    last_tombstone: dict[str, int] = {}
    for i, r in enumerate(durable):
        if isinstance(r, ClassicGroupTombstone):
            last_tombstone[r.group_id] = i
    classic_log: list[object] = []
    for i, r in enumerate(durable):
        if isinstance(r, classic_records.GroupMetadataRecord) and i < last_tombstone.get(r.group_id, -1):
            continue
        if is_classic_record(r):
            classic_log.append(r)
    classic = classic_records.load(classic_log, now)
    for gid, idx in last_tombstone.items():
        if not any(
            isinstance(r, classic_records.GroupMetadataRecord) and r.group_id == gid
            for r in durable[idx + 1 :]
        ):
            classic.groups.pop(gid, None)
    consumer = consumer_records.replay(
        r for r in durable if not is_classic_record(r) and not isinstance(r, ClassicGroupTombstone)
    )
    # a GroupMetadata record replaces whatever group the id had (GMM ``replay(GroupMetadataKey, ...)``
    # ends in ``groups.put``, mirror 1eb7644 L3971): after a `ConsumerGroupDropped` no consumer
    # tombstone precedes the classic group's records, and the later classic group wins the load
    last_consumer: dict[str, int] = {}
    for i, r in enumerate(durable):
        owner = getattr(r, "group_id", None)
        if isinstance(owner, str) and not is_classic_record(r) and not isinstance(r, ClassicGroupTombstone):
            last_consumer[owner] = i
    for owner, idx in last_consumer.items():
        if owner in consumer.groups and owner in classic.groups:
            if any(
                isinstance(r, classic_records.GroupMetadataRecord) and r.group_id == owner
                for r in durable[idx + 1 :]
            ):
                consumer.groups.pop(owner)
    return MixedState(classic=classic, consumer=consumer)
