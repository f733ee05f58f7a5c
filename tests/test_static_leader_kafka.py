"""The coordinator half of the known deviations `kip-814-leader-snapshot` and `static-leader-unaware`
(docs/known-deviations.md), checked on the Apache Kafka the suite starts.

A static leader's process restarts while its group is Stable. Kafka replaces the member without a
rebalance and answers the new process's JoinGroup as the model does: at v9 with SkipAssignment and
the member as leader (KIP-814), below v9 naming the previous leader id (docs/protocol-reference.md#a3-1).
The oracle compares every answer with the model; what the Java consumer then does with that answer
(the client half) is its own code, cited in the deviations.
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


def _restart_leader(kafka: Any, join_version: int) -> tuple[list[str], list[JoinGroupResponse], int, int]:
    from conformance.cli.check import REAL_PROFILES
    from conformance.protocols.build import make_classic_sim
    from conformance.protocols.classic.build import settle_round
    from conformance.protocols.classic.realtime import REAL_TIMING, RealTimeSim
    from model.classic.client import Phase

    factory = CLASSIC.real_setup(kafka, REAL_PROFILES["dev"])[0]
    clients = [
        {"name": "c1", "instance_id": "i1", "join_version": join_version},
        {"name": "c2", "join_version": join_version},
    ]
    for c in clients:
        c.update(session_timeout_ms=10_000, rebalance_timeout_ms=15_000)
    sim = make_classic_sim(
        {"t": 2}, clients, kafka.model_config, {},
        port_factory=factory, sim_class=RealTimeSim, request_timeout_ms=REAL_TIMING.request_timeout_ms,
    )  # fmt: skip
    findings: list[str] = []
    answers: list[JoinGroupResponse] = []

    def observe(obs: Any) -> None:
        findings.extend(f"{f.rule}: {f.message}" for f in sim.port.take_findings())
        answers.extend(d.response for d in obs.deliveries if isinstance(d.response, JoinGroupResponse))

    names = ["c1", "c2"]
    try:
        for _ in range(30):
            settle_round(sim, names, observe)
            if all(sim.clients[n].phase == Phase.STABLE for n in names):
                break
        group = sim.world.group
        assert group is not None and group.leader == sim.clients["c1"].member_id, "c1 leads"
        before = group.generation
        answers.clear()
        sim.restart("c1")
        for _ in range(30):
            settle_round(sim, names, observe)
            if sim.clients["c1"].phase == Phase.STABLE:
                break
        after = sim.world.group.generation if sim.world.group is not None else -1
        mine = [
            a for a in answers if a.member_id == sim.clients["c1"].member_id and a.error == ErrorCode.NONE
        ]
    finally:
        sim.port.close()
    return findings, mine, before, after


@pytest.mark.target
@pytest.mark.parametrize("join_version", [9, 5])
def test_apache_kafka_answers_a_returning_static_leader_as_the_model(kafka: Any, join_version: int) -> None:
    findings, mine, before, after = _restart_leader(kafka, join_version)
    assert findings == []
    assert mine, "the new process joined"
    answer = mine[-1]
    assert after == before, "replaced without a rebalance"
    if join_version >= 9:
        assert answer.skip_assignment and answer.leader == answer.member_id
    else:
        assert not answer.skip_assignment and answer.leader != answer.member_id and answer.leader
