"""Design 6, the baseline: the shipped two-phase protocol, i.e. the model as it is.

An adapter, not a copy: the workload's ops drive `model.classic.sim.ClassicSim` over the reference
coordinator (`ModelPort`) and the virtual Java consumers; the view reads the simulator's world.
Members act the way `conformance.protocols.build.settle_round` has them act (every running member takes its
next step; idle time runs to the next timer, never past a third of a session timeout). A member's
lagging broker matters only when it is the leader, the one member that assigns (seed 000
'Consumer Embedded Protocol', advantage 1): `LaggingClient` assigns from its own view.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from model.choice import SeededChooser
from model.classic.client import ClassicClient, ClientConfig, Phase
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import HeartbeatRequest, LeaveGroupRequest, LeaveGroupResponse
from model.classic.port import ModelPort
from model.classic.sim import ClassicSim
from model.classic.state import ClassicConfig
from model.designs import ops as o
from model.designs.engine import Timing
from model.designs.net import DesignError
from model.designs.view import DesignView, MemberView
from model.designs.wire import classic_size
from model.errors import ErrorCode
from model.observation import Observation

MAX_BUSY_ROUNDS = 200
REBALANCE_KINDS = frozenset(
    {"JoinGroupRequest", "JoinGroupResponse", "SyncGroupRequest", "SyncGroupResponse"}
)


class LaggingClient(ClassicClient):
    """A classic consumer whose metadata may come from a lagging broker (`StaleMetadata`)."""

    lag: dict[str, int]

    def on_response(self, response: Any, topics: dict[str, int]) -> None:
        view = {**topics, **getattr(self, "lag", {})}
        super().on_response(response, {t: n for t, n in view.items() if n > 0})


class ShippedEngine:
    design = "shipped"
    client_class: type[ClassicClient] = LaggingClient

    def __init__(
        self,
        topics: dict[str, int],
        timing: Timing | None = None,
        options: dict[str, str] | None = None,
        seed: int = 0,
    ) -> None:
        self.timing = timing or Timing()
        self.options = dict(options or {})
        cfg = ClassicConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=500)
        self.sim = ClassicSim(
            ModelPort(ClassicCoordinator(cfg, SeededChooser(seed))), {}, topics=dict(topics)
        )
        self.incarnation: dict[str, int] = {}
        self.regex: dict[str, bool] = {}
        self.version: dict[str, int] = {}
        self.lag: dict[str, dict[str, int]] = {}
        self.crashed: set[str] = set()
        self.left: set[str] = set()
        self.refused: list[str] = []
        self.failed_over = False
        #: the leader's assignor takes this long (virtual ms) before it sends SyncGroup
        self.assign_ms = int(self.options.get("assign_ms", "0") or 0)
        self.busy_until: dict[str, int] = {}
        self.busy_gen: dict[str, int] = {}
        #: leaders that will see a topic change at their next metadata refresh: name -> when
        self.refresh_due: dict[str, int] = {}
        #: a stable member heartbeats every ``heartbeat_ms`` (heartbeat.interval.ms), not at every step
        self.next_heartbeat: dict[str, int] = {}
        self.messages = [0, 0, 0, 0]  # all: count, bytes; rebalance: count, bytes
        #: the simulator's observations, for the model's own classic invariants
        self.observations: list[Observation[Any]] = []

    # ------------------------------------------------------------ members
    def assignors(self, version: int) -> tuple[str, ...]:
        """Version-mapped strategies, or the one ``assignor`` option (the KIP-341 baseline: sticky)."""
        fixed = self.options.get("assignor")
        return (fixed,) if fixed else o.strategies_of(version)

    def _config(self, op: o.Join) -> ClientConfig:
        topics = tuple(sorted(self.sim.topics)) if op.regex else op.topics
        return ClientConfig(
            client_id=op.member,
            topics=topics,
            assignors=self.assignors(op.version),
            session_timeout_ms=self.timing.session_timeout_ms,
            rebalance_timeout_ms=self.timing.rebalance_timeout_ms,
        )

    def _start(self, op: o.Join) -> None:
        if self._running(op.member):
            return
        self.incarnation[op.member] = self.incarnation.get(op.member, 0) + 1
        self.regex[op.member], self.version[op.member] = op.regex, op.version
        client = self.client_class(op.member, self._config(op))
        client.lag = self.lag.setdefault(op.member, {})  # type: ignore[attr-defined]
        sim = self.sim
        sim.clients[op.member] = client
        sim.awaiting.pop(op.member, None)
        sim.stalled.discard(op.member)
        sim.drop_held(op.member)
        self.crashed.discard(op.member)
        self.left.discard(op.member)

    def _running(self, name: str) -> bool:
        return name in self.sim.clients and name not in self.crashed and name not in self.left

    def _observe(self, obs: Observation[Any] | None) -> None:
        if obs is None:
            return
        self.observations.append(obs)
        event = obs.event
        request = getattr(event, "request", None)
        if request is not None:
            self._count(type(request).__name__, classic_size(request))
        for d in obs.deliveries:
            self._count(type(d.response).__name__, classic_size(d.response))
            if (
                isinstance(d.response, LeaveGroupResponse)
                and isinstance(request, LeaveGroupRequest)
                and any(m.error == ErrorCode.UNKNOWN_MEMBER_ID for m in d.response.members)
            ):
                self.refused.append(event.client)

    def _count(self, kind: str, size: int) -> None:
        self.messages[0] += 1
        self.messages[1] += size
        if kind in REBALANCE_KINDS:
            self.messages[2] += 1
            self.messages[3] += size

    # ------------------------------------------------------------ time
    def _gap(self) -> int:
        sim = self.sim
        world, now = sim.world, sim.now
        gaps: list[int] = []
        if world is not None and world.group is not None:
            gaps += [d - now for _, d in world.group.timers]
        gaps += [
            sent + sim.request_timeout_ms - now
            for n, (_, sent) in sim.awaiting.items()
            if n not in sim.stalled
        ]
        gaps += [
            c.config.session_timeout_ms // 3
            for n, c in sim.clients.items()
            if self._running(n) and c.member_id
        ]
        gaps += [t - now for t in self.busy_until.values() if t > now]
        gaps += [t - now for t in self.refresh_due.values() if t > now]
        gaps += [t - now for n, t in self.next_heartbeat.items() if t > now and self._running(n)]
        return max(1, min(gaps)) if gaps else 100

    def _assigning(self) -> None:
        """A leader that just got the member list is busy assigning for ``assign_ms``."""
        if not self.assign_ms:
            return
        for name, c in self.sim.clients.items():
            if c.phase == Phase.SYNCING and c.pending_assignments and self.busy_gen.get(name) != c.generation:
                self.busy_gen[name] = c.generation
                self.busy_until[name] = self.sim.now + self.assign_ms

    def _run(self, ms: int) -> None:
        sim = self.sim
        end = sim.now + ms
        busy_rounds = 0
        while True:
            for name, due in sorted(self.refresh_due.items()):
                if due <= sim.now:
                    del self.refresh_due[name]
                    if self._running(name):
                        sim.clients[name].needs_rejoin = True
            busy = False
            for name in list(sim.clients):  # join order: the first to join leads, as in Kafka
                if not self._running(name) or name in sim.stalled or self.busy_until.get(name, 0) > sim.now:
                    continue
                c = sim.clients[name]
                idle = c.phase == Phase.STABLE and not c.needs_rejoin and c.inflight is None
                if idle and self.next_heartbeat.get(name, 0) > sim.now:
                    continue
                obs = sim.client_step(name)
                self._observe(obs)
                if isinstance(getattr(obs.event, "request", None) if obs else None, HeartbeatRequest):
                    self.next_heartbeat[name] = sim.now + self.timing.heartbeat_ms
                self._assigning()
                if obs is not None and not isinstance(getattr(obs.event, "request", None), HeartbeatRequest):
                    busy = True
            busy_rounds = busy_rounds + 1 if busy else 0
            if busy and busy_rounds < MAX_BUSY_ROUNDS:
                continue
            if busy_rounds >= MAX_BUSY_ROUNDS:
                raise DesignError("shipped: members kept rejoining at one instant")
            if sim.now >= end:
                break
            self._observe(sim.advance(min(self._gap(), end - sim.now)))

    # ------------------------------------------------------------ ops
    def apply(self, op: Any) -> None:
        self.failed_over = False
        sim = self.sim
        if isinstance(op, o.Join):
            self._start(op)
        elif isinstance(op, o.Upgrade):
            if op.member in sim.clients:
                old = sim.clients[op.member]
                self.crashed.add(op.member)
                self._start(
                    o.Join(op.member, old.config.topics, self.regex.get(op.member, False), op.version)
                )
        elif isinstance(op, o.Leave):
            if self._running(op.member):
                sim.stall(op.member, False)
                self._observe(sim.leave(op.member))
                self.left.add(op.member)
        elif isinstance(op, o.Crash):
            if op.member in sim.clients:
                self.crashed.add(op.member)
                sim.stall(op.member, True)
        elif isinstance(op, o.Pause):
            if self._running(op.member):
                self._observe(sim.stall(op.member, True))
        elif isinstance(op, o.Resume):
            if self._running(op.member) and op.member in sim.stalled:
                self._observe(sim.stall(op.member, False))
        elif isinstance(op, o.Advance | o.Settle):
            self._run(op.ms)
        elif isinstance(op, o.SetTopic):
            if op.partitions > sim.topics.get(op.topic, 0):  # partitions are never removed
                self._observe(sim.create_topic(op.topic, op.partitions))
                self._topic_changed(op.topic)
        elif isinstance(op, o.StaleMetadata | o.Refresh):
            before = dict(self.lag.get(op.member, {}))
            if isinstance(op, o.StaleMetadata):
                self.lag.setdefault(op.member, {})[op.topic] = op.partitions
            else:
                self.lag.setdefault(op.member, {}).clear()
            for topic in set(before) | set(self.lag[op.member]):  # the member's view changed
                if before.get(topic) != self.lag[op.member].get(topic):
                    self._view_changed(op.member, topic)
        elif isinstance(op, o.LoseSocket):
            if self._running(op.member):
                self._observe(sim.cut_connection(op.member))
        elif isinstance(op, o.LoseResponse):
            self._observe(sim.lose_response(op.member))
        elif isinstance(op, o.Failover):
            self._observe(sim.failover())
            self.failed_over = True
        else:
            raise DesignError(f"shipped: unknown op {type(op).__name__}")

    def _topic_changed(self, topic: str) -> None:
        """Regex members resubscribe; the leader rejoins once its periodic metadata refresh shows the
        change (Java: ConsumerCoordinator `rejoinNeededOrPending` compares the leader's assignment
        snapshot with its metadata), on the same refresh period the other designs' members use."""
        for name, c in sorted(self.sim.clients.items()):
            if not self._running(name):
                continue
            if self.regex.get(name):
                c.config = replace(c.config, topics=tuple(sorted(self.sim.topics)))
                c.needs_rejoin = True
            elif topic not in self.lag.get(name, {}):
                self._view_changed(name, topic)

    def _view_changed(self, name: str, topic: str) -> None:
        """What ``name`` sees of ``topic`` changed: a leader subscribing to it rejoins after its next
        metadata refresh (the same refresh period the other designs' members use)."""
        c = self.sim.clients.get(name)
        if (
            c is not None
            and self._running(name)
            and c.member_id
            and c.member_id == c.leader
            and topic in c.config.topics
        ):
            period = self.timing.metadata_refresh_ms
            self.refresh_due.setdefault(name, (self.sim.now // period + 1) * period)

    # ------------------------------------------------------------ view
    def view(self, checkpoint: bool = False) -> DesignView:
        sim = self.sim
        world = sim.world
        group = world.group if world is not None else None
        truth = {t: n for t, n in sim.topics.items() if n > 0}
        members = []
        for name in sorted(sim.clients):
            c = sim.clients[name]
            alive = self._running(name)
            members.append(
                MemberView(
                    name,
                    self.incarnation.get(name, 1),
                    alive,
                    name in sim.stalled,
                    c.generation,
                    frozenset(c.owned) if alive else frozenset(),
                    frozenset(truth)
                    if self.regex.get(name)
                    else frozenset(t for t in c.config.topics if t in truth),
                    self.version.get(name, 1),
                    c.phase == Phase.FATAL,
                    c.config.assignors[0],
                )
            )
        refused, self.refused = tuple(self.refused), []
        return DesignView(
            self.design,
            sim.now,
            tuple(sorted(truth.items())),
            tuple(members),
            group.generation if group is not None else None,
            self.failed_over,
            (group.protocol or "") if group is not None else "",
            checkpoint,
            group.generation if group is not None else 0,
            len(group.members) + len(group.pending_members) if group is not None else 0,
            refused,
        )

    def traffic(self, rebalance_only: bool = False) -> tuple[int, int]:
        return (
            (self.messages[2], self.messages[3]) if rebalance_only else (self.messages[0], self.messages[1])
        )
