"""A deterministic simulator: KIP-848 virtual consumers against a coordinator port.

The consumer-protocol twin of `model.classic.sim`: the Hypothesis machine, the
scenarios, explore and the Spark swarm drive it. The coordinator sits behind `ConsumerPort`;
`ModelConsumerPort` runs the reference model in process and the adapter layer plugs a real
coordinator (plus the oracle) into the same seam. Time is virtual (``now`` in ms). Every step
yields an `Observation[ConsumerWorld]`; every action is appended to ``actions`` so a run can be
written down and replayed exactly.

Faults: a response lost after the coordinator applied the request, a duplicated
heartbeat, a heartbeat with a stale epoch, a member stalled past its session or rebalance timeout,
coordinator failover, topic creation/deletion/growth. Wire faults (profile ``faults``, docs/faults.md):
a heartbeat that reaches the coordinator twice (`duplicate_request`), a connection cut under a
heartbeat the coordinator already took (`cut_connection`), and a heartbeat held by the network and
delivered later, after other members' requests or time (`delay_request` / `release`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from model.choice import Chooser
from model.consumer.client import ClientState, VirtualConsumer
from model.consumer.deviations import heard, unheard_copy
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DeleteGroupsRequest,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    to_topic_partitions,
)
from model.consumer.owned_reports import OwnedReports
from model.consumer.port import ConsumerPort
from model.consumer.sim_specs import Action, ClientSpec
from model.consumer.world import (
    AdvanceEvent,
    ClientEvent,
    ConsumerWorld,
    DeleteGroupsEvent,
    FailoverEvent,
    HeartbeatEvent,
    OffsetCommitEvent,
    TopicEvent,
    capture_world,
    observe,
)
from model.errors import ErrorCode
from model.observation import Observation
from model.result import Result

Obs = Observation[ConsumerWorld]


# ---------------------------------------------------------------------------------------- simulator


@dataclass
class ConsumerSim:
    port: ConsumerPort
    specs: dict[str, ClientSpec]
    chooser: Chooser
    """Draws the client-generated (KIP-1082) member ids of new processes."""
    group_id: str = "g"
    now: int = 0
    next_ref: int = 1
    clients: dict[str, VirtualConsumer] = field(default_factory=dict)
    lose_next: set[str] = field(default_factory=set)
    last_request: dict[str, ConsumerGroupHeartbeatRequest] = field(default_factory=dict)
    known_member_ids: set[str] = field(default_factory=set)
    quiet_since: int | None = None
    convergence_bound_ms: int | None = None
    actions: list[Action] = field(default_factory=list)
    world: ConsumerWorld | None = None
    #: heartbeats held by the network (`delay_request`): name -> (ref, request, the process that sent it)
    held: dict[str, tuple[int, ConsumerGroupHeartbeatRequest, VirtualConsumer]] = field(default_factory=dict)
    #: the wire fault of a member's next exchange (`duplicate` / `cut`), told to a port that has `wire_fault`
    wire_next: dict[str, str] = field(default_factory=dict)
    #: known-deviation tags (`model.deviations`): (deviation id, client name)
    deviations: set[tuple[str, str]] = field(default_factory=set)
    #: what each consumer held when it reported its owned partitions (`ConsumerWorld.reports`)
    reports: OwnedReports = field(default_factory=OwnedReports)

    def __post_init__(self) -> None:
        for name in sorted(self.specs):
            self.clients[name] = self._process(self.specs[name])
        self.world = self.snapshot()

    # ---------------------------------------------------------------- plumbing

    def _process(self, spec: ClientSpec) -> VirtualConsumer:
        client = VirtualConsumer(
            spec.name,
            self.group_id,
            self.chooser,
            topics=spec.topics,
            regex=spec.regex,
            instance_id=spec.instance_id,
            version=spec.version,
            rebalance_timeout_ms=spec.rebalance_timeout_ms,
            server_assignor=spec.server_assignor,
        )
        if client.member_id:
            self.known_member_ids.add(client.member_id)
        return client

    def snapshot(self) -> ConsumerWorld:
        for c in self.clients.values():
            if c.member_id:
                self.known_member_ids.add(c.member_id)
        reports, due, silences = self.reports.take_all()
        return capture_world(
            self.port.coordinator_state(),
            [self.clients[n] for n in sorted(self.clients)],
            config=self.port.config,
            quiet_since=self.quiet_since,
            convergence_bound_ms=self.convergence_bound_ms,
            known_member_ids=frozenset(self.known_member_ids),
            deviations=frozenset(self.deviations),
            prev=self.world,
            reports=reports,
            full_due=due,
            silences=silences,
        )

    def _record(self, method: str, **args: object) -> None:
        self.actions.append(Action(method, tuple(sorted(args.items()))))

    def _step(self, event: object, result: Result | None) -> Obs:
        before = self.world
        self.world = self.snapshot()
        return observe(before, event, result, self.world, self.now)

    def _ref(self) -> int:
        ref = self.next_ref
        self.next_ref += 1
        return ref

    def client(self, name: str) -> VirtualConsumer:
        client = self.clients.get(name)
        if client is None:
            raise KeyError(f"unknown client {name!r} (known: {', '.join(sorted(self.clients))})")
        return client

    # ---------------------------------------------------------------- well-behaved clients

    def client_step(self, name: str) -> Obs | None:
        """The client sends its next heartbeat if one is due; its response arrives unless lost."""
        self._record("client_step", name=name)
        return self._exchange(name)

    def _exchange(self, name: str) -> Obs | None:
        client = self.client(name)
        request = client.next_request(self.now)
        if request is None:
            if not client.crashed and name not in self.held and client.view().active:
                self.reports.idle(name, client.owned)
            return None
        self.reports.sent(name, client.owned, request)
        ref = self._ref()
        self.last_request[name] = request
        fault = self.wire_next.pop(name, None)
        if fault is None and name in self.lose_next:
            fault = "drop"
        tell = getattr(self.port, "wire_fault", None)
        if fault is not None and tell is not None:
            tell(fault)  # a real target: the fault proxy does it (conformance/protocols/consumer/faults.py)
        result = self.port.heartbeat(request, ref, self.now)
        if fault == "cut":
            self.lose_next.add(name)  # the disconnect: the client never hears this answer
        heard = self._deliver(name, client, ref, result)
        return self._step(HeartbeatEvent(ref, request, name, heard), result)

    def _deliver(self, name: str, client: VirtualConsumer, ref: int, result: Result) -> bool:
        """Hand the answer to ``ref`` to the process that sent it, unless it was lost on the way;
        whether that process heard it."""
        if client is not self.clients.get(name) or client.inflight is None:
            return False  # the process that sent it is gone (restarted): nobody hears the answer
        response = next((d.response for d in result.deliveries if d.ref == ref), None)
        if not client.crashed and client.inflight.member_epoch >= 0:  # a stalled process hears nothing
            got = response if isinstance(response, ConsumerGroupHeartbeatResponse) else None
            if name in self.lose_next or got is None or got.error_code != ErrorCode.NONE:
                self.reports.failed(name)
        if name in self.lose_next or not isinstance(response, ConsumerGroupHeartbeatResponse):
            self.lose_next.discard(name)
            client.on_request_lost(self.now)
            return False
        client.on_response(response, self.now)
        heard(self.deviations, name, response, client.owned)
        return True

    def reconcile(self, name: str) -> Obs | None:
        """Slow revocation/assignment callbacks finish (only matters for ``auto_reconcile=False``)."""
        client = self.client(name)
        if client.state != ClientState.RECONCILING:
            return None
        self._record("reconcile", name=name)
        client.complete_reconciliation()
        return self._step(ClientEvent(name, "reconciled"), None)

    def set_slow(self, name: str, slow: bool) -> None:
        """From now on the client's callbacks complete only on `reconcile` (or at once again)."""
        self._record("set_slow", name=name, slow=slow)
        self.client(name).auto_reconcile = not slow

    def commit(self, name: str, offset: int = 1) -> Obs | None:
        # one connection keeps its order: a held heartbeat arrives first (the machine releases it
        # as a step of its own before; this is the safety net for other drivers)
        self.release(name)
        client = self.client(name)
        request = client.commit_request(offset)
        if request is None:
            return None
        self._record("commit", name=name, offset=offset)
        ref = self._ref()
        return self._step(
            OffsetCommitEvent(ref, request, name), self.port.offset_commit(request, ref, self.now)
        )

    def leave(self, name: str) -> Obs | None:
        """close(): the next heartbeat is the leave (-1, or -2 for a static member)."""
        self.release(name)
        self._record("leave", name=name)
        self.client(name).leave()
        return self._exchange(name)

    def restart(self, name: str) -> Obs:
        """The process dies and a new one starts from the same spec (a new member id for v1 dynamic)."""
        self.release(name)  # what the old process had on the wire arrives; nobody hears its answer
        self._record("restart", name=name)
        self.lose_next.discard(name)
        self.clients[name] = self._process(self.specs[name])
        heard(self.deviations, name, None)
        return self._step(ClientEvent(name, "restart"), None)

    def subscribe(self, name: str, topics: tuple[str, ...], regex: str | None = None) -> Obs:
        """Names, or (``regex``) a SubscribedTopicRegex; ``regex`` is recorded only when given."""
        if regex is None:
            self._record("subscribe", name=name, topics=list(topics))
        else:
            self._record("subscribe", name=name, topics=list(topics), regex=regex)
        self.client(name).subscribe(tuple(topics), regex)
        what = ",".join(topics) if regex is None else f"/{regex}/"
        return self._step(ClientEvent(name, f"subscribe {what}"), None)

    # ---------------------------------------------------------------- faults and adversaries

    def lose_response(self, name: str) -> None:
        """The client's next response is lost after the coordinator applied the request."""
        self._record("lose_response", name=name)
        self.lose_next.add(name)

    def stall(self, name: str, stalled: bool) -> Obs:
        """The process freezes (sends nothing, believes what it believed) or comes back."""
        self._record("stall", name=name, stalled=stalled)
        client = self.client(name)
        if stalled:
            client.crash()
        else:
            client.resume()
        return self._step(ClientEvent(name, "stall" if stalled else "resume"), None)

    def send_raw(self, name: str, request: ConsumerGroupHeartbeatRequest) -> Obs:
        """A request on the client's behalf whose response the client never sees (duplicate, zombie)."""
        if name in self.held:
            self.release(name)
        ref = self._ref()
        result = self.port.heartbeat(request, ref, self.now)
        unheard_copy(self.deviations, name, ref, result)
        return self._step(HeartbeatEvent(ref, request, name, heard=False), result)

    def duplicate(self, name: str) -> Obs | None:
        """The client's last heartbeat arrives a second time (a network-level retry)."""
        request = self.last_request.get(name)
        if request is None:
            return None
        self._record("duplicate", name=name)
        return self.send_raw(name, request)

    # ---------------------------------------------------------------- wire faults (profile `faults`)

    def duplicate_request(self, name: str) -> list[Obs]:
        """The client's next heartbeat reaches the coordinator twice (a duplicating network, a retry
        below the client). Kafka serves one connection's requests in order (SocketServer mutes a
        connection until its answer is sent), so the copy is applied right after the original was
        answered; the client hears the original's answer only, the copy's is observed and judged.
        KIP-848 makes a repeated heartbeat harmless: it carries the member epoch and the owned
        partitions, and the coordinator answers the same member state again (KIP-848 "Heartbeat"
        is idempotent by design; GroupMetadataManager.consumerGroupHeartbeat)."""
        out = [o for o in (self.release(name),) if o is not None]
        self._record("duplicate_request", name=name)
        self.wire_next[name] = "duplicate"
        first = self._exchange(name)
        self.wire_next.pop(name, None)
        if first is None:
            return out
        out.append(first)
        request, ref = self.last_request[name], self._ref()
        copy = getattr(self.port, "heartbeat_copy", None)
        result = (
            copy(request, ref, self.now) if copy is not None else self.port.heartbeat(request, ref, self.now)
        )
        unheard_copy(self.deviations, name, ref, result)
        out.append(self._step(HeartbeatEvent(ref, request, name, heard=False), result))
        return out

    def cut_connection(self, name: str) -> list[Obs]:
        """The client's connection closes after its next heartbeat reached the coordinator and
        before the answer came back: the coordinator keeps what it applied, the client sees a
        disconnect and takes Java's failure path (the heartbeat failed: every field is sent again
        after the retry backoff; `VirtualConsumer.on_request_lost`, as the Java heartbeat request
        manager's onFailure records a failed attempt and resets its HeartbeatState)."""
        out = [o for o in (self.release(name),) if o is not None]
        self._record("cut_connection", name=name)
        self.wire_next[name] = "cut"
        obs = self._exchange(name)
        self.wire_next.pop(name, None)
        return out + ([] if obs is None else [obs])

    def delay_request(self, name: str) -> Obs | None:
        """The client's next heartbeat is held by the network: the coordinator sees it only at
        `release` (or before the same member's next request: one connection keeps its order), after
        whatever other members sent and whatever time passed meanwhile (its session may expire, a
        rebalance may complete). The client sends nothing more while it waits (one heartbeat in
        flight: ConsumerHeartbeatRequestManager). On a real target the fault proxy holds it."""
        if name in self.held:
            return None
        client = self.client(name)
        request = client.next_request(self.now)
        if request is None:
            return None
        self.reports.sent(name, client.owned, request)
        self._record("delay_request", name=name)
        ref = self._ref()
        self.last_request[name] = request
        self.held[name] = (ref, request, client)
        hold = getattr(self.port, "hold", None)
        if hold is not None:
            hold(request, ref, self.now)
        return self._step(ClientEvent(name, f"heartbeat ref {ref} delayed"), None)

    def release(self, name: str) -> Obs | None:
        """The held heartbeat of ``name`` arrives now; its answer goes to the process that sent it."""
        if name not in self.held:
            return None
        ref, request, client = self.held.pop(name)
        self._record("release", name=name)
        deliver = getattr(self.port, "release", None)
        result = (
            deliver(request, ref, self.now)
            if deliver is not None
            else self.port.heartbeat(request, ref, self.now)
        )
        heard = self._deliver(name, client, ref, result)
        return self._step(HeartbeatEvent(ref, request, name, heard), result)

    def release_all(self) -> list[Obs]:
        return [o for o in (self.release(n) for n in sorted(self.held)) if o is not None]

    def heartbeat_as(
        self,
        member_id: str,
        member_epoch: int,
        owned: list[list[object]] | None = None,
        topics: list[str] | None = None,
        assignor: str | None = None,
    ) -> Obs:
        """A heartbeat written out field by field, with no virtual consumer behind it (a z3
        counterexample's inputs, an adversary): recorded, so a trace replays it; nobody reads the
        response. ``owned`` is ``[[topic, partition], ...]`` or None (field absent); an epoch-0
        heartbeat joins with ``topics`` and ``assignor`` and a 60 s rebalance timeout."""
        self._record(
            "heartbeat_as",
            member_id=member_id,
            member_epoch=member_epoch,
            owned=owned,
            topics=topics,
            assignor=assignor,
        )
        self.known_member_ids.add(member_id)  # its sender knows the id (no ghost, KIP-1082)
        parts = None if owned is None else to_topic_partitions((str(t), int(str(p))) for t, p in owned)
        joining = member_epoch == 0
        request = ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=member_id,
            member_epoch=member_epoch,
            rebalance_timeout_ms=60_000 if joining else -1,
            subscribed_topic_names=tuple(topics) if joining and topics is not None else None,
            server_assignor=assignor if joining else None,
            topic_partitions=parts,
        )
        return self.send_raw(member_id, request)

    def commit_as(self, member_id: str, member_epoch: int, topic: str, partition: int) -> Obs:
        """An OffsetCommit v9 of one partition (offset 1) written out field by field, like
        `heartbeat_as` (a z3 counterexample's commit): recorded, so a trace replays it."""
        self._record(
            "commit_as", member_id=member_id, member_epoch=member_epoch, topic=topic, partition=partition
        )
        parts = (OffsetCommitRequestPartition(int(partition), 1),)
        request = OffsetCommitRequest(
            self.group_id, (OffsetCommitRequestTopic(str(topic), parts),), int(member_epoch), str(member_id)
        )
        ref = self._ref()
        return self._step(OffsetCommitEvent(ref, request), self.port.offset_commit(request, ref, self.now))

    def stale_heartbeat(self, name: str, delta: int = -1) -> Obs | None:
        """A heartbeat with the client's id but an epoch other than its own (a zombie thread)."""
        client = self.client(name)
        if not client.member_id or client.member_epoch <= 0:
            return None
        self._record("stale_heartbeat", name=name, delta=delta)
        epoch = client.member_epoch + delta
        if epoch <= 0:  # epoch 0 would be a (legal) rejoin, not a stale heartbeat
            epoch = client.member_epoch + 1
        request = ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=client.member_id,
            member_epoch=epoch,
            instance_id=client.instance_id,
            version=client.version,
        )
        return self.send_raw(name, request)

    # ---------------------------------------------------------------- time and environment

    def advance(self, ms: int) -> Obs:
        self._record("advance", ms=ms)
        return self._advance(ms)

    def _advance(self, ms: int) -> Obs:
        self.now += ms
        return self._step(AdvanceEvent(self.now), self.port.advance(self.now))

    def topic(self, action: str, topic: str, partitions: int = 0) -> Obs:
        """Create a topic, delete it, or grow it to ``partitions`` (action create|delete|add_partitions)."""
        self._record("topic", action=action, topic=topic, partitions=partitions)
        return self._step(TopicEvent(action, topic, partitions), self.port.topic(action, topic, partitions))

    def delete_group(self) -> Obs:
        """An admin deletes the run's group (DeleteGroups, `model.consumer.group_deletion`): Kafka
        deletes only an Empty group, and its committed offsets with it."""
        self._record("delete_group")
        request, ref = DeleteGroupsRequest((self.group_id,)), self._ref()
        return self._step(DeleteGroupsEvent(ref, request), self.port.delete_groups(request, ref, self.now))

    def failover(self) -> Obs:
        self._record("failover")  # a held heartbeat reaches the new coordinator when released
        return self._step(FailoverEvent(), self.port.failover(self.now))

    # ---------------------------------------------------------------- convergence

    def settle(self, bound_ms: int, tick_ms: int, extra_rounds: int = 3) -> list[Obs]:
        """Perturbations stop: every running client heartbeats and finishes its callbacks, time runs
        in ``tick_ms`` steps, and from ``bound_ms`` on every step is checked for convergence
        (`consumer.eventual_convergence`, Vanlightly's EventuallyConverges on the virtual clock)."""
        out: list[Obs] = self.release_all()  # the network delivers what it held
        self._record("settle", bound_ms=bound_ms, tick_ms=tick_ms, extra_rounds=extra_rounds)
        self.quiet_since, self.convergence_bound_ms = self.now, bound_ms
        try:
            # quiet_since never moves on the virtual clock; a real-clock sim may restart the quiet
            # period when the target stalls (`RealTimeConsumerSim._exchange`)
            while self.now < self.quiet_since + bound_ms + extra_rounds * tick_ms:
                for name in sorted(self.clients):
                    c = self.clients[name]
                    if c.state == ClientState.RECONCILING and not c.crashed:
                        c.complete_reconciliation()
                    obs = self._exchange(name)
                    if obs is not None:
                        out.append(obs)
                out.append(self._advance(tick_ms))
        finally:
            self.quiet_since = self.convergence_bound_ms = None
        return out

    def replay(self, actions: list[Action]) -> list[Obs]:
        """Re-run recorded actions (the trace format's consumer steps); exact on the model."""
        out: list[Obs] = []
        for action in actions:
            args = dict(action.args)
            if action.name == "subscribe":
                args["topics"] = tuple(args["topics"])  # type: ignore[arg-type]
            result = getattr(self, action.name)(**args)
            if isinstance(result, list):
                out += result
            elif result is not None:
                out.append(result)
        return out
