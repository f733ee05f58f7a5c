"""The KIP-848 simulator on a real clock, for a `ConsumerPort` backed by a real coordinator.

`ConsumerSim` keeps virtual time; against a real target the port's clock is the truth (design §4
"Time"): before every request the simulator's ``now`` catches up with the port clock, and
`advance(ms)` sleeps until that much real time has passed. Only rules that need time to pass sleep.
The member timeouts a real-time machine uses are small (`REAL_CONSUMER_TIMING`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.trace.consumer import TracedConsumerSim
from model.consumer.world import AdvanceEvent


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


class RealTimeConsumerSim(TracedConsumerSim):
    """`ConsumerSim` whose ``now`` follows the port clock (a port with `clock()` and `sleep_until()`)."""

    def _sync(self, name: str | None) -> None:
        if name is not None:
            self.port.current_member = name  # type: ignore[attr-defined]
        self.now = max(self.now, self.port.clock())  # type: ignore[attr-defined]

    def _exchange(self, name: str) -> Any:
        self._sync(name)
        return super()._exchange(name)

    def send_raw(self, name: str, request: Any) -> Any:
        self._sync(name)
        return super().send_raw(name, request)

    def commit(self, name: str, offset: int = 1) -> Any:
        self._sync(name)
        return super().commit(name, offset)

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
        invariants about deadlines never read a timer the oracle cannot yet know has fired."""
        real = self.now
        model_now = getattr(self.port, "model_now", None)
        if model_now is not None:
            self.now = min(real, max(model_now(), 0))
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
