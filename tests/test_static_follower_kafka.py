"""The coordinator half of the known deviation `static-subscription-change`
(docs/known-deviations.md), checked on the Apache Kafka the suite starts.

A static follower's process restarts subscribed to one more topic while its group is Stable. Kafka
replaces the member without a rebalance (only the selected protocol's name is compared, KAFKA-12759)
and the oracle agrees with the model on every answer; the generation stays where it was, so no
member is ever assigned the new topic.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.protocols import get_kit
from conformance.targets.open import open_target
from model.classic.messages import JoinGroupResponse
from model.errors import ErrorCode

CLASSIC = get_kit("classic")


@pytest.fixture(scope="module")
def kafka() -> Iterator[object]:
    with open_target("apache-kafka") as handle:
        yield handle


@pytest.mark.target
@pytest.mark.parametrize("join_version", [9, 5])
def test_apache_kafka_replaces_a_resubscribed_static_follower_without_a_rebalance(
    kafka: Any, join_version: int
) -> None:
    from conformance.cli.check import REAL_PROFILES
    from conformance.protocols.build import make_classic_sim
    from conformance.protocols.classic.build import settle_round
    from conformance.protocols.classic.realtime import REAL_TIMING, RealTimeSim
    from model.classic.client import Phase

    factory = CLASSIC.real_setup(kafka, REAL_PROFILES["dev"])[0]
    clients = [
        {"name": "c1", "join_version": join_version, "topics": ["t"]},
        {
            "name": "c2",
            "instance_id": f"follower-{join_version}",
            "join_version": join_version,
            "topics": ["t"],
        },
    ]
    for c in clients:
        c.update(session_timeout_ms=10_000, rebalance_timeout_ms=15_000)
    sim = make_classic_sim(
        {"t": 2, "u": 2}, clients, kafka.model_config, {},
        port_factory=factory, sim_class=RealTimeSim, request_timeout_ms=REAL_TIMING.request_timeout_ms,
    )  # fmt: skip
    findings: list[str] = []
    answers: list[JoinGroupResponse] = []

    def observe(obs: Any) -> None:
        findings.extend(f"{f.rule}: {f.message}" for f in sim.port.take_findings())
        answers.extend(d.response for d in obs.deliveries if isinstance(d.response, JoinGroupResponse))

    names = ["c1", "c2"]
    try:
        for joined in (names[:1], names):  # c1 first, so that it leads
            for _ in range(30):
                settle_round(sim, joined, observe)
                if all(sim.clients[n].phase == Phase.STABLE for n in joined):
                    break
        group = sim.world.group
        assert group is not None and group.leader == sim.clients["c1"].member_id, "c1 leads"
        before = group.generation
        answers.clear()
        sim.restart("c2")
        sim.subscribe("c2", ("t", "u"))
        for _ in range(30):
            settle_round(sim, names, observe)
            if sim.clients["c2"].phase == Phase.STABLE:
                break
        for _ in range(3):  # nobody asks for the rebalance that would assign u
            settle_round(sim, names, observe)
        group = sim.world.group
        mine = [
            a for a in answers if a.member_id == sim.clients["c2"].member_id and a.error == ErrorCode.NONE
        ]
        owned = {tp for n in names for tp in sim.clients[n].owned}
    finally:
        sim.port.close()
    assert findings == []
    assert mine and mine[-1].leader != mine[-1].member_id, "the new process joined as a follower"
    assert group is not None and group.generation == before, "replaced without a rebalance"
    assert not any(topic == "u" for topic, _ in owned)
