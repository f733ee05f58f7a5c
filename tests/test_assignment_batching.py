"""Assignment batching (Kafka 4.2+, ``group.consumer.assignment.interval.ms``): the model computes
no target while the interval runs; the invariant follows the configured rule, the 4.0 rule would
flag a batching Kafka, and coordinators that wait too long or not at all are caught."""

from __future__ import annotations

import dataclasses

import pytest

from conformance.mutants import get_mutant
from conformance.specs import load_scenarios
from conformance.trace.scenario import run_scenario
from model.choice import SeededChooser
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatRequest
from model.consumer.progress_invariants import target_computed_on_next_heartbeat
from model.consumer.records import rebuild
from model.consumer.state import ASSIGNMENT_INTERVAL, ConsumerCoordinatorState
from model.consumer.txn import ConsumerCoordinatorConfig

SCENARIO = "kip-848-assignment-batching"


def test_reference_passes_the_batching_scenario() -> None:
    result = run_scenario(load_scenarios()[SCENARIO], {})
    assert result.passed, (result.violations, result.failed_expectations)


def test_the_kafka_40_rule_flags_a_batching_coordinator() -> None:
    """The same observations judged with the 4.0 rule (no interval): the join that met the
    running interval is a violation there, and not under the configured 4.2+ rule."""
    result = run_scenario(load_scenarios()[SCENARIO], {})
    old_rule = [
        obs
        for obs in result.observations
        if target_computed_on_next_heartbeat(
            dataclasses.replace(obs, after=dataclasses.replace(obs.after, assignment_interval_ms=0))
        )
    ]
    assert old_rule, "a batching coordinator must break the Kafka 4.0 rule"
    assert all(target_computed_on_next_heartbeat(obs) == [] for obs in old_rule)


@pytest.mark.parametrize("name", ["assignment-interval-doubled", "assignment-interval-ignored"])
def test_batching_mutants_are_caught(name: str) -> None:
    assert get_mutant(name).variants == (("assignment_interval", "1000"),)
    result = run_scenario(load_scenarios()[SCENARIO], {"mutant": name})
    assert {v.invariant for v in result.violations} == {"consumer.target_computed_on_next_heartbeat"}


def _join(coord: ConsumerCoordinator, state: ConsumerCoordinatorState, member: str, now: int) -> list[object]:
    request = ConsumerGroupHeartbeatRequest(
        "g", member, 0, rebalance_timeout_ms=5000, subscribed_topic_names=("t",), topic_partitions=()
    )
    return list(coord.handle_consumer_group_heartbeat(state, request, 1, now).records)


def test_interval_survives_failover_from_the_recorded_timestamp() -> None:
    """The computation time is durable (KAFKA-20266): a coordinator that loads the group at t=400
    keeps the interval running until t=1000."""
    coord = ConsumerCoordinator(ConsumerCoordinatorConfig(assignment_interval_ms=1000), SeededChooser(0))
    state = ConsumerCoordinatorState()
    coord.create_topic(state, "t", 2)
    records = [*coord.create_topic(ConsumerCoordinatorState(), "t", 2).records, *_join(coord, state, "m1", 0)]
    assert state.groups["g"].assignment_timestamp == 0
    loaded, _ = coord.failover(records, 400)
    assert loaded.groups["g"].timers[(ASSIGNMENT_INTERVAL, "")].deadline == 1000
    assert rebuild(records).groups["g"].assignment_timestamp == 0


def test_a_batched_tie_is_adoptable_when_the_target_only_bounds_the_member() -> None:
    """Seen on a stock Kafka 4.4: a static member holds every partition, three members join within
    the interval, the topic grows; the next target gives the new partition to c3 where the model
    gives it to c2, and c2 is answered nothing. Bounded by that answer (it lacks the free t-3), c2's
    target has a legal completion: a partition the static member still holds."""
    from conformance.protocols.build import make_consumer_sim
    from conformance.protocols.consumer.adoption import free_partitions, install_target
    from conformance.protocols.consumer.assignment import Pin

    clients = [{"name": "c4", "topics": ["t"], "instance_id": "i4"}] + [
        {"name": n, "topics": ["t"]} for n in ("c1", "c2", "c3")
    ]
    config = {"assignment_interval_ms": 1000, "session_timeout_ms": 45000, "heartbeat_interval_ms": 5000}
    sim = make_consumer_sim({"t": 3}, clients, {**config, "initial_group_epoch": 1}, {})
    sim.client_step("c4")
    sim.advance(100)
    for name in ("c1", "c2", "c3"):
        sim.client_step(name)
    sim.topic("add_partitions", "t", 4)
    sim.advance(5000)
    sim.client_step("c1")
    state, coord = sim.port.state, sim.port.coordinator
    ids = {n: c.member_id for n, c in sim.clients.items()}
    group = state.groups["g"]
    assert group.target_of(ids["c2"]) == {("t", 3)}  # the model's tie
    free = free_partitions(state, group, "g", ids["c2"])
    assert free == {("t", 3)}
    assert install_target(coord, state.copy(), "g", {ids["c2"]: frozenset()}, {}) is None
    bounded = state.copy()
    assert install_target(coord, bounded, "g", {}, {ids["c2"]: Pin(frozenset(), free, False)}) is not None
    got = bounded.groups["g"]
    assert ("t", 3) not in got.target_of(ids["c2"]) and len(got.target_of(ids["c2"])) == 1


@pytest.mark.parametrize("name", ["assignment-interval-doubled", "assignment-interval-ignored"])
def test_the_consumer_machine_catches_batching_mutants_from_scratch(name: str) -> None:
    """`--target mutant:NAME` brings the mutant's batching variant to the simulator."""
    from conformance.engine.profiles import get_profile
    from conformance.engine.run import run_check
    from conformance.protocols import get_kit

    result = run_check(
        get_kit("consumer"), target="model", profile=get_profile("dev"), max_examples=50, seed_value=0,
        variants={"mutant": name},
    )  # fmt: skip
    assert "consumer.target_computed_on_next_heartbeat" in {v.invariant for v in result.violations}
