"""The driver side of a design: it takes the workload's ops and shows a `DesignView`.

`Engine` is what every design offers (the shipped protocols through adapters over their simulators);
`NetEngine` is the common part of the designs built on the actor world (`model.designs.net`): it
starts and stops processes, moves the clock, changes the brokers' metadata and injects the network
faults, and leaves the design its members, its coordinator and how a failover or a lost socket
plays out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from model.designs import ops as o
from model.designs.metadata import Brokers
from model.designs.net import Actor, DesignError, Msg, Net
from model.designs.view import DesignView, MemberView
from model.embedded import TopicPartition


@dataclass(frozen=True)
class Timing:
    """One set of timeouts for every design, so their runs compare (virtual milliseconds)."""

    session_timeout_ms: int = 6_000
    heartbeat_ms: int = 2_000
    rebalance_timeout_ms: int = 10_000
    request_timeout_ms: int = 10_000
    metadata_refresh_ms: int = 5_000
    retry_backoff_ms: int = 100


class Engine(Protocol):
    design: str

    def apply(self, op: Any) -> None: ...

    def view(self, checkpoint: bool = False) -> DesignView: ...

    def traffic(self, rebalance_only: bool = False) -> tuple[int, int]:
        """(messages, bytes) sent so far; ``rebalance_only``: only the design's rebalance messages."""
        ...


class MemberActor(Actor):
    """What a member actor shows the engine."""

    version: int = 1
    topics: tuple[str, ...] = ()
    regex: bool = False

    def start(self, now: int) -> list[Msg]:
        raise NotImplementedError

    def leave(self, now: int) -> list[Msg]:
        raise NotImplementedError

    def holds(self) -> frozenset[TopicPartition]:
        raise NotImplementedError

    def token(self) -> int | None:
        raise NotImplementedError

    def fatal(self) -> bool:
        return False


class NetEngine:
    """Common op handling for the designs on the actor world."""

    design = ""
    #: message kinds that make up a rebalance (the rest is steady traffic: heartbeats, pings)
    rebalance_kinds: frozenset[str] = frozenset()

    def __init__(
        self, topics: dict[str, int], timing: Timing | None = None, options: dict[str, str] | None = None
    ) -> None:
        self.timing = timing or Timing()
        self.options = dict(options or {})
        self.net = Net()
        self.brokers = Brokers(dict(topics))
        self.members: dict[str, MemberActor] = {}
        self.incarnation: dict[str, int] = {}
        self.left: set[str] = set()
        self.failed_over = False

    # ------------------------------------------------------------ what a design supplies
    def make_member(self, op: o.Join, incarnation: int) -> MemberActor:
        raise NotImplementedError

    def generation(self) -> int | None:
        raise NotImplementedError

    def strategy(self) -> str:
        return ""

    def rebalances(self) -> int:
        return 0

    def coordinator_entries(self) -> int:
        return -1

    def failover(self) -> None:
        raise DesignError(f"{self.design}: no coordinator failover")

    def lose_socket(self, member: str) -> None:
        raise DesignError(f"{self.design}: no connections to lose")

    def on_topic_change(self, topic: str) -> None:
        """The brokers' metadata changed (members see it when they fetch)."""

    # ------------------------------------------------------------ ops
    def apply(self, op: Any) -> None:
        self.failed_over = False
        net = self.net
        if isinstance(op, o.Join):
            self._start(op)
        elif isinstance(op, o.Upgrade):
            old = self.members.get(op.member)
            if old is None:
                return
            net.kill(op.member)
            self._start(o.Join(op.member, old.topics, old.regex, op.version))
        elif isinstance(op, o.Leave):
            m = self.members.get(op.member)
            if m is not None and self._alive(op.member):
                net.resume(op.member)
                net.send(m.leave(net.now))
                self.left.add(op.member)
        elif isinstance(op, o.Crash):
            net.kill(op.member)
        elif isinstance(op, o.Pause):
            net.pause(op.member)
        elif isinstance(op, o.Resume):
            net.resume(op.member)
        elif isinstance(op, o.Advance | o.Settle):
            net.run_until(net.now + op.ms)
        elif isinstance(op, o.SetTopic):
            if op.partitions > self.brokers.truth.get(op.topic, 0):  # partitions are never removed
                self.brokers.truth[op.topic] = op.partitions
                self.on_topic_change(op.topic)
        elif isinstance(op, o.StaleMetadata):
            self.brokers.lag(op.member, op.topic, op.partitions)
        elif isinstance(op, o.Refresh):
            self.brokers.catch_up(op.member)
        elif isinstance(op, o.LoseSocket):
            if self._alive(op.member):
                self.lose_socket(op.member)
        elif isinstance(op, o.LoseResponse):
            net.drop_next.add(op.member)
        elif isinstance(op, o.Failover):
            self.failover()
            self.failed_over = True
        else:
            raise DesignError(f"{self.design}: unknown op {type(op).__name__}")

    def _start(self, op: o.Join) -> None:
        if self._alive(op.member):
            return
        n = self.incarnation.get(op.member, 0) + 1
        self.incarnation[op.member] = n
        self.left.discard(op.member)
        actor = self.make_member(op, n)
        self.members[op.member] = actor
        self.net.add(actor)
        self.net.send(actor.start(self.net.now))

    def _alive(self, name: str) -> bool:
        return name in self.members and name not in self.net.dead and name not in self.left

    # ------------------------------------------------------------ view
    def view(self, checkpoint: bool = False) -> DesignView:
        truth = self.brokers.truth
        members = []
        for name in sorted(self.members):
            m = self.members[name]
            alive = self._alive(name)
            topics = frozenset(truth) if m.regex else frozenset(t for t in m.topics if truth.get(t, 0) > 0)
            members.append(
                MemberView(
                    name,
                    self.incarnation[name],
                    alive,
                    name in self.net.paused,
                    m.token(),
                    m.holds() if alive else frozenset(),
                    topics,
                    m.version,
                    m.fatal(),
                    o.STRATEGIES[m.version],
                )
            )
        return DesignView(
            self.design,
            self.net.now,
            tuple(sorted((t, n) for t, n in truth.items() if n > 0)),
            tuple(members),
            self.generation(),
            self.failed_over,
            self.strategy(),
            checkpoint,
            self.rebalances(),
            self.coordinator_entries(),
        )

    def traffic(self, rebalance_only: bool = False) -> tuple[int, int]:
        return self.net.traffic.total(self.rebalance_kinds if rebalance_only else None)
