"""The KIP-848 wire promises of `model.consumer.wire_promises`: no UNKNOWN_SERVER_ERROR to a heartbeat,
a full heartbeat when one is due, and released partitions reported at once. Each is shown on one
observation that breaks it and one that keeps it, then on the model's consumer and on a consumer
that breaks it (the harness's record, `model.consumer.owned_reports`)."""

from __future__ import annotations

from typing import Any

from conformance.protocols.consumer.build import make_consumer_sim
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartition,
    to_topic_partitions,
)
from model.consumer.owned_reports import AFTER_FAILURE, JOIN, OwnedReports
from model.consumer.world import ConsumerWorld, HeartbeatEvent
from model.errors import ErrorCode
from model.invariants import REGISTRY, load_all
from model.observation import Observation
from model.result import Delivery

load_all()
T0: TopicPartition = ("t", 0)
T1: TopicPartition = ("t", 1)


def _messages(inv: str, obs: Observation[ConsumerWorld]) -> list[str]:
    return list(REGISTRY[inv].predicate(obs))


def _sim(mutant: str | None = None, members: int = 1) -> Any:
    clients = [{"name": f"c{i + 1}", "topics": ["t"]} for i in range(members)]
    variants = {"mutant": mutant} if mutant else {}
    return make_consumer_sim({"t": 2}, clients, {}, variants)


def _join(
    owned: frozenset[TopicPartition] | None = frozenset(), timeout: int = 1000
) -> ConsumerGroupHeartbeatRequest:
    tps = None if owned is None else to_topic_partitions(owned)
    return ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=timeout,
        subscribed_topic_names=("t",), topic_partitions=tps,
    )  # fmt: skip


def _world(**records: Any) -> Observation[ConsumerWorld]:
    world = ConsumerWorld(groups={}, **records)
    return Observation(before=world, event=None, deliveries=(), after=world, now=0)


# ------------------------------------------------------------------ consumer.no_unexpected_heartbeat_error


def _answered(code: ErrorCode) -> Observation[ConsumerWorld]:
    sim = _sim()
    sim.client_step("c1")  # the group exists
    request = ConsumerGroupHeartbeatRequest(
        group_id="g", member_id=sim.client("c1").member_id, member_epoch=1
    )
    answer = ConsumerGroupHeartbeatResponse(error_code=code, error_message="boom")
    event = HeartbeatEvent(99, request, "c1")
    return Observation(
        before=sim.world, event=event, deliveries=(Delivery(99, answer),), after=sim.world, now=0
    )


def test_unknown_server_error_breaks_the_promise_and_documented_errors_keep_it() -> None:
    inv = "consumer.no_unexpected_heartbeat_error"
    assert _messages(inv, _answered(ErrorCode.UNKNOWN_SERVER_ERROR))
    assert _messages(inv, _answered(ErrorCode.FENCED_MEMBER_EPOCH)) == []


def test_a_member_subscribed_to_no_existing_topic_gets_nothing_on_the_model_not_an_error() -> None:
    """Two members, one subscribed to a topic that does not exist yet: the uniform assignor gives it
    nothing on the model, and the kafka-16930 mutant answers UNKNOWN_SERVER_ERROR."""
    for mutant, broken in ((None, False), ("kafka-16930", True)):
        sim = _sim(mutant, members=2)
        for _ in range(3):
            for name in ("c1", "c2"):
                sim.client_step(name)
        sim.subscribe("c2", ("v",))
        sim.advance(sim.port.config.heartbeat_interval_ms)  # its next heartbeat is due
        obs = sim.client_step("c2")
        assert bool(_messages("consumer.no_unexpected_heartbeat_error", obs)) == broken


# ------------------------------------------------------------------ consumer.full_heartbeat_when_due


def test_a_join_or_retry_without_every_field_breaks_the_promise() -> None:
    inv = "consumer.full_heartbeat_when_due"
    assert _messages(inv, _world(full_due=(("c1", JOIN, _join()),))) == []
    assert _messages(inv, _world(full_due=(("c1", JOIN, _join(timeout=-1)),)))
    assert _messages(inv, _world(full_due=(("c1", JOIN, _join(frozenset({T0}))),)))
    retry = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=3)
    assert _messages(inv, _world(full_due=(("c1", AFTER_FAILURE, retry),)))


def test_the_record_asks_a_full_heartbeat_after_a_failure_only() -> None:
    reports = OwnedReports()
    incremental = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=3)
    reports.sent("c", frozenset(), incremental)
    reports.failed("c")
    reports.sent("c", frozenset(), incremental)
    reports.sent("c", frozenset(), incremental)
    assert reports.take_all()[1] == (("c", AFTER_FAILURE, incremental),)


def _after_lost_answer(mutant: str | None) -> list[str]:
    sim = _sim(mutant)
    for _ in range(2):
        sim.client_step("c1")
    interval = sim.port.config.heartbeat_interval_ms
    sim.lose_response("c1")
    sim.advance(interval)
    sim.client_step("c1")  # its answer is lost
    sim.advance(interval)
    return _messages("consumer.full_heartbeat_when_due", sim.client_step("c1"))


def test_the_model_resends_every_field_after_a_lost_answer_and_kgo_1270_does_not() -> None:
    assert _after_lost_answer(None) == []
    assert _after_lost_answer("kgo-1270")


def _rejoin_after_leaving(mutant: str | None) -> list[str]:
    sim = _sim(mutant)
    sim.client_step("c1")
    sim.leave("c1")
    sim.subscribe("c1", ("t",))
    return _messages("consumer.full_heartbeat_when_due", sim.client_step("c1"))


def test_the_model_rejoins_with_a_full_heartbeat_and_kafka_16190_does_not() -> None:
    assert _rejoin_after_leaving(None) == []
    assert _rejoin_after_leaving("kafka-16190")


# ------------------------------------------------------------------ consumer.release_reported_at_once


def test_a_silent_turn_with_released_partitions_breaks_the_promise() -> None:
    inv = "consumer.release_reported_at_once"
    assert _messages(inv, _world(silences=(("c1", frozenset({T0}), frozenset({T1})),)))
    assert _messages(inv, _world()) == []


def test_the_record_notes_a_silent_turn_only_when_something_released_is_unreported() -> None:
    reports = OwnedReports()
    reports.idle("c", frozenset())  # nothing reported yet
    reports.sent("c", frozenset({T0, T1}), _join(frozenset({T0, T1})))
    reports.idle("c", frozenset({T0, T1}))
    reports.idle("c", frozenset({T0}))
    reports.sent("c", frozenset(), _join(frozenset({T0})))  # reports what it does not hold
    reports.idle("c", frozenset())  # nothing it held then was released since
    assert reports.take_all()[2] == (("c", frozenset({T0}), frozenset({T1})),)


def _revocation(mutant: str | None) -> list[str]:
    """c1 takes both partitions, c2 joins: c1 revokes one and has its turns."""
    sim = _sim(mutant, members=2)
    for _ in range(3):
        sim.client_step("c1")
    found: list[str] = []
    for _ in range(20):
        for name in ("c2", "c1"):
            obs = sim.client_step(name)
            found += _messages("consumer.release_reported_at_once", obs) if obs is not None else []
        found += _messages("consumer.release_reported_at_once", sim.advance(100))
    return found


def test_the_model_acknowledges_a_revocation_at_once_and_kgo_1340_waits() -> None:
    assert _revocation(None) == []
    assert _revocation("kgo-1340")
