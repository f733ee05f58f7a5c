"""A classic group of two members on the Apache Kafka the suite starts, for the static-member
restarts of tests/test_static_leader_kafka.py and tests/test_static_follower_kafka.py: the real
target's port beside the model (the oracle), every finding and JoinGroup answer kept."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from model.classic.messages import JoinGroupResponse
from model.errors import ErrorCode


@dataclass
class RealGroup:
    sim: Any
    names: list[str]
    findings: list[str] = field(default_factory=list)
    answers: list[JoinGroupResponse] = field(default_factory=list)

    def observe(self, obs: Any) -> None:
        self.findings.extend(f"{f.rule}: {f.message}" for f in self.sim.port.take_findings())
        self.answers.extend(d.response for d in obs.deliveries if isinstance(d.response, JoinGroupResponse))

    def settle(self, done: Callable[[], bool], names: list[str] | None = None, rounds: int = 30) -> None:
        """Settle rounds of ``names`` (all members) until ``done``, at most ``rounds``."""
        from conformance.protocols.classic.build import settle_round

        for _ in range(rounds):
            settle_round(self.sim, names or self.names, self.observe)
            if done():
                return

    def stable(self, *names: str) -> bool:
        from model.classic.client import Phase

        return all(self.sim.clients[n].phase == Phase.STABLE for n in names)

    def answered(self, name: str) -> list[JoinGroupResponse]:
        """The JoinGroup answers without error addressed to ``name``'s current member id."""
        member_id = self.sim.clients[name].member_id
        return [a for a in self.answers if a.member_id == member_id and a.error == ErrorCode.NONE]


@contextmanager
def real_group(kafka: Any, clients: list[dict[str, Any]], topics: dict[str, int]) -> Iterator[RealGroup]:
    """``clients`` (``session_timeout_ms`` 10,000, ``rebalance_timeout_ms`` 15,000) on ``kafka``, the
    model checking every answer."""
    from conformance.cli.check import REAL_PROFILES
    from conformance.protocols import get_kit
    from conformance.protocols.build import make_classic_sim
    from conformance.protocols.classic.realtime import REAL_TIMING, RealTimeSim

    factory = get_kit("classic").real_setup(kafka, REAL_PROFILES["dev"])[0]
    for c in clients:
        c.update(session_timeout_ms=10_000, rebalance_timeout_ms=15_000)
    sim = make_classic_sim(
        topics, clients, kafka.model_config, {},
        port_factory=factory, sim_class=RealTimeSim, request_timeout_ms=REAL_TIMING.request_timeout_ms,
    )  # fmt: skip
    try:
        yield RealGroup(sim, [c["name"] for c in clients])
    finally:
        sim.port.close()
