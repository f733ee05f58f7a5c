"""Classic group state (docs/protocol-reference.md#a1, #a8; CG / CGM / CGS in Kafka 4.0).

Mutable containers, but only `model.classic.records.apply` writes to them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from enum import Enum


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = GroupState
#: Allowed predecessors of each state (CGS L112-116; `assertValidTransition` CG L1457).
VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.DEAD: frozenset(GroupState),
}


@dataclass(frozen=True)
class ClassicConfig:
    """Broker settings (docs/protocol-reference.md#defaults, GCC L136-201) and model variants.

    `max_size` is `group.max.size`; `new_member_join_timeout_ms` is the fixed 300 s of GCC.
    """

    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3_000
    max_size: int = 2**31 - 1
    new_member_join_timeout_ms: int = 300_000
    offset_metadata_max_bytes: int = 4096


@dataclass(frozen=True)
class Member:
    """One classic member (CGM). `awaiting_join`/`awaiting_sync` are parked request refs."""

    member_id: str
    instance_id: str | None
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    awaiting_join: int | None = None
    join_version: int = 9
    awaiting_sync: int | None = None
    is_new: bool = False

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        return b""

    def protocol_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.protocols)


@dataclass
class Timer:
    deadline: int
    args: tuple[int, ...] = ()


@dataclass
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState | None = None
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    pending_sync: set[str] = field(default_factory=set)
    new_member_added: bool = False
    timers: dict[str, Timer] = field(default_factory=dict)

    def clone(self) -> ClassicGroup:
        """A copy sharing only immutable parts (frozen members): the oracle copies a group per
        candidate and the explorer per transition, where `copy.deepcopy` dominated."""
        new = copy.copy(self)
        new.members = dict(self.members)
        new.static_members = dict(self.static_members)
        new.pending_members = set(self.pending_members)
        new.pending_sync = set(self.pending_sync)
        new.timers = {k: Timer(t.deadline, t.args) for k, t in self.timers.items()}
        return new

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        """All members parked in JoinGroup and no MEMBER_ID_REQUIRED member pending (CG L716)."""
        return self.awaiting_join_count() == len(self.members) and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        """Group rebalance timeout = max member rebalance timeout (CG L759)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def candidate_protocols(self) -> set[str]:
        names: set[str] | None = None
        for m in self.members.values():
            mine = set(m.protocol_names())
            names = mine if names is None else names & mine
        return names or set()


@dataclass
class ClassicState:
    """The coordinator: its groups, committed offsets and the cluster's topic metadata."""

    groups: dict[str, ClassicGroup] = field(default_factory=dict)
    offsets: dict[tuple[str, str, int], tuple[int, str | None]] = field(default_factory=dict)
    topics: dict[str, int] = field(default_factory=dict)
    fail_next_append: bool = False

    def clone(self) -> ClassicState:
        """A copy sharing only immutable parts (`ClassicGroup.clone`)."""
        new = copy.copy(self)
        new.groups = {gid: g.clone() for gid, g in self.groups.items()}
        new.offsets = dict(self.offsets)
        new.topics = dict(self.topics)
        return new
