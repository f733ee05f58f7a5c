"""Mutants (docs/mutants.md): the registry, the mutant as a target, and a representative subset of the kill
matrix caught from scratch with a fixed seed (the full matrix is `groupcheck mutants`, recorded in
reports/mutants.md and benchmarks/results/mutants_time_to_catch.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.engine.profiles import get_profile
from conformance.errors import UsageError
from conformance.mutants import MUTANTS, get_mutant, with_mutant_variants
from conformance.power.matrix import render_markdown, run_mutant
from conformance.protocols import parse_variants
from conformance.protocols.build import make_classic_sim, make_consumer_sim
from conformance.specs import load_invariants
from model.classic.client import ClassicClient
from model.classic.coordinator import ClassicCoordinator
from model.classic.port import ModelPort
from model.consumer.client import VirtualConsumer
from model.consumer.coordinator import ConsumerCoordinator


def test_every_mutant_is_one_small_override_of_the_model() -> None:
    invariants = load_invariants()
    for m in MUTANTS.values():
        parts = [p for p in (m.coordinator, m.client, m.port) if p is not None]
        assert len(parts) + (1 if m.variants and not parts else 0) == 1, m.name
        base = {
            "classic": (ClassicCoordinator, ClassicClient, ModelPort),
            "consumer": (ConsumerCoordinator, VirtualConsumer),
        }[m.protocol]
        for part in parts:
            assert issubclass(part, base) and part not in base, m.name  # a subclass, never a copy
            assert part.__doc__, m.name
        assert m.expect and all(i in invariants for i in m.expect), m.name
        assert (m.family == "catalogue") == (m.row is not None), m.name


def test_the_generic_mutant_family_is_there() -> None:
    generic = {m.name for m in MUTANTS.values() if m.family == "generic"}
    assert {
        "skip-generation-bump",
        "accept-stale-generation",
        "skip-fencing-check",
        "member-list-to-followers",
        "drop-parked-response",
        "answer-twice",
        "forget-persisted-field",
        "timer-off-by-one",
    } <= generic


def test_mutant_variant_brings_its_model_variants_and_is_checked() -> None:
    assert parse_variants(["mutant=kafka-7026"]) == {
        "mutant": "kafka-7026",
        "assignor": "sticky",
        "sticky": "v0",
    }
    assert (
        with_mutant_variants({"mutant": "kafka-14639", "assignor": "cooperative-sticky"})[
            "cooperative_adjust"
        ]
        == "false"
    )
    with pytest.raises(UsageError, match="unknown variant|expected one of"):
        parse_variants(["mutant=no-such-bug"])
    with pytest.raises(UsageError, match="consumer mutant"):
        get_mutant("kafka-16147", "classic")
    with pytest.raises(UsageError, match="consumer mutant"):
        make_classic_sim({"t": 1}, [{"name": "c1"}], {}, {"mutant": "kafka-16147"})


def test_the_mutant_is_what_the_simulator_drives() -> None:
    sim = make_classic_sim({"t": 1}, [{"name": "c1"}], {}, {"mutant": "answer-twice"})
    assert type(sim.port.coordinator).__name__ == "AnswerTwice"
    sim = make_classic_sim({"t": 1}, [{"name": "c1"}], {}, {"mutant": "forget-persisted-field"})
    assert type(sim.port).__name__ == "ForgetAssignmentOnLoad"
    sim = make_consumer_sim({"t": 1}, [{"name": "c1", "instance_id": "i1"}], {}, {"mutant": "dekaf-1348"})
    assert type(sim.clients["c1"]).__name__ == "StaticLeavesWithMinusOne"
    sim.client_step("c1")
    obs = sim.leave("c1")
    assert obs is not None and obs.event.request.member_epoch == -1
    plain = make_consumer_sim({"t": 1}, [{"name": "c1", "instance_id": "i1"}], {}, {})
    plain.client_step("c1")
    assert plain.leave("c1").event.request.member_epoch == -2


# A representative subset of the kill matrix: one per kind of mutant (coordinator rule, port, client,
# KIP-848 coordinator), each caught from scratch with a fixed seed in a few examples.
SUBSET = ["answer-twice", "member-list-to-followers", "kafka-8500", "forget-persisted-field", "dekaf-1348"]


@pytest.mark.parametrize("name", SUBSET)
def test_representative_mutants_are_caught_from_scratch(name: str, tmp_path: Path) -> None:
    row = run_mutant(
        name, profile=get_profile("dev"), max_examples=10, seed=0, budget_s=5, run_dir=tmp_path, shrink=False
    )
    assert row.caught, name
    assert row.expected_hit, (name, row.invariants)
    # at most two 10-example runs (seeds 0, 1): the classic rule set grew (unsubscribe)
    # and forget-persisted-field's first catch moved to example 13
    assert row.examples is not None and row.examples <= 20
    if MUTANTS[name].protocol == "classic":
        assert row.trace_path is not None and Path(row.trace_path).exists()
        assert row.invariants[0] in Path(row.trace_path).name


def test_reference_model_survives_what_kills_the_mutants(tmp_path: Path) -> None:
    """The same runs without the fault pass: the matrix measures the fault, not a flaky suite."""
    from conformance.engine.run import run_check

    for protocol in ("classic",):
        result = run_check(protocol, profile=get_profile("dev"), max_examples=10, seed_value=0)
        assert result.violations == [], result.violations


def test_kill_matrix_report_lists_survivors(tmp_path: Path) -> None:
    row = run_mutant("answer-twice", profile=get_profile("dev"), max_examples=5, seed=0, shrink=False)
    survivor = run_mutant(
        "timer-off-by-one", profile=get_profile("dev"), max_examples=1, seed=1, budget_s=0.001, shrink=False
    )
    text = render_markdown([row, survivor], command="test", machine="test")
    assert "| `answer-twice` | classic | generic | - | yes |" in text
    if not survivor.caught:
        assert "**SURVIVED**" in text
        assert "`timer-off-by-one`" in text.split("## Survivors")[1]


def test_cli_mutants(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mutants", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in MUTANTS)
    assert main(["mutants", "--mutant", "nope"]) == 2
    report = tmp_path / "m.md"
    code = main(
        [
            "mutants",
            "--mutant",
            "answer-twice",
            "--max-examples",
            "5",
            "--profile",
            "dev",
            "--report",
            str(report),
        ]
    )
    assert code == 0
    assert "caught 1 of 1" in capsys.readouterr().out
    assert "`classic.one_response_per_request`" in report.read_text()


def test_catalogue_rows_have_a_mutant_or_a_stated_reason() -> None:
    """Rows 1-21 of docs/bug-catalogue.md: a mutant, or a reason it is not one (yet)."""
    from conformance.mutants import UNMODELLED_ROWS

    rows = {m.row for m in MUTANTS.values() if m.row is not None}
    assert rows | set(UNMODELLED_ROWS) == set(range(1, 22)), sorted(
        set(range(1, 22)) - rows - set(UNMODELLED_ROWS)
    )
    assert not rows & set(UNMODELLED_ROWS)
    assert all(len(reason) > 40 for reason in UNMODELLED_ROWS.values())
