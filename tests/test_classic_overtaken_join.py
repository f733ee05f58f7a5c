"""A parked rejoin overtaken by the next member's request: the oracle tries that order too.

A member whose connection is blocked by its own parked JoinGroup rejoins on another connection; the
target orders requests from different connections as it likes, and the DescribeGroups barrier
cannot see a rejoin during PreparingRebalance (state and member count stay the same). Seen with 32
groups on Apache Kafka 4.4.0: the other member's join overtook the rejoin, completed the round with
the first (superseded) join's answer, and the rejoin then started the next round. The oracle
keeps candidates with such a request applied before the rejoin (`ClassicOperation._overtaking`).
No broker here: the scripted port of `test_classic_lineage_switch` holds one chosen request back.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from test_classic_lineage_switch import SESSION_MS, ScriptedClassicPort, scripted_sim

from model.classic.client import Phase
from model.classic.messages import JoinGroupRequest
from model.result import Delivery


class OvertakingPort(ScriptedClassicPort):
    """Holds the request sent while ``hold`` is set and handles it right after the next one."""

    hold = False
    kept_back: tuple[int, Any, int] | None = None

    def send(self, ref: int, request: Any, now: int) -> list[Delivery]:
        t = self.clock()
        self._target_until(t)
        self.requests[ref] = (self.current_member, request, getattr(request, "version", 0), t)
        queue = [(ref, request)]
        if self.hold:
            self.hold, queue = False, []
            self.kept_back = (ref, request, t)
        elif self.kept_back is not None:
            queue.append(self.kept_back[:2])
            self.kept_back = None
        for r, q in queue:
            for d in self.reference.handle(self.reference_state, q, r, t).deliveries:
                self.answers[d.ref] = (d.response, t + 2)
        prior = self.hypos
        out = self._operate(t, ("send", ref, request))
        self._parked(ref, request, prior)
        return out


def _settle(sim: Any, port: Any) -> None:
    for _ in range(8):
        for name in ("c1", "c2"):
            sim.client_step(name)
            port.sleep_until(port.clock() + 20)


def _run(retry: bool) -> tuple[list[str], OvertakingPort]:
    """c1 and c2 are Stable; c1 joins with other metadata (parked), c2 hears of the rebalance, c1
    rejoins with its own metadata (held back) and c2's rejoin overtakes it."""
    sim, port = scripted_sim(port_class=OvertakingPort)
    assert isinstance(port, OvertakingPort)
    if not retry:
        port._overtaking = lambda *a: []  # type: ignore[method-assign]
    _settle(sim, port)
    assert all(sim.clients[n].phase == Phase.STABLE for n in ("c1", "c2"))
    c1 = sim.clients["c1"]
    own = port.requests[
        max(r for r, e in port.requests.items() if isinstance(e[1], JoinGroupRequest) and e[0] == "c1")
    ][1]
    rejoin = dataclasses.replace(own, member_id=c1.member_id)
    other = dataclasses.replace(rejoin, protocols=tuple((name, b"") for name, _meta in rejoin.protocols))
    sim.send_raw("c1", other)
    port.sleep_until(port.clock() + 20)
    sim.client_step("c2")  # its heartbeat: REBALANCE_IN_PROGRESS
    port.sleep_until(port.clock() + 20)
    port.hold = True
    sim.send_raw("c1", rejoin)
    port.sleep_until(port.clock() + 20)
    sim.client_step("c2")  # its JoinGroup, taken first by the target
    port.sleep_until(port.clock() + 50)
    sim.advance(50)
    port.sleep_until(port.clock() + 2 * SESSION_MS)  # c2 never joins the rejoin's round
    sim.advance(50)
    return [f.rule for f in port.take_findings()], port


def _c1_joins(port: OvertakingPort) -> list[int]:
    return sorted(r for r, e in port.requests.items() if e[0] == "c1" and isinstance(e[1], JoinGroupRequest))


def test_a_rejoin_overtaken_by_the_next_join_is_explained() -> None:
    found, port = _run(retry=True)
    assert found == []
    group = port.hypos[0].state.groups["g"]
    c1 = port.requests[_c1_joins(port)[-1]][1].member_id
    # the late rejoin opened another round, which c2 (answered in the round before) never joined:
    # its session ran out and c1 completed generation 4 alone, as in the run on Apache Kafka
    assert (group.generation, sorted(group.members)) == (4, [c1])


def test_without_the_retry_the_overtaken_rejoin_is_a_divergence() -> None:
    found, _ = _run(retry=False)
    assert any(rule.startswith("oracle.") for rule in found), found


def test_the_target_answered_the_superseded_join() -> None:
    """The scripted target really took c2's join first: c1's first, superseded JoinGroup got that
    round's answer and its rejoin the next round's (the scenario is what it claims)."""
    _found, port = _run(retry=True)
    first, second = _c1_joins(port)[-2:]
    c2_join = max(r for r, e in port.requests.items() if e[0] == "c2" and isinstance(e[1], JoinGroupRequest))
    assert port.answers[first][0].generation_id == port.answers[c2_join][0].generation_id == 3
    assert port.answers[second][0].generation_id == 4
