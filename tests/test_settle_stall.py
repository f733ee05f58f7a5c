"""A target stall while perturbations have stopped restarts the quiet period on a real clock
(`RealTimeConsumerSim._exchange`): the virtual members run one after another, so one stalled answer
makes every member after it late, and `consumer.eventual_convergence` must not read that lateness
as the target failing to converge (benchmarks/results/oracle_false_alarms.md, run G seed 5)."""

from __future__ import annotations

from typing import Any

from test_timer_split import ScriptedConsumerPort, scripted_sim

from conformance.protocols.consumer.realtime import RealTimeConsumerSim

STALL = 400


def _settle(stall_ms: int) -> tuple[list[Any], int, RealTimeConsumerSim]:
    """c1 and c2 join and settle; the first answer inside the settle takes ``stall_ms`` (port ms)."""
    sim, port = scripted_sim(("c1", "c2"), partitions=2)
    state = {"armed": False}
    plain = ScriptedConsumerPort._await

    def stalling(self: ScriptedConsumerPort, ref: int, t: int) -> tuple[Any, int]:
        if state["armed"]:
            state["armed"] = False
            self.fake_now += stall_ms
        return plain(self, ref, t)

    port._await = stalling.__get__(port)  # type: ignore[method-assign]
    for _ in range(3):
        for name in ("c1", "c2"):
            sim.client_step(name)
        port.sleep_until(port.clock() + 100)
    start = port.clock()  # settle's quiet period begins at the port clock
    state["armed"] = True
    return sim.settle(4000, 500), start, sim


def test_a_stall_restarts_the_quiet_period() -> None:
    seen, start, sim = _settle(STALL)
    quiet = [o.after.quiet_since for o in seen if o.after.quiet_since is not None]
    assert quiet[0] == start and max(quiet) >= start + STALL
    assert max(o.now for o in seen) >= start + STALL + 4000  # the bound is measured from the stall
    assert sim.quiet_since is None  # settle ends the quiet period as before


def test_a_prompt_answer_keeps_the_quiet_period() -> None:
    seen, start, _sim = _settle(RealTimeConsumerSim.STALL_MS - 50)
    assert {o.after.quiet_since for o in seen if o.after.quiet_since is not None} == {start}


def test_the_quiet_period_starts_at_the_port_clock() -> None:
    """Time spent without an exchange before the settle (a topic change waiting for Metadata under
    broker stalls took 4.5 s, seen by benchmarks/oracle_false_alarms.py) is not quiet
    time: the bound counts from the settle's start on the port clock."""
    sim, port = scripted_sim(("c1", "c2"), partitions=2)
    for name in ("c1", "c2"):
        sim.client_step(name)
    port.sleep_until(port.clock() + 4500)  # real time passes, no exchange syncs the simulator
    begun = port.clock()
    seen = sim.settle(4000, 500)
    quiet = {o.after.quiet_since for o in seen if o.after.quiet_since is not None}
    assert quiet == {begun}, (quiet, begun, sim.now)
