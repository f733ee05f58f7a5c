"""The served coordinator: the model's `MixedCoordinator` behind one port, as `ModelPort`
(model/classic/port.py) and `ModelConsumerPort` (model/consumer/port.py) wrap their coordinators.

One shard serves classic and KIP-848 groups at once (model/mixed/coordinator.py), so a classic
client and a consumer-protocol client can meet in one group as on Kafka 4.x. State changes only by
the coordinator's records; `failover` reloads from the durable ones (docs/protocol-reference.md#b8).
Committed offsets are read, never written, by `committed` (OffsetFetch has no model handler).
"""

from __future__ import annotations

from model.choice import SeededChooser
from model.mixed.consumer_group import MixedConfig
from model.mixed.coordinator import MixedCoordinator
from model.mixed.state import MixedState
from model.result import Result

#: bound on the records kept between failovers (durable ones are compacted past it)
MAX_RECORDS = 200_000


class MixedModelPort:
    """Requests in, deliveries out; the clock is the caller's (milliseconds)."""

    def __init__(
        self, seed: int, config: MixedConfig, coordinator_class: type[MixedCoordinator] = MixedCoordinator
    ) -> None:
        self.coordinator = coordinator_class(config, SeededChooser(seed))
        self.state = MixedState()
        self.records: list[object] = []

    def _keep(self, result: Result) -> Result:
        self.records += result.records
        if len(self.records) > MAX_RECORDS:
            self.records = [r for r in self.records if getattr(r, "durable", False)]
        return result

    def send(self, request: object, ref: int, now: int) -> Result:
        return self._keep(self.coordinator.handle(self.state, request, ref, now))

    def advance(self, now: int) -> Result:
        return self._keep(self.coordinator.advance(self.state, now))

    def create_topic(self, topic: str, partitions: int) -> Result:
        return self._keep(self.coordinator.create_topic(self.state, topic, partitions))

    def failover(self, now: int) -> Result:
        """A new coordinator loads the durable records; parked requests are forgotten."""
        durable = [r for r in self.records if getattr(r, "durable", False)]
        self.state, armed = self.coordinator.failover(durable, now)
        self.records = durable + list(armed.records)
        return armed

    def committed(self, group_id: str, topic: str, partition: int) -> tuple[int, str | None] | None:
        """The committed offset of a partition, from whichever half holds the group."""
        if group_id in self.state.consumer.groups or group_id in self.state.consumer.offsets:
            found = self.state.consumer.offsets.get(group_id, {}).get((topic, partition))
            if found is not None:
                return found.offset, found.metadata
        return self.state.classic.offsets.get((group_id, topic, partition))
