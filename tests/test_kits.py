"""The engine reaches a protocol only through its kit: the three protocols are exactly their
``kit.py``, and a fourth protocol put into the registry is checked, replayed, minimised and run as
a scenario by the unchanged engine and CLI."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis.stateful import RuleBasedStateMachine, rule

from conformance.cli.main import main
from conformance.engine.checker import Checker, Violation
from conformance.engine.kit import ProtocolKit, resolve
from conformance.engine.machine import InvariantViolation, MachineSettings
from conformance.engine.minimise import minimise
from conformance.engine.profiles import get_profile
from conformance.engine.replay import ReplayResult, replay, verdict
from conformance.engine.run import run_check
from conformance.engine.scenario import ScenarioResult, run_steps
from conformance.errors import UsageError
from conformance.formats.trace_file import Step, Trace, header
from conformance.protocols import KITS, get_kit
from conformance.specs import Scenario
from conformance.trace.scenario import run_scenario

BOUND = 3  # the toy protocol's invariant: a counter stays below this


def test_every_protocol_is_the_kit_its_package_builds() -> None:
    assert list(KITS) == ["classic", "consumer", "mixed"]
    for name, kit in KITS.items():
        assert isinstance(kit, ProtocolKit) and kit.name == name
        assert importlib.import_module(f"conformance.protocols.{name}.kit").KIT is kit
        assert get_kit(name) is kit and resolve(name) is kit
        assert kit.make_machine is not None and kit.to_trace is not None and kit.replay is not None


def test_an_unknown_protocol_is_a_usage_error_naming_the_known_ones() -> None:
    with pytest.raises(UsageError, match="known: classic, consumer, mixed"):
        get_kit("toy")
    with pytest.raises(UsageError, match="does not offer swarm"):
        get_kit("mixed").require("swarm")


# ------------------------------------------------------------------------------ a fourth protocol


def toy_machine(settings: MachineSettings) -> type:
    class ToyMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.ops: list[str] = []

        @rule()
        def inc(self) -> None:
            self.ops.append("inc")
            if self.ops.count("inc") >= BOUND:
                found = [Violation("toy.bound", "the counter reached its bound", len(self.ops))]
                raise InvariantViolation(found, list(self.ops), [], list(self.ops))

        @rule()
        def noop(self) -> None:
            self.ops.append("noop")

    return ToyMachine


def toy_trace(
    sim: list[str], *, target: str, target_version: str, origin: dict[str, Any], violations: Any
) -> Trace:
    head = header(protocol="toy", target=target, target_version=target_version, variants={}, seed=0,
                  origin=origin, setup={})  # fmt: skip
    steps = [Step(n, 0, {"op": op}) for n, op in enumerate(sim, 1)]
    violated = tuple(sorted({v[0] for v in violations}))
    return Trace(head, steps, "FAILED" if violated else "PASSED", violated, tuple(violations))


def toy_replay(trace: Trace, result: ReplayResult, **_: Any) -> ReplayResult:
    result.sim = []
    for step in trace.steps:
        result.sim.append(step.action["op"])
        if step.action["op"] == "inc" and result.sim.count("inc") == BOUND:
            result.violations.append(Violation("toy.bound", "the counter reached its bound", step.n))
    return verdict(result, False)


class ToyScenario:
    def __init__(self, scenario: Scenario, variants: dict[str, str]) -> None:
        self.scenario, self.sim = scenario, []
        self.result = ScenarioResult(scenario, variants, sim=self.sim)

    def do(self, verb: str, arg: Any, where: str) -> None:
        self.sim.append(verb)
        self.result.observations.append(verb)


TOY = ProtocolKit(
    name="toy",
    summary="a counter that must stay below its bound",
    make_machine=toy_machine,
    to_trace=toy_trace,
    replay=toy_replay,
    run_scenario=lambda scenario, variants: run_steps(ToyScenario(scenario, variants)),
)


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> ProtocolKit:
    monkeypatch.setitem(KITS, TOY.name, TOY)
    return TOY


def test_run_check_runs_a_new_protocol_through_its_kit_alone(toy: ProtocolKit) -> None:
    assert Checker("toy").protocol == "toy"
    result = run_check("toy", profile=get_profile("dev"), max_examples=20, seed_value=1)
    assert result.protocol == "toy" and result.verdict == "FAILED"
    assert [v.invariant for v in result.violations] == ["toy.bound"]
    assert result.trace.protocol == "toy" and result.trace.header["origin"]["kind"] == "check"
    assert [s.action["op"] for s in result.trace.steps].count("inc") == BOUND


def test_the_cli_offers_and_runs_a_new_protocol(toy: ProtocolKit, tmp_path: Path, capsys: Any) -> None:
    code = main(["check", "--protocol", "toy", "--max-examples", "20", "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1 and "toy on model: FAILED" in out and "toy.bound" in out
    assert list((tmp_path / "toy" / "counterexamples").glob("toy.bound_*.ndjson"))


def test_replay_and_minimise_reach_a_new_protocol_through_its_kit(toy: ProtocolKit) -> None:
    ops = ["noop", "inc", "noop", "inc", "noop", "noop", "inc", "noop"]
    trace = toy_trace(ops, target="model", target_version="0", origin={"kind": "test"},
                      violations=[("toy.bound", "the counter reached its bound", 7)])  # fmt: skip
    assert replay(trace).verdict == "FAILED"
    small = minimise(trace, "toy.bound")
    assert [s.action["op"] for s in small.steps] == ["inc"] * BOUND
    assert small.header["origin"]["kind"] == "minimised"


def test_a_scenario_of_a_new_protocol_runs_on_its_runner(toy: ProtocolKit, tmp_path: Path) -> None:
    sc = Scenario("toy-1", "counts", "test", "toy", ({"tick": 1}, {"tick": 2}), (3, 4), {}, (), {}, {}, (),
                  tmp_path / "toy.yaml")  # fmt: skip
    result = run_scenario(sc, {})
    assert result.passed and [entry.verb for entry in result.log] == ["tick", "tick"]
    assert [entry.line for entry in result.log] == [3, 4]
