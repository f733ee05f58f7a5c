"""Frozen snapshots of a classic run that invariants read (docs/invariants.md).

`GroupSnap` is the coordinator view (the model's state, or the oracle's copy of a real target's),
`ClientSnap` the consumer view (what each virtual member was told). `delivered` keeps, per recent
generation, the partitions each client received in a successful SyncGroup.
"""

from __future__ import annotations

from dataclasses import dataclass

from model.classic.state import ClassicGroup, GroupState, Member
from model.classic.wire_record import Joins, Syncs
from model.embedded import TopicPartition

Delivered = tuple[tuple[int, tuple[tuple[str, frozenset[TopicPartition]], ...]], ...]


@dataclass(frozen=True)
class MemberSnap:
    member_id: str
    instance_id: str | None
    protocol_type: str
    protocols: tuple[str, ...]
    assignment: bytes
    awaiting_join: int | None
    awaiting_sync: int | None
    is_new: bool
    session_timeout_ms: int
    rebalance_timeout_ms: int
    #: the JoinGroup version the coordinator last admitted or updated the member with (the version
    #: the wire carried: a real target's port may send another than the member drew)
    join_version: int = 9


@dataclass(frozen=True)
class GroupSnap:
    group_id: str
    state: GroupState
    previous_state: GroupState | None
    generation: int
    protocol_type: str | None
    protocol: str | None
    leader: str | None
    members: tuple[MemberSnap, ...]
    static_members: tuple[tuple[str, str], ...]
    pending_members: frozenset[str]
    pending_sync: frozenset[str]
    timers: tuple[tuple[str, int], ...]

    def member(self, member_id: str) -> MemberSnap | None:
        for m in self.members:
            if m.member_id == member_id:
                return m
        return None

    def timer(self, key: str) -> int | None:
        for k, deadline in self.timers:
            if k == key:
                return deadline
        return None

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members), default=0)

    @staticmethod
    def of(group: ClassicGroup) -> GroupSnap:
        return GroupSnap(
            group.group_id,
            group.state,
            group.previous_state,
            group.generation,
            group.protocol_type,
            group.protocol,
            group.leader,
            tuple(_member_snap(m) for m in group.members.values()),
            tuple(sorted(group.static_members.items())),
            frozenset(group.pending_members),
            frozenset(group.pending_sync),
            tuple(sorted((k, t.deadline) for k, t in group.timers.items())),
        )


#: member id -> (the member record at its last snapshot, that snapshot)
_MEMBER_SNAPS: dict[str, tuple[Member, MemberSnap]] = {}


def _member_snap(m: Member) -> MemberSnap:
    """``m``'s snapshot: the last one taken of its member id while the record is the very same
    (frozen) object, else a new one."""
    hit = _MEMBER_SNAPS.get(m.member_id)
    if hit is not None and hit[0] is m:
        return hit[1]
    snap = MemberSnap(
        m.member_id,
        m.instance_id,
        m.protocol_type,
        m.protocol_names(),
        m.assignment,
        m.awaiting_join,
        m.awaiting_sync,
        m.is_new,
        m.session_timeout_ms,
        m.rebalance_timeout_ms,
        m.join_version,
    )
    if len(_MEMBER_SNAPS) >= 1024:
        _MEMBER_SNAPS.clear()
    _MEMBER_SNAPS[m.member_id] = (m, snap)
    return snap


@dataclass(frozen=True)
class ClientSnap:
    name: str
    member_id: str
    instance_id: str | None
    generation: int
    phase: str
    owned: frozenset[TopicPartition]
    subscribed: frozenset[str]
    #: the client follows KIP-429 (cooperative-sticky chosen)
    cooperative: bool = False
    #: the `stale_subscription` fault is armed: its next fall-out keeps the owned partitions
    stale_subscription: bool = False
    #: the fault fired and the consumer still holds what it kept, until its next assignment
    stale_kept: bool = False
    #: what assignments handed back of its stale claim and it has held since (`ClassicClient`)
    stale_regained: frozenset[TopicPartition] = frozenset()


@dataclass(frozen=True)
class PersistedSnap:
    """The last durable GroupMetadata: what a failover would load."""

    generation: int
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class LeaderAssignment:
    """The leader's assignor input and output at this step (checked by the `client.*` invariants)."""

    client: str
    protocol: str
    partitions_per_topic: tuple[tuple[str, int], ...]
    subscriptions: tuple[tuple[str, object], ...]
    assignments: tuple[tuple[str, tuple[TopicPartition, ...]], ...]


@dataclass(frozen=True)
class ClassicWorld:
    group: GroupSnap | None
    clients: tuple[ClientSnap, ...]
    persisted: PersistedSnap | None
    delivered: Delivered
    transitions: tuple[tuple[GroupState, GroupState], ...]
    failover: bool
    max_size: int
    initial_rebalance_delay_ms: int
    topics: tuple[tuple[str, int], ...]
    leader_assignment: LeaderAssignment | None = None
    stamp_slack_ms: int = 0
    """How far the time the coordinator stamped a step may lie from the observation's ``now``: 0 on
    the model's own clock; on a real target the oracle's `unseen_cap_ms`, the widest window within
    which its hypotheses date a request's arrival and a timer's firing
    (docs/oracle.md#timing-hypotheses-the-tolerance-window)."""
    #: set while perturbations have stopped (`ClassicSim.quiet`): since when, and the bound after
    #: which the group must have converged (`classic.eventual_convergence`); None otherwise
    quiet_since: int | None = None
    convergence_bound_ms: int | None = None
    #: the topics the group's current assignment was computed on (None: no assignment yet), and the
    #: known-deviation tags the simulator set (`model.deviations`)
    assignment_topics: tuple[tuple[str, int], ...] | None = None
    deviations: frozenset[tuple[str, str]] = frozenset()
    #: the subscription of each static member (by group.instance.id) the group's current assignment
    #: was computed on
    assignment_subscriptions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: (ref, protocols) of the JoinGroup requests this step's JoinGroup answers answer, as they were
    #: sent (the harness's record, not the coordinator's)
    joins: Joins = ()
    #: who asked in the SyncGroups this step answers successfully, and what their generation's
    #: leader sent (the harness's record)
    syncs: Syncs = ()
    #: refs whose answers nobody can see (lost on the wire or on a cut connection, on a real target):
    #: the target answered them, the harness never heard it
    unseen: frozenset[int] = frozenset()
    #: (client, answer type, error codes) of each answer handed to a virtual consumer at this step:
    #: the harness knows on which client's connection an answer arrived
    handed: tuple[tuple[str, str, tuple[int, ...]], ...] = ()
    #: the broker's group.min/max.session.timeout.ms (None: not known) and offset.metadata.max.bytes,
    #: the bounds the stray requests' promises judge answers by (model/classic/stray_invariants.py)
    session_timeout_bounds: tuple[int, int] | None = None
    offset_metadata_max_bytes: int = 4096


def bounds_of(config: object) -> tuple[tuple[int, int] | None, int]:
    """A coordinator config's `ClassicWorld.session_timeout_bounds` and `offset_metadata_max_bytes`
    (unknown bounds and Kafka's default without one)."""
    if config is None:
        return None, 4096
    return (
        (config.min_session_timeout_ms, config.max_session_timeout_ms),  # type: ignore[attr-defined]
        config.offset_metadata_max_bytes,  # type: ignore[attr-defined]
    )
