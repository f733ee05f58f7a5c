"""kfake's consumer faults finding (reports/conformance/faults.md) as a model-side check: a static
member parked at epoch -2 keeps its session timer (Kafka GroupMetadataManager
consumerGroupStaticMemberGroupLeave, apache/kafka@1eb7644 L2728-2746; replayed on Kafka 4.4.0), so
the scenario kip-848-static-leave-expires passes on the model; with kfake's rule (franz-go
pkg/kfake groups.go consumerStaticLeave L2162-2165 @01f206a7e32c stops the timer) it fails."""

from __future__ import annotations

import pytest

from conformance.specs import load_scenarios
from conformance.trace.scenario import run_scenario
from model.consumer import coordinator
from model.consumer.state import SESSION

SCENARIO = load_scenarios()["kip-848-static-leave-expires"]


def test_model_fences_the_parked_static_member() -> None:
    result = run_scenario(SCENARIO, {})
    assert result.passed, (result.failed_expectations, result.violations)


def test_kfakes_rule_keeps_the_parked_member_for_ever(monkeypatch: pytest.MonkeyPatch) -> None:
    park = coordinator.ConsumerCoordinator.static_temporary_leave

    def park_and_cancel(self, txn, member):  # type: ignore[no-untyped-def]
        park(self, txn, member)
        self.cancel_timer(txn, SESSION, member.member_id)

    monkeypatch.setattr(coordinator.ConsumerCoordinator, "static_temporary_leave", park_and_cancel)
    result = run_scenario(SCENARIO, {})
    assert not result.passed
    assert "consumer.static_leave_expires" in {v.invariant for v in result.violations}
    assert any("group_epoch = 3, got 2" in f for f in result.failed_expectations)
