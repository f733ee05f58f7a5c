"""State of a KIP-848 group coordinator shard: groups, members, epochs, timers (docs/protocol-reference.md#b1, #b3).

Follows CoG / CoGM (member and group), `modern/MemberState.java` (member states) and MG (metadata
refresh). Members are immutable values; a group and the shard state are mutable containers that
only `model.consumer.records.apply` changes (docs/model.md).

The shard also holds the cluster metadata image (topic name -> partition count; in Kafka it comes
from KRaft, not from the group's records) and committed offsets per group.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum

from model.consumer.messages import TopicPartition

NO_EPOCH = -1
"""Partition epoch of a free partition, and the member epoch of a leaving member (CoG L1014-1110)."""
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
SESSION = "session"
"""Timer kind: the member's session timeout (docs/protocol-reference.md#b8)."""
REBALANCE = "rebalance"
"""Timer kind: the member's rebalance (revocation) timeout (docs/protocol-reference.md#b8)."""
ASSIGNMENT_INTERVAL = "assignment-interval"
"""Timer kind (member id ""): armed for ``group.consumer.assignment.interval.ms`` after a target
assignment is computed; while it is armed no new target is computed (Kafka 4.2+ assignment batching,
KAFKA-20291, apache/kafka PR #21720)."""
REGEX_RESOLUTION = "regex-resolution"
"""Timer kind (member id ""): a resolution of the group's regular expressions is under way (Kafka's
executor task ``<group>-regex``, GMM ``maybeUpdateRegularExpressions``); when it fires, the result is
written and may bump the group epoch (``handleRegularExpressionsResult``; `model.consumer.regex_rules`)."""
JOIN = "join"
"""Timer kind: a classic-protocol member must rejoin within its rebalance timeout (docs/protocol-reference.md#b13; `model.mixed.coordinator`)."""
SYNC = "sync"
"""Timer kind: a classic-protocol member must send SyncGroup within its rebalance timeout (docs/protocol-reference.md#b13)."""


class MemberState(IntEnum):
    """Server-side member state (docs/protocol-reference.md#b3, `modern/MemberState.java`)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class GroupState(Enum):
    """Consumer group state, derived after every record (CoG `maybeUpdateGroupState` L887)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


def regex_matches(regex: str | None, topic: str) -> bool:
    """Whether a subscription regex selects ``topic`` (full match, as RE2J ``matches()``).

    Divergence: Kafka compiles with RE2J; the model uses Python ``re``. An empty regex selects nothing.
    """
    if not regex:
        return False
    try:
        return re.fullmatch(regex, topic) is not None
    except re.error:
        return False


@dataclass(frozen=True)
class ResolvedRegex:
    """Kafka's ``ResolvedRegularExpression`` (ConsumerGroupRegularExpression record, KAFKA-17593):
    the topics a regex matched, when it was resolved, and the metadata version it was resolved at
    (here `ConsumerCoordinatorState.topics_version`)."""

    topics: frozenset[str]
    timestamp: int
    version: int


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """What a member that speaks the classic protocol in a consumer group keeps (docs/protocol-reference.md#b13): Kafka's
    ``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata`` (session timeout, JoinGroup protocols)
    plus the client id that a downgrade hands back to the classic group (CoGM ``clientId``)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    client_id: str = "consumer"


@dataclass(frozen=True)
class ConsumerMember:
    """A consumer-protocol member: its subscription record plus its current-assignment record (CoGM)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = NO_EPOCH
    state: MemberState = MemberState.STABLE
    assigned: frozenset[TopicPartition] = frozenset()
    pending_revocation: frozenset[TopicPartition] = frozenset()
    classic: ClassicMemberMetadata | None = None
    """Set iff the member uses the classic protocol (docs/protocol-reference.md#b13, CoGM ``useClassicProtocol``)."""
    assignment_epochs: tuple[tuple[TopicPartition, int], ...] = ()
    """KIP-1251: for each held partition, the member epoch at which the member was given it
    (kept while it stays assigned or pending revocation)."""

    def assignment_epoch(self, tp: TopicPartition) -> int | None:
        """The epoch ``tp`` was assigned to this member at, or None when it does not hold it."""
        return dict(self.assignment_epochs).get(tp)

    @property
    def held(self) -> frozenset[TopicPartition]:
        """Partitions this member holds: assigned or pending revocation (CoG L1045-1105)."""
        return self.assigned | self.pending_revocation

    def is_reconciled_to(self, target_epoch: int) -> bool:
        """STABLE at the target epoch (MGM L169)."""
        return self.state == MemberState.STABLE and self.member_epoch == target_epoch

    def subscribes(self, topic: str, denied: frozenset[str] = frozenset()) -> bool:
        """Whether the member's subscription (names, or regex resolved synchronously) covers ``topic``.

        Regex-resolved topics are filtered by TOPIC DESCRIBE (docs/protocol-reference.md#b4); ``denied`` lists topics without it.
        """
        if topic in self.subscribed_topic_names:
            return True
        return topic not in denied and regex_matches(self.subscribed_topic_regex, topic)


def member_subscribes(
    member: ConsumerMember,
    topic: str,
    denied: frozenset[str],
    resolved: Mapping[str, ResolvedRegex] | None,
) -> bool:
    """Whether ``member`` subscribes to ``topic``: ``resolved`` None resolves its regex synchronously
    (`ConsumerMember.subscribes`); otherwise a regex covers only the topics of its recorded
    resolution (Kafka 4.0+, asynchronous resolution; ACLs were applied when it was resolved)."""
    if resolved is None:
        return member.subscribes(topic, denied)
    if topic in member.subscribed_topic_names:
        return True
    regex = member.subscribed_topic_regex
    return regex is not None and regex in resolved and topic in resolved[regex].topics


@dataclass(frozen=True)
class Timer:
    """An armed coordinator timer (docs/protocol-reference.md#b8). ``epoch`` is the member epoch a rebalance timer was armed with."""

    kind: str  # "session" | "rebalance"
    member_id: str
    deadline: int
    epoch: int | None = None
    regexes: tuple[str, ...] = ()
    """A regex-resolution timer: the regexes the resolution was started with."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.member_id)


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


def derive_group_state(
    members: dict[str, ConsumerMember], group_epoch: int, assignment_epoch: int
) -> GroupState:
    """CoG L887: EMPTY iff no members; ASSIGNING iff group epoch > assignment epoch; RECONCILING iff
    some member is not reconciled to the assignment epoch; else STABLE."""
    if not members:
        return GroupState.EMPTY
    if group_epoch > assignment_epoch:
        return GroupState.ASSIGNING
    if any(not m.is_reconciled_to(assignment_epoch) for m in members.values()):
        return GroupState.RECONCILING
    return GroupState.STABLE


@dataclass
class ConsumerGroup:
    """A KIP-848 consumer group (CoG). ``state`` is stored, re-derived after every applied record.

    Durable parts (rebuilt from records on failover): epochs, members, targets, subscription
    metadata, static instance map, partition epochs (derived from members on replay). Volatile:
    ``timers``, ``metadata_refresh_due``, ``last_assignor`` (which assignor computed the target).
    """

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, frozenset[TopicPartition]] = field(default_factory=dict)
    partition_epochs: dict[TopicPartition, int] = field(default_factory=dict)
    subscription_metadata: dict[str, int] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    timers: dict[tuple[str, str], Timer] = field(default_factory=dict)
    state: GroupState = GroupState.EMPTY
    metadata_refresh_due: bool = True
    last_assignor: str | None = None
    assignment_timestamp: int | None = None
    """When the target was last computed (ConsumerGroupTargetAssignmentMetadata, KAFKA-20266);
    None: never, or written by a coordinator that does not record it."""
    resolved_regexes: dict[str, ResolvedRegex] = field(default_factory=dict)
    """Resolutions of subscribed regexes (durable; written only under asynchronous resolution)."""

    def clone(self) -> ConsumerGroup:
        """An independent copy (members, sets and timers are immutable values, so copying maps suffices)."""
        return ConsumerGroup(
            group_id=self.group_id,
            group_epoch=self.group_epoch,
            assignment_epoch=self.assignment_epoch,
            members=dict(self.members),
            target=dict(self.target),
            partition_epochs=dict(self.partition_epochs),
            subscription_metadata=dict(self.subscription_metadata),
            static_members=dict(self.static_members),
            timers=dict(self.timers),
            state=self.state,
            metadata_refresh_due=self.metadata_refresh_due,
            last_assignor=self.last_assignor,
            assignment_timestamp=self.assignment_timestamp,
            resolved_regexes=dict(self.resolved_regexes),
        )

    def target_of(self, member_id: str) -> frozenset[TopicPartition]:
        return self.target.get(member_id, frozenset())

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def current_partition_epoch(self, tp: TopicPartition) -> int:
        """The epoch of the member holding ``tp``, or -1 when free (CoG `currentPartitionEpoch`)."""
        return self.partition_epochs.get(tp, NO_EPOCH)

    def derived_state(self) -> GroupState:
        return derive_group_state(self.members, self.group_epoch, self.assignment_epoch)


@dataclass
class ConsumerCoordinatorState:
    """One coordinator shard: its consumer groups, the metadata image, committed offsets."""

    groups: dict[str, ConsumerGroup] = field(default_factory=dict)
    topics: dict[str, int] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, CommittedOffset]] = field(default_factory=dict)
    topics_version: int = 0
    """How many topics were created so far: Kafka's ``lastMetadataImageWithNewTopics``, which makes
    resolutions made before it stale (GMM ``onNewMetadataImage``)."""

    def copy(self) -> ConsumerCoordinatorState:
        return ConsumerCoordinatorState(
            groups={gid: g.clone() for gid, g in self.groups.items()},
            topics=dict(self.topics),
            offsets={gid: dict(o) for gid, o in self.offsets.items()},
            topics_version=self.topics_version,
        )
