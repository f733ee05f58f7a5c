"""The stray-request script of `test_stray_requests` on the Apache Kafka the suite starts, with the
oracle beside it: every answer Kafka gives is one the model allows (no oracle finding), no promise
is broken, and Kafka's answers are the refusals and acceptances the model's are (`EXPECTED`).

This is what the stray-request rules rest on: they are drawn on the model and mutants only
(conformance/protocols/classic/machine_strays.py), so each kind's answer is checked on the real
broker here, once per kind, instead of by chance in a seeded run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_stray_requests import EXPECTED, drive_strays, stray_clients

from conformance.protocols import get_kit
from conformance.targets.open import open_target
from model.invariants import for_protocol, load_all

CLASSIC = get_kit("classic")


@pytest.fixture(scope="module")
def kafka() -> Iterator[object]:
    with open_target("apache-kafka") as handle:
        yield handle


@pytest.mark.target
def test_apache_kafka_answers_every_stray_as_the_model_does(kafka: Any) -> None:
    from conformance.cli.check import REAL_PROFILES
    from conformance.protocols.build import make_classic_sim
    from conformance.protocols.classic.realtime import REAL_TIMING, RealTimeSim

    load_all()
    checks = for_protocol("classic", ("safety", "transition", "liveness"))
    factory = CLASSIC.real_setup(kafka, REAL_PROFILES["dev"])[0]
    sim = make_classic_sim(
        {"t": 2}, stray_clients(10_000, 15_000), kafka.model_config, {},
        port_factory=factory, sim_class=RealTimeSim, request_timeout_ms=REAL_TIMING.request_timeout_ms,
    )  # fmt: skip
    findings: list[str] = []
    broken: list[str] = []

    def observe(obs: Any) -> None:
        findings.extend(f"{f.rule}: {f.message}" for f in sim.port.take_findings())
        broken.extend(f"{inv.id}: {m}" for inv in checks for m in inv.check(obs))

    try:
        heard = drive_strays(sim, observe)
    finally:
        sim.port.close()
    assert findings == []
    assert broken == []
    assert heard == EXPECTED


@pytest.mark.target
def test_apache_kafka_never_answers_a_removed_members_parked_sync(kafka: Any) -> None:
    """Known deviation `removed-member-sync-unanswered` (reports/findings/removed-member-sync-unanswered.md):
    static c3 leads generation 2, static follower c2's SyncGroup is parked, an operator removes
    instance i2. Kafka answers the LeaveGroup and never the SyncGroup, as the model does."""
    from conformance.cli.check import REAL_PROFILES
    from conformance.protocols.build import make_classic_sim
    from conformance.protocols.classic.machine_strays import leave_request
    from conformance.protocols.classic.realtime import REAL_TIMING, RealTimeSim
    from model.classic.state import GroupState

    factory = CLASSIC.real_setup(kafka, REAL_PROFILES["dev"])[0]
    clients = [
        {"name": n, "instance_id": i, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 15_000}
        for n, i in (("c3", "i3"), ("c2", "i2"))
    ]
    sim = make_classic_sim(
        {"t": 2}, clients, kafka.model_config, {},
        port_factory=factory, sim_class=RealTimeSim, request_timeout_ms=REAL_TIMING.request_timeout_ms,
    )  # fmt: skip
    findings: list[str] = []

    def observe(obs: Any) -> Any:
        findings.extend(f"{f.rule}: {f.message}" for f in sim.port.take_findings())
        return obs

    try:
        observe(sim.client_step("c3"))  # c3 forms generation 1 alone and syncs
        observe(sim.advance(50))
        observe(sim.client_step("c3"))
        observe(sim.client_step("c2"))  # c2 joins: a rebalance; c3 learns it and rejoins
        for _ in range(4):
            observe(sim.client_step("c3"))
            if sim.world.group.state == GroupState.COMPLETING_REBALANCE:
                break
        assert sim.world.group.state == GroupState.COMPLETING_REBALANCE
        sync = observe(sim.client_step("c2"))  # the follower's SyncGroup, parked
        assert sync.deliveries == () and sim.world.group.state == GroupState.COMPLETING_REBALANCE
        removed = observe(sim.send_raw("c2", leave_request(sim, "c2", True)))
        for _ in range(2):
            observe(sim.advance(2_000))
        answered = set(sim.port.answers)
    finally:
        sim.port.close()
    assert findings == []
    assert [type(d.response).__name__ for d in removed.deliveries] == ["LeaveGroupResponse"]
    assert sync.event.ref not in answered
