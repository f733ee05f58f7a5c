"""KAFKA-19431 (apache/kafka PR #20055, Kafka 4.1+): reconciliation keeps a member to the topics it
subscribes to. With assignment batching the target lags a subscription change; Kafka 4.4 still
revokes the dropped topics' partitions in the heartbeat that brings the change, at the same member
epoch. Seen on a stock Kafka 4.4.0 (`benchmarks/results/stock_vs_test_settings.md`, consumer seed 4)."""

from __future__ import annotations

from model.choice import SeededChooser
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartition, to_topic_partitions
from model.consumer.reconcile import CurrentAssignment, reconcile
from model.consumer.state import ConsumerCoordinatorState, MemberState
from model.consumer.txn import ConsumerCoordinatorConfig

T0, T1, U0, U1 = ("t", 0), ("t", 1), ("u", 0), ("u", 1)


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
