"""The KIP-848 coordinator's configuration and its transaction: records emitted by one request, applied on commit.

Kafka's coordinator likewise builds a list of records per request and replays them onto its state
(``CoordinatorResult`` in apache/kafka ``group-coordinator``); the model's handlers do the same.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from model.consumer.records import (
    CurrentAssignmentRecord,
    TopicDeletedRecord,
    TopicRecord,
    apply,
    derive_assignment_epochs,
)
from model.consumer.state import (
    ConsumerCoordinatorState,
    ConsumerGroup,
    ConsumerMember,
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
    reconcile_to_subscription: bool = True
    """KAFKA-19431 fix (apache/kafka PR #20055, Kafka 4.1+; CurrentAssignmentBuilder of Apache Kafka
    4.4.0): reconciliation keeps a member to the topics it subscribes to, and a heartbeat that changes
    its subscription revokes the others' partitions at once, at the same member epoch
    (`model.consumer.reconcile`). Seen on 4.4.0 with assignment batching, where the target lags the
    subscription. False: Kafka 4.0 (partitions wait for the next target)."""
    assignment_interval_ms: int = 0
    """group.consumer.assignment.interval.ms: 0 computes a new target in the heartbeat that finds the
    group epoch ahead of the assignment epoch (Kafka 4.0/4.1); above 0, not before this long after
    the last computation, so members meanwhile get the last target at its epoch (Kafka 4.2+ default
    1000: KAFKA-20291, apache/kafka PR #21720; GroupMetadataManager.maybeUpdateTargetAssignment and
    canComputeNextTargetAssignment in Apache Kafka 4.4.0)."""
    offset_commit_epochs: Literal["exact", "assignment"] = "exact"
    """Which member epochs an OffsetCommit may carry: "exact" = only the member's current epoch
    (Kafka 4.0-4.2, CoG validateOffsetCommit); "assignment" = also an older epoch not below the
    epoch each committed partition was assigned to the member at (KIP-1251, Kafka 4.3+: KAFKA-20066,
    apache/kafka PRs #21508, #21692; ConsumerGroup.createAssignmentEpochValidator in Apache Kafka 4.4.0)."""
    initial_group_epoch: Literal[0, 1] = 0
    """0: a new group starts at epoch 0 (Kafka 4.0). 1: it starts at group and assignment epoch 1 with
    an empty target, so the first computed assignment is epoch 2 (KAFKA-20268, apache/kafka#21700,
    Kafka 4.3+; observed on 4.4.0)."""
    regex_resolution: Literal["async", "sync"] = "async"
    """"async": Kafka 4.0+ (KAFKA-17593, apache/kafka PR #17864): a new SubscribedTopicRegex is
    resolved off the heartbeat path, and the resolution, when it lands, writes the matched topics and
    may bump the group epoch (`model.consumer.regex_rules`). "sync": the model's earlier shortcut,
    never Kafka's: resolved in the heartbeat that brings it, and any regex change bumps at once."""
    regex_refresh_interval_ms: int = 600_000
    """group.consumer.regex.refresh.interval.ms: a heartbeat starts a new resolution when the last one
    is older than this (KAFKA-18961, apache/kafka PR #19904, merged 2025-06; default 600000 in
    GroupCoordinatorConfig of Apache Kafka 4.4.0). Kafka 4.0 has no such refresh."""


_TOPIC = (TopicRecord, TopicDeletedRecord)


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
            topics_version=state.topics_version,
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
        if isinstance(record, CurrentAssignmentRecord) and record.assignment_epochs is None:
            group = self.scratch.groups.get(self.group_id)
            old = None if group is None else group.members.get(record.member_id)
            record = replace(record, assignment_epochs=derive_assignment_epochs(old, record))
        apply(self.scratch, record)
        self.records.append(record)

    #: False: every commit applies its records to the real state again (the tests compare the two)
    SWAP = True

    def commit(self, result: Result) -> None:
        """Apply the records to the real state. When every record is one of this group's (no topic
        record), the scratch group and offsets are what applying them makes of the real ones (both
        start equal, and only `emit` changes the scratch), so they take their places instead."""
        gid = self.group_id
        if not self.records:
            return
        if self.SWAP and all(
            getattr(r, "group_id", None) == gid and not isinstance(r, _TOPIC) for r in self.records
        ):
            group, offsets = self.scratch.groups.get(gid), self.scratch.offsets.get(gid)
            if group is None:
                self.state.groups.pop(gid, None)
            else:
                self.state.groups[gid] = group
            if offsets:
                self.state.offsets[gid] = offsets
            else:
                self.state.offsets.pop(gid, None)
        else:
            for record in self.records:
                apply(self.state, record)
        result.records.extend(self.records)


def _blank(value: str) -> bool:
    """Java ``trim().isEmpty()``: only characters <= U+0020."""
    return all(ord(c) <= 0x20 for c in value)


def _effective_regex(member: ConsumerMember) -> str | None:
    return member.subscribed_topic_regex or None
