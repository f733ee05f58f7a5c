"""The mixed-group oracle's pieces that need no broker (docs/protocol-reference.md#b13)."""

from __future__ import annotations

from types import SimpleNamespace

from conformance.protocols import get_kit
from conformance.protocols.mixed.oracle import RefChooser, compare
from model.classic.messages import HeartbeatResponse, SyncGroupResponse
from model.embedded import Assignment, encode_assignment
from model.errors import ErrorCode as E


def test_compare_reads_sync_assignments_and_separates_compat_notes() -> None:
    v0 = encode_assignment(Assignment((("t", 0), ("t", 1))), 0)
    v3 = encode_assignment(Assignment((("t", 1), ("t", 0))), 3)
    other = encode_assignment(Assignment((("t", 2),)), 3)
    mine = SyncGroupResponse(E.NONE, "consumer", "range", v0)
    assert compare(mine, SyncGroupResponse(E.NONE, "consumer", "range", v3), None) == (
        None,
        ["SyncGroup assignment bytes differ from the model's encoding (same partitions)"],
    )
    why, _ = compare(mine, SyncGroupResponse(E.NONE, "consumer", "range", other), None)
    assert why is not None and "assignment {t-2}" in why
    why, _ = compare(None, HeartbeatResponse(E.NONE), None)
    assert why is not None and "parks" in why
    why, _ = compare(HeartbeatResponse(E.NONE), HeartbeatResponse(E.REBALANCE_IN_PROGRESS), None)
    assert why == "error REBALANCE_IN_PROGRESS, model NONE"


def test_ref_chooser_ids_depend_on_the_request_only() -> None:
    a, b = RefChooser(), RefChooser()
    a.reset(7)
    b.reset(7)
    assert [a.new_uuid(), a.new_uuid()] == [b.new_uuid(), b.new_uuid()]
    b.reset(8)
    assert b.new_uuid() != a.new_uuid()


def test_mixed_runs_only_where_both_protocols_are_offered() -> None:
    classic_only = SimpleNamespace(
        capabilities=SimpleNamespace(features=frozenset({"classic"}), api_versions={11: (0, 9)}), kind="kafka"
    )
    why = get_kit("mixed").not_run_reason(classic_only) or ""
    assert why.startswith("not run") and "ConsumerGroupHeartbeat" in why
    both = SimpleNamespace(
        capabilities=SimpleNamespace(features=frozenset({"classic", "consumer"}), api_versions={68: (0, 1)}),
        kind="kafka",
    )
    assert get_kit("mixed").not_run_reason(both) is None


def test_migration_policy_is_a_hypothesis_unless_the_launcher_states_it() -> None:
    """A target that refuses an online upgrade may run policy disabled or downgrade (legal): every
    policy is a hypothesis the answers select, unless the target's launcher states the setting."""
    from conformance.protocols.mixed.oracle import ORIGINS, POLICIES, MixedOraclePort
    from model.choice import SeededChooser
    from model.mixed.consumer_group import MixedConfig
    from model.mixed.coordinator import MixedCoordinator
    from model.mixed.state import MigrationPolicy

    session = SimpleNamespace(adapter=None, next_group=lambda: "gc-test-g1")
    coordinator = MixedCoordinator(MixedConfig(policy=MigrationPolicy.UPGRADE), SeededChooser(0))
    free = MixedOraclePort(coordinator, session)  # type: ignore[arg-type]
    assert {c.config.policy.value for c in free.coords.values()} == set(POLICIES)
    assert len(free.hypos) == len(ORIGINS)
    stated = MixedOraclePort(coordinator, session, policy_known=True)  # type: ignore[arg-type]
    assert {c.config.policy for c in stated.coords.values()} == {MigrationPolicy.UPGRADE}
    assert {c.config.classic_rejoin_epoch for c in stated.coords.values()} == {"group", "assignment"}
