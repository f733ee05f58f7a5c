"""What KIP-848 invariants see: a frozen `ConsumerWorld` snapshot and the events of a run.

The world holds the coordinator view (each group: epochs, derived state, members, targets,
partition epochs, subscription metadata, static map, timers) and the consumer view (each virtual
client: member id, epoch, owned partitions), docs/invariants.md / `model.observation`. Members, sets and
timers are immutable values, so a snapshot copies only the maps that hold them.

Events name what happened in a step so that transition invariants can read the request and find
its response among the deliveries (by ``ref``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from model.consumer.client import ClientView, VirtualConsumer
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    TopicPartition,
)
from model.consumer.owned_reports import Due, Report, Silence
from model.consumer.state import (
    ConsumerCoordinatorState,
    ConsumerGroup,
    ConsumerMember,
    GroupState,
    ResolvedRegex,
    Timer,
)
from model.observation import Observation
from model.result import Delivery, Result

if TYPE_CHECKING:
    from model.consumer.txn import ConsumerCoordinatorConfig


# ---------------------------------------------------------------------------------------- events


@dataclass(frozen=True)
class HeartbeatEvent:
    """A ConsumerGroupHeartbeat request handled by the coordinator (its response has ``ref``)."""

    ref: int
    request: ConsumerGroupHeartbeatRequest
    client: str | None = None
    heard: bool = field(default=True, compare=False, metadata={"omit_default": True})
    """False when the process that sent it never hears the answer (lost on the way back, a cut
    connection, a duplicate's copy, a process that restarted meanwhile). An outcome of the run, not
    part of what was sent: events compare equal without it, so traces written before it replay."""


@dataclass(frozen=True)
class OffsetCommitEvent:
    ref: int
    request: OffsetCommitRequest
    client: str | None = None


@dataclass(frozen=True)
class DeleteGroupsEvent:
    """A DeleteGroups request (an admin's, no member's) handled by the coordinator."""

    ref: int
    request: DeleteGroupsRequest
    client: str = "admin"
    """Who sent it: an admin client, the sequence diagrams' lane."""


@dataclass(frozen=True)
class AdvanceEvent:
    """The virtual clock moved to ``now`` and due timers fired."""

    now: int


@dataclass(frozen=True)
class TopicEvent:
    """``action`` is "create", "delete" or "add_partitions" (``partitions`` = new count)."""

    action: str
    topic: str
    partitions: int = 0


@dataclass(frozen=True)
class FailoverEvent:
    """A new coordinator loaded the durable records."""


@dataclass(frozen=True)
class ClientEvent:
    """Something happened on a client only (a response received or lost, a crash, a leave call...)."""

    client: str
    action: str


# ---------------------------------------------------------------------------------------- world


@dataclass(frozen=True)
class GroupView:
    """Frozen summary of one consumer group (coordinator view)."""

    group_id: str
    group_epoch: int
    assignment_epoch: int
    state: GroupState
    members: Mapping[str, ConsumerMember]
    target: Mapping[str, frozenset[TopicPartition]]
    partition_epochs: Mapping[TopicPartition, int]
    subscription_metadata: Mapping[str, int]
    static_members: Mapping[str, str]
    timers: Mapping[tuple[str, str], Timer]
    last_assignor: str | None = None
    assignment_timestamp: int | None = None
    resolved_regexes: Mapping[str, ResolvedRegex] = field(default_factory=lambda: MappingProxyType({}))

    @staticmethod
    def of(group: ConsumerGroup) -> GroupView:
        return GroupView(
            group_id=group.group_id,
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            state=group.state,
            members=MappingProxyType(dict(group.members)),
            target=MappingProxyType(dict(group.target)),
            partition_epochs=MappingProxyType(dict(group.partition_epochs)),
            subscription_metadata=MappingProxyType(dict(group.subscription_metadata)),
            static_members=MappingProxyType(dict(group.static_members)),
            timers=MappingProxyType(dict(group.timers)),
            last_assignor=group.last_assignor,
            assignment_timestamp=group.assignment_timestamp,
            resolved_regexes=MappingProxyType(dict(group.resolved_regexes)),
        )

    def target_of(self, member_id: str) -> frozenset[TopicPartition]:
        return self.target.get(member_id, frozenset())


@dataclass(frozen=True)
class ConsumerWorld:
    """One snapshot: every group (coordinator view), every client (consumer view), settings the
    invariants need, and — for `consumer.eventual_convergence` — when perturbations last happened."""

    groups: Mapping[str, GroupView]
    clients: tuple[ClientView, ...] = ()
    topics: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    max_size: int = 2**31 - 1
    topic_describe_denied: frozenset[str] = frozenset()
    quiet_since: int | None = None
    """Time of the last perturbation (None: unknown, convergence not checked)."""
    convergence_bound_ms: int | None = None
    """How long after the last perturbation every active client must have converged."""
    known_member_ids: frozenset[str] | None = None
    """Every member id some client process has ever known (None: not tracked, not checked)."""
    assignment_interval_ms: int = 0
    """The coordinator's ``group.consumer.assignment.interval.ms`` (0: no batching, Kafka 4.0/4.1)."""
    offset_commit_epochs: str = "exact"
    """The coordinator's commit-epoch rule: "exact" (Kafka 4.0-4.2) or "assignment" (KIP-1251, 4.3+)."""
    stamp_slack_ms: int = 0
    """How far the time the coordinator stamped a step may lie from the observation's ``now``: 0 on
    the model's own clock; on a real target the oracle's `unseen_cap_ms`
    (docs/oracle.md#timing-hypotheses-the-tolerance-window)."""

    regex_resolution: str = "sync"
    """The coordinator's ``regex_resolution`` ("async": Kafka 4.0+, `model.consumer.regex_rules`)."""
    deviations: frozenset[tuple[str, str]] = frozenset()
    """Known-deviation tags (deviation id, client name) the simulator set (`model.deviations`)."""
    reconcile_to_subscription: bool = False
    """The coordinator's ``reconcile_to_subscription`` (True: KAFKA-19431, Kafka 4.1+; False: Kafka
    4.0, or not known: `consumer.assignment_within_subscription` is then not checked)."""
    committed: Mapping[str, frozenset[TopicPartition]] = field(default_factory=lambda: MappingProxyType({}))
    """The partitions each group id has a committed offset for (coordinator view)."""
    reports: tuple[Report, ...] = ()
    """Per heartbeat a consumer sent this step: what it held then and what it reported owning
    (the harness's record, `model.consumer.owned_reports`)."""
    full_due: tuple[Due, ...] = ()
    """The heartbeats consumers sent this step that had to be full requests (a join, or the first
    after a failed heartbeat; the harness's record, `model.consumer.owned_reports`)."""
    silences: tuple[Silence, ...] = ()
    """Consumers that had their turn this step and sent nothing though they had released partitions
    their last heartbeat reported (the harness's record, `model.consumer.owned_reports`)."""

    def regex_view(self, group: GroupView) -> Mapping[str, ResolvedRegex] | None:
        """What members' regexes cover in ``group``: None = matched now (sync), else its resolutions."""
        return None if self.regex_resolution == "sync" else group.resolved_regexes

    def group(self, group_id: str) -> GroupView | None:
        return self.groups.get(group_id)


def capture_world(
    state: ConsumerCoordinatorState,
    clients: Iterable[VirtualConsumer | ClientView] = (),
    *,
    config: ConsumerCoordinatorConfig | None = None,
    quiet_since: int | None = None,
    convergence_bound_ms: int | None = None,
    known_member_ids: frozenset[str] | None = None,
    deviations: frozenset[tuple[str, str]] = frozenset(),
    prev: ConsumerWorld | None = None,
    reports: tuple[Report, ...] = (),
    full_due: tuple[Due, ...] = (),
    silences: tuple[Silence, ...] = (),
) -> ConsumerWorld:
    """Snapshot ``state`` and the clients' views. A part equal to ``prev``'s (the previous snapshot)
    is ``prev``'s object: a checker skips the invariants whose inputs are the same objects
    (`conformance.engine.reuse`)."""
    views = tuple(c.view() if isinstance(c, VirtualConsumer) else c for c in clients)
    groups: Mapping[str, GroupView] = MappingProxyType(
        {gid: GroupView.of(g) for gid, g in state.groups.items()}
    )
    topics: Mapping[str, int] = MappingProxyType(dict(state.topics))
    if prev is not None:
        groups = _kept(prev.groups, groups)
        views = prev.clients if views == prev.clients else views
        topics = prev.topics if topics == prev.topics else topics
        known_member_ids = (
            prev.known_member_ids if known_member_ids == prev.known_member_ids else known_member_ids
        )
        deviations = prev.deviations if deviations == prev.deviations else deviations
    return ConsumerWorld(
        groups=groups,
        clients=views,
        topics=topics,
        max_size=2**31 - 1 if config is None else config.max_size,
        topic_describe_denied=frozenset() if config is None else config.topic_describe_denied,
        assignment_interval_ms=0 if config is None else config.assignment_interval_ms,
        offset_commit_epochs="exact" if config is None else config.offset_commit_epochs,
        regex_resolution="sync" if config is None else config.regex_resolution,
        reconcile_to_subscription=False if config is None else config.reconcile_to_subscription,
        committed=MappingProxyType({g: frozenset(o) for g, o in state.offsets.items() if o}),
        quiet_since=quiet_since,
        convergence_bound_ms=convergence_bound_ms,
        known_member_ids=known_member_ids,
        deviations=deviations,
        reports=reports,
        full_due=full_due,
        silences=silences,
    )


def _kept(prev: Mapping[str, GroupView], groups: Mapping[str, GroupView]) -> Mapping[str, GroupView]:
    """``groups`` with each view equal to ``prev``'s replaced by it; ``prev`` itself if all are."""
    if groups.keys() != prev.keys():
        return MappingProxyType({gid: prev[gid] if prev.get(gid) == g else g for gid, g in groups.items()})
    if all(prev[gid] == g for gid, g in groups.items()):
        return prev
    return MappingProxyType({gid: prev[gid] if prev[gid] == g else g for gid, g in groups.items()})


def observe(
    before: ConsumerWorld | None,
    event: object,
    result: Result | Iterable[Delivery] | None,
    after: ConsumerWorld,
    now: int,
) -> Observation[ConsumerWorld]:
    """The observation of one step for the invariant registry."""
    if result is None:
        deliveries: tuple[Delivery, ...] = ()
    elif isinstance(result, Result):
        deliveries = tuple(result.deliveries)
    else:
        deliveries = tuple(result)
    return Observation(before=before, event=event, deliveries=deliveries, after=after, now=now)


def heartbeat_response(obs: Observation[ConsumerWorld]) -> ConsumerGroupHeartbeatResponse | None:
    """The response delivered to the event's heartbeat request, if the event is one and it was answered."""
    event = obs.event
    if not isinstance(event, HeartbeatEvent):
        return None
    for d in obs.deliveries:
        if d.ref == event.ref and isinstance(d.response, ConsumerGroupHeartbeatResponse):
            return d.response
    return None


def offset_commit_response(obs: Observation[ConsumerWorld]) -> OffsetCommitResponse | None:
    event = obs.event
    if not isinstance(event, OffsetCommitEvent):
        return None
    for d in obs.deliveries:
        if d.ref == event.ref and isinstance(d.response, OffsetCommitResponse):
            return d.response
    return None


def delete_groups_response(obs: Observation[ConsumerWorld]) -> DeleteGroupsResponse | None:
    event = obs.event
    if not isinstance(event, DeleteGroupsEvent):
        return None
    for d in obs.deliveries:
        if d.ref == event.ref and isinstance(d.response, DeleteGroupsResponse):
            return d.response
    return None
