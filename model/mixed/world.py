"""What mixed-group invariants see, and a small deterministic runner for mixed groups (docs/protocol-reference.md#b13).

`MixedWorld` extends `ConsumerWorld` (so every consumer invariant runs unchanged over it) with a
view of the classic groups and the migration settings. Classic clients (`model.classic.client`)
appear among the clients with their generation as epoch, so the consumer-view invariants compare
classic and consumer-protocol clients of one group.

`MixedRun` drives classic clients and KIP-848 virtual consumers against one `MixedCoordinator` on
a virtual clock: each tick fires due timers, then every running client (in name order) sends what
it would send; responses, including those of parked JoinGroups, are routed back by reference.
After every step it captures the world and checks the invariants it was given.

Wire faults (the `faults` profile on real targets, docs/faults.md), armed for a member's next request (at
a tick, or its leave): the request can have its answer lost after the coordinator applied it (`lose_response`), its connection cut under it
(`cut_connection`), reach the coordinator twice (`duplicate_request`: the copy right after the
original, its answer observed, heard by nobody), or be held on the wire until `release`
(`delay_request`: the coordinator sees it after whatever happened meanwhile). A member that loses
an answer takes the disconnect path at once (classic: `ClassicClient.on_timeout`, rejoin with its
member id; KIP-848: `VirtualConsumer.on_request_lost`, resend every field); the request timeout a
classic client waits first is not modelled here (the classic simulator models it). One connection
keeps its order, so a held request reaches the coordinator before its member's leave, at a crash
(what was on the wire arrives; nobody hears it) and before a failover.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from model.classic.client import ClassicClient, ClientConfig, Phase
from model.classic.messages import JoinGroupRequest
from model.classic.messages import Request as ClassicRequest
from model.classic.world import ClassicWorld, GroupSnap
from model.consumer.client import ClientView, VirtualConsumer
from model.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartition
from model.consumer.owned_reports import OwnedReports, Report
from model.consumer.world import (
    AdvanceEvent,
    ClientEvent,
    ConsumerWorld,
    FailoverEvent,
    GroupView,
    HeartbeatEvent,
    TopicEvent,
)
from model.embedded import EmbeddedDecodeError, decode_subscription
from model.invariants import Invariant
from model.mixed.coordinator import MixedCoordinator
from model.mixed.state import MigrationPolicy, MixedState
from model.observation import Observation
from model.result import Result


@dataclass(frozen=True)
class ClassicRequestEvent:
    """A classic JoinGroup / SyncGroup / Heartbeat / LeaveGroup handled by the mixed coordinator."""

    ref: int
    request: ClassicRequest
    client: str | None = None

    def reported_owned(self, group_id: str, member_id: str) -> frozenset[TopicPartition] | None:
        """The owned partitions a classic member reports: those of its JoinGroup subscription (GMM
        ``classicGroupJoinToConsumerGroup`` reconciles with ``subscription.ownedPartitions``)."""
        req = self.request
        if not isinstance(req, JoinGroupRequest) or req.group_id != group_id or req.member_id != member_id:
            return None
        try:
            return frozenset(decode_subscription(req.protocols[0][1]).owned_partitions)
        except (EmbeddedDecodeError, IndexError):
            return None


@dataclass(frozen=True)
class ClassicGroupView:
    """Frozen summary of a classic group in the mixed shard."""

    group_id: str
    state: str
    generation: int
    protocol_type: str | None
    protocol: str | None
    members: frozenset[str]
    assignments: Mapping[str, bytes]


@dataclass(frozen=True)
class MixedWorld(ConsumerWorld):
    """A `ConsumerWorld` plus the classic groups and the migration settings."""

    classic_groups: Mapping[str, ClassicGroupView] = field(default_factory=lambda: MappingProxyType({}))
    policy: MigrationPolicy = MigrationPolicy.BIDIRECTIONAL
    classic_max_size: int = 2**31 - 1
    classic_snaps: Mapping[str, GroupSnap] = field(default_factory=lambda: MappingProxyType({}))
    initial_rebalance_delay_ms: int = 3_000
    #: `MixedConfig.classic_rejoin_epoch` of the coordinator ("group" or "assignment")
    classic_rejoin_epoch: str = "group"


CLASSIC_STATE_INVARIANTS = (
    "classic.leader_is_member",
    "classic.protocol_supported",
    "classic.static_instance_unique",
    "classic.join_completes_when_all_joined",
    "classic.join_phase_bounded",
    "classic.initial_rebalance_bounded",
    "classic.unsynced_members_removed",
    "classic.session_expiry_armed",
    "classic.single_owner_coordinator",
)
"""Classic invariants that read only the group after a step (not its history): they hold for the
classic groups of a mixed shard too, including one just created by a downgrade."""


def check_invariant(inv: Invariant, obs: Observation[MixedWorld]) -> list[str]:
    """Violations of ``inv`` at this step: classic invariants run on each classic group's view."""
    if inv.protocol == "classic":
        return [
            f"{c.after.group.group_id}: {m}"
            for c in classic_observations(obs)
            if c.after.group
            for m in inv.check(c)
        ]
    return inv.check(obs)


def classic_observations(obs: Observation[MixedWorld]) -> list[Observation[ClassicWorld]]:
    """One observation per classic group of the mixed world, for `CLASSIC_STATE_INVARIANTS`."""
    world = obs.after
    out: list[Observation[ClassicWorld]] = []
    for gid in sorted(world.classic_snaps):
        cw = ClassicWorld(
            group=world.classic_snaps[gid],
            clients=(),
            persisted=None,
            delivered=(),
            transitions=(),
            failover=False,
            max_size=world.classic_max_size,
            initial_rebalance_delay_ms=world.initial_rebalance_delay_ms,
            topics=tuple(sorted(world.topics.items())),
        )
        out.append(Observation(None, obs.event, obs.deliveries, cw, obs.now))
    return out


def classic_client_view(client: ClassicClient) -> ClientView:
    """A classic consumer seen like a KIP-848 one: generation as epoch, owned partitions."""
    active = client.phase not in (Phase.FATAL, Phase.LEFT)
    return ClientView(
        client.name,
        client.config.group_id,
        client.member_id,
        client.generation,
        frozenset(client.owned),
        client.phase.value,
        client.config.instance_id,
        active,
    )


def capture_mixed_world(
    state: MixedState,
    coordinator: MixedCoordinator,
    clients: Iterable[ClassicClient | VirtualConsumer] = (),
    *,
    quiet_since: int | None = None,
    convergence_bound_ms: int | None = None,
) -> MixedWorld:
    views = tuple(classic_client_view(c) if isinstance(c, ClassicClient) else c.view() for c in clients)
    config = coordinator.config
    classic = {
        gid: ClassicGroupView(
            gid,
            g.state.value,
            g.generation,
            g.protocol_type,
            g.protocol,
            frozenset(g.members),
            MappingProxyType({mid: m.assignment for mid, m in g.members.items()}),
        )
        for gid, g in state.classic.groups.items()
    }
    return MixedWorld(
        groups=MappingProxyType({gid: GroupView.of(g) for gid, g in state.consumer.groups.items()}),
        clients=views,
        topics=MappingProxyType(dict(state.consumer.topics)),
        max_size=config.consumer.max_size,
        topic_describe_denied=config.consumer.topic_describe_denied,
        quiet_since=quiet_since,
        convergence_bound_ms=convergence_bound_ms,
        classic_groups=MappingProxyType(classic),
        policy=config.policy,
        classic_max_size=config.classic.max_size,
        classic_snaps=MappingProxyType({gid: GroupSnap.of(g) for gid, g in state.classic.groups.items()}),
        initial_rebalance_delay_ms=config.classic.initial_rebalance_delay_ms,
        classic_rejoin_epoch=config.classic_rejoin_epoch,
    )


Client = ClassicClient | VirtualConsumer
#: the wire faults whose answer the member never hears
LOST = ("drop", "cut")


def request_event(name: str, ref: int, request: object) -> object:
    """The event a member's request is observed under (either protocol)."""
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        return HeartbeatEvent(ref, request, name)
    return ClassicRequestEvent(ref, request, name)  # type: ignore[arg-type]


@dataclass
class MixedRun:
    """Classic and consumer-protocol clients against one mixed coordinator, checked every step."""

    coordinator: MixedCoordinator
    invariants: tuple[Invariant, ...] = ()
    tick_ms: int = 1_000
    state: MixedState = field(default_factory=MixedState)
    now: int = 0
    clients: dict[str, Client] = field(default_factory=dict)
    stopped: set[str] = field(default_factory=set)
    records: list[object] = field(default_factory=list)
    violations: list[tuple[str, str]] = field(default_factory=list)
    sometimes: set[str] = field(default_factory=set)
    responses: list[tuple[str, object]] = field(default_factory=list)
    keep_observations: bool = False
    observations: list[Observation[MixedWorld]] = field(default_factory=list)
    _refs: dict[int, str] = field(default_factory=dict)
    _next_ref: int = 1
    #: the wire fault armed for a member's next request: member name -> drop | cut | duplicate | hold
    wire_next: dict[str, str] = field(default_factory=dict)
    #: requests held on the wire (`delay_request`): member name -> (ref, request)
    wire_held: dict[str, tuple[int, object]] = field(default_factory=dict)
    #: what each KIP-848 consumer held when it reported its owned partitions (`ConsumerWorld.reports`)
    reports: OwnedReports = field(default_factory=OwnedReports)
    #: the reports of the last step's observation (`ConsumerWorld.reports` of its world after)
    reported: tuple[Report, ...] = ()

    # ---------------------------------------------------------------- set-up

    def topic(self, name: str, partitions: int) -> None:
        self._step(
            TopicEvent("create", name, partitions),
            lambda: self.coordinator.create_topic(self.state, name, partitions),
        )

    def add_classic(self, name: str, **config: object) -> ClassicClient:
        client = ClassicClient(name, ClientConfig(**config))  # type: ignore[arg-type]
        self.clients[name] = client
        return client

    def add_consumer(self, name: str, group_id: str = "g", **kw: object) -> VirtualConsumer:
        client = VirtualConsumer(name, group_id, self.coordinator.chooser, **kw)  # type: ignore[arg-type]
        self.clients[name] = client
        return client

    def stop(self, name: str) -> None:
        """Shut a client down: a classic member sends LeaveGroup (dynamic), a consumer leaves with -1/-2."""
        self._release_held(name)  # one connection keeps its order
        if self.wire_next.get(name) == "hold":
            del self.wire_next[name]  # nothing releases a stopped member's leave
        client = self.clients[name]
        if isinstance(client, ClassicClient):
            client.inflight = None
            request = client.leave_request()
            if request is not None:
                self._send(name, request)
            client.phase = Phase.LEFT
            client.owned = ()
        else:
            client.inflight = None
            client.leave()
            leave = client.next_request(self.now)
            if leave is not None:
                self._send(name, leave)
        self.stopped.add(name)

    def crash(self, name: str) -> None:
        """The client stops sending anything (its coordinator-side timers will expire)."""
        self.stopped.add(name)
        self.wire_next.pop(name, None)
        self._release_held(name)  # what it had on the wire arrives
        client = self.clients[name]
        if isinstance(client, VirtualConsumer):
            client.crash()

    # ---------------------------------------------------------------- running

    def run_for(self, ms: int) -> None:
        end = self.now + ms
        while self.now < end:
            self.tick()

    def tick(self) -> None:
        self.now += self.tick_ms
        self._step(AdvanceEvent(self.now), lambda: self.coordinator.advance(self.state, self.now))
        for name in sorted(self.clients):
            if name in self.stopped:
                continue
            client = self.clients[name]
            request: object | None
            if isinstance(client, ClassicClient):
                request = client.next_request(dict(self.state.classic.topics))
            else:
                request = client.next_request(self.now)
            if request is not None:
                self._send(name, request)

    def failover(self) -> None:
        """A new coordinator loads the durable records; connections drop, in-flight requests are lost."""
        self._release_all_held()  # the network delivers what it held before the old coordinator goes

        def load() -> Result:
            state, result = self.coordinator.failover(self.records, self.now)
            self.state = state
            self._refs.clear()
            for client in self.clients.values():
                if isinstance(client, ClassicClient):
                    client.on_timeout()
                else:
                    client.on_request_lost(self.now)
            return result

        self._step(FailoverEvent(), load)

    def _sending(self, name: str, request: object) -> None:
        """A member puts ``request`` on the wire: a KIP-848 consumer's owned report is recorded."""
        client = self.clients.get(name)
        if isinstance(client, VirtualConsumer) and isinstance(request, ConsumerGroupHeartbeatRequest):
            self.reports.sent(name, client.owned, request)

    def _send(self, name: str, request: object, fault: str | None = None) -> None:
        self._sending(name, request)
        fault = fault or self.wire_next.pop(name, None)
        if fault == "hold":
            self._hold_request(name, request)
            return
        ref = self._new_ref()
        if fault not in LOST:
            self._refs[ref] = name
        self._step(
            request_event(name, ref, request),
            lambda: self.coordinator.handle(self.state, request, ref, self.now),
        )
        if fault in LOST:
            self._lost(name)
        if fault == "duplicate":
            copy = self._new_ref()  # the copy's answer goes to nobody
            self._step(
                request_event(name, copy, request),
                lambda: self.coordinator.handle(self.state, request, copy, self.now),
            )

    def _new_ref(self) -> int:
        ref = self._next_ref
        self._next_ref += 1
        return ref

    # ---------------------------------------------------------------- wire faults (module docstring)

    def lose_response(self, name: str) -> None:
        """The member's next request is applied; its answer is lost on the way back."""
        self._arm(name, "drop")

    def cut_connection(self, name: str) -> None:
        """The member's connection closes after its next request reached the coordinator."""
        self._arm(name, "cut")

    def duplicate_request(self, name: str) -> None:
        """The member's next request reaches the coordinator twice, the copy right after the original
        was answered (Kafka serves one connection's requests in order)."""
        self._arm(name, "duplicate")

    def delay_request(self, name: str) -> None:
        """The member's next request is held on the wire until `release` (the member waits for it)."""
        self._arm(name, "hold")

    def _arm(self, name: str, fault: str) -> None:
        """The fault happens to the member's next request (sent at a tick, or its leave)."""
        if name in self.clients and name not in self.stopped and name not in self.wire_held:
            self.wire_next[name] = fault

    def _hold_request(self, name: str, request: object) -> None:
        ref = self._new_ref()
        self._refs[ref] = name
        self.wire_held[name] = (ref, request)
        self._step(
            ClientEvent(name, f"request ref {ref} held on the wire"), lambda: self._hold(name, request, ref)
        )

    def release(self, name: str) -> None:
        """The held request of ``name`` reaches the coordinator now."""
        self._release_held(name)

    def release_all(self) -> None:
        self._release_all_held()

    def _release_all_held(self) -> None:
        for name in sorted(self.wire_held):
            self._release_held(name)

    def _release_held(self, name: str) -> None:
        if name not in self.wire_held:
            return
        ref, request = self.wire_held.pop(name)
        self._step(request_event(name, ref, request), lambda: self._deliver_held(name, request, ref))

    def _hold(self, name: str, request: object, ref: int) -> Result:
        """The request goes on the wire and is held there (the coordinator does not see it yet)."""
        return Result()

    def _deliver_held(self, name: str, request: object, ref: int) -> Result:
        return self.coordinator.handle(self.state, request, ref, self.now)

    def _lost(self, name: str) -> None:
        """The member never hears its request's answer: the disconnect path (module docstring)."""
        client = self.clients[name]
        if isinstance(client, ClassicClient):
            client.on_timeout()
        else:
            client.on_request_lost(self.now)

    def _step(self, event: object, call: Callable[[], Result]) -> None:
        before = self.world()
        if self.reported:  # the world after the last step, as that step's observation showed it
            before = replace(before, reports=self.reported)
        result = call()
        self.records.extend(result.records)
        for delivery in result.deliveries:
            name = self._refs.pop(delivery.ref, None)
            if name is None:
                continue
            self.responses.append((name, delivery.response))
            client = self.clients[name]
            if name in self.stopped and not isinstance(client, VirtualConsumer):
                continue
            if isinstance(client, ClassicClient):
                client.on_response(delivery.response, dict(self.state.classic.topics))
            else:
                client.on_response(delivery.response, self.now)
        after = self.world()
        self.reported = self.reports.take()
        if self.reported:
            after = replace(after, reports=self.reported)
        obs = Observation(
            before=before, event=event, deliveries=tuple(result.deliveries), after=after, now=self.now
        )
        self.last: Observation[MixedWorld] = obs
        if self.keep_observations:
            self.observations.append(obs)
        for inv in self.invariants:
            found = check_invariant(inv, obs)
            if inv.kind == "sometimes":
                if found:
                    self.sometimes.add(inv.id)
            else:
                self.violations.extend((inv.id, msg) for msg in found)

    def world(self) -> MixedWorld:
        running = [c for n, c in sorted(self.clients.items()) if n not in self.stopped]
        return capture_mixed_world(self.state, self.coordinator, running)

    # ---------------------------------------------------------------- views

    def group_type(self, group_id: str = "g") -> str | None:
        return self.state.group_type(group_id)

    def owned(self) -> dict[str, frozenset[TopicPartition]]:
        out: dict[str, frozenset[TopicPartition]] = {}
        for name, client in sorted(self.clients.items()):
            if name in self.stopped:
                continue
            out[name] = frozenset(client.owned)
        return out


__all__ = ["ClassicRequestEvent", "ClientEvent", "MixedRun", "MixedWorld", "capture_mixed_world"]
