"""`consumer.reports_what_it_holds`: a KIP-848 consumer reports a partition released only once it no
longer holds it, judged against the harness's record (`model.consumer.owned_reports`)."""

from __future__ import annotations

from model.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartition, to_topic_partitions
from model.consumer.owned_reports import OwnedReports

T0: TopicPartition = ("t", 0)
T1: TopicPartition = ("t", 1)


def _beat(epoch: int, owned: frozenset[TopicPartition] | None) -> ConsumerGroupHeartbeatRequest:
    tps = None if owned is None else to_topic_partitions(owned)
    return ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="m", member_epoch=epoch, topic_partitions=tps
    )


def test_the_record_resolves_null_fields_and_forgets_after_a_leave() -> None:
    reports = OwnedReports()
    reports.sent("c", frozenset(), _beat(1, None))  # nothing reported yet: nothing to compare
    reports.sent("c", frozenset({T0}), _beat(1, frozenset({T0, T1})))
    reports.sent("c", frozenset({T0, T1}), _beat(2, None))  # null: as last reported
    assert reports.take() == (
        ("c", frozenset({T0}), frozenset({T0, T1})),
        ("c", frozenset({T0, T1}), frozenset({T0, T1})),
    )
    assert reports.take() == ()
    reports.sent("c", frozenset(), _beat(-1, None))  # a leave reports nothing and ends the record
    reports.sent("c", frozenset({T0}), _beat(3, None))
    assert reports.take() == () and reports.last == {}
