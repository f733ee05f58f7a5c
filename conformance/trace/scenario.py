"""Named scenarios (specs/scenarios/*.yaml): run one through its protocol's kit, and its trace."""

from __future__ import annotations

from typing import Any

from conformance.formats.trace_file import Trace, groupcheck_version
from conformance.protocols import get_kit
from conformance.specs import Scenario


def run_scenario(scenario: Scenario, variants: dict[str, str], **kw: Any) -> Any:
    """Run ``scenario`` with its protocol's runner (`ProtocolKit.run_scenario`)."""
    return get_kit(scenario.protocol).require("run_scenario")(scenario, variants, **kw)


def scenario_trace(result: Any, *, target: str = "model") -> Trace:
    """The trace of a scenario run (the header's origin names the scenario file)."""
    sc = result.scenario
    return get_kit(sc.protocol).to_trace(  # type: ignore[no-any-return]
        result.sim,
        target=target,
        target_version=groupcheck_version() if target == "model" else "unknown",
        origin={"kind": "scenario", "id": sc.id, "source": sc.source},
        violations=[(v.invariant, v.message, v.step) for v in result.violations],
    )
