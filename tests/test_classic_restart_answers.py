"""An answer to a restarted process reaches nobody: the new process never was that member.

A consumer whose SyncGroup is parked restarts (a new process, a new connection); the rebalance its
own new JoinGroup starts answers the old process's SyncGroup REBALANCE_IN_PROGRESS. The observation
that carries that answer must start from the restarted client, or
`classic.rebalance_in_progress_keeps_membership` reads the fresh process as the member that lost
its id. Seen as a false alarm with 32 concurrent groups on Apache Kafka 4.4.0.
"""

from __future__ import annotations

from typing import Any

from conformance.engine.checker import Checker
from conformance.protocols.build import make_classic_sim, settle_round
from model.classic.messages import SyncGroupResponse
from model.classic.state import GroupState
from model.errors import ErrorCode


def _followers_parked(sim: Any) -> list[str]:
    g = sim.world.group
    return [m.member_id for m in g.members if m.awaiting_sync is not None and m.member_id != g.leader]


def test_a_parked_sync_answered_after_a_restart_breaks_no_promise() -> None:
    # JoinGroup v3: the restarted process's first join enters the group at once (no KIP-394 round)
    sim = make_classic_sim({"t": 2}, [{"name": n, "join_version": 3} for n in ("c1", "c2", "c3")], {}, {})
    checker = Checker("classic")
    seen: list[Any] = []
    found: list[str] = []

    def observe(obs: Any) -> None:
        if obs is not None:
            seen.append(obs)
            found.extend(v.invariant for v in checker.check(obs, len(seen)))

    for _ in range(20):
        settle_round(sim, ["c1", "c2"], observe)
    for _ in range(40):  # c3 joins; the followers sync and wait for the leader, who holds back
        for name in ("c3", "c2"):
            observe(sim.client_step(name))
        if sim.world.group.state == GroupState.COMPLETING_REBALANCE and _followers_parked(sim):
            break
        observe(sim.client_step("c1"))
    parked = _followers_parked(sim)
    assert parked, sim.world.group
    victim = next(n for n, c in sim.clients.items() if c.member_id in parked)
    sim.restart(victim)
    obs = sim.client_step(victim)
    observe(obs)
    assert obs is not None
    assert any(
        isinstance(d.response, SyncGroupResponse) and d.response.error == ErrorCode.REBALANCE_IN_PROGRESS
        for d in obs.deliveries
    )
    assert found == []
