"""The KIP-848 simulator's port to a coordinator: the interface (`ConsumerPort`) and the in-process
model behind it (`ModelConsumerPort`). The conformance suite's oracle implements the same interface
over the wire.
"""

from __future__ import annotations

from typing import Protocol

from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
)
from model.consumer.records import compact
from model.consumer.state import ConsumerCoordinatorState
from model.consumer.txn import ConsumerCoordinatorConfig
from model.result import Result


class ConsumerPort(Protocol):
    """What the simulator needs from a coordinator (the model, or a real target plus the oracle)."""

    config: ConsumerCoordinatorConfig

    def heartbeat(self, request: ConsumerGroupHeartbeatRequest, ref: int, now: int) -> Result: ...

    def offset_commit(self, request: object, ref: int, now: int) -> Result: ...

    def delete_groups(self, request: DeleteGroupsRequest, ref: int, now: int) -> Result: ...

    def advance(self, now: int) -> Result: ...

    def topic(self, action: str, topic: str, partitions: int) -> Result: ...

    def failover(self, now: int) -> Result: ...

    def coordinator_state(self) -> ConsumerCoordinatorState:
        """The coordinator view the invariants read (the model's own, or the oracle's)."""
        ...


class ModelConsumerPort:
    """The reference model in process: the `model` target (always available, must always pass)."""

    def __init__(self, coordinator: ConsumerCoordinator) -> None:
        self.coordinator = coordinator
        self.config = coordinator.config
        self.state = ConsumerCoordinatorState()
        self.records: list[object] = []

    def _keep(self, result: Result) -> Result:
        self.records += result.records
        return result

    def heartbeat(self, request: ConsumerGroupHeartbeatRequest, ref: int, now: int) -> Result:
        return self._keep(self.coordinator.handle_consumer_group_heartbeat(self.state, request, ref, now))

    def offset_commit(self, request: object, ref: int, now: int) -> Result:
        return self._keep(self.coordinator.handle_offset_commit(self.state, request, ref, now))  # type: ignore[arg-type]

    def delete_groups(self, request: DeleteGroupsRequest, ref: int, now: int) -> Result:
        return self._keep(self.coordinator.handle_delete_groups(self.state, request, ref, now))

    def advance(self, now: int) -> Result:
        return self._keep(self.coordinator.advance(self.state, now))

    def topic(self, action: str, topic: str, partitions: int) -> Result:
        if action == "create":
            return self._keep(self.coordinator.create_topic(self.state, topic, partitions))
        if action == "delete":
            return self._keep(self.coordinator.delete_topic(self.state, topic))
        return self._keep(self.coordinator.add_partitions(self.state, topic, partitions))

    def failover(self, now: int) -> Result:
        """A new coordinator loads the durable records (docs/protocol-reference.md#b8): soft state and timers are rebuilt."""
        durable = compact(self.records)
        self.state, armed = self.coordinator.failover(durable, now)
        self.records = durable + list(armed.records)
        return Result(deliveries=list(armed.deliveries))

    def coordinator_state(self) -> ConsumerCoordinatorState:
        return self.state
