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

from conformance.targets.open import open_target
from model.classic.messages import JoinGroupResponse
from tests.static_kafka import real_group


@pytest.fixture(scope="module")
def kafka() -> Iterator[object]:
    with open_target("apache-kafka") as handle:
        yield handle


def _restart_leader(kafka: Any, join_version: int) -> tuple[list[str], list[JoinGroupResponse], int, int]:
    clients = [
        {"name": "c1", "instance_id": "i1", "join_version": join_version},
        {"name": "c2", "join_version": join_version},
    ]
    with real_group(kafka, clients, {"t": 2}) as g:
        sim = g.sim
        g.settle(lambda: g.stable("c1", "c2"))
        group = sim.world.group
        assert group is not None and group.leader == sim.clients["c1"].member_id, "c1 leads"
        before = group.generation
        g.answers.clear()
        sim.restart("c1")
        g.settle(lambda: g.stable("c1"))
        after = sim.world.group.generation if sim.world.group is not None else -1
        mine = g.answered("c1")
    return g.findings, mine, before, after


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
