"""A deterministic simulator: virtual classic consumers against a coordinator port.

Pure Python, no I/O: the Hypothesis machines, scenarios, explore and the Spark swarm all drive
it. The coordinator sits behind `ClassicPort`: `ModelPort` runs the reference model in process;
the adapter layer plugs a real coordinator (plus the oracle) into the same seam. Time is virtual
(`now` in ms); every step yields an `Observation[ClassicWorld]` for the invariants.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from model.classic.client import ClassicClient
from model.classic.deviations import assigned, returning_leader, returning_static, static_subscriptions
from model.classic.deviations import removed_unanswered as tag_removed_unanswered
from model.classic.messages import JoinGroupResponse, Request, SyncGroupResponse, answer_errors
from model.classic.port import ClassicPort
from model.classic.snapshot import client_snaps, kept, with_delivery
from model.classic.wire_record import Joins, Syncs, WireRecord
from model.classic.world import ClassicWorld, ClientSnap, Delivered, LeaderAssignment, bounds_of
from model.errors import ErrorCode
from model.observation import Observation
from model.result import Delivery


# ---------------------------------------------------------------------- events
@dataclass(frozen=True)
class Send:
    client: str
    ref: int
    request: Request
    how: str = "client"  # client | raw | duplicate


@dataclass(frozen=True)
class Advance:
    ms: int


@dataclass(frozen=True)
class Failover:
    pass


@dataclass(frozen=True)
class CreateTopic:
    topic: str
    partitions: int


@dataclass(frozen=True)
class AppendFailure:
    pass


@dataclass(frozen=True)
class Stall:
    client: str
    stalled: bool


@dataclass(frozen=True)
class LoseResponse:
    client: str


@dataclass(frozen=True)
class CutConnection:
    """The client's connection to the coordinator is closed (a network fault, not the client's
    choice). The coordinator keeps what it already applied (a parked JoinGroup stays a joining
    member; Kafka answers it on a dead connection, which goes nowhere); the client sees a
    disconnect and takes the path Java takes then: fail the in-flight request, find the
    coordinator again and rejoin (AbstractCoordinator / ConsumerNetworkClient disconnect handling,
    modelled by `ClassicClient.on_timeout`)."""

    client: str


@dataclass(frozen=True)
class DuplicateRequest:
    """The client's next request reaches the coordinator twice (a retry below the client). Kafka
    serves a connection's requests one at a time (`SocketServer` Processor mutes it), so the copy is
    applied after the original is answered (a parked JoinGroup's once the join completes), at the
    start of the next step; the client hears the original's answer, the copy's goes nowhere."""

    client: str


@dataclass(frozen=True)
class DelayRequest:
    """The client's next request is held by the network until `ClassicSim.release` (or its next
    request: a connection keeps its order), then applied after what others sent and the timers that
    fired meanwhile (a JoinGroup after its rebalance, a Heartbeat after its session). A request
    timeout, restart or cut closes the connection: it never arrives. Raw requests may overtake it."""

    client: str


@dataclass(frozen=True)
class Quiet:
    """Perturbations stop for ``bound_ms`` (or start again: None); see `ClassicSim.quiet`."""

    bound_ms: int | None


@dataclass(frozen=True)
class Unsubscribe:
    """A static member unsubscribes (its LeaveGroup suppressed, KIP-345) and subscribes again:
    a client-side change with no request (`ClassicClient.unsubscribe`; KAFKA-20983/20985). It is
    observed so that the client's state before and after can be judged."""

    client: str


Event = (
    Send
    | Advance
    | Failover
    | CreateTopic
    | AppendFailure
    | Stall
    | LoseResponse
    | CutConnection
    | DuplicateRequest
    | DelayRequest
    | Unsubscribe
    | Quiet
)


# ---------------------------------------------------------------------- ports


# ---------------------------------------------------------------------- simulator
@dataclass
class ClassicSim:
    port: ClassicPort
    clients: dict[str, ClassicClient]
    group_id: str = "g"
    topics: dict[str, int] = field(default_factory=dict)
    request_timeout_ms: int = 30_000
    keep_generations: int = 4
    now: int = 0
    next_ref: int = 1
    awaiting: dict[str, tuple[int, int]] = field(default_factory=dict)
    stalled: set[str] = field(default_factory=set)
    buffered: dict[str, list[Delivery]] = field(default_factory=dict)
    lose_next: set[str] = field(default_factory=set)
    #: clients whose next request is duplicated; original ref -> (copy ref, request) not yet sent
    duplicate_next: set[str] = field(default_factory=set)
    copies: dict[int, tuple[int, Request]] = field(default_factory=dict)
    #: copies whose original has been answered: applied at the start of the next step
    copies_due: list[tuple[int, Request, int]] = field(default_factory=list)
    delivered: Delivered = ()
    world: ClassicWorld | None = None
    owner_of_ref: dict[int, str] = field(default_factory=dict)
    #: clients whose next request is held (`DelayRequest`), and the held requests: name -> (ref, request)
    delay_next: set[str] = field(default_factory=set)
    held: dict[str, tuple[int, Request]] = field(default_factory=dict)
    quiet_since: int | None = None
    convergence_bound_ms: int | None = None
    #: the topics and static members' subscriptions the group's assignment was computed on (and per
    #: generation, the last few, for a failover's), known-deviation tags: `model.classic.deviations`
    assignment_topics: tuple[tuple[str, int], ...] | None = None
    assignment_subscriptions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    computed: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    deviations: set[tuple[str, str]] = field(default_factory=set)
    #: per client, the fields of its last `ClientSnap` and the snapshot (`client_snaps`)
    _snap_cache: dict[str, tuple[tuple[Any, ...], ClientSnap]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    #: what was sent, to judge the answers against (`ClassicWorld.joins`, `ClassicWorld.syncs`)
    sent: WireRecord = field(default_factory=WireRecord)
    #: the answers handed to clients since the last snapshot (`ClassicWorld.handed`)
    handed: list[tuple[str, str, tuple[int, ...]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for topic, n in sorted(self.topics.items()):
            self.port.create_topic(topic, n)
        self.world = self.snapshot(None, False)

    # ---------------------------------------------------------------- actions
    def client_step(self, name: str) -> Observation[ClassicWorld] | None:
        """The client sends what it would send next (join, sync or heartbeat)."""
        client = self.clients[name]
        if name in self.stalled:
            return None
        request = client.next_request(self.topics)
        if request is None:
            return None
        return self._send(name, request, "client")

    def commit(self, name: str, offset: int) -> Observation[ClassicWorld] | None:
        if name in self.stalled:
            return None
        request = self.clients[name].commit_request(offset)
        return None if request is None else self._send(name, request, "client")

    def leave(self, name: str) -> Observation[ClassicWorld] | None:
        if name in self.stalled:
            return None
        request = self.clients[name].leave_request()
        return None if request is None else self._send(name, request, "client")

    def unsubscribe(self, name: str) -> Observation[ClassicWorld] | None:
        """See `Unsubscribe`: None unless the client is a static member holding a member id."""
        if name in self.stalled or not self.clients[name].unsubscribe():
            return None
        before = self.world
        if self.awaiting.pop(name, None) is not None:  # an abandoned request's answer reaches nobody
            self.lose_next.discard(name)
        return self._finish(before, Unsubscribe(name), [])

    def send_raw(self, name: str, request: Request) -> Observation[ClassicWorld]:
        """An adversarial request on the client's behalf; its answer is observed, not given to the client."""
        return self._send(name, request, "raw")

    def advance(self, ms: int) -> Observation[ClassicWorld]:
        before = self.world
        deliveries = self._send_due_copies()
        self.now += ms
        deliveries += self._with_copies(self.port.advance(self.now))
        leader_assignment = self._deliver(deliveries, replay=False)
        for name, (_ref, sent_at) in sorted(self.awaiting.items()):
            if name not in self.stalled and self.now - sent_at >= self.request_timeout_ms:
                del self.awaiting[name]
                self.clients[name].on_timeout()
        self.world = self.snapshot(leader_assignment, False, self.sent.take(deliveries))
        return Observation(before, Advance(ms), tuple(deliveries), self.world, self.now)

    def failover(self) -> Observation[ClassicWorld]:
        before = self.world
        self.copies.clear()  # the connections close with the coordinator: copies not yet applied are gone
        self.copies_due.clear()
        self.held.clear()  # ... and so are held requests
        deliveries = self.port.failover(self.now)
        group = self.port.group(self.group_id)  # the loaded generation's assignment's input
        if group is not None and group.generation in self.computed:
            self.assignment_topics, self.assignment_subscriptions = self.computed[group.generation]
        return self._finish(before, Failover(), deliveries, failover=True)

    def create_topic(self, topic: str, partitions: int) -> Observation[ClassicWorld]:
        before = self.world
        self.topics[topic] = partitions
        self.port.create_topic(topic, partitions)
        return self._finish(before, CreateTopic(topic, partitions), [])

    def append_failure(self) -> Observation[ClassicWorld]:
        before = self.world
        self.port.inject_append_failure()
        return self._finish(before, AppendFailure(), [])

    def stall(self, name: str, stalled: bool = True) -> Observation[ClassicWorld]:
        before = self.world
        deliveries: list[Delivery] = []
        if stalled:
            self.stalled.add(name)
        else:
            self.stalled.discard(name)
            deliveries = self.buffered.pop(name, [])
        return self._finish(before, Stall(name, stalled), deliveries, replay=True)

    def lose_response(self, name: str) -> Observation[ClassicWorld]:
        before = self.world
        self.lose_next.add(name)
        return self._finish(before, LoseResponse(name), [])

    def cut_connection(self, name: str) -> Observation[ClassicWorld]:
        """See `CutConnection`: the awaited answer is abandoned and the client handles a disconnect."""
        before = self.world
        waiting = self.awaiting.pop(name, None)
        if waiting is not None and self.held.get(name, (None,))[0] == waiting[0]:
            del self.held[name]  # never arrived: the closed connection takes it along
        if waiting is not None:
            self.lose_next.discard(name)
            self._cut(waiting[0])
            self.copies.pop(waiting[0], None)  # a copy behind it on the closed connection never arrives
            self.clients[name].on_timeout()
        return self._finish(before, CutConnection(name), [])

    def duplicate_request(self, name: str) -> Observation[ClassicWorld]:
        """See `DuplicateRequest`: the client's next request is sent twice."""
        before = self.world
        self.duplicate_next.add(name)
        return self._finish(before, DuplicateRequest(name), [])

    def delay_request(self, name: str) -> Observation[ClassicWorld]:
        """See `DelayRequest`: the client's next request is held until `release` (or dropped)."""
        before = self.world
        self.delay_next.add(name)
        return self._finish(before, DelayRequest(name), [])

    def release(self, name: str) -> Observation[ClassicWorld] | None:
        """The held request of ``name`` reaches the coordinator now (a `Send` of the client's)."""
        if name not in self.held:
            return None
        before = self.world
        ref, request = self.held.pop(name)
        deliveries = self._send_due_copies()
        deliveries += self._arrive(ref, request)
        return self._finish(before, Send(name, ref, request, "client"), deliveries)

    def quiet(self, bound_ms: int | None) -> Observation[ClassicWorld]:
        """Perturbations stop (``bound_ms``: the group must have converged that long after) or
        start again (None). Armed wire faults are disarmed; held requests and stalled clients are
        let go by the caller, each as its own step (`conformance.protocols.classic.build.converge`)."""
        before = self.world
        if bound_ms is None:
            self.quiet_since = self.convergence_bound_ms = None
        else:
            self.quiet_since, self.convergence_bound_ms = self.now, bound_ms
            self.lose_next.clear()
            self.duplicate_next.clear()
            self.delay_next.clear()
        return self._finish(before, Quiet(bound_ms), [])

    def drop_held(self, name: str) -> None:
        """The held request of ``name`` never arrives: the connection carrying it closed (the process
        restarted, or the client's request timeout closed it: Java's NetworkClient disconnects on a
        timed-out request)."""
        if name in self.held:
            self._cut(self.held.pop(name)[0])

    def _cut(self, ref: int) -> None:
        """The connection carrying ``ref`` closes (a real target's port closes it on the wire)."""
        cut = getattr(self.port, "cut_connection", None)
        if cut is not None:
            cut(ref)

    # ---------------------------------------------------------------- plumbing
    def _send(self, name: str, request: Request, how: str) -> Observation[ClassicWorld]:
        before = self.world
        if how == "client":
            self.drop_held(name)  # the client gave up on it (request timeout): its connection closed
        deliveries = self._send_due_copies()
        ref = self.next_ref
        self.next_ref += 1
        self.owner_of_ref[ref] = name
        self.sent.record(ref, request)
        if how == "client":
            self.awaiting[name] = (ref, self.now)
            if name in self.duplicate_next:
                self.duplicate_next.discard(name)
                self.copies[ref] = (self.next_ref, request)
                self.sent.record(self.next_ref, request)
                self.next_ref += 1
            if name in self.delay_next:  # `DelayRequest`: held on the wire until `release`
                self.delay_next.discard(name)
                self.held[name] = (ref, request)
                hold = getattr(self.port, "hold", None)
                if hold is not None:
                    hold(ref, request, self.now)
                return self._finish(before, DelayRequest(name), deliveries)
        deliveries += self._with_copies(self.port.send(ref, request, self.now))
        return self._finish(before, Send(name, ref, request, how), deliveries)

    def _arrive(self, ref: int, request: Request) -> list[Delivery]:
        """A held request reaches the coordinator (a real target's port ends the proxy's hold)."""
        deliver = getattr(self.port, "release", None)
        answered = (
            deliver(ref, request, self.now) if deliver is not None else self.port.send(ref, request, self.now)
        )
        return self._with_copies(answered)

    def _with_copies(self, deliveries: list[Delivery]) -> list[Delivery]:
        """Note the duplicated requests whose original was answered here (`DuplicateRequest`)."""
        for d in deliveries:
            copy = self.copies.pop(d.ref, None)
            if copy is not None:
                self.copies_due.append((copy[0], copy[1], d.ref))
        return list(deliveries)

    def _send_due_copies(self) -> list[Delivery]:
        """Apply the copies whose originals have been answered; their answers (and whatever else
        they cause) join this step's deliveries, given to no client for the copies themselves."""
        out: list[Delivery] = []
        while self.copies_due:
            ref, request, original = self.copies_due.pop(0)
            send_copy = getattr(self.port, "send_copy", None)
            answered = (
                send_copy(ref, request, self.now, original)
                if send_copy is not None
                else self.port.send(ref, request, self.now)
            )
            out += self._with_copies(answered)
        return out

    def _finish(
        self,
        before: ClassicWorld | None,
        event: Event,
        deliveries: list[Delivery],
        *,
        failover: bool = False,
        replay: bool = False,
    ) -> Observation[ClassicWorld]:
        leader_assignment = self._deliver(deliveries, replay=replay)
        after = self.port.group(self.group_id)
        tag_removed_unanswered(self.deviations, event, before, after, {d.ref for d in deliveries})
        self.world = self.snapshot(
            leader_assignment, failover, ((), ()) if replay else self.sent.take(deliveries)
        )
        return Observation(before, event, tuple(deliveries), self.world, self.now)

    def _deliver(self, deliveries: list[Delivery], *, replay: bool) -> LeaderAssignment | None:
        """Hand each response to the client waiting for it (buffered while stalled, dropped if lost)."""
        leader_assignment = None
        for d in deliveries:
            name = self.owner_of_ref.get(d.ref)
            if name is None:
                continue
            if name in self.stalled and not replay:
                self.buffered.setdefault(name, []).append(d)
                continue
            waiting = self.awaiting.get(name)
            if waiting is None or waiting[0] != d.ref:
                continue
            del self.awaiting[name]
            if name in self.lose_next:
                self.lose_next.discard(name)
                self.awaiting[name] = waiting  # the client still waits, until its request timeout
                continue
            client = self.clients[name]
            client.leader_output = ()
            self.handed.append((name, type(d.response).__name__, answer_errors(d.response)))
            client.on_response(d.response, self.topics)
            topics = tuple(sorted(self.topics.items()))
            # only a JoinGroup answer is judged against the group (`returning_leader`, `returning_static`)
            group = self.port.group(self.group_id) if isinstance(d.response, JoinGroupResponse) else None
            args = (self.deviations, name, d.response, group)
            returning_leader(*args, self.assignment_topics, topics, client.config.join_version)
            returning_static(*args, self.assignment_subscriptions, client.config)
            if isinstance(d.response, SyncGroupResponse) and d.response.error == ErrorCode.NONE:
                self.delivered = with_delivery(
                    self.delivered, name, client.generation, d.response.assignment, self.keep_generations
                )
            if client.leader_output:
                self.assignment_topics = topics
                self.assignment_subscriptions = static_subscriptions(group, client.leader_input)
                self.computed = {g: v for g, v in self.computed.items() if g > client.generation - 4}
                self.computed[client.generation] = (topics, self.assignment_subscriptions)
                assigned(self.deviations)
                leader_assignment = LeaderAssignment(
                    name,
                    client.protocol or "",
                    topics,
                    client.leader_input,
                    client.leader_output,
                )
        return leader_assignment

    def client_snaps(self) -> tuple[ClientSnap, ...]:
        return client_snaps(self.clients, self._snap_cache, self.world)

    def snapshot(
        self,
        leader_assignment: LeaderAssignment | None,
        failover: bool,
        answered: tuple[Joins, Syncs] = ((), ()),
    ) -> ClassicWorld:
        clients = self.client_snaps()
        handed, self.handed = tuple(self.handed), []
        group = self.port.group(self.group_id)
        if group is None and self.delivered:
            # the group was deleted (Kafka's metadata cleanup, or a Kafka 0.9 Dead group): its
            # generations start over, and a generation number seen before names another round
            self.delivered = ()
        if group is None:
            self.sent.forget_generations()
        bounds = bounds_of(getattr(getattr(self.port, "coordinator", None), "config", None))
        return kept(
            self.world,
            ClassicWorld(
                group,
                clients,
                self.port.persisted(self.group_id),
                self.delivered,
                self.port.take_transitions(),
                failover,
                self.port.max_size,
                self.port.initial_rebalance_delay_ms,
                tuple(sorted(self.topics.items())),
                leader_assignment,
                stamp_slack_ms=getattr(self.port, "stamp_slack_ms", 0),
                quiet_since=self.quiet_since,
                convergence_bound_ms=self.convergence_bound_ms,
                assignment_topics=self.assignment_topics,
                deviations=frozenset(self.deviations),
                assignment_subscriptions=self.assignment_subscriptions,
                joins=answered[0],
                syncs=answered[1],
                handed=handed,
                session_timeout_bounds=bounds[0],
                offset_metadata_max_bytes=bounds[1],
            ),
        )
