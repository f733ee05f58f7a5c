"""The conformance suite as units a test runner collects, against any target (docs/cli.md#pytest-plugin).

One stateful run per protocol (`groupcheck check`), whose verdict also judges each invariant of that
protocol, and one run per named scenario. Runs are made once and kept: every test item of a
protocol reads the same run. The target is opened once for the whole session: the model or a
mutant in process; a launcher target (apache-kafka, kfake, ...) provisioned and started once; a
``host:port`` coordinator someone else runs. Scenarios on a real target are replayed from the
model's trace of the scenario (`groupcheck replay`). Nothing here knows about pytest.
"""

from __future__ import annotations

import contextlib
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.errors import ToolError
from conformance.protocols import KITS
from conformance.targets.open import MUTANT_PREFIX, in_process, open_target

PROTOCOLS = tuple(KITS)  # classic, consumer, mixed


@dataclass
class Outcome:
    """What one test item reports: passed / failed / skipped, why, and what reproduces it."""

    status: str
    message: str = ""
    properties: dict[str, str] = field(default_factory=dict)


def protocol_invariants(protocol: str) -> list[str]:
    """The invariant ids one run of ``protocol`` checks (`conformance.engine.checker.Checker`)."""
    from conformance.engine.checker import Checker

    c = Checker(protocol)
    ids = [i.id for i in (*c.invariants, *(inv for _view, invs in c.views for inv in invs), *c.sometimes)]
    return sorted(dict.fromkeys(ids))


def scenario_ids(protocol: str | None = None) -> list[tuple[str, str]]:
    """(id, protocol) of every named scenario (specs/scenarios), of ``protocol`` when given."""
    from conformance.specs import load_scenarios

    return sorted(
        (sid, sc.protocol) for sid, sc in load_scenarios().items() if protocol in (None, sc.protocol)
    )


class Suite:
    """One session of the suite against one target (the ``groupcheck`` fixture of the pytest plugin)."""

    def __init__(
        self,
        spec: str,
        *,
        profile: str = "dev",
        seed: int = 0,
        max_examples: int | None = None,
        step_count: int | None = None,
        variants: dict[str, str] | None = None,
        report_dir: Path = Path("groupcheck-reports"),
        target_config: list[str] | None = None,
    ) -> None:
        from conformance.engine.profiles import get_profile

        get_profile(profile)  # a usage error for an unknown name
        self.spec, self.profile, self.seed = spec, profile, seed
        self.max_examples, self.step_count = max_examples, step_count
        self.variants = dict(variants or {})
        self.report_dir = report_dir
        from conformance.targets.settings import parse_given

        self.given = parse_given(target_config or [])  # the target's settings as the user states them
        self._stack = contextlib.ExitStack()
        self._handle: Any = None
        self._runs: dict[str, Any] = {}  # protocol -> CheckResult, or str: why it was not run
        self._examples: dict[str, Any] = {}  # protocol -> written Counterexample

    # ---------------------------------------------------------------- the target
    @property
    def target(self) -> Any:
        """The open `TargetHandle` (started on first use, stopped by `close`)."""
        if self._handle is None:
            self._handle = self._stack.enter_context(open_target(self.spec, given=self.given))
        return self._handle

    def close(self) -> None:
        self._stack.close()
        self._handle = None

    @property
    def mutant(self) -> Any:
        if not self.spec.startswith(MUTANT_PREFIX):
            return None
        from conformance.mutants import get_mutant

        return get_mutant(self.spec[len(MUTANT_PREFIX) :])

    def properties(self, result: Any = None) -> dict[str, str]:
        variants = dict(result.variants) if result is not None else self.variants
        version = getattr(result, "target_version", "") or self.target.version
        return {
            "target": self.spec,
            "target_version": str(version),
            "seed": str(self.seed),
            "profile": self.profile,
            "variants": ",".join(f"{k}={v}" for k, v in sorted(variants.items())) or "none",
        }

    # ---------------------------------------------------------------- stateful runs
    def check(self, protocol: str) -> Any:
        """The `CheckResult` of ``protocol`` on the target (run once), or a str: why it was not run."""
        if protocol not in self._runs:
            self._runs[protocol] = self._run(protocol)
        return self._runs[protocol]

    def _profile(self, real: bool) -> Any:
        from dataclasses import replace

        from conformance.engine.profiles import get_profile, real_profile

        base = real_profile(self.profile) if real else get_profile(self.profile)
        if self.step_count is not None:
            base = replace(base, step_count=self.step_count)
        return base

    def _run(self, protocol: str) -> Any:
        from conformance.engine.run import run_check

        handle = self.target
        if in_process(self.spec):
            variants = dict(self.variants)
            mutant = self.mutant
            if mutant is not None:
                if mutant.protocol != protocol:
                    return (
                        f"{self.spec} is a {mutant.protocol} mutant; the {protocol} suite does not run on it"
                    )
                from conformance.targets.mutant import check_setup

                variants, _ = check_setup(self.spec, variants, protocol)
            return run_check(
                protocol,
                target=self.spec,
                profile=self._profile(False),
                max_examples=self.max_examples,
                seed_value=self.seed,
                variants=variants,
            )
        import time

        from conformance.cli.check import RESTARTS, _run_one
        from conformance.protocols import get_kit

        why = get_kit(protocol).require("not_run_reason")(handle)
        if why is not None:
            return f"{handle.name}: {why}"
        if handle.session is not None:
            handle.session.max_restarts = RESTARTS[self.profile]
        profile = self._profile(True)
        run = _run_one(
            handle,
            protocol,
            profile,
            self.max_examples,
            self.seed,
            self.variants,
            "protocol",
            time.monotonic(),
        )
        return run.result

    def counterexample(self, protocol: str) -> Any:
        """The written minimal counterexample of ``protocol``'s run (None when it passed)."""
        result = self.check(protocol)
        if isinstance(result, str) or result.trace is None or not result.violations:
            return None
        if protocol not in self._examples:
            from conformance.cli.counterexample import write_counterexample

            run_dir = self.report_dir / f"check-{_safe(self.spec)}-{protocol}-seed{self.seed}"
            with contextlib.redirect_stdout(None):
                self._examples[protocol] = write_counterexample(result.trace, run_dir)
        return self._examples[protocol]

    def check_outcome(self, protocol: str) -> Outcome:
        result = self.check(protocol)
        if isinstance(result, str):
            return Outcome("skipped", result)
        props = self.properties(result)
        head = (
            f"{protocol} on {self.spec}: {result.verdict} ({result.max_examples} examples, seed {self.seed})"
        )
        if result.error:
            return Outcome("failed", f"{head}\n{result.error}", props)
        if not result.violations:
            return Outcome("passed", head, props)
        lines = [head, "violated: " + ", ".join(sorted({v.invariant for v in result.violations}))]
        lines += [f"  {v.invariant}: {v.message} (step {v.step})" for v in result.violations[:10]]
        example = self.counterexample(protocol)
        if example is not None:
            props["counterexample"] = str(example.path)
            props["replay"] = replay_command(example.path, self.spec)
            lines += [f"counterexample: {example.path} ({len(example.trace.steps)} steps)", props["replay"]]
        return Outcome("failed", "\n".join(lines), props)

    def invariant_outcome(self, protocol: str, invariant: str) -> Outcome:
        result = self.check(protocol)
        if isinstance(result, str):
            return Outcome("skipped", result)
        props = {**self.properties(result), "invariant": invariant}
        found = [v for v in result.violations if v.invariant == invariant]
        if found:
            lines = [f"{invariant} violated on {self.spec}:"] + [
                f"  step {v.step}: {v.message}" for v in found[:10]
            ]
            example = self.counterexample(protocol)
            if example is not None:
                props["replay"] = replay_command(example.path, self.spec)
                lines.append(props["replay"])
            return Outcome("failed", "\n".join(lines), props)
        if invariant in result.sometimes and not result.sometimes[invariant]:
            # inconclusive (exit 3 on the CLI), not a violation: more examples (a larger profile) may reach it
            why = f"inconclusive: {invariant} never happened in {result.max_examples} examples"
            return Outcome("skipped", f"{why}; a larger --groupcheck-profile runs more", props)
        return Outcome("passed", "", props)

    # ---------------------------------------------------------------- scenarios
    def scenario_outcome(self, scenario_id: str) -> Outcome:
        from conformance.specs import load_scenarios
        from conformance.trace.scenario import run_scenario

        sc = load_scenarios()[scenario_id]
        variants: dict[str, str] = {}
        mutant = self.mutant
        if mutant is not None and mutant.protocol == sc.protocol:
            from conformance.mutants import with_mutant_variants

            variants = with_mutant_variants({"mutant": mutant.name})
        handle = self.target
        result = run_scenario(sc, variants)
        props = {**self.properties(), "scenario": sc.id, "source": sc.source}
        if not in_process(self.spec):
            return self._scenario_on_target(sc, result, handle, props)
        if result.passed:
            return Outcome("passed", "", props)
        lines = [f"scenario {sc.id} on {self.spec} failed ({sc.path.name})"]
        lines += [f"  step {v.step}: {v.invariant}: {v.message}" for v in result.violations[:10]]
        lines += [f"  expectation failed: {m}" for m in result.failed_expectations]
        if result.violations and result.sim is not None:
            lines.append(self._write_scenario_trace(sc, result, props))
        return Outcome("failed", "\n".join(lines), props)

    def _write_scenario_trace(self, sc: Any, result: Any, props: dict[str, str]) -> str:
        from conformance.trace.emit import emit_counterexample
        from conformance.trace.scenario import scenario_trace

        run_dir = self.report_dir / f"scenario-{sc.id}-{_safe(self.spec)}"
        with contextlib.redirect_stdout(None):
            path = emit_counterexample(scenario_trace(result, target=self.spec), run_dir)
        props["replay"] = replay_command(path, self.spec)
        return f"counterexample: {path}\n{props['replay']}"

    def _scenario_on_target(self, sc: Any, result: Any, handle: Any, props: dict[str, str]) -> Outcome:
        """The model's run of the scenario, replayed on the real target through its bootstrap."""
        if result.sim is None or not result.passed:
            return Outcome("failed", f"scenario {sc.id}: the reference model does not pass it here", props)
        from conformance.trace.replay import replay_on_target
        from conformance.trace.scenario import scenario_trace

        trace = scenario_trace(result, target="model")
        needs = sorted({s.action.get("op") for s in trace.steps} & {"failover", "append_failure"})
        if needs:
            why = "a scenario replay reaches the target by its address and cannot inject it"
            return Outcome("skipped", f"scenario {sc.id} needs {', '.join(needs)}: {why}")
        try:
            replayed, _notes = replay_on_target(trace, handle.bootstrap, {})
        except ToolError as e:
            return Outcome("failed", f"scenario {sc.id} on {self.spec}: {e}", props)
        if replayed.verdict in ("PASSED", "FIXED"):
            return Outcome("passed", "", props)
        lines = [f"scenario {sc.id} on {self.spec}: {replayed.verdict}"]
        lines += [f"  step {v.step}: {v.invariant}: {v.message}" for v in replayed.violations[:10]]
        if replayed.error:
            lines.append(f"  {replayed.error}")
        return Outcome("failed", "\n".join(lines), props)


def replay_command(path: Path, spec: str) -> str:
    target = spec if not in_process(spec) or spec.startswith(MUTANT_PREFIX) else "model"
    return f"groupcheck replay {shlex.quote(str(path))} --target {shlex.quote(target)}"


def _safe(spec: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in spec)
