"""The harness's record of the owned partitions each consumer reports, against what it holds.

A KIP-848 consumer acknowledges a revocation by leaving the partition out of the owned partitions
its heartbeat reports, and may do so only once it has stopped consuming it (KIP-848 "Consumer
Group Heartbeat API", field TopicPartitions; the Java consumer reports after its revocation
callback completes). The consumer's own bookkeeping cannot tell whether it reported honestly, so
the simulator keeps what went on the wire: for each heartbeat a consumer sends, the partitions it
held at that moment and the partitions the request reported (a null field: those of its last
report). `consumer.reports_what_it_holds` compares the two.

The same record keeps two more things a consumer owes the coordinator on the wire, which its own
bookkeeping cannot vouch for either: the heartbeats that must be full requests (a join with epoch
0, and the first heartbeat after one that failed: no answer heard, or an error answer), for
`consumer.full_heartbeat_when_due`; and the turns at which a running consumer sent nothing though it
had released partitions it held and reported in its last heartbeat, for
`consumer.release_reported_at_once`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from model.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartition

Owned = frozenset[TopicPartition]
#: (client name, partitions held when sending, partitions the heartbeat reported owning)
Report = tuple[str, Owned, Owned]
#: (client name, why it had to be full: "join" or "after a failed heartbeat", the heartbeat sent)
Due = tuple[str, str, ConsumerGroupHeartbeatRequest]
#: (client name, partitions held, partitions it held and reported in its last heartbeat and has released
#: since) of a consumer that had its turn and sent nothing
Silence = tuple[str, Owned, Owned]

JOIN = "join"
AFTER_FAILURE = "after a failed heartbeat"


@dataclass
class OwnedReports:
    #: client name -> the owned partitions its last heartbeat that carried them reported
    last: dict[str, Owned] = field(default_factory=dict)
    #: the reports of the heartbeats sent since the last `take`
    pending: list[Report] = field(default_factory=list)
    #: client name -> the partitions it held when it sent its last heartbeat that reported owned ones
    held_then: dict[str, Owned] = field(default_factory=dict)
    #: client names whose last heartbeat failed (no answer heard, or an error answer)
    failed_last: set[str] = field(default_factory=set)
    #: the heartbeats sent since the last `take` that had to be full requests
    due: list[Due] = field(default_factory=list)
    #: the silent turns since the last `take` of consumers holding less than they last reported
    silences: list[Silence] = field(default_factory=list)

    def failed(self, name: str) -> None:
        """The running process ``name`` heard no answer to its heartbeat, or an error answer."""
        self.failed_last.add(name)

    def idle(self, name: str, held: Owned) -> None:
        """``name``, running and free to send (nothing in flight), had its turn and sent nothing."""
        released = (self.last.get(name, frozenset()) & self.held_then.get(name, frozenset())) - held
        if released:
            self.silences.append((name, held, released))

    def sent(self, name: str, held: Owned, request: ConsumerGroupHeartbeatRequest) -> None:
        """``name`` sends ``request`` while holding ``held`` (a leave reports nothing)."""
        retry = name in self.failed_last
        self.failed_last.discard(name)
        if request.member_epoch == 0:
            self.due.append((name, JOIN, request))
        elif request.member_epoch > 0 and retry:
            self.due.append((name, AFTER_FAILURE, request))
        if request.member_epoch < 0:
            self.last.pop(name, None)
            self.held_then.pop(name, None)
            return
        reported = request.owned()
        if reported is None:
            reported = self.last.get(name)
            if reported is None:  # nothing reported before: nothing to compare with
                return
        self.last[name] = reported
        self.held_then[name] = held
        self.pending.append((name, held, reported))

    def take(self) -> tuple[Report, ...]:
        """The reports since the last take; the full-request and silence records are dropped
        (`take_all` keeps them)."""
        return self.take_all()[0]

    def take_all(self) -> tuple[tuple[Report, ...], tuple[Due, ...], tuple[Silence, ...]]:
        out = (tuple(self.pending), tuple(self.due), tuple(self.silences))
        self.pending, self.due, self.silences = [], [], []
        return out

    def copy(self) -> OwnedReports:
        return OwnedReports(
            dict(self.last),
            list(self.pending),
            dict(self.held_then),
            set(self.failed_last),
            list(self.due),
            list(self.silences),
        )
