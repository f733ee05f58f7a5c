"""KAFKA-19431 (apache/kafka PR #20055, Kafka 4.1+): reconciliation keeps a member to the topics it
subscribes to. With assignment batching the target lags a subscription change; Kafka 4.4 still
revokes the dropped topics' partitions in the heartbeat that brings the change, at the same member
epoch. Seen on a stock Kafka 4.4.0 (`benchmarks/results/stock_vs_test_settings.md`, consumer seed 4)."""

from __future__ import annotations

import dataclasses

from conformance.mutants import get_mutant
from conformance.specs import load_scenarios
from conformance.trace.scenario import run_scenario
from model.choice import SeededChooser
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartition, to_topic_partitions
from model.consumer.reconcile import CurrentAssignment, reconcile
from model.consumer.state import ConsumerCoordinatorState, MemberState
from model.consumer.subscription_invariants import assignment_within_subscription
from model.consumer.txn import ConsumerCoordinatorConfig
from model.consumer.world import HeartbeatEvent, capture_world, observe

T0, T1, U0, U1 = ("t", 0), ("t", 1), ("u", 0), ("u", 1)
SCENARIO = "kip-848-reconcile-to-subscription"


def _stable(assigned: frozenset[TopicPartition]) -> CurrentAssignment:
    return CurrentAssignment(MemberState.STABLE, 6, 5, assigned, frozenset())


def test_a_subscription_change_revokes_at_the_same_epoch() -> None:
    held = frozenset({T0, U0, U1})
    nxt = reconcile(_stable(held), 6, held, lambda tp: -1, held, True, False, frozenset({"t"}), True)
    assert nxt == CurrentAssignment(
        MemberState.UNREVOKED_PARTITIONS, 6, 6, frozenset({T0}), frozenset({U0, U1})
    )


def test_the_kafka_40_rule_keeps_the_partitions_until_the_next_target() -> None:
    held = frozenset({T0, U0, U1})
    assert reconcile(_stable(held), 6, held, lambda tp: -1, held, True, False, None, True) == _stable(held)


def test_without_a_subscription_change_a_reconciled_member_is_left_alone() -> None:
    held = frozenset({T0, U0, U1})
    current = _stable(held)
    assert reconcile(current, 6, held, lambda tp: -1, held, True, False, frozenset({"t"}), False) is current


def test_partitions_already_given_up_are_dropped_without_a_revocation() -> None:
    held = frozenset({T0, U0})
    nxt = reconcile(
        _stable(held), 6, held, lambda tp: -1, frozenset({T0}), True, False, frozenset({"t"}), True
    )
    assert nxt == CurrentAssignment(MemberState.STABLE, 6, 6, frozenset({T0}), frozenset())


def test_a_newer_target_is_filtered_to_the_subscription() -> None:
    """`computeNextAssignment`: the target of a topic the member no longer subscribes to is empty."""
    nxt = reconcile(
        _stable(frozenset({T0})),
        7,
        frozenset({T0, T1, U0}),
        lambda tp: -1,
        frozenset({T0}),
        True,
        False,
        frozenset({"t"}),
        False,
    )
    assert nxt is not None and nxt.assigned == frozenset({T0, T1}) and nxt.member_epoch == 7


def _heartbeat(member: str, epoch: int, **fields: object) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest("g", member, epoch, **fields)  # type: ignore[arg-type]


def _batched_member(
    reconcile_to_subscription: bool,
) -> tuple[ConsumerCoordinator, ConsumerCoordinatorState, int]:
    config = ConsumerCoordinatorConfig(
        assignment_interval_ms=1000, reconcile_to_subscription=reconcile_to_subscription
    )
    coord = ConsumerCoordinator(config, SeededChooser(0))
    state = ConsumerCoordinatorState()
    coord.create_topic(state, "t", 2)
    coord.create_topic(state, "u", 2)
    joined = coord.handle_consumer_group_heartbeat(
        state,
        _heartbeat(
            "c1", 0, rebalance_timeout_ms=5000, subscribed_topic_names=("t", "u"), topic_partitions=()
        ),
        1,
        0,
    )
    epoch = joined.deliveries[0].response.member_epoch
    assert state.groups["g"].members["c1"].assigned == frozenset({T0, T1, U0, U1})
    return coord, state, epoch


def _change(coord: ConsumerCoordinator, state: ConsumerCoordinatorState, epoch: int, **subscription: object):  # type: ignore[no-untyped-def]
    owned = to_topic_partitions({T0, T1, U0, U1})
    request = _heartbeat("c1", epoch, topic_partitions=owned, **subscription)
    return coord.handle_consumer_group_heartbeat(state, request, 1, 100).deliveries[0].response


def test_a_batched_coordinator_revokes_a_dropped_topic_at_once() -> None:
    coord, state, epoch = _batched_member(True)
    response = _change(coord, state, epoch, subscribed_topic_names=("t",))
    group = state.groups["g"]
    assert group.group_epoch > group.assignment_epoch == epoch, "the interval holds the target back"
    assert response.member_epoch == epoch
    assert response.assignment is not None
    assert group.members["c1"].assigned == frozenset({T0, T1})
    assert group.members["c1"].pending_revocation == frozenset({U0, U1})


def test_an_unresolved_regex_matches_nothing() -> None:
    coord, state, epoch = _batched_member(True)
    response = _change(coord, state, epoch, subscribed_topic_names=(), subscribed_topic_regex="[tu]")
    assert response.member_epoch == epoch
    assert state.groups["g"].members["c1"].assigned == frozenset()
    assert state.groups["g"].members["c1"].pending_revocation == frozenset({T0, T1, U0, U1})


def test_the_kafka_40_coordinator_waits_for_the_next_target() -> None:
    coord, state, epoch = _batched_member(False)
    response = _change(coord, state, epoch, subscribed_topic_names=("t",))
    assert response.member_epoch == epoch and response.assignment is None
    assert state.groups["g"].members["c1"].assigned == frozenset({T0, T1, U0, U1})


# ------------------------------------------------------------ consumer.assignment_within_subscription


def _checked_change(
    reconcile_to_subscription: bool, world_rule: bool | None = None, **subscription: object
) -> list[str]:
    """The invariant on the step in which c1 changes its subscription; ``world_rule`` overrides the
    rule the world says the coordinator follows (None: the coordinator's own)."""
    coord, state, epoch = _batched_member(reconcile_to_subscription)
    before = capture_world(state, config=coord.config)
    request = _heartbeat("c1", epoch, topic_partitions=to_topic_partitions({T0, T1, U0, U1}), **subscription)
    result = coord.handle_consumer_group_heartbeat(state, request, 1, 100)
    after = capture_world(state, config=coord.config)
    if world_rule is not None:
        before = dataclasses.replace(before, reconcile_to_subscription=world_rule)
        after = dataclasses.replace(after, reconcile_to_subscription=world_rule)
    return list(
        assignment_within_subscription(observe(before, HeartbeatEvent(1, request, "c1"), result, after, 100))
    )


def test_the_invariant_holds_for_a_kafka_41_coordinator() -> None:
    assert _checked_change(True, subscribed_topic_names=("t",)) == []
    assert _checked_change(True, subscribed_topic_names=(), subscribed_topic_regex="[tu]") == []


def test_the_kafka_40_rule_breaks_the_invariant() -> None:
    """The 4.0 coordinator keeps u-0 and u-1 after the change; judged by the 4.1+ rule that is a
    violation, and under its own rule the invariant is not checked."""
    found = _checked_change(False, world_rule=True, subscribed_topic_names=("t",))
    assert found and all("u-0, u-1 outside its subscription ['t']" in m for m in found)
    assert _checked_change(False, subscribed_topic_names=("t",)) == []


def test_an_unresolved_regex_counts_as_no_topic() -> None:
    found = _checked_change(False, world_rule=True, subscribed_topic_names=(), subscribed_topic_regex="[tu]")
    assert found and "t-0, t-1, u-0, u-1 outside its subscription []" in found[0]


def test_a_member_left_alone_keeps_a_deleted_topic_until_reconciled() -> None:
    """Deleting u changes no member; a heartbeat that finds c1 reconciled leaves it alone (GMM
    `maybeReconcile`), so its u partitions are no violation until the next target."""
    coord, state, epoch = _batched_member(True)
    coord.delete_topic(state, "u")
    before = capture_world(state, config=coord.config)
    request = _heartbeat("c1", epoch)
    result = coord.handle_consumer_group_heartbeat(state, request, 1, 100)
    after = capture_world(state, config=coord.config)
    assert after.groups["g"].members["c1"].assigned == frozenset({T0, T1, U0, U1})
    assert not list(
        assignment_within_subscription(observe(before, HeartbeatEvent(1, request, "c1"), result, after, 100))
    )


def test_the_scenario_passes_on_the_model_and_catches_the_mutant() -> None:
    assert get_mutant("reconcile-ignores-subscription").variants == (("assignment_interval", "1000"),)
    passed = run_scenario(load_scenarios()[SCENARIO], {})
    assert passed.passed, (passed.violations, passed.failed_expectations)
    caught = run_scenario(load_scenarios()[SCENARIO], {"mutant": "reconcile-ignores-subscription"})
    assert {v.invariant for v in caught.violations} == {"consumer.assignment_within_subscription"}
