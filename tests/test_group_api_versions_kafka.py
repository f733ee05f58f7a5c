"""Every classic group API version Apache Kafka advertises (and the model and codec speak) is sent
to it and answered as the model predicts.

The version ladder of `test_group_api_versions` (ten members, each on other versions of JoinGroup,
SyncGroup, Heartbeat, LeaveGroup and OffsetCommit) joins, settles, commits and leaves on the Apache
Kafka the suite starts, with the oracle beside it. What the wire carried is read from the oracle's
own request log (the version after `Capabilities.nearest`), and the target's ApiVersions answer
gives what had to be covered (4.4.0: JoinGroup v0-9, SyncGroup v0-5, Heartbeat v0-4, LeaveGroup
v0-5, OffsetCommit v2-10; KIP-896 removed OffsetCommit v0-1 in 4.0, and a version the target
lacks is sent at the nearest it has).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_group_api_versions import drive_ladder, ladder_clients

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
