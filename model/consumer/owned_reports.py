"""The harness's record of the owned partitions each consumer reports, against what it holds.

A KIP-848 consumer acknowledges a revocation by leaving the partition out of the owned partitions
its heartbeat reports, and may do so only once it has stopped consuming it (KIP-848 "Consumer
Group Heartbeat API", field TopicPartitions; the Java consumer reports after its revocation
callback completes). The consumer's own bookkeeping cannot tell whether it reported honestly, so
the simulator keeps what went on the wire: for each heartbeat a consumer sends, the partitions it
held at that moment and the partitions the request reported (a null field: those of its last
report). `consumer.reports_what_it_holds` compares the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from model.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartition

Owned = frozenset[TopicPartition]
#: (client name, partitions held when sending, partitions the heartbeat reported owning)
Report = tuple[str, Owned, Owned]


@dataclass
class OwnedReports:
    #: client name -> the owned partitions its last heartbeat that carried them reported
    last: dict[str, Owned] = field(default_factory=dict)
    #: the reports of the heartbeats sent since the last `take`
    pending: list[Report] = field(default_factory=list)

    def sent(self, name: str, held: Owned, request: ConsumerGroupHeartbeatRequest) -> None:
        """``name`` sends ``request`` while holding ``held`` (a leave reports nothing)."""
        if request.member_epoch < 0:
            self.last.pop(name, None)
            return
        reported = request.owned()
        if reported is None:
            reported = self.last.get(name)
            if reported is None:  # nothing reported before: nothing to compare with
                return
        self.last[name] = reported
        self.pending.append((name, held, reported))

    def take(self) -> tuple[Report, ...]:
        out, self.pending = tuple(self.pending), []
        return out

    def copy(self) -> OwnedReports:
        return OwnedReports(dict(self.last), list(self.pending))
