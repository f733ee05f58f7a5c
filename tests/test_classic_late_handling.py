"""A request the target handled late: a model timer due before its answer may have fired first.

Kafka handles a request somewhere between its send and its answer; a starved broker may handle it
hundreds of milliseconds late, after a session it would have kept had it run on time expired. Seen
with 32 concurrent groups on Apache Kafka 4.4.0: an OffsetCommit sent 618 ms before the model's
deadline of its own member's session was answered UNKNOWN_MEMBER_ID, handled about 890 ms after its
send (the broker's log dates the expiry). The oracle then enumerates the operation's candidates once
more with the window after it stretched to the answer's delay (`ClassicOperation._late_retry`).
No broker here: the scripted port of `test_classic_lineage_switch` handles one chosen request late.
"""

from __future__ import annotations

from typing import Any

from test_classic_lineage_switch import ScriptedClassicPort, scripted_sim

from model.classic.messages import HeartbeatRequest
from model.errors import ErrorCode
from model.result import Delivery

HANDLED_LATE_MS = 900


class LatePort(ScriptedClassicPort):
    """Handles the request sent while ``late`` is set ``HANDLED_LATE_MS`` after its send, after
    the target's timers due by then (as a broker paused across a deadline does)."""

    late = False
    deferred: tuple[int, int, Any] | None = None

    def _target_until(self, now: int) -> None:
        if self.deferred is not None and self.deferred[0] <= now:
            at, ref, request = self.deferred
            self.deferred = None
            super()._target_until(at)
            for d in self.reference.handle(self.reference_state, request, ref, at).deliveries:
                self.answers[d.ref] = (d.response, at + 2)
        super()._target_until(now)

    def send(self, ref: int, request: Any, now: int) -> list[Delivery]:
        if not self.late:
            return super().send(ref, request, now)
        self.late = False
        t = self.clock()
        self._target_until(t)
        self.requests[ref] = (self.current_member, request, getattr(request, "version", 0), t)
        self.deferred = (t + HANDLED_LATE_MS, ref, request)
        return self._operate(t, ("send", ref, request))


def _run(retry: bool) -> tuple[list[str], LatePort]:
    """c1 and c2 form a group; then only c1 heartbeats, and its heartbeat sent 700 ms before c2's
    session deadline is handled 900 ms late, after c2 expired: REBALANCE_IN_PROGRESS."""
    sim, port = scripted_sim(port_class=LatePort)
    assert isinstance(port, LatePort)
    if not retry:
        port._late_retry = lambda t, op, horizon, now: ([], [], {}, now)  # type: ignore[method-assign]
    for _ in range(6):
        for name in ("c1", "c2"):
            sim.client_step(name)
            port.sleep_until(port.clock() + 20)
    group = port.hypos[0].state.groups["g"]
    c2 = sim.clients["c2"].member_id
    assert len(group.members) == 2 and c2 in group.members
    deadline = group.timers[f"expire:{c2}"].deadline
    while port.clock() + 400 < deadline - 700:  # c1 keeps its own session alive
        port.sleep_until(port.clock() + 400)
        sim.client_step("c1")
    port.sleep_until(deadline - 700)
    port.late = True
    obs = sim.client_step("c1")
    assert obs is not None and isinstance(obs.event.request, HeartbeatRequest)
    port.sleep_until(port.clock() + 1200)
    sim.advance(50)
    return [f.rule for f in port.take_findings()], port


def test_a_late_handled_request_is_explained_by_the_timer_due_before_its_answer() -> None:
    found, port = _run(retry=True)
    assert found == []
    group = port.hypos[0].state.groups["g"]
    assert len(group.members) == 1  # the reported hypothesis: c2 expired before c1's heartbeat


def test_without_the_retry_the_late_handling_is_a_divergence() -> None:
    found, _ = _run(retry=False)
    assert "oracle.Heartbeat" in found


def test_the_late_answer_is_rebalance_in_progress() -> None:
    """The scripted target really did expire c2 first (the scenario is what it claims)."""
    _found, port = _run(retry=True)
    ref, (resp, _at) = max(port.answers.items())
    assert resp.error == ErrorCode.REBALANCE_IN_PROGRESS, (ref, resp)
