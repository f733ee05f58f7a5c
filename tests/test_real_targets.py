"""The suite against the real targets CI runs (ci profile, seed 0): what each finds must match
specs/targets.yaml; and a target that aborts mid-run is reported as a crash with its trace."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.cli.check import run_protocols_on_target
from conformance.engine.profiles import REAL_PROFILES
from conformance.errors import TargetError
from conformance.protocols import get_kit
from conformance.protocols.build import make_classic_sim
from conformance.targets.open import open_target
from model.classic.coordinator import ClassicCoordinator

CLASSIC = get_kit("classic")

pytestmark = pytest.mark.target
EXPECTED: dict[str, Any] = yaml.safe_load(
    (Path(__file__).resolve().parent.parent / "specs" / "targets.yaml").read_text()
)


@pytest.mark.parametrize("name", sorted(n for n, e in EXPECTED.items() if e.get("ci")))
def test_ci_profile_finds_what_is_published(name: str) -> None:
    """Classic (ci profile), then on the same started target the KIP-848 consumer protocol and
    mixed groups where specs/targets.yaml has a `consumer:` / `mixed:` entry (fewer examples than
    the ci profile: each one waits for session and rebalance timeouts on a real clock)."""
    want = EXPECTED[name]
    consumer, mixed = want.get("consumer"), want.get("mixed")
    protocols = ["classic"] + (["consumer"] if consumer else []) + (["mixed"] if mixed else [])
    examples = {p: int(want[p]["examples"]) for p in protocols[1:]}
    runs, skipped = run_protocols_on_target(
        name, protocols, "ci", max_examples=None, seed=0, variants={}, level="protocol", examples=examples
    )
    assert skipped == [] and [r.result.protocol for r in runs] == protocols
    result = runs[0].result
    verdict = "FAILED" if result.violations else "PASSED"
    found = sorted({v.invariant for v in result.violations})
    assert verdict == want["verdict"], (found, result.steps)
    if verdict == "FAILED":
        # which divergence a run meets first depends on the machine's rules and the real clock;
        # specs/targets.yaml lists those seen, the test requires a finding about the target with a trace
        assert all(f.split(".")[0] in ("oracle", "classic", "client", "target", "wire") for f in found), found
        assert result.trace is not None and result.trace.steps  # a trace that replays the run
        assert result.trace.header["target"] == {"name": name, "version": runs[0].handle.version}
        assert runs[0].handle.version not in ("", "unknown")
    assert result.vacuous == [] or verdict == "FAILED"
    if consumer:
        check_consumer(runs[1], consumer)
    if mixed:  # every `mixed:` entry, on the same target start
        check_consumer(runs[-1], mixed)


def check_consumer(run: Any, want: dict[str, Any]) -> None:
    """A consumer or mixed run's verdict and findings as published; a failure comes with its trace."""
    result = run.result
    found = sorted({v.invariant for v in result.violations})
    verdict = "FAILED" if result.violations else "PASSED"
    assert verdict == want["verdict"], (found, result.steps[-20:])
    if verdict == "FAILED":
        assert set(found) & set(want["finds"]), found
        assert result.trace is not None and result.trace.steps  # the counterexample is a trace
        steps = result.trace.steps
        assert any(s.event is not None for s in steps), "the trace records the requests sent"
        if any(f.startswith("oracle.") for f in found):
            assert any(s.actual for s in steps), "and the target's actual answers"
    else:
        assert run.rtt_ms, "a passing run was answered by the target"


def test_target_that_aborts_is_a_crash_finding_with_the_steps() -> None:
    """SIGABRT in the middle of a run (librdkafka aborts on some inputs): a finding, not a suite crash."""
    with (
        pytest.raises(TargetError, match="SIGABRT"),
        open_target("librdkafka-mock") as handle,
    ):
        sim = make_classic_sim(
            {"t": 2},
            [{"name": "c1", "session_timeout_ms": 1500, "rebalance_timeout_ms": 2000, "join_version": 3}],
            handle.model_config,
            {},
            port_factory=CLASSIC.real_setup(handle, REAL_PROFILES["dev"])[0],
            sim_class=__import__(
                "conformance.protocols.classic.realtime", fromlist=["RealTimeSim"]
            ).RealTimeSim,
        )
        assert isinstance(sim.port.coordinator, ClassicCoordinator)
        first = sim.client_step("c1")
        assert first is not None and sim.port.take_findings() == []
        proc = handle.launcher._running.procs[0]
        os.kill(proc.pid, signal.SIGABRT)
        assert proc.popen.wait(timeout=10) == -signal.SIGABRT  # reaped here: no race on the pid
        sim.advance(100)
        sim.client_step("c1")
        sim.advance(100)
        findings = sim.port.take_findings()
        rules = {f.rule for f in findings}
        assert "target.crash" in rules or any(r.startswith("wire.closed") for r in rules), findings
        crash = [f for f in findings if f.rule == "target.crash"]
        assert crash and "SIGABRT" in crash[0].message, findings
        assert len(sim.log) >= 3  # the steps that led there are recorded for the trace
