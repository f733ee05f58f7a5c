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

from conformance.targets.open import open_target
from tests.static_kafka import real_group


@pytest.fixture(scope="module")
def kafka() -> Iterator[object]:
    with open_target("apache-kafka") as handle:
        yield handle


@pytest.mark.target
@pytest.mark.parametrize("join_version", [9, 5])
def test_apache_kafka_replaces_a_resubscribed_static_follower_without_a_rebalance(
    kafka: Any, join_version: int
) -> None:
    clients = [
        {"name": "c1", "join_version": join_version, "topics": ["t"]},
        {
            "name": "c2",
            "instance_id": f"follower-{join_version}",
            "join_version": join_version,
            "topics": ["t"],
        },
    ]
    with real_group(kafka, clients, {"t": 2, "u": 2}) as g:
        sim = g.sim
        g.settle(lambda: g.stable("c1"), ["c1"])  # c1 first, so that it leads
        g.settle(lambda: g.stable("c1", "c2"))
        group = sim.world.group
        assert group is not None and group.leader == sim.clients["c1"].member_id, "c1 leads"
        before = group.generation
        g.answers.clear()
        sim.restart("c2")
        sim.subscribe("c2", ("t", "u"))
        g.settle(lambda: g.stable("c2"))
        g.settle(lambda: False, rounds=3)  # nobody asks for the rebalance that would assign u
        group = sim.world.group
        mine = g.answered("c2")
        owned = {tp for n in g.names for tp in sim.clients[n].owned}
    assert g.findings == []
    assert mine and mine[-1].leader != mine[-1].member_id, "the new process joined as a follower"
    assert group is not None and group.generation == before, "replaced without a rebalance"
    assert not any(topic == "u" for topic, _ in owned)
