"""The KIP-848 simulator on a real clock, for a `ConsumerPort` backed by a real coordinator.

`ConsumerSim` keeps virtual time; against a real target the port's clock is the truth
(docs/real-targets.md#real-time): before every request the simulator's ``now`` catches up with the port clock, and
`advance(ms)` sleeps until that much real time has passed. Only rules that need time to pass sleep.
The member timeouts a real-time machine uses are small (`REAL_CONSUMER_TIMING`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from conformance.protocols.consumer.trace import TracedConsumerSim
from model.consumer.sim_specs import Action
from model.consumer.world import (
    AdvanceEvent,
    ConsumerWorld,
    DeleteGroupsEvent,
    HeartbeatEvent,
    OffsetCommitEvent,
    capture_world,
)


@dataclass(frozen=True)
class ConsumerTimingChoices:
    """Rebalance timeouts the machine draws and the time steps it may take (ms)."""

    rebalance_timeouts_ms: tuple[int, ...] = (1500, 4000)
    advances: tuple[int, ...] = (100, 500, 1600, 3100, 4100)
    ticks: tuple[int, ...] = (100, 250, 500)
    max_rounds: int = 8


MODEL_CONSUMER_TIMING = ConsumerTimingChoices()
#: Against real coordinators (session timeout 2 s on the launchers): shorter rebalance timeouts and
#: fewer, shorter sleeps, so an example takes seconds.
REAL_CONSUMER_TIMING = ConsumerTimingChoices((1000, 2000), (100, 600, 2600), (100, 250), 4)


#: the connection an admin's request (DeleteGroups) goes on: no member's
ADMIN = "admin"


class RealTimeConsumerSim(TracedConsumerSim):
    """`ConsumerSim` whose ``now`` follows the port clock (a port with `clock()` and `sleep_until()`)."""

    def _sync(self, name: str | None) -> None:
        if name is not None:
            self.port.current_member = name  # type: ignore[attr-defined]
        self.now = max(self.now, self.port.clock())  # type: ignore[attr-defined]

    #: A consumer-protocol answer slower than this (port ms) is a target stall: heartbeats and
    #: commits never park on a KIP-848 coordinator, loopback answers take a few ms.
    STALL_MS = 250
    #: How many stalls may restart one settle's quiet period (a target that always stalls is
    #: still checked, after this many restarts).
    MAX_QUIET_RESTARTS = 2

    def _exchange(self, name: str) -> Any:
        """While perturbations have stopped (`settle`), a stalled answer restarts the quiet period:
        the virtual members run one after another, so a stall of one member's connection makes every
        member after it late (a late acknowledgement is fenced at its rebalance timeout, as Kafka
        and the model both do), which is a perturbation of the suite's making, not the target's
        failure to converge (`consumer.eventual_convergence`)."""
        self._sync(name)
        start = self.now
        obs = super()._exchange(name)
        if self.quiet_since is not None:
            restarts = self.__dict__.get("quiet_restarts", 0)
            end = self.port.clock()  # type: ignore[attr-defined]
            if end - start > self.STALL_MS and restarts < self.MAX_QUIET_RESTARTS:
                self.quiet_since = max(self.quiet_since, end)
                self.__dict__["quiet_restarts"] = restarts + 1
        return obs

    def settle(self, bound_ms: int, tick_ms: int, extra_rounds: int = 3) -> list[Any]:
        """As `ConsumerSim.settle`, the quiet period starting at the port clock: ``now`` follows
        the clock only at exchanges, and the perturbations just before a settle (topic changes
        waiting for Metadata, restarts) take real time without one, so a quiet period dated from
        the last exchange would be over before the members had met the target (seen: topic ops
        of 4.5 s under broker stalls, then `consumer.eventual_convergence` at the first tick)."""
        self.__dict__["quiet_restarts"] = 0
        self.now = max(self.now, self.port.clock())  # type: ignore[attr-defined]
        return super().settle(bound_ms, tick_ms, extra_rounds)

    def send_raw(self, name: str, request: Any) -> Any:
        self._sync(name)
        return super().send_raw(name, request)

    def commit(self, name: str, offset: int = 1) -> Any:
        self._sync(name)
        return super().commit(name, offset)

    def delete_group(self) -> Any:
        self._sync(ADMIN)
        return super().delete_group()

    def delay_request(self, name: str) -> Any:
        self._sync(name)
        return super().delay_request(name)

    def release(self, name: str) -> Any:
        if name not in self.held:
            return None
        self._sync(name)
        return super().release(name)

    def _step(self, event: object, result: Any) -> Any:
        """Observations carry the model clock of the reported hypothesis (timers up to it fired), so
        invariants about deadlines never read a timer the oracle cannot yet know has fired.

        A request whose operation, in the reported hypothesis, began with timers firing (a session
        expiry the target may act on just before it processes the request) is shown as two
        observations (`timer_split`): those timers as an `AdvanceEvent` that moves no time (the
        action's first step in the trace; `take_pre_observations` gives it to the machine, which
        checks it first), then the request from the state they left. When the request's answer
        refuted the hypothesis reported before it (`timer_split.switched_from`), the observation
        starts from the state the surviving hypothesis had, not from the refuted one's."""
        request = isinstance(event, HeartbeatEvent | OffsetCommitEvent | DeleteGroupsEvent)
        switch = getattr(self.port, "take_switched", None)
        switched = switch() if switch is not None and request else None
        if switched is not None:  # the reported hypothesis was refuted: start from the survivor's state
            self.world = self.snapshot_of(switched[0], self.world)
        take = getattr(self.port, "take_pre_split", None)
        pre = take() if take is not None and request else None
        if pre is None:
            return self._step_at(event, result)
        state, mid_now = pre
        self.__dict__["mid_world"] = self.snapshot_of(state, self.world)
        try:
            first = self._step_at(AdvanceEvent(mid_now), None, mid_now)
        finally:
            del self.__dict__["mid_world"]
        obs = self._step_at(event, result)
        self.__dict__.setdefault("pre_observations", {})[id(obs)] = (obs, [first])
        return obs

    def snapshot(self) -> ConsumerWorld:
        """As `ConsumerSim.snapshot`; while `_step` shows the timers before a request, their world."""
        mid = self.__dict__.get("mid_world")
        return super().snapshot() if mid is None else mid  # type: ignore[no-any-return]

    def snapshot_of(self, state: Any, before: ConsumerWorld | None) -> ConsumerWorld:
        """The world with the coordinator in ``state`` and the clients as in ``before`` (timers move no
        client: the answer to the request reaches its member in the request's own step)."""
        world = super().snapshot()
        self.reports.pending[:0] = world.reports  # they belong to the request's own observation
        self.reports.due[:0] = world.full_due
        self.reports.silences[:0] = world.silences
        mid = capture_world(
            state,
            (),
            config=self.port.config,
            quiet_since=world.quiet_since,
            convergence_bound_ms=world.convergence_bound_ms,
            known_member_ids=world.known_member_ids,
        )
        return dataclasses.replace(mid, clients=world.clients if before is None else before.clients)

    def take_pre_observations(self, obs: Any) -> list[Any]:
        """The observations split off before ``obs`` (its timers, oldest first), once."""
        kept = self.__dict__.get("pre_observations", {}).pop(id(obs), None)
        return [] if kept is None or kept[0] is not obs else kept[1]

    def replay(self, actions: list[Action]) -> list[Any]:
        """As `ConsumerSim.replay`, with the observations split off before a request in their place."""
        return [p for obs in super().replay(actions) for p in (*self.take_pre_observations(obs), obs)]

    def _step_at(self, event: object, result: Any, model_now: int | None = None) -> Any:
        real = self.now
        if model_now is None:
            get = getattr(self.port, "model_now", None)
            model_now = None if get is None else get()
        if model_now is not None:
            self.now = min(real, max(model_now, 0))
        try:
            obs = super()._step(event, result)
        finally:
            self.now = real
        if self.log and self.log[-1].obs is obs:
            self.log[-1].now = real  # the trace shows the real clock
        return obs

    def _advance(self, ms: int) -> Any:
        start = self.now
        if not getattr(self.port, "crashed", False):  # a crashed target: no time needs to pass
            self.port.sleep_until(start + ms)  # type: ignore[attr-defined]
        self.now = max(start + ms, self.port.clock())  # type: ignore[attr-defined]
        return self._step(AdvanceEvent(self.now), self.port.advance(self.now))
