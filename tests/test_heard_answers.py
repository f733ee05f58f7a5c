"""A heartbeat answer the consumer never hears does not bind it (`HeartbeatEvent.heard`).

A promise about what a consumer does after an answer (`consumer.ended_membership_rejoins`) holds
only for an answer that reached it: a lost reply, a cut connection or a duplicate's copy leaves the
consumer believing what it believed (KIP-848 "Errors": the consumer reacts to the errors it gets).
"""

from __future__ import annotations

from conformance.formats import codec
from model.consumer.client import ClientView
from model.consumer.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from model.consumer.promise_invariants import ended_membership_rejoins
from model.consumer.world import ConsumerWorld, HeartbeatEvent
from model.errors import ErrorCode
from model.observation import Observation
from model.result import Delivery

REQUEST = ConsumerGroupHeartbeatRequest("g", "m1", 3)
CLIENT = ClientView("c1", "g", "m1", 3, frozenset(), "STABLE", None, True)
WORLD = ConsumerWorld(groups={}, clients=(CLIENT,))
FENCED = Delivery(7, ConsumerGroupHeartbeatResponse(ErrorCode.FENCED_MEMBER_EPOCH))


def _observe(heard: bool) -> list[str]:
    event = HeartbeatEvent(7, REQUEST, "c1", heard)
    return list(ended_membership_rejoins(Observation(WORLD, event, (FENCED,), WORLD, 100)))


def test_a_consumer_that_heard_it_was_fenced_must_not_go_on() -> None:
    assert len(_observe(heard=True)) == 1


def test_a_consumer_that_never_heard_the_answer_may_go_on() -> None:
    assert _observe(heard=False) == []


def test_heard_is_written_only_when_false_so_older_traces_stay_byte_for_byte() -> None:
    heard = codec.encode(HeartbeatEvent(7, REQUEST, "c1"))
    lost = codec.encode(HeartbeatEvent(7, REQUEST, "c1", heard=False))
    assert "heard" not in heard and lost["heard"] is False
    assert codec.decode(lost).heard is False
    assert codec.decode(heard).heard is True
