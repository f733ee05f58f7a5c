"""Timers that expire at the same instant: Kafka fixes no order among them (CoordinatorTimerImpl,
TimingWheel), so the model fires them in either order (``reverse_ties``) and the oracles keep both
orders as hypotheses (`tie_variants`)."""

from __future__ import annotations

from dataclasses import dataclass

from conformance.engine.oracle.hypotheses import tie_variants
from model.choice import SeededChooser
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatRequest
from model.consumer.records import MemberSubscriptionTombstone
from model.consumer.state import ConsumerCoordinatorState
from model.consumer.txn import ConsumerCoordinatorConfig


def _two_members_same_session_deadline(reverse: bool) -> list[str]:
    coord = ConsumerCoordinator(ConsumerCoordinatorConfig(session_timeout_ms=1000), SeededChooser(0))
    coord.reverse_ties = reverse
    state = ConsumerCoordinatorState()
    coord.create_topic(state, "t", 2)
    for ref, member in enumerate(("m1", "m2")):
        request = ConsumerGroupHeartbeatRequest(
            "g", member, 0, rebalance_timeout_ms=5000, subscribed_topic_names=("t",), topic_partitions=()
        )
        coord.handle_consumer_group_heartbeat(state, request, ref, 0)
    result = coord.advance(state, 1000)
    assert not state.groups["g"].members
    return [r.member_id for r in result.records if isinstance(r, MemberSubscriptionTombstone)]


def test_session_timers_of_one_instant_fire_in_either_order() -> None:
    assert _two_members_same_session_deadline(False) == ["m1", "m2"]
    assert _two_members_same_session_deadline(True) == ["m2", "m1"]


@dataclass
class _H:
    ties_reversed: bool = False

    def copy(self) -> _H:
        return _H(self.ties_reversed)


def test_a_tie_due_by_the_answer_makes_two_hypotheses() -> None:
    h = _H()
    assert tie_variants(h, [500, 1000, 1000], 999) == [h]  # the tie is not due yet
    out = tie_variants(h, [500, 1000, 1000], 1000)
    assert [v.ties_reversed for v in out] == [False, True]
    assert tie_variants(h, [500, 700, 1000], 5000) == [h]  # no two at one instant
