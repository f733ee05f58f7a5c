"""The classic simulator's port to a coordinator: the interface (`ClassicPort`) and the in-process model
behind it (`ModelPort`). The conformance suite's oracle implements the same interface over the wire.
"""

from __future__ import annotations

from typing import Any, Protocol

from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import Request
from model.classic.records import GroupDeleted, GroupMetadataRecord, GroupUpdated, load
from model.classic.state import ClassicState, GroupState
from model.classic.world import (
    GroupSnap,
    PersistedSnap,
)
from model.result import Delivery, Result


class ClassicPort(Protocol):
    """What the simulator needs from a coordinator (model, or real target plus oracle)."""

    max_size: int
    initial_rebalance_delay_ms: int

    def send(self, ref: int, request: Request, now: int) -> list[Delivery]: ...

    def advance(self, now: int) -> list[Delivery]: ...

    def failover(self, now: int) -> list[Delivery]: ...

    def create_topic(self, topic: str, partitions: int) -> None: ...

    def inject_append_failure(self) -> None: ...

    def group(self, group_id: str) -> GroupSnap | None: ...

    def persisted(self, group_id: str) -> PersistedSnap | None: ...

    def take_transitions(self) -> tuple[tuple[GroupState, GroupState], ...]:
        """The state edges the group took since the last call (in order)."""
        ...


class ModelPort:
    """The reference model in process: the `model` target (always available, must always pass)."""

    def __init__(self, coordinator: ClassicCoordinator | None = None) -> None:
        self.coordinator = coordinator or ClassicCoordinator()
        self.state = ClassicState()
        self.durable: list[Any] = []
        self.records: list[Any] = []
        self._transitions: tuple[tuple[GroupState, GroupState], ...] = ()
        self.max_size = self.coordinator.config.max_size
        self.initial_rebalance_delay_ms = self.coordinator.config.initial_rebalance_delay_ms
        #: the last `persisted` answer: the (append-only) durable log, its length, the group id
        self._persisted: tuple[tuple[Any, int, str], PersistedSnap | None] = ((None, -1, ""), None)

    def _take(self, result: Result, before: dict[str, GroupState]) -> list[Delivery]:
        path: list[tuple[GroupState, GroupState]] = []
        current = dict(before)
        for rec in result.records:
            self.records.append(rec)
            if getattr(rec, "durable", False):
                self.durable.append(rec)
            if isinstance(rec, GroupUpdated):
                for name, value in rec.changes:
                    if name == "state":
                        prev = current.get(rec.group_id, GroupState.EMPTY)
                        path.append((prev, value))
                        current[rec.group_id] = value
        self._transitions += tuple(path)
        return result.deliveries

    def _states(self) -> dict[str, GroupState]:
        return {gid: g.state for gid, g in self.state.groups.items()}

    def send(self, ref: int, request: Request, now: int) -> list[Delivery]:
        before = self._states()
        return self._take(self.coordinator.handle(self.state, request, ref, now), before)

    def advance(self, now: int) -> list[Delivery]:
        before = self._states()
        return self._take(self.coordinator.advance(self.state, now), before)

    def failover(self, now: int) -> list[Delivery]:
        deliveries = self.coordinator.unload(self.state).deliveries
        self.state = load(self.durable, now)
        self._transitions = ()
        return deliveries

    def create_topic(self, topic: str, partitions: int) -> None:
        self._take(self.coordinator.create_topic(self.state, topic, partitions), self._states())

    def inject_append_failure(self) -> None:
        self._take(self.coordinator.inject_append_failure(self.state), self._states())

    def cleanup_group_metadata(self) -> None:
        """Kafka's periodic metadata cleanup, run now (`RebalanceRules.cleanup_group_metadata`)."""
        self._take(self.coordinator.cleanup_group_metadata(self.state), self._states())

    def group(self, group_id: str) -> GroupSnap | None:
        group = self.state.groups.get(group_id)
        return None if group is None else GroupSnap.of(group)

    def persisted(self, group_id: str) -> PersistedSnap | None:
        """`persisted_in` the durable log; the same object while nothing was appended to it."""
        (log, length, gid), snap = self._persisted
        if log is not self.durable or length != len(self.durable) or gid != group_id:
            snap = persisted_in(self.durable, group_id)
            self._persisted = ((self.durable, len(self.durable), group_id), snap)
        return snap

    def take_transitions(self) -> tuple[tuple[GroupState, GroupState], ...]:
        taken, self._transitions = self._transitions, ()
        return taken


def persisted_in(durable: list[Any] | tuple[Any, ...], group_id: str) -> PersistedSnap | None:
    """The group's last durable GroupMetadataRecord as the world shows it (None: none yet, or the
    group was deleted since)."""
    for rec in reversed(durable):
        if isinstance(rec, GroupDeleted) and rec.group_id == group_id:
            return None
        if isinstance(rec, GroupMetadataRecord) and rec.group_id == group_id:
            return PersistedSnap(rec.generation, tuple((m.member_id, m.assignment) for m in rec.members))
    return None
