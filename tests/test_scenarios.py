"""Every named scenario behaves as its `expect` block says, on the model."""

from __future__ import annotations

import pytest

from conformance.specs import load_scenarios
from conformance.trace.scenario import run_scenario

SCENARIOS = load_scenarios()
CASES = [
    pytest.param(
        sc, exp, id=f"{sid}[{','.join(f'{k}={v}' for k, v in sorted((exp.get('variants') or {}).items()))}]"
    )
    for sid, sc in sorted(SCENARIOS.items())
    for exp in sc.expect
]


def test_every_scenario_declares_expectations() -> None:
    assert SCENARIOS, "no scenarios found"
    for sid, sc in SCENARIOS.items():
        assert sc.expect, f"scenario {sid} has no expect block"


@pytest.mark.parametrize(("scenario", "expectation"), CASES)
def test_scenario_expectation(scenario, expectation) -> None:  # type: ignore[no-untyped-def]
    result = run_scenario(scenario, dict(expectation.get("variants") or {}))
    violated = sorted({v.invariant for v in result.violations})
    if expectation.get("passes"):
        assert result.passed, f"violations {violated}, failed expectations {result.failed_expectations}"
    else:
        assert not result.passed, "expected the scenario to fail"
        if "violated" not in expectation:  # `passes: false`: the scenario's own expectations fail
            assert result.failed_expectations, f"expected a failed expectation, got violations {violated}"
        for inv in expectation.get("violated", []):
            assert inv in violated, f"expected {inv} to be violated, got {violated}"


def test_required_scenarios_exist() -> None:
    required = {
        "kafka-7026",
        "rolling-upgrade",
        "leader-failure",
        "leader-assignment-error",
        "subscription-change",
        "topic-metadata-change",
        "failover-1-before-join-complete",
        "failover-2-after-join-complete",
        "failover-3-before-sync-persisted",
        "failover-4-after-sync-persisted",
        "kip-394-handshake",
        "static-member-replacement",
        "kip-1082-ghost-member",
        "kafka-16147",
        "kip-848-static-temporary-leave",
        "kip-848-rebalance-timeout-fencing",
        "kip-848-partition-growth",
        "kip-848-rolling-upgrade",
        "kip-848-rolling-downgrade",
    }
    assert required <= set(SCENARIOS)


def test_the_scenario_guide_lists_every_scenario() -> None:
    """docs/scenarios.md's table names each scenario once, with its protocol and title."""
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[1] / "docs" / "scenarios.md").read_text()
    for sid, sc in SCENARIOS.items():
        row = f"| [`{sid}`](../specs/scenarios/{sid}.yaml) | {sc.protocol} | {sc.title} |"
        assert guide.count(row) == 1, f"docs/scenarios.md: no row (or two) for {sid}"
