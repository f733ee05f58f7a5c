"""The simulator on a real clock, for ports backed by a real coordinator (docs/real-targets.md#real-time).

`ClassicSim` keeps virtual time; against a real target the port's clock is the truth. This
subclass reads the port clock before every request, and `advance(ms)` sleeps (collecting
answers) until that much real time has passed. Only rules that need time to pass sleep; the
timeouts the virtual members use are small (`REAL_TIMING`) so a run takes seconds, not minutes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from conformance.engine.legal import LegalRange, stretch
from conformance.protocols.classic.trace import TracedClassicSim
from model.classic.messages import Request
from model.classic.sim import Advance, Send
from model.classic.world import ClassicWorld
from model.observation import Observation


@dataclass(frozen=True)
class MemberTiming:
    """Timeouts of the virtual members and the time steps the machine may take (ms)."""

    session_timeout_ms: int = 6000
    rebalance_timeout_ms: int = 10_000
    advances: tuple[int, ...] = (100, 1000, 3000, 6500, 10_500, 31_000)
    max_settle_rounds: int = 40
    request_timeout_ms: int = 30_000
    #: a session timeout the target rejects (just outside its legal range), or None: never drawn
    outside_session_ms: int | None = None


MODEL_TIMING = MemberTiming()
#: Against real coordinators: session 1.5 s (targets are configured with a 500 ms minimum), join
#: and sync phases bounded by 2 s, steps that cross those bounds, and a request timeout above them.
REAL_TIMING = MemberTiming(1500, 2000, (50, 300, 800, 1600, 2300), 6, 4000)


def parked_join_wait_ms(rebalance_timeout_ms: int, initial_rebalance_delay_ms: int) -> int:
    """How long a JoinGroup may stay parked: its join phase ends at the latest when the rebalance
    timeout runs out (plus the initial rebalance delay for an empty group), then a margin."""
    return rebalance_timeout_ms + initial_rebalance_delay_ms + 2000


def real_timing(config: Mapping[str, int]) -> MemberTiming:
    """`REAL_TIMING` inside the target's legal session range (its learned model settings
    ``min/max_session_timeout_ms``): the session moved into the range, the rebalance timeout and
    the time steps stretched by the same factor, a request timeout above a parked join (rebalance
    timeout plus the initial rebalance delay), and the value just outside the range."""
    legal = LegalRange(
        int(config.get("min_session_timeout_ms", 500)), int(config.get("max_session_timeout_ms", 1_800_000))
    )
    session = legal.clamp(REAL_TIMING.session_timeout_ms)
    factor = session / REAL_TIMING.session_timeout_ms
    rebalance = int(REAL_TIMING.rebalance_timeout_ms * max(factor, 1))
    delay = int(config.get("initial_rebalance_delay_ms", 0))
    return MemberTiming(
        session,
        rebalance,
        stretch(REAL_TIMING.advances, factor),
        REAL_TIMING.max_settle_rounds,
        max(REAL_TIMING.request_timeout_ms, parked_join_wait_ms(rebalance, delay)),
        legal.outside(),
    )


class RealTimeSim(TracedClassicSim):
    """`ClassicSim` whose `now` is the port's clock (a port with `clock()` and `sleep_until()`)."""

    def _send(self, name: str, request: Request, how: str):  # type: ignore[no-untyped-def]
        self.port.current_member = name  # type: ignore[attr-defined]
        if how == "client" and name in self.lose_next and getattr(self.port, "wire_faults", False):
            # the fault proxy loses this answer on the wire (conformance/protocols/classic/faults.py); the
            # oracle then delivers the model's answer, which the client drops as on the model
            self.port.fault_next = "drop"  # type: ignore[attr-defined]
        elif how == "client" and name in self.duplicate_next and getattr(self.port, "wire_faults", False):
            self.port.fault_next = "duplicate"  # type: ignore[attr-defined]
        self.now = max(self.now, self.port.clock())  # type: ignore[attr-defined]
        return super()._send(name, request, how)

    def lose_response(self, name: str) -> Observation[ClassicWorld]:
        """As on the model; with the fault proxy, an answer still in flight is lost on the wire too."""
        waiting = self.awaiting.get(name)
        lose = getattr(self.port, "lose_answer", None)
        if waiting is not None and lose is not None and getattr(self.port, "wire_faults", False):
            lose(waiting[0])
        return super().lose_response(name)

    def snapshot(self, leader_assignment, failover, answered=((), ())):  # type: ignore[no-untyped-def]
        """Observations carry the model clock of the reported hypothesis (monotonic, >= real time)."""
        model_now = getattr(self.port, "model_now", None)
        if model_now is not None:
            self.now = max(self.now, model_now())
        world = super().snapshot(leader_assignment, failover, answered)
        lost = getattr(self.port, "lost", None)  # answers lost on the wire or on a cut connection
        return dataclasses.replace(world, unseen=frozenset(lost)) if lost else world

    def _renamed(self, world: ClassicWorld | None) -> ClassicWorld | None:
        """The previous snapshot with the member ids the target has named since (provisional ids)."""
        from conformance.engine.oracle.adoption import rename
        from conformance.engine.oracle.choosers import PROVISIONAL

        renames = getattr(self.port, "renames", None)
        if world is None or renames is None or PROVISIONAL not in repr(world.group):
            return world
        for old, new in renames():
            world = rename(world, old, new)
        return world

    def _switched(self, before: ClassicWorld | None) -> ClassicWorld | None:
        """After a lineage switch (the answers refuted the hypothesis the last observation showed,
        `timer_split.switched_from`), the group and its persisted metadata as the surviving
        hypothesis had them before the operation: the refuted state never happened in the target,
        and a transition from it would read, e.g., a session expiry undone as a member appearing
        from nowhere."""
        take = getattr(self.port, "take_switched", None)
        switched = take() if take is not None else None
        if switched is None or before is None:
            return before
        from model.classic.port import persisted_in

        groups, durable = switched
        return dataclasses.replace(
            before, group=groups.get(self.group_id), persisted=persisted_in(durable, self.group_id)
        )

    def _finish(self, before, event, deliveries, *, failover=False, replay=False):  # type: ignore[no-untyped-def]
        """A request whose operation, in the reported hypothesis, began with timers firing (a due
        timer the target may act on just before it processes the request) is shown as two
        observations: those timers as an ``advance`` of 0 ms (recorded so, kept in
        ``pre_observations`` for the machine to check first), then the request from the state
        they left (`OraclePort.take_pre_split`)."""
        before = self._renamed(self._switched(before))
        take = getattr(self.port, "take_pre_split", None)
        pre = take() if take is not None and isinstance(event, Send) else None
        if pre is not None:
            refs, groups, transitions, durable = pre
            early = [d for d in deliveries if d.ref in refs]
            deliveries = [d for d in deliveries if d.ref not in refs]
            self.port.mid_view = (groups, transitions, durable)  # type: ignore[attr-defined]
            try:
                mid = super()._finish(before, Advance(0), early, failover=failover, replay=replay)
            finally:
                self.port.mid_view = None  # type: ignore[attr-defined]
            self._record({"op": "advance", "ms": 0}, mid)
            self.__dict__.setdefault("pre_observations", []).append(mid)
            before = self._renamed(mid.after)
        take = getattr(self.port, "take_post_split", None)
        post = take() if take is not None and isinstance(event, Send) else None
        if post is None:
            return super()._finish(before, event, deliveries, failover=failover, replay=replay)
        refs, groups, transitions, durable = post
        late = [d for d in deliveries if d.ref in refs]
        deliveries = [d for d in deliveries if d.ref not in refs]
        self.port.mid_view = (groups, transitions, durable)  # type: ignore[attr-defined]
        try:
            main = super()._finish(before, event, deliveries, failover=failover, replay=replay)
        finally:
            self.port.mid_view = None  # type: ignore[attr-defined]
        then = super()._finish(self._renamed(main.after), Advance(0), late, failover=failover, replay=replay)
        self.__dict__.setdefault("post_observations", []).append(then)
        return main

    def take_pre_observations(self) -> list[Observation[ClassicWorld]]:
        """The observations `_finish` split off before a request since the last call (oldest first)."""
        return self.__dict__.pop("pre_observations", [])

    def take_post_observations(self) -> list[Observation[ClassicWorld]]:
        """The ones split off after a request (recorded now: the request's own op is recorded first)."""
        taken = self.__dict__.pop("post_observations", [])
        for obs in taken:
            self._record({"op": "advance", "ms": 0}, obs)
        return taken

    def advance(self, ms: int) -> Observation[ClassicWorld]:
        """Sleep ``ms`` of real time (answers are collected meanwhile), then as `ClassicSim.advance`."""
        start = self.now
        before = self.world
        deliveries = self._send_due_copies()
        self.port.sleep_until(start + max(ms, 20))  # type: ignore[attr-defined]
        self.now = max(self.now, self.port.clock())  # type: ignore[attr-defined]
        deliveries += self._with_copies(self.port.advance(self.now))
        before = self._switched(before)
        leader_assignment = self._deliver(deliveries, replay=False)
        for name, (_ref, sent_at) in sorted(self.awaiting.items()):
            if name not in self.stalled and self.now - sent_at >= self.request_timeout_ms:
                del self.awaiting[name]
                self.clients[name].on_timeout()
        self.world = self.snapshot(leader_assignment, False, self.sent.take(deliveries))
        obs = Observation(
            self._renamed(before), Advance(self.now - start), tuple(deliveries), self.world, self.now
        )
        self._record({"op": "advance", "ms": self.now - start}, obs)
        return obs
