"""Mixed groups (classic and KIP-848 members in one group, docs/protocol-reference.md#b13) as the engine sees them.

Every capability imports its module when called, so listing the kits stays cheap.
"""

from __future__ import annotations

from typing import Any

from conformance.engine.checker import CheckPlan, View
from conformance.engine.kit import ProtocolKit
from conformance.engine.variants import VariantKey


def make_machine(settings: Any) -> type:
    from conformance.protocols.mixed.machine import make_machine as make

    return make(settings)


def to_trace(sim: Any, **kw: Any) -> Any:
    from conformance.protocols.mixed.trace import to_trace as record

    return record(sim, **kw)


def _classic_state_invariants() -> list[Any]:
    from model.invariants import REGISTRY
    from model.mixed.world import CLASSIC_STATE_INVARIANTS

    return [REGISTRY[i] for i in CLASSIC_STATE_INVARIANTS]


def _on_classic_groups(inv: Any, obs: Any) -> list[str]:
    from model.mixed.world import check_invariant

    return check_invariant(inv, obs)


def checks() -> CheckPlan:
    """Consumer members are checked as in consumer groups, and each classic group's view by the
    classic invariants that read only the group (`CLASSIC_STATE_INVARIANTS`)."""
    return CheckPlan(also=("consumer",), views=(View(_classic_state_invariants, check=_on_classic_groups),))


def replay(*args: Any, **kw: Any) -> Any:
    from conformance.protocols.mixed.replay import replay_mixed

    return replay_mixed(*args, **kw)


def replay_on_target(*args: Any, **kw: Any) -> Any:
    from conformance.protocols.mixed.replay import replay_mixed_on_target

    return replay_mixed_on_target(*args, **kw)


def replay_recorded(trace: Any) -> Any:
    from conformance.protocols.mixed.recorded import replay_recorded as against_recording

    return against_recording(trace)


def run_scenario(scenario: Any, variants: dict[str, str], **kw: Any) -> Any:
    from conformance.protocols.mixed.scenarios import MixedScenarioRunner

    return MixedScenarioRunner(scenario, variants, **kw).run()


def real_setup(handle: Any, profile: Any) -> Any:
    from conformance.protocols.mixed.setup import mixed_setup

    return mixed_setup(handle, profile)


def not_run_reason(handle: Any) -> str | None:
    from conformance.protocols.mixed.setup import not_run_reason as why

    return why(handle)


def mutants() -> dict[str, Any]:
    from conformance.mutants.mixed import MIXED_MUTANTS

    return dict(MIXED_MUTANTS)


KIT = ProtocolKit(
    name="mixed",
    summary="mixed groups: classic and KIP-848 members in one group, online upgrade and downgrade",
    make_machine=make_machine,
    to_trace=to_trace,
    checks=checks,
    variants=(
        VariantKey(
            "migration_policy",
            ("disabled", "upgrade", "downgrade", "bidirectional"),
            "group.consumer.migration.policy for mixed groups (KIP-848; Kafka 4.0 default bidirectional; "
            "docs/protocol-reference.md#b13)",
        ),
        VariantKey(
            "mixed_mutant",
            (
                "upgrade-ignores-policy",
                "upgrade-keeps-classic-group",
                "empty-replacement-honours-policy",
                "downgrade-ignores-policy",
                "never-downgrades",
                "no-replacement-downgrade",
                "heartbeat-never-rejoins",
                "generation-off-by-one",
                "sync-gives-target",
                "classic-rebalance-timer",
            ),
            "run a mixed scenario against a mutant (conformance/mutants/mixed.py)",
        ),
    ),
    oracle_rules=("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit"),
    replay=replay,
    replay_on_target=replay_on_target,
    replay_recorded=replay_recorded,
    run_scenario=run_scenario,
    real_setup=real_setup,
    not_run_reason=not_run_reason,
    mutants=mutants,
    mutant_key="mixed_mutant",
)
