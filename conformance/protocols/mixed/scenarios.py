"""Run a KIP-848 mixed-group scenario (``protocol: mixed`` in specs/scenarios/*.yaml) on `MixedRun`.

Clients are classic consumers (``protocol: classic``: topics, assignors, instance_id, join_version,
session_timeout_ms, rebalance_timeout_ms) or KIP-848 consumers (``protocol: consumer``: topics,
instance_id); ``start: false`` defines one that a ``start`` step launches later. Verbs (one per
step): ``run_for: MS``, ``start: NAME``, ``stop: NAME`` (LeaveGroup / leave with -1 or -2),
``crash: NAME``, ``failover: {}``, ``expect: {...}``. Every consumer and mixed invariant is checked
after every step, and on classic groups the classic invariants that read only the group
(`CLASSIC_STATE_INVARIANTS`). Expectations: ``group_type`` (classic | consumer | none), ``state``, ``generation``
(classic) / ``group_epoch`` (consumer), ``members``, ``classic_members`` (classic-protocol members
of a consumer group), ``converged`` (these clients own every partition of the topics exactly once)
and ``owns_nothing`` (these clients own no partition).

Settings (``config``): ``policy`` (``group.consumer.migration.policy``), ``tick_ms``; variants
``migration_policy=...`` and ``mixed_mutant=NAME`` (conformance/mutants/mixed.py).
"""

from __future__ import annotations

from typing import Any

from conformance.engine.checker import Checker
from conformance.engine.scenario import ScenarioResult, run_steps
from conformance.errors import SpecError
from conformance.protocols.mixed.trace import make_mixed_run
from conformance.specs import Scenario

CLASSIC_KEYS = {
    "name",
    "protocol",
    "start",
    "topics",
    "assignors",
    "instance_id",
    "join_version",
    "session_timeout_ms",
    "rebalance_timeout_ms",
}
CONSUMER_KEYS = {"name", "protocol", "start", "topics", "instance_id", "rebalance_timeout_ms"}


class MixedScenarioRunner:
    def __init__(self, scenario: Scenario, variants: dict[str, str], *, port_factory: Any = None) -> None:
        if port_factory is not None:
            raise SpecError(f"{scenario.path}:1: mixed scenarios run on the model only")
        self.scenario = scenario
        self.variants = {**scenario.variants, **variants}
        where = f"{scenario.path}:1"
        unknown = set(scenario.config) - {"policy", "tick_ms"}
        if unknown:
            raise SpecError(f"{where}: unknown config key(s) {sorted(unknown)} (known: policy, tick_ms)")
        setup = {
            "policy": scenario.config.get("policy", "bidirectional"),
            "tick_ms": scenario.config.get("tick_ms", 1_000),
        }
        self.run_ = make_mixed_run(setup, self.variants, where)  # its log is the scenario's trace
        self.checker = Checker("mixed")
        self.result = ScenarioResult(scenario, self.variants, sim=self.run_)
        self.specs: dict[str, dict[str, Any]] = {}
        for spec in scenario.clients:
            self._define(dict(spec), where)
        for topic, n in sorted(scenario.topics.items()):
            self._checked(lambda topic=topic, n=n: self.run_.topic(topic, n))
        for name, spec in self.specs.items():
            if spec.get("start", True):
                self._start(name)

    # ---------------------------------------------------------------- plumbing
    def _define(self, spec: dict[str, Any], where: str) -> None:
        name = spec.get("name")
        protocol = spec.get("protocol")
        if not isinstance(name, str) or protocol not in ("classic", "consumer"):
            raise SpecError(f"{where}: each client needs a name and protocol: classic | consumer")
        allowed = CLASSIC_KEYS if protocol == "classic" else CONSUMER_KEYS
        unknown = set(spec) - allowed
        if unknown:
            raise SpecError(f"{where}: client {name}: unknown key(s) {sorted(unknown)}")
        self.specs[name] = spec

    def _start(self, name: str) -> None:
        spec = self.specs[name]
        topics = tuple(spec.get("topics", ("t",)))
        if spec["protocol"] == "classic":
            self.run_.add_classic(
                name,
                topics=topics,
                assignors=tuple(spec.get("assignors", ("range",))),
                instance_id=spec.get("instance_id"),
                join_version=int(spec.get("join_version", 9)),
                session_timeout_ms=int(spec.get("session_timeout_ms", 10_000)),
                rebalance_timeout_ms=int(spec.get("rebalance_timeout_ms", 30_000)),
            )
        else:
            self.run_.add_consumer(
                name,
                topics=topics,
                instance_id=spec.get("instance_id"),
                rebalance_timeout_ms=int(spec.get("rebalance_timeout_ms", 30_000)),
            )

    def _checked(self, action: Any) -> None:
        """Run one action of `MixedRun`, then check every step it took."""
        mark = len(self.run_.observations)
        action()
        for obs in self.run_.observations[mark:]:
            self.result.observations.append(obs)
            found = self.checker.check(obs, self.run_.step_of(obs))
            self.run_.note_checks(
                obs,
                self.checker.last_checked,
                [(v.invariant, v.message) for v in found],
                self.checker.last_sometimes,
            )
            self.result.violations.extend(found)

    def _client(self, name: Any, where: str) -> str:
        if str(name) not in self.specs:
            raise SpecError(f"{where}: unknown client {name!r} (known: {', '.join(sorted(self.specs))})")
        return str(name)

    # ---------------------------------------------------------------- verbs
    def run(self) -> ScenarioResult:
        return run_steps(self)

    def do(self, verb: str, arg: Any, where: str) -> None:
        run = self.run_
        if verb == "run_for":
            self._checked(lambda: run.run_for(int(arg)))
        elif verb == "start":
            name = self._client(arg, where)
            if name in run.clients:
                raise SpecError(f"{where}: client {name} already started")
            self._start(name)
        elif verb in ("stop", "crash"):
            name = self._client(arg, where)
            if name not in run.clients or name in run.stopped:
                raise SpecError(f"{where}: client {name} is not running")
            self._checked(lambda: getattr(run, verb)(name))
        elif verb == "failover":
            self._checked(run.failover)
        elif verb == "expect":
            if not isinstance(arg, dict):
                raise SpecError(f"{where}: expect takes a mapping")
            self._expect(arg, where)
        else:
            raise SpecError(f"{where}: unknown step verb {verb!r} for a mixed scenario")

    def _expect(self, arg: dict[str, Any], where: str) -> None:
        run = self.run_
        gid = "g"
        kind = run.state.group_type(gid)
        fails = self.result.failed_expectations
        classic = run.state.classic.groups.get(gid)
        consumer = run.state.consumer.groups.get(gid)
        for key, want in arg.items():
            got: Any
            if key == "group_type":
                got = kind or "none"
            elif key == "state":
                got = classic.state.value if classic else consumer.state.value if consumer else None
            elif key == "generation":
                got = classic.generation if classic else None
            elif key == "group_epoch":
                got = consumer.group_epoch if consumer else None
            elif key == "members":
                got = len(classic.members) if classic else len(consumer.members) if consumer else 0
            elif key == "classic_members":
                got = sum(1 for m in consumer.members.values() if m.classic is not None) if consumer else None
            elif key in ("converged", "owns_nothing"):
                names = [self._client(n, where) for n in want]
                owned = run.owned()
                union = sorted(tp for n in names for tp in owned.get(n, frozenset()))
                if key == "owns_nothing":
                    if union:
                        fails.append(f"{where}: expected {names} to own nothing, they own {union}")
                    continue
                every = sorted((t, p) for t, n in run.state.consumer.topics.items() for p in range(n))
                if union != every:
                    fails.append(f"{where}: {names} own {union}, expected each of {every} exactly once")
                continue
            else:
                raise SpecError(f"{where}: unknown expectation {key!r}")
            if got != want:
                fails.append(f"{where}: expected {key} = {want!r}, got {got!r}")
