"""The infection probe (conformance/mutants/infection.py): a coordinator that changes nothing is never
reported, a real fault is, the probe leaves the run and its verdict alone, and the held-out driver
records what it saw."""

from __future__ import annotations

import json

import pytest

import conformance.protocols  # noqa: F401 - installs the protocol kits
from conformance.engine.profiles import get_profile
from conformance.engine.run import run_check
from conformance.mutants import MUTANTS, Mutant
from conformance.mutants.heldout2_consumer import HELDOUT2_MIXED_MUTANTS
from conformance.mutants.infection import InfectionLog, probed, probing, reference_class
from conformance.power import heldout_power
from conformance.power.infection import run as run_probed
from model.classic.coordinator import ClassicCoordinator
from model.consumer.coordinator import ConsumerCoordinator
from model.mixed.coordinator import MixedCoordinator


class SameClassic(ClassicCoordinator):
    pass


class SameConsumer(ConsumerCoordinator):
    pass


class SameMixed(MixedCoordinator):
    pass


def _probed_run(protocol: str, variants: dict[str, str], examples: int = 5) -> tuple[object, InfectionLog]:
    log = InfectionLog()
    with probing(log):
        result = run_check(
            protocol, target="model", profile=get_profile("dev"), max_examples=examples, variants=variants
        )
    return result, log


@pytest.mark.parametrize(
    ("protocol", "cls"), [("classic", SameClassic), ("consumer", SameConsumer)], ids=["classic", "consumer"]
)
def test_a_coordinator_that_changes_nothing_is_never_infected(monkeypatch, protocol, cls):
    monkeypatch.setitem(
        MUTANTS, "same", Mutant("same", protocol, "generic", "nothing", "-", (), coordinator=cls)
    )
    result, log = _probed_run(protocol, {"mutant": "same"})
    assert result.verdict == "PASSED"
    assert log.calls > 100 and log.infected == 0 and log.in_answers == 0, log.as_dict()
    assert log.examples >= 5 and log.diverged == 0, log.as_dict()


def test_a_mixed_coordinator_that_changes_nothing_is_never_infected(monkeypatch):
    monkeypatch.setitem(HELDOUT2_MIXED_MUTANTS, "same", SameMixed)
    result, log = _probed_run("mixed", {"mixed_mutant": "same"}, examples=3)
    assert not result.violations
    assert log.calls > 50 and log.infected == 0, log.as_dict()
    assert log.examples >= 3 and log.diverged == 0, log.as_dict()


def test_the_probe_leaves_the_run_and_its_verdict_alone():
    variants = {"mutant": "kafka-9752"}
    plain = run_check("classic", target="model", profile=get_profile("dev"), variants=variants)
    probed_result, log = _probed_run("classic", variants, examples=get_profile("dev").max_examples)
    assert plain.violations and [v.invariant for v in plain.violations] == [
        v.invariant for v in probed_result.violations
    ]
    assert plain.steps == probed_result.steps
    assert log.infected > 0 and log.first is not None and log.first["entry"] == "advance"


def test_a_reached_consumer_fault_is_infected_though_no_invariant_judges_it():
    result, log = _probed_run("consumer", {"mutant": "kafka-18688"}, examples=10)
    assert result.verdict == "PASSED"
    assert log.by_entry.get("handle_consumer_group_heartbeat", 0) > 0
    assert log.diverged > 0 and log.first_divergence is not None
    assert log.first_divergence["entry"] == "handle_consumer_group_heartbeat"


def test_without_a_probe_or_for_a_model_class_nothing_is_wrapped():
    assert probed(SameClassic) is SameClassic  # nothing probes
    with probing(InfectionLog()):
        assert probed(ClassicCoordinator) is ClassicCoordinator
        wrapped = probed(SameClassic)
    assert wrapped is not SameClassic and issubclass(wrapped, SameClassic)
    assert {"handle", "advance"} <= set(vars(wrapped))
    assert reference_class(wrapped) is ClassicCoordinator
    assert reference_class(SameMixed) is MixedCoordinator


def test_a_client_fault_is_not_probed():
    code, lines = run_probed("franz-go-1326", "classic", "dev", 0)
    seen = json.loads(lines[-1].removeprefix("infection: "))
    assert seen["probed"] is False and seen["calls"] == 0
    assert code in (0, 1, 3)


def test_the_heldout_driver_records_the_infection():
    bug = {"id": "HB-27", "mutant": "kafka-9752", "protocol": "classic", "half": "heldout"}
    row = heldout_power.run_one(bug, seed=0, profile="dev", timeout_s=300, infection=True)
    assert row.caught and row.invariants == ["classic.session_expiry_armed"]
    assert row.infection is not None and row.infection["probed"] is True
    assert row.infection["infected"] > 0 and row.infection["first_entry"] == "advance"
    assert "conformance.power.infection" in row.command


def test_the_report_says_why_an_entry_was_missed():
    from conformance.power.heldout_report import _cell, why_missed

    def row(caught, probed, infected, in_answers=0, diverged=0):
        seen = {"probed": probed, "calls": 100, "infected": infected, "in_answers": in_answers,
                "examples": 10, "diverged": diverged}  # fmt: skip
        return {"caught": caught, "verdict": "FAILED" if caught else "PASSED", "check_seconds": 2.0,
                "infection": seen}  # fmt: skip

    assert why_missed([row(False, True, 0), row(True, True, 3, 1)]) == "caught"
    assert why_missed([row(False, True, 0), row(False, True, 0)]) == "never infected"
    assert why_missed([row(False, True, 0), row(False, True, 4)]) == "records changed, no answer"
    assert why_missed([row(False, True, 4, 0, 1)]) == "answers changed, not judged"
    assert why_missed([row(False, True, 4, 2), None]) == "answers changed, not judged"
    assert why_missed([row(False, False, 0)]) == "client fault, not probed"
    assert why_missed([{"caught": False, "verdict": "PASSED"}]) == "-"
    assert _cell(row(False, True, 4, 2, 1)) == (
        "PASSED, infected 4 (2 in answers) of 100 calls, answers diverged in 1 of 10 examples"
    )
    assert _cell(row(True, False, 0)) == "**caught** 2.0 s"
