"""Every classic group API version Apache Kafka advertises (and the model and codec speak) is sent
to it and answered as the model predicts.

The version ladder of `test_group_api_versions` (ten members, each on other versions of JoinGroup,
SyncGroup, Heartbeat, LeaveGroup and OffsetCommit) joins, settles, commits and leaves on the Apache
Kafka the suite starts, with the oracle beside it. What the wire carried is read from the oracle's
own request log (the version after `Capabilities.nearest`), and the target's ApiVersions answer
gives what had to be covered (4.4.0: JoinGroup v0-9, SyncGroup v0-5, Heartbeat v0-4, LeaveGroup
v0-5, OffsetCommit v2-10; KIP-896 removed OffsetCommit v0-1 in 4.0, and a version the target
lacks is sent at the nearest it has).

The KIP-848 ladder of `test_group_api_versions` (ConsumerGroupHeartbeat v0 and v1 members in one
group) runs the same way on the consumer oracle: 4.4.0 advertises ConsumerGroupHeartbeat v0-1, and
the ids Kafka makes for the v0 joins are taken into the model (`consumer.adoption.generated_member_id`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_group_api_versions import CONSUMER_LADDER, drive_consumers, drive_ladder, ladder_clients

from conformance.protocols import get_kit
from conformance.protocols.classic.codec import api_key_of
from conformance.protocols.classic.versions import MODEL_VERSIONS, exercisable
from conformance.targets.open import open_target
from conformance.wire.codec import SUPPORTED

CLASSIC = get_kit("classic")


@pytest.fixture(scope="module")
def kafka() -> Iterator[object]:
    with open_target("apache-kafka") as handle:
        yield handle


@pytest.mark.target
def test_apache_kafka_is_sent_every_version_it_advertises(kafka: Any) -> None:
    from conformance.cli.check import REAL_PROFILES
    from conformance.protocols.build import make_classic_sim
    from conformance.protocols.classic.realtime import REAL_TIMING, RealTimeSim

    factory = CLASSIC.real_setup(kafka, REAL_PROFILES["dev"])[0]
    # sessions long enough that the ladder's pace (a parked join costs the oracle's late window)
    # never expires a member: the versions are under test here, not timers (a 3 s session churned
    # through five generations, and a slow machine turned that into timing races)
    clients = ladder_clients(10_000, 15_000)
    sim = make_classic_sim(
        {"t": 10}, clients, kafka.model_config, {},
        port_factory=factory, sim_class=RealTimeSim, request_timeout_ms=REAL_TIMING.request_timeout_ms,
    )  # fmt: skip
    findings: list[str] = []

    def judge(_obs: object) -> None:
        findings.extend(f"{f.rule}: {f.message}" for f in sim.port.take_findings())

    try:
        drive_ladder(sim, [c["name"] for c in clients], judge)
        advertised = dict(sim.port.adapter.connect().api_versions)
        sent = {(api_key_of(request), version) for _m, request, version, _t in sim.port.requests.values()}
    finally:
        sim.port.close()
    assert findings == []
    want = exercisable(advertised, SUPPORTED)
    assert want, advertised  # Kafka 4.4 advertises every classic group API
    assert sent == want, sorted(want - sent)
    assert {key for key, _ in want} == set(MODEL_VERSIONS)


@pytest.mark.target
def test_apache_kafka_is_sent_consumer_group_heartbeat_v0_and_v1(kafka: Any) -> None:
    from conformance.engine.profiles import real_profile
    from conformance.protocols.build import make_consumer_sim
    from conformance.protocols.consumer.realtime import RealTimeConsumerSim
    from conformance.protocols.consumer.setup import consumer_setup
    from model.consumer.messages import ConsumerGroupHeartbeatRequest

    factory, config, _ = consumer_setup(kafka, real_profile("dev"))
    sim = make_consumer_sim(
        {"t": 4}, CONSUMER_LADDER, config, {}, port_factory=factory, sim_class=RealTimeConsumerSim
    )
    port = sim.port
    findings: list[str] = []

    def judge(_obs: object) -> None:
        findings.extend(f"{f.rule}: {f.message}" for f in port.take_findings())

    try:
        drive_consumers(sim, judge, 250)
        advertised = dict(port.adapter.connect().api_versions)
        sent = {
            (68 if isinstance(r, ConsumerGroupHeartbeatRequest) else 8, v)
            for _m, r, v, _t in port.requests.values()
        }
        generated = [
            port.answers[ref].member_id
            for ref, (_m, r, v, _t) in sorted(port.requests.items())
            if isinstance(r, ConsumerGroupHeartbeatRequest)
            and v == 0
            and r.member_epoch == 0
            and not r.member_id
        ]
    finally:
        port.close()
    assert findings == []
    lo, hi = advertised[68]
    assert (lo, hi) == (0, 1), advertised[68]
    assert sent == {(68, v) for v in range(lo, hi + 1)} | {(8, 9)}
    # k1, k2 and k2's second process joined in v0 without an id: Kafka made three ids, the model took them
    assert len(generated) == 3 and len(set(generated)) == 3 and all(generated), generated
