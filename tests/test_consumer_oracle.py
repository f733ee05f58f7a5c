"""The consumer-protocol oracle's pure parts: legality and adoption of a target's assignment, the
answer comparison, the kio codec, the epoch-origin variant and which protocols a target runs."""

from __future__ import annotations

import io
import uuid
from types import SimpleNamespace

from kio.serial import entity_reader, entity_writer

from conformance.protocols import get_kit
from conformance.protocols.classic.codec import payload_class
from conformance.protocols.consumer.codec import TopicMap, decode_heartbeat, encode_heartbeat
from conformance.protocols.consumer.oracle import compare, complete_assignment, legal_assignment
from model.consumer.assignors import AssignmentMember
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from model.consumer.state import ConsumerCoordinatorState
from model.consumer.txn import ConsumerCoordinatorConfig
from model.errors import ErrorCode


def members(*names: str, topics: frozenset[str] = frozenset({"t"})) -> dict[str, AssignmentMember]:
    return {n: AssignmentMember(n, topics) for n in names}


def test_legal_assignment_rejects_double_targeting_unsubscribed_and_imbalance() -> None:
    ms = members("a", "b")
    topics = {"t": 4}
    ok = {"a": frozenset({("t", 0), ("t", 1)}), "b": frozenset({("t", 2), ("t", 3)})}
    assert legal_assignment(ok, ms, topics, "uniform", True) is None
    twice = {"a": frozenset({("t", 0), ("t", 1)}), "b": frozenset({("t", 1), ("t", 2), ("t", 3)})}
    assert "both" in (legal_assignment(twice, ms, topics, "uniform", True) or "")
    lopsided = {"a": frozenset({("t", 0), ("t", 1), ("t", 2)}), "b": frozenset({("t", 3)})}
    assert "differ" in (legal_assignment(lopsided, ms, topics, "uniform", True) or "")
    missing = {"a": frozenset({("t", 0)}), "b": frozenset({("t", 1)})}
    assert "nobody" in (legal_assignment(missing, ms, topics, "uniform", True) or "")
    other = {"a": frozenset({("u", 0)}), "b": frozenset()}
    assert "does not subscribe" in (legal_assignment(other, ms, {"t": 0, "u": 1}, "uniform", True) or "")


def test_complete_assignment_adopts_the_targets_choice_and_refuses_an_illegal_one() -> None:
    ms = members("a", "b", "c")
    topics = {"t": 4}
    base = {"a": frozenset({("t", 0), ("t", 1)}), "b": frozenset({("t", 2)}), "c": frozenset({("t", 3)})}
    done = complete_assignment(base, {"a": frozenset({("t", 3)})}, ms, topics, "uniform", True)
    assert done is not None and done["a"] == frozenset({("t", 3)})
    assert legal_assignment(done, ms, topics, "uniform", True) is None
    assert done["b"] >= {("t", 2)}  # sticky where it can be
    # three partitions for one member out of four among three is not balanced: no legal completion
    assert (
        complete_assignment(
            base, {"a": frozenset({("t", 0), ("t", 1), ("t", 2)})}, ms, topics, "uniform", True
        )
        is None
    )
    # two fixed members claiming the same partition
    clash = {"a": frozenset({("t", 0)}), "b": frozenset({("t", 0)})}
    assert complete_assignment(base, clash, ms, topics, "uniform", True) is None


def test_compare_separates_protocol_mismatches_from_kafka_compat_notes() -> None:
    tp = (TopicPartitions("t", (0, 1)),)
    model = ConsumerGroupHeartbeatResponse(
        member_id="m", member_epoch=2, heartbeat_interval_ms=500, assignment=None
    )
    same_again = ConsumerGroupHeartbeatResponse(
        member_id="m", member_epoch=2, heartbeat_interval_ms=500, assignment=tp
    )
    why, notes = compare(model, same_again, frozenset({("t", 0), ("t", 1)}))
    assert why is None and notes
    why, _ = compare(model, same_again, frozenset({("t", 0)}))
    assert why is not None and "assignment" in why
    epoch = ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=3, heartbeat_interval_ms=500)
    assert "epoch" in (compare(model, epoch, None)[0] or "")
    fenced = ConsumerGroupHeartbeatResponse(error_code=ErrorCode.FENCED_MEMBER_EPOCH)
    assert "FENCED_MEMBER_EPOCH" in (compare(model, fenced, None)[0] or "")


def test_heartbeat_codec_round_trips_through_kio_with_topic_ids() -> None:
    tid = uuid.UUID(int=7)
    topics = TopicMap()
    topics.add("t", "gc-1-t-2", tid)
    request = ConsumerGroupHeartbeatRequest(
        "g",
        "m",
        0,
        rebalance_timeout_ms=1000,
        subscribed_topic_names=("t",),
        topic_partitions=(TopicPartitions("t", (1,)),),
    )
    wire = encode_heartbeat(request, 1, "real-g", topics)
    assert wire.group_id == "real-g" and wire.subscribed_topic_names == ("gc-1-t-2",)
    assert wire.topic_partitions[0].topic_id == tid
    buf = io.BytesIO()
    entity_writer(type(wire))(buf, wire)
    back, _ = entity_reader(type(wire))(buf.getvalue(), 0)
    assert back == wire
    cls = payload_class(68, 1, False)
    mod = __import__(cls.__module__, fromlist=["x"])
    answer = cls(
        throttle_time=0, error_code=0, member_id="m", member_epoch=2, heartbeat_interval=500,
        assignment=mod.Assignment(topic_partitions=(mod.TopicPartitions(topic_id=tid, partitions=(0, 1)),)),
    )  # fmt: skip
    decoded = decode_heartbeat(answer, topics)
    assert decoded.member_epoch == 2 and decoded.assigned() == frozenset({("t", 0), ("t", 1)})


def test_initial_group_epoch_variant_starts_a_new_group_at_one() -> None:
    """KAFKA-20268: the first computed assignment is epoch 2 (observed on Kafka 4.4.0)."""
    join = ConsumerGroupHeartbeatRequest(
        "g", "m", 0, rebalance_timeout_ms=1000, subscribed_topic_names=("t",), topic_partitions=()
    )
    epochs = []
    for start in (0, 1):
        coord = ConsumerCoordinator(ConsumerCoordinatorConfig(initial_group_epoch=start))
        state = ConsumerCoordinatorState()
        coord.create_topic(state, "t", 2)
        epochs.append(
            coord.handle_consumer_group_heartbeat(state, join, 1, 0).deliveries[0].response.member_epoch
        )
    assert epochs == [1, 2]


def test_protocols_a_target_does_not_offer_are_named_not_hidden() -> None:
    caps = SimpleNamespace(features=frozenset({"classic"}), api_versions={11: (0, 9)})
    handle = SimpleNamespace(capabilities=caps, kind="kafka")
    assert get_kit("classic").not_run_reason(handle) is None
    assert (get_kit("consumer").not_run_reason(handle) or "").startswith("not offered")
    v0 = SimpleNamespace(features=frozenset({"classic", "consumer"}), api_versions={68: (0, 0)})
    assert "v0-v0 only" in (
        get_kit("consumer").not_run_reason(SimpleNamespace(capabilities=v0, kind="kafka")) or ""
    )
    assert (get_kit("mixed").not_run_reason(handle) or "").startswith("not run")
