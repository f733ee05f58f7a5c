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
