"""A mixed-group run on a real clock against a real coordinator (docs/protocol-reference.md#b13).

`RealMixedRun` is the traced `MixedRun` (its log is the trace, `conformance.protocols.mixed.trace`) with the
coordinator replaced by `MixedOraclePort`: each request a classic or consumer-protocol member sends
goes to the target and to the model hypotheses, the member gets the target's answer, and the
observation shows the reported hypothesis' state at its model clock (every timer up to it has
fired; it lags the real clock by at most the oracle's tolerance window). ``tick`` sleeps: time
passes only when a rule needs it. A request left unanswered by its deadline is a finding; the
member then treats it as lost (a classic client's request timeout, a consumer's lost heartbeat).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from conformance.protocols.mixed.oracle import MixedOraclePort
from conformance.protocols.mixed.trace import TracedMixedRun
from model.classic.client import ClassicClient
from model.consumer.client import VirtualConsumer
from model.consumer.world import AdvanceEvent, ClientEvent, FailoverEvent, TopicEvent
from model.mixed.world import LOST, request_event
from model.result import Delivery, Result

#: real milliseconds between two rounds of member requests (the consumer heartbeat interval on
#: the launchers is 500 ms, classic members heartbeat every round)
REAL_TICK_MS = 250
#: the trace ops of `MixedRun`'s wire faults (on a real target through `mixed_faults`)
WIRE_FAULT_OPS = frozenset(
    {"lose_response", "cut_connection", "duplicate_request", "delay_request", "release"}
)


class RealMixedRun(TracedMixedRun):
    """`TracedMixedRun` whose coordinator is a real target behind `MixedOraclePort`."""

    port: MixedOraclePort

    def attach(self, port: MixedOraclePort) -> RealMixedRun:
        self.port = port
        self.state = port.state()
        return self

    def _call(self, action: Callable[[], Any]) -> Callable[[], Result]:
        def run() -> Result:
            out = action()
            self.state = self.port.state()
            self.now = min(self.port.clock(), max(self.port.model_now(), 0))
            return out if isinstance(out, Result) else Result()

        return run

    def _observed(self, event: object, action: Callable[[], Any]) -> None:
        real = max(self.now, self.port.clock())
        try:
            self._step(event, self._call(action))
        finally:
            self.now = real  # the trace and the members run on the real clock
        if self.log and self.log[-1].obs is self.last:
            self.log[-1].now = real

    def _observed_split(self, event: object, action: Callable[[], Any]) -> None:
        """As `_observed`, for a request: when the reported hypothesis fired timers just before it
        (`MixedOraclePort.take_pre_split`, `timer_split`), those timers are an observation of their
        own (an `AdvanceEvent` that moves no time, checked first and recorded as the op's step
        before the request's), and the request's observation starts from the state they left. After
        a lineage switch (`timer_split.switched_from`) it starts from the survivor's state."""
        real = max(self.now, self.port.clock())
        before = self.world()
        result = self._call(action)()
        after_state, after_now = self.state, self.now
        take = getattr(self.port, "take_pre_split", None)
        pre = take() if take is not None else None
        switch = getattr(self.port, "take_switched", None)
        switched = switch() if switch is not None else None
        rewrite = getattr(self.port, "take_rewritten", None)
        rewritten = rewrite() if rewrite is not None else None
        if switched is not None:  # the reported hypothesis was refuted: start from the survivor's state
            self.state = switched[0]
            before = self.world()
            self.state = after_state

        def to(state: Any, now: int, out: Result) -> Callable[[], Result]:
            def run() -> Result:
                self.__dict__.pop("fixed_world", None)
                self.state, self.now = state, now
                return out

            return run

        self.__dict__["fixed_world"] = before  # the first step's before: the world the request met
        try:
            if pre is not None:
                mid_state, mid_now = pre
                self._step(AdvanceEvent(mid_now), to(mid_state, min(real, max(mid_now, 0)), Result()))
                if self.log and self.log[-1].obs is self.last:
                    self.log[-1].now = real
            if rewritten is not None:  # an adoption redid what no answer had shown: the request met this
                self.__dict__.pop("fixed_world", None)
                self.state = rewritten[0]
                self.__dict__["fixed_world"] = self.world()
                self.state = after_state
            self._step(event, to(after_state, after_now, result))
        finally:
            self.__dict__.pop("fixed_world", None)
            self.now = real
        if self.log and self.log[-1].obs is self.last:
            self.log[-1].now = real

    def world(self) -> Any:
        """The world of the reported hypothesis, with the settings of the coordinator it runs."""
        from model.mixed.world import capture_mixed_world

        fixed = self.__dict__.get("fixed_world")
        if fixed is not None:
            return fixed

        running = [c for n, c in sorted(self.clients.items()) if n not in self.stopped]
        world = capture_mixed_world(self.state, self.port.reported_coordinator(), running)
        return dataclasses.replace(world, stamp_slack_ms=self.port.unseen_cap_ms)

    # ---------------------------------------------------------------- MixedRun on the wire
    def topic(self, name: str, partitions: int) -> None:
        self._op({"op": "topic", "name": name, "partitions": partitions})
        self._observed(
            TopicEvent("create", name, partitions), lambda: self.port.create_topic(name, partitions)
        )

    def tick(self) -> None:
        self.port.sleep_until(self.now + self.tick_ms)
        self.now = self.port.clock()
        self._observed(AdvanceEvent(self.now), self.port.advance)
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
        """Restart the target (`mixed_failover.restart`; a consumer or a classic group);
        connections drop and the members lose their requests in flight, as on the model
        (`MixedRun.failover`). Without a group or a restart left the run is marked unsupported (an
        ERROR on replay)."""
        from conformance.protocols.mixed.failover import restart_allowed

        self._op({"op": "failover"})
        why = restart_allowed(self.port) or (None if self.port.restart_left() else "no restart left")
        if why is not None:
            self.port.unsupported = self.port.unsupported or f"coordinator failover: {why}"
            return

        self._release_all_held()  # the network delivers what it held before the target goes

        def load() -> Result:
            self.port.failover()
            self._refs.clear()
            for client in self.clients.values():
                if isinstance(client, ClassicClient):
                    client.on_timeout()
                elif isinstance(client, VirtualConsumer):
                    client.on_request_lost(self.now)
            return Result()

        self._observed(FailoverEvent(), load)

    def _send(self, name: str, request: object, fault: str | None = None) -> None:
        self._sending(name, request)
        fault = fault or self.wire_next.pop(name, None)
        if fault == "hold":  # held by the proxy until `release` (`mixed_faults`)
            self._hold_request(name, request)
            return
        ref = self._next_ref
        self._next_ref += 1
        if fault not in LOST:
            self._refs[ref] = name
        answered: list[Any] = []

        def exchange() -> Result:
            tell = getattr(self.port, "wire_fault", None)
            if fault is not None and tell is not None:
                tell(
                    fault
                )  # the fault proxy does it (`mixed_faults`); without it the answer is just not heard
            answer = self.port.exchange(name, request, ref)
            answered.append(answer)
            return Result(deliveries=[] if answer is None else [Delivery(ref, answer)])

        self.now = max(self.now, self.port.clock())
        self._observed_split(request_event(name, ref, request), exchange)
        if fault in LOST or (answered and answered[0] is None):  # lost, or no answer by the deadline
            self._refs.pop(ref, None)
            self._lost(name)
        if fault == "duplicate":
            copy = self._new_ref()
            ask = getattr(self.port, "copy_exchange", None)
            self._observed_split(
                request_event(name, copy, request),
                lambda: self._answered(copy, (ask or self.port.exchange)(name, request, copy)),
            )

    # ---------------------------------------------------------------- wire faults on the target
    def _hold_request(self, name: str, request: object) -> None:
        ref = self._new_ref()
        self._refs[ref] = name
        self.wire_held[name] = (ref, request)
        self.now = max(self.now, self.port.clock())
        self._observed(
            ClientEvent(name, f"request ref {ref} held on the wire"), lambda: self._hold(name, request, ref)
        )

    def _hold(self, name: str, request: object, ref: int) -> Result:
        hold = getattr(self.port, "hold_request", None)
        if hold is not None:
            hold(name, request, ref)
        return Result()

    def _deliver_held(self, name: str, request: object, ref: int) -> Result:
        release = getattr(self.port, "release_request", None)
        return self._answered(ref, (release or self.port.exchange)(name, request, ref))

    def _release_held(self, name: str) -> None:
        if name not in self.wire_held:
            return
        ref, request = self.wire_held.pop(name)
        self.now = max(self.now, self.port.clock())
        answered: list[Any] = []

        def deliver() -> Result:
            result = self._deliver_held(name, request, ref)
            answered.extend(d.response for d in result.deliveries)
            return result

        self._observed_split(request_event(name, ref, request), deliver)
        if not answered and self._refs.pop(ref, None) is not None:  # no answer by the deadline
            self._lost(name)

    @staticmethod
    def _answered(ref: int, answer: Any) -> Result:
        return Result(deliveries=[] if answer is None else [Delivery(ref, answer)])


def real_mixed_run(port: MixedOraclePort, setup: dict[str, Any], variants: dict[str, str]) -> RealMixedRun:
    """A traced run on ``port`` with the header set-up of `make_mixed_run` (policy, seed, tick)."""
    run = RealMixedRun(
        port.coordinator, (), tick_ms=int(setup.get("tick_ms", REAL_TICK_MS)), keep_observations=True
    )
    run.setup = {
        "policy": port.coordinator.config.policy.value,
        "seed": int(setup.get("seed", 0)),
        "tick_ms": run.tick_ms,
    }
    run.variants, run.seed = dict(variants), int(setup.get("seed", 0))
    return run.attach(port)
