"""The classic initial rebalance delay (``group.initial.rebalance.delay.ms``, Kafka default 3 s):
the first JoinGroup into an empty group waits the delay, each new join extends it, never past the
rebalance timeout (Kafka's InitialDelayedJoin: core/src/main/scala/kafka/coordinator/group/
DelayedJoin.scala up to 3.x; GroupMetadataManager.prepareRebalance and
tryCompleteInitialRebalanceElseSchedule in the 4.x group-coordinator module). A coordinator that
ignores the delay is caught by `classic.initial_rebalance_bounded`."""

from __future__ import annotations

import dataclasses
from typing import Any

from conformance.protocols.build import make_classic_sim
from model.choice import SeededChooser
from model.classic import invariants as inv
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import JoinGroupResponse
from model.classic.state import ClassicConfig, ClassicGroup
from model.classic.tx import Tx

DELAY = 3000
REBALANCE = 5000


class IgnoresInitialDelay(ClassicCoordinator):
    """A broken coordinator: an empty group's first join phase does not wait the initial delay."""

    def prepare_rebalance(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        real = self.config
        self.config = dataclasses.replace(real, initial_rebalance_delay_ms=0)
        try:
            super().prepare_rebalance(tx, group, now)
        finally:
            self.config = real


def _sim(coordinator: ClassicCoordinator | None = None) -> Any:
    clients = [
        {"name": n, "join_version": 3, "rebalance_timeout_ms": REBALANCE, "session_timeout_ms": 6000}
        for n in ("c1", "c2")
    ]
    config = {"initial_rebalance_delay_ms": DELAY, "min_session_timeout_ms": 500}
    coord = coordinator or ClassicCoordinator(
        ClassicConfig(initial_rebalance_delay_ms=DELAY), SeededChooser(0)
    )
    return make_classic_sim({"t": 2}, clients, config, {}, coordinator=coord)


def _joined(obs: Any) -> bool:
    """A join phase completed in ``obs`` (every JoinGroup of the phase is answered together)."""
    return any(isinstance(d.response, JoinGroupResponse) for d in obs.deliveries)


def _answered_at(sim: Any, until: int, observations: list[Any]) -> int | None:
    """Advance 100 ms at a time up to ``until``; when the join phase's JoinGroups were answered."""
    while sim.now < until:
        obs = sim.advance(100)
        observations.append(obs)
        if _joined(obs):
            return int(sim.now)
    return None


def test_a_lone_first_join_waits_the_delay() -> None:
    sim, seen = _sim(), []
    seen.append(sim.client_step("c1"))
    assert not _joined(seen[-1])
    assert _answered_at(sim, 10_000, seen) == DELAY


def test_a_new_join_extends_the_delay_up_to_the_rebalance_timeout() -> None:
    """c2 joins at 2 s: at 3 s the delay is re-armed for min(delay, rebalance - delay) = 2 s."""
    sim, seen = _sim(), []
    seen.append(sim.client_step("c1"))
    seen.append(sim.advance(2000))
    seen.append(sim.client_step("c2"))
    assert _answered_at(sim, 10_000, seen) == REBALANCE
    assert all(not list(inv.initial_rebalance_bounded(o)) for o in seen)


def test_a_coordinator_that_ignores_the_delay_is_caught() -> None:
    mutant = IgnoresInitialDelay(ClassicConfig(initial_rebalance_delay_ms=DELAY), SeededChooser(0))
    sim, seen = _sim(mutant), []
    seen.append(sim.client_step("c1"))
    found = [m for o in seen for m in inv.initial_rebalance_bounded(o)]
    assert found and "not waited" in found[0]
    assert (_answered_at(sim, 10_000, seen) or 0) < DELAY
