"""`consumer.reports_what_it_holds`: a KIP-848 consumer reports a partition released only once it no
longer holds it, judged against the harness's record (`model.consumer.owned_reports`)."""

from __future__ import annotations

from conformance.mutants.consumer import AcksBeforeRevoking
from model.consumer.client import ClientState, VirtualConsumer
from model.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartition, to_topic_partitions
from model.consumer.owned_reports import OwnedReports
from model.invariants import REGISTRY, Invariant, for_protocol, load_all
from model.mixed.coordinator import MixedCoordinator
from model.mixed.world import CLASSIC_STATE_INVARIANTS, MixedRun

load_all()
INVARIANTS: tuple[Invariant, ...] = (
    tuple(for_protocol("consumer"))
    + tuple(for_protocol("mixed"))
    + tuple(REGISTRY[i] for i in CLASSIC_STATE_INVARIANTS)
)

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


def _mixed_run(consumer: type[VirtualConsumer]) -> MixedRun:
    """A KIP-848 consumer with slow callbacks takes every partition; a classic member's join then
    makes it revoke half, and its callbacks never finish."""
    run = MixedRun(MixedCoordinator(), INVARIANTS)
    run.topic("t", 4)
    run.clients["k1"] = consumer("k1", "g", run.coordinator.chooser, topics=("t",), auto_reconcile=False)
    for _ in range(10):
        run.tick()
        k1 = run.clients["k1"]
        if isinstance(k1, VirtualConsumer) and k1.state == ClientState.RECONCILING:
            k1.complete_reconciliation()
    assert len(run.owned()["k1"]) == 4
    run.add_classic("c1", topics=("t",), assignors=("range",), session_timeout_ms=10_000,
                    rebalance_timeout_ms=20_000)  # fmt: skip
    run.run_for(10_000)
    return run


def test_a_mixed_run_keeps_the_record_and_judges_it() -> None:
    """The mixed runner records each KIP-848 consumer's reports as the consumer simulator does, so
    the promise judges mixed groups too: the model's consumer passes it, and a consumer that reports
    its new assignment while its revocation callbacks still run breaks it."""
    honest = _mixed_run(VirtualConsumer)
    assert honest.violations == []
    assert honest.clients["k1"].state == ClientState.RECONCILING and len(honest.owned()["k1"]) == 4
    early = _mixed_run(AcksBeforeRevoking)
    assert "consumer.reports_what_it_holds" in {inv for inv, _ in early.violations}, early.violations
