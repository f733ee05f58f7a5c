"""The KIP-848 protocol as a design: the shipped consumer protocol (KIP-1082 v1) and design 9.

`ConsumerEngine` drives `model.consumer.sim.ConsumerSim` over the reference coordinator, the way
`model.designs.shipped` drives the classic one: members heartbeat when due, time runs in ticks.
Design 9 is KIP-1082's rejected alternative 2 (seed 004, 'Rejected Alternatives'): the server
generates the member id on the first heartbeat but does not add the member; the answer carries the
id, epoch 0 and a heartbeat interval of 0, so the client joins again at once with that id. Here
`ServerIdPort` answers those first heartbeats itself (keeping nothing) and hands everything else to
the reference coordinator, and `ServerIdConsumer` rejoins with a full heartbeat on such an answer.
A member that leaves between the two heartbeats names an id the group never had.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from model.choice import SeededChooser
from model.consumer.client import ClientState, VirtualConsumer
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from model.consumer.port import ModelConsumerPort
from model.consumer.sim import ConsumerSim
from model.consumer.sim_specs import ClientSpec
from model.consumer.txn import ConsumerCoordinatorConfig
from model.designs import ops as o
from model.designs.engine import Timing
from model.designs.net import DesignError
from model.designs.view import DesignView, MemberView
from model.errors import ErrorCode
from model.result import Result

TICK_MS = 100
#: ConsumerGroupHeartbeat v1 sizes (KIP-848): header + fields, counted from the request's own values
HEADER = 4 + 2 + 2 + 4 + 2 + len("consumer")


def heartbeat_size(req: ConsumerGroupHeartbeatRequest) -> int:
    names = req.subscribed_topic_names or ()
    owned = req.topic_partitions or ()
    size = HEADER + 2 + 1 + 2 + len(req.member_id) + 4 + 4 + 1 + 1 + 4
    size += 4 + sum(2 + len(n) for n in names) + 1 + 4 + sum(16 + 4 + 4 * len(t.partitions) for t in owned)
    return size


def response_size(resp: ConsumerGroupHeartbeatResponse) -> int:
    assigned = resp.assignment or ()
    return (
        4
        + 4
        + 4
        + 2
        + 2
        + 2
        + len(resp.member_id or "")
        + 4
        + 4
        + 1
        + sum(16 + 4 + 4 * len(t.partitions) for t in assigned)
    )


class ServerIdPort(ModelConsumerPort):
    """The reference coordinator behind a front that issues member ids without adding members."""

    def __init__(self, coordinator: ConsumerCoordinator) -> None:
        super().__init__(coordinator)
        self.issued = 0

    def heartbeat(self, request: ConsumerGroupHeartbeatRequest, ref: int, now: int) -> Result:
        if request.member_epoch == 0 and not request.member_id:
            self.issued += 1
            result = Result()
            result.reply(
                ref,
                ConsumerGroupHeartbeatResponse(
                    member_id=f"server-id-{self.issued}", member_epoch=0, heartbeat_interval_ms=0
                ),
            )
            return result
        return super().heartbeat(replace(request, version=1), ref, now)


class ServerIdConsumer(VirtualConsumer):
    """A consumer that starts without an id and joins again, in full, with the one it is given
    (otherwise the v1 consumer: regex subscriptions and all)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.member_id = ""

    def on_response(self, response: ConsumerGroupHeartbeatResponse, now: int | None = None) -> None:
        request = self.inflight
        if (
            request is not None
            and not self.crashed
            and request.member_epoch == 0
            and not request.member_id
            and response.error_code == ErrorCode.NONE
            and response.member_epoch == 0
        ):
            self.inflight = None
            self.member_id = response.member_id or ""
            self.next_heartbeat_at = self._sent_at if now is None else now
            return
        super().on_response(response, now)


class ConsumerEngine:
    design = "shipped-kip848"
    version = 1
    port_class: type[ModelConsumerPort] = ModelConsumerPort
    client_class: type[VirtualConsumer] = VirtualConsumer

    def __init__(
        self,
        topics: dict[str, int],
        timing: Timing | None = None,
        options: dict[str, str] | None = None,
        seed: int = 0,
    ) -> None:
        self.timing = timing or Timing()
        cfg = ConsumerCoordinatorConfig(
            session_timeout_ms=self.timing.session_timeout_ms, heartbeat_interval_ms=self.timing.heartbeat_ms
        )
        engine = self

        class Sim(ConsumerSim):
            def _process(self, spec: ClientSpec) -> VirtualConsumer:
                return engine.client_class(
                    spec.name, self.group_id, self.chooser, topics=spec.topics, regex=spec.regex,
                    version=spec.version, rebalance_timeout_ms=spec.rebalance_timeout_ms,
                )  # fmt: skip

        self.sim = Sim(
            self.port_class(ConsumerCoordinator(cfg, SeededChooser(seed))), {}, SeededChooser(seed + 1000)
        )
        for topic, n in sorted(topics.items()):
            self.sim.topic("create", topic, n)
        self.incarnation: dict[str, int] = {}
        self.gone: set[str] = set()
        self.refused: list[str] = []
        self.failed_over = False
        self.messages = [0, 0]
        #: per member: messages, bytes, and the first epoch above 0 it was answered (0 = not yet)
        self.by_member: dict[str, list[int]] = {}

    def _running(self, name: str) -> bool:
        return name in self.sim.clients and name not in self.gone

    def _exchange(self, name: str) -> None:
        client = self.sim.clients[name]
        before = client.member_id
        obs = self.sim.client_step(name)
        if obs is None:
            return
        req = getattr(obs.event, "request", None)
        mine = self.by_member.setdefault(name, [0, 0, 0])
        if req is not None:
            self._count(mine, heartbeat_size(req))
        for d in obs.deliveries:
            self._count(mine, response_size(d.response))
            if not mine[2] and d.response.member_epoch > 0:
                mine[2] = d.response.member_epoch
            if (
                req is not None
                and req.member_epoch < 0
                and d.response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
                and before
            ):
                self.refused.append(name)

    def _count(self, mine: list[int], size: int) -> None:
        self.messages[0] += 1
        self.messages[1] += size
        if not mine[2]:
            mine[0] += 1
            mine[1] += size

    def _run(self, ms: int) -> None:
        end = self.sim.now + ms
        while self.sim.now < end:
            for name in list(self.sim.clients):
                if self._running(name):
                    self._exchange(name)
            self.sim.advance(min(TICK_MS, end - self.sim.now))

    def apply(self, op: Any) -> None:
        self.failed_over = False
        sim = self.sim
        if isinstance(op, o.Join | o.Upgrade):
            if isinstance(op, o.Upgrade):
                if op.member not in sim.clients:
                    return
                op = o.Join(op.member, sim.specs[op.member].topics, False, op.version)
            elif self._running(op.member):
                return
            self.incarnation[op.member] = self.incarnation.get(op.member, 0) + 1
            spec = ClientSpec(
                op.member,
                op.topics,
                version=self.version,
                rebalance_timeout_ms=self.timing.rebalance_timeout_ms,
                regex=".*" if op.regex else None,
            )
            sim.specs[op.member] = spec
            sim.clients[op.member] = sim._process(spec)
            self.gone.discard(op.member)
        elif isinstance(op, o.Leave):
            if self._running(op.member):
                sim.clients[op.member].resume()
                sim.clients[op.member].leave()
                self._exchange(op.member)
                self.gone.add(op.member)
        elif isinstance(op, o.Crash):
            if op.member in sim.clients:
                sim.clients[op.member].crash()
                self.gone.add(op.member)
        elif isinstance(op, o.Pause | o.Resume):
            if self._running(op.member):
                sim.stall(op.member, isinstance(op, o.Pause))
        elif isinstance(op, o.Advance | o.Settle):
            self._run(op.ms)
        elif isinstance(op, o.SetTopic):
            known = sim.port.coordinator_state().topics
            if op.partitions > known.get(op.topic, 0):  # partitions are never removed
                sim.topic("add_partitions" if op.topic in known else "create", op.topic, op.partitions)
        elif isinstance(op, o.StaleMetadata | o.Refresh):
            pass  # the coordinator assigns from its own metadata: a member's lagging broker changes nothing
        elif isinstance(op, o.LoseSocket):
            if self._running(op.member):
                sim.cut_connection(op.member)
        elif isinstance(op, o.LoseResponse):
            sim.lose_response(op.member)
        elif isinstance(op, o.Failover):
            sim.failover()
            self.failed_over = True
        else:
            raise DesignError(f"{self.design}: unknown op {type(op).__name__}")

    def view(self, checkpoint: bool = False) -> DesignView:
        sim = self.sim
        state = sim.port.coordinator_state()
        group = state.groups.get(sim.group_id)
        truth = dict(sorted((t, n) for t, n in state.topics.items() if n > 0))
        members = []
        for name in sorted(sim.clients):
            c = sim.clients[name]
            alive = self._running(name)
            topics = frozenset(truth) if c.regex else frozenset(t for t in c.topics if t in truth)
            members.append(
                MemberView(
                    name,
                    self.incarnation.get(name, 1),
                    alive,
                    c.crashed and alive,
                    c.member_epoch,
                    frozenset(c.owned) if alive else frozenset(),
                    topics,
                    1,
                    c.state == ClientState.FATAL,
                )
            )
        refused, self.refused = tuple(self.refused), []
        return DesignView(
            self.design, sim.now, tuple(truth.items()), tuple(members),
            group.group_epoch if group is not None else None, self.failed_over, "", checkpoint,
            group.group_epoch if group is not None else 0, len(group.members) if group is not None else 0, refused,
        )  # fmt: skip

    def traffic(self, rebalance_only: bool = False) -> tuple[int, int]:
        return (self.messages[0], self.messages[1])


class ServerIdEngine(ConsumerEngine):
    design = "kip1082-server-id"
    port_class = ServerIdPort
    client_class = ServerIdConsumer
