"""One classic model hypothesis beside a real target, and the views the simulator reads of it.

A classic target answers in any order (a JoinGroup parks until its join phase completes), so a
hypothesis carries the model's answers the target has not given yet (``outstanding``) besides the
model state; the timers it armed and the slack they may fire with (`windows.widen`); and what it
fired around its last operation (`timer_split`). The classic oracle (`oracle.OraclePort`) keeps a
list of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.engine.oracle.adoption import renamer
from model.classic.state import ClassicState, GroupState
from model.classic.world import GroupSnap

#: what a split remembers: (refs the timers answered, the groups, how many transitions and durable
#: records), as they stood at the split (`ClassicCandidates._run`)
Split = tuple[frozenset[int], dict[str, GroupSnap], int, int]


@dataclass
class Hypo:
    """A classic model hypothesis: its state and what it has answered and armed so far."""

    state: ClassicState
    durable: list[Any] = field(default_factory=list)
    transitions: list[tuple[GroupState, GroupState]] = field(default_factory=list)
    #: model answers the target has not given yet: ref -> (response, model time)
    outstanding: dict[int, tuple[Any, int]] = field(default_factory=dict)
    matched: set[int] = field(default_factory=set)
    choices: tuple[str, ...] = ()
    #: how many of ``transitions`` the simulator has been shown (only the reported hypothesis advances it)
    reported: int = 0
    #: the model clock of this hypothesis: never behind the real clock, ahead of it by timers fired early
    now: int = 0
    #: provisional member ids this hypothesis has bound to the target's ids
    bound: dict[str, str] = field(default_factory=dict)
    #: choices this hypothesis made that the protocol allows but Apache Kafka would not (kafka-compat)
    compat: tuple[str, ...] = ()
    #: timers an operation armed, by the refs it answered (and its own): ref -> (model time, timers)
    armed: dict[int, tuple[int, tuple[tuple[str, str, int], ...]]] = field(default_factory=dict)
    #: how much later than its model deadline the target may fire a timer: (group, key, deadline) -> ms
    slack: dict[tuple[str, str, int], int] = field(default_factory=dict)
    #: timers this candidate fired before its operation: (refs they answered, the groups, how many
    #: transitions and durable records, all as they stood just before the operation); see `pre_split`
    pre: Split | None = None
    #: the same for the timers it fired after its operation (the view: just after the operation)
    post: Split | None = None
    #: the hypothesis this candidate was computed from, during one operation only (`_operate`
    #: clears it): `timer_split.switched_from`
    parent: Any = field(default=None, compare=False, repr=False)

    def key(self) -> Any:
        return (self.state, sorted(self.outstanding.items(), key=lambda kv: kv[0]))


def rename_hypo(h: Hypo, old: str, new: str) -> None:
    """Member id ``old`` becomes ``new`` everywhere in ``h`` (the target named a provisional id)."""
    rename = renamer(old, new)
    h.state = rename(h.state)
    h.durable = rename(h.durable)
    h.outstanding = rename(h.outstanding)
    # timer keys carry member ids: the slack a timer was given (and the timers an operation armed,
    # widened when its answer comes) must follow the rename, or a new member's pending timer loses
    # its slack the moment its MEMBER_ID_REQUIRED answer names it
    h.armed = rename(h.armed)
    h.slack = rename(h.slack)
    h.pre = rename(h.pre)
    h.post = rename(h.post)


def ids_in(h: Hypo) -> set[str]:
    """Every member id the hypothesis' groups know (members and pending members)."""
    out: set[str] = set()
    for g in h.state.groups.values():
        out |= set(g.members) | set(g.pending_members)
    return out


def group_views(h: Hypo) -> dict[str, GroupSnap]:
    return {gid: GroupSnap.of(g) for gid, g in h.state.groups.items()}


def switch_view(parent: Hypo) -> tuple[dict[str, GroupSnap], tuple[Any, ...]]:
    """What `RealTimeSim` shows of a lineage switch's parent (`timer_split.switched_from`): its
    groups and durable records as they stood before the operation."""
    return group_views(parent), tuple(parent.durable)
