"""The mixed-group mutants against the mixed machine on the model (`groupcheck mutants --protocol
mixed`, conformance/power/mixed_kill.py; the full matrix is reports/mutants_mixed.md)."""

from __future__ import annotations

import pytest

from conformance.engine.profiles import get_profile
from conformance.errors import UsageError
from conformance.mutants.mixed import MIXED_MUTANTS
from conformance.power.mixed_kill import MIXED_EXPECT, render_markdown, run_mixed_mutant
from conformance.protocols.classic.machine import InvariantViolation, MachineSettings
from conformance.protocols.mixed.machine import make_machine
from model.invariants import REGISTRY, load_all


def test_every_mixed_mutant_names_registered_invariants() -> None:
    load_all()
    assert set(MIXED_EXPECT) == set(MIXED_MUTANTS)
    for name, expect in MIXED_EXPECT.items():
        assert expect and all(i in REGISTRY for i in expect), name


@pytest.mark.parametrize("name", ["empty-replacement-honours-policy", "upgrade-keeps-classic-group"])
def test_mixed_mutant_caught_from_scratch(name: str) -> None:
    """Two mutants no other test runs through the mixed machine: caught at seed 0 (ci profile)."""
    row = run_mixed_mutant(name, profile=get_profile("ci"), budget_s=30)
    assert row.caught and row.expected_hit, (row.invariants, row.message)
    text = render_markdown([row], command="test", machine="test", profile=get_profile("ci"))
    assert f"| `{name}` |" in text and "Caught by an expected invariant: 1 of 1." in text


def test_unknown_mixed_mutant_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown mixed mutant 'nope'"):
        run_mixed_mutant("nope", profile=get_profile("ci"))


def _roll_last_static_consumer(variants: dict[str, str]) -> object:
    """Two dynamic KIP-848 members and a static one (i1); the dynamic ones stop, then the static
    one is rolled to the classic protocol."""
    machine = make_machine(MachineSettings(dict(variants, migration_policy="downgrade")))()
    machine.setup(policy="downgrade", assignor="range", partitions=2, first=[False, False], seed=0)
    machine.start(classic=False, static=True, join_version=9)
    machine.run_for(3000)
    machine.stop(0)
    machine.stop(0)
    machine.run_for(3000)
    machine.roll(0)
    return machine


def test_a_rolled_static_member_keeps_its_instance_id_and_downgrades_by_replacement() -> None:
    """The roll keeps ``group.instance.id``, so the classic replacement of the last consumer-protocol
    member downgrades the group (``validateOnlineDowngradeWithReplacedMemberId``)."""
    machine = _roll_last_static_consumer({})
    assert "start c4 (instance i1)" in machine.steps  # type: ignore[attr-defined]
    assert machine.run.state.group_type("g") == "classic"  # type: ignore[attr-defined]
    with pytest.raises(InvariantViolation, match="mixed.downgrade_rules"):
        _roll_last_static_consumer({"mixed_mutant": "no-replacement-downgrade"})
