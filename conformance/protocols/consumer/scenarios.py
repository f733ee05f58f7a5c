"""Run a KIP-848 scenario (``protocol: consumer`` in specs/scenarios/*.yaml) on `ConsumerSim`.

Verbs (one per step): settle, run_for, step, advance, stall, resume, slow, reconcile, lose_response,
duplicate, stale_heartbeat, commit, leave, restart, subscribe, failover, create_topic, delete_topic,
add_partitions, expect. `settle` lets perturbations stop and checks convergence from its bound on;
`expect` asserts the facts the scenario is about (epochs, members, owned partitions, errors), so a
scenario cannot pass without doing what it says.
"""

from __future__ import annotations

from typing import Any

from conformance.engine.checker import Checker
from conformance.engine.scenario import ScenarioResult, run_steps
from conformance.errors import SpecError
from conformance.protocols.consumer.build import consumer_settle_bound, make_consumer_sim
from conformance.specs import Scenario
from model.consumer.client import VirtualConsumer
from model.consumer.messages import ConsumerGroupHeartbeatResponse
from model.consumer.sim import ConsumerSim
from model.errors import ErrorCode
from model.observation import Observation

CLIENT_VERBS = ("step", "lose_response", "duplicate", "reconcile", "commit", "leave", "restart")


class ConsumerScenarioRunner:
    def __init__(self, scenario: Scenario, variants: dict[str, str], *, port_factory: Any = None) -> None:
        self.scenario = scenario
        self.variants = {**scenario.variants, **variants}
        self.sim: ConsumerSim = make_consumer_sim(
            scenario.topics,
            scenario.clients,
            scenario.config,
            self.variants,
            where=str(scenario.path),
            port_factory=port_factory,
        )
        self.checker = Checker("consumer")
        self.result = ScenarioResult(scenario, self.variants, sim=self.sim)
        self.last_error: dict[str, ErrorCode] = {}

    # ---------------------------------------------------------------- plumbing
    def _obs(self, obs: Observation[Any] | None) -> None:
        if obs is None:
            return
        self.result.observations.append(obs)
        found = self.checker.check(obs, len(self.result.observations))
        self.result.violations.extend(found)
        note = getattr(self.sim, "note_checks", None)  # a TracedConsumerSim: its log is the trace
        if note is not None:
            note(
                obs,
                self.checker.last_checked,
                [(v.invariant, v.message) for v in found],
                self.checker.last_sometimes,
            )
        client = getattr(obs.event, "client", None)
        ref = getattr(obs.event, "ref", None)
        for d in obs.deliveries:
            if client is not None and d.ref == ref and isinstance(d.response, ConsumerGroupHeartbeatResponse):
                self.last_error[client] = ErrorCode.of(d.response.error_code)
            elif client is not None and d.ref == ref and hasattr(d.response, "errors"):  # OffsetCommit
                codes = sorted({ErrorCode.of(c) for c in d.response.errors().values()} - {ErrorCode.NONE})
                self.last_error[client] = codes[0] if codes else ErrorCode.NONE

    def _client(self, name: Any, where: str) -> VirtualConsumer:
        client = self.sim.clients.get(str(name))
        if client is None:
            raise SpecError(
                f"{where}: unknown client {name!r} (known: {', '.join(sorted(self.sim.clients))})"
            )
        return client

    # ---------------------------------------------------------------- verbs
    def run(self) -> ScenarioResult:
        return run_steps(self)

    def do(self, verb: str, arg: Any, where: str) -> None:
        sim = self.sim
        if verb in CLIENT_VERBS:
            name = self._client(arg, where).name
            if verb == "step":
                self._obs(sim.client_step(name))
            elif verb == "lose_response":
                sim.lose_response(name)
            else:
                self._obs(getattr(sim, verb)(name))
        elif verb == "settle":
            bound = int(arg.get("bound_ms", consumer_settle_bound(sim))) if isinstance(arg, dict) else None
            for obs in sim.settle(bound if bound is not None else consumer_settle_bound(sim), 250):
                self._obs(obs)
        elif verb == "run_for":
            names = [self._client(n, where).name for n in arg.get("clients", sorted(sim.clients))]
            every = int(arg.get("every", 250))
            end = sim.now + int(arg["ms"])
            while sim.now < end:
                for n in names:
                    self._obs(sim.client_step(n))
                self._obs(sim.advance(min(every, end - sim.now)))
        elif verb == "advance":
            self._obs(sim.advance(int(arg)))
        elif verb in ("stall", "resume"):
            self._obs(sim.stall(self._client(arg, where).name, verb == "stall"))
        elif verb == "slow":
            sim.set_slow(self._client(arg, where).name, True)
        elif verb == "stale_heartbeat":
            self._obs(sim.stale_heartbeat(self._client(arg["client"], where).name, int(arg.get("delta", -1))))
        elif verb == "subscribe":
            self._obs(sim.subscribe(self._client(arg["client"], where).name, tuple(arg["topics"])))
        elif verb == "failover":
            self._obs(sim.failover())
        elif verb == "create_topic":
            self._obs(sim.topic("create", str(arg["topic"]), int(arg["partitions"])))
        elif verb == "add_partitions":
            self._obs(sim.topic("add_partitions", str(arg["topic"]), int(arg["partitions"])))
        elif verb == "delete_topic":
            self._obs(sim.topic("delete", str(arg)))
        elif verb == "expect":
            self._expect(arg, where)
        else:
            raise SpecError(f"{where}: unknown step verb {verb!r} for a consumer scenario")

    def _expect(self, arg: dict[str, Any], where: str) -> None:
        world = self.sim.world
        group = world.groups.get(self.sim.group_id) if world else None
        fails = self.result.failed_expectations
        for key, want in arg.items():
            if key in ("state", "group_epoch", "assignment_epoch", "members"):
                got: Any
                if group is None:
                    got = None if key != "members" else 0
                elif key == "state":
                    got = group.state.value
                elif key == "members":
                    got = len(group.members)
                else:
                    got = getattr(group, key)
                if got != want:
                    fails.append(f"{where}: expected {key} = {want!r}, got {got!r}")
                continue
            if not isinstance(want, dict):
                raise SpecError(f"{where}: expectation {key!r} takes a mapping of client -> value")
            for name, value in want.items():
                client = self._client(name, where)
                have: Any
                if key == "owned":
                    have, value = sorted(f"{t}-{p}" for t, p in client.owned), sorted(value)
                elif key == "epoch":
                    have = client.member_epoch
                elif key == "client_state":
                    have = client.state.value
                elif key == "last_error":
                    code = self.last_error.get(client.name)
                    have = code.name if code is not None else None
                elif key == "member_state":
                    member = group.members.get(client.member_id) if group else None
                    have = member.state.name if member is not None else None
                else:
                    raise SpecError(f"{where}: unknown expectation {key!r}")
                if have != value:
                    fails.append(f"{where}: {name} {key} is {have!r}, expected {value!r}")
