"""The handler contract shared by every protocol (docs/model.md; as Kafka's coordinator runtime does).

A handler returns a `Result`: the responses to deliver (to the request that asked, or to parked
requests it completes) and the records it appended. It applies each record to the state as it
emits it (callers must not apply `records` again: they are for the log, replay and failover). The
state changes only by applying records; replaying a run's records onto the initial state rebuilds the same state. A
record marked `durable` is what a coordinator persists in `__consumer_offsets`; failover replays
only those ("Handling Coordinator Failures", docs/protocol-reference.md#client-side-assignment).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Delivery:
    """A response addressed to the request with reference ``ref`` (the harness's correlation id)."""

    ref: int
    response: Any


@dataclass
class Result:
    deliveries: list[Delivery] = field(default_factory=list)
    records: list[Any] = field(default_factory=list)

    def reply(self, ref: int, response: Any) -> None:
        self.deliveries.append(Delivery(ref, response))

    def extend(self, other: Result) -> None:
        self.deliveries.extend(other.deliveries)
        self.records.extend(other.records)
