"""Run a named scenario (specs/scenarios/*.yaml) step by step, checking every invariant after each step.

Verbs (one per step): settle, run_for, step, advance, stall, resume, failover, create_topic, append_failure,
lose_response, commit, leave, restart, unsubscribe, rejoin, subscribe, protocols, send, expect. `expect` asserts facts
the scenario is about (state, generation, protocol, leader, errors), so a scenario cannot pass
without doing what it says.
"""

from __future__ import annotations

from typing import Any

from conformance.engine.checker import Checker
from conformance.engine.scenario import ScenarioResult, run_steps
from conformance.errors import SpecError
from conformance.protocols.classic.build import make_classic_sim, settle_round
from conformance.protocols.classic.trace import TracedClassicSim
from conformance.specs import Scenario
from model.classic.client import ClassicClient, Phase
from model.classic.messages import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest
from model.errors import ErrorCode
from model.observation import Observation


class ScenarioRunner:
    def __init__(self, scenario: Scenario, variants: dict[str, str], *, port_factory: Any = None) -> None:
        if scenario.protocol != "classic":
            raise SpecError(
                f"{scenario.path}:1: protocol {scenario.protocol!r} scenarios are run by its own runner"
            )
        self.scenario = scenario
        self.variants = {**scenario.variants, **variants}
        self.previous_member_id: dict[str, str] = {}
        self.sim: TracedClassicSim = make_classic_sim(
            scenario.topics,
            scenario.clients,
            scenario.config,
            self.variants,
            where=str(scenario.path),
            port_factory=port_factory,
        )
        self.checker = Checker("classic")
        self.result = ScenarioResult(scenario, self.variants, sim=self.sim)
        self.tick_ms = int(scenario.config.get("tick_ms", 100)) if "tick_ms" in scenario.config else 100
        self.last_error: dict[str, ErrorCode] = {}

    # ---------------------------------------------------------------- plumbing
    def _obs(self, obs: Observation[Any] | None) -> None:
        if obs is None:
            return
        self.result.observations.append(obs)
        step = len(self.result.observations)
        found = self.checker.check(obs, step)
        self.result.violations.extend(found)
        self.sim.note_checks(
            obs,
            self.checker.last_checked,
            [(v.invariant, v.message) for v in found],
            self.checker.last_sometimes,
        )
        for d in obs.deliveries:
            name = self.sim.owner_of_ref.get(d.ref)
            err = getattr(d.response, "error", None)
            if name is not None and err is not None:
                self.last_error[name] = err

    def _client(self, name: Any, where: str) -> ClassicClient:
        client = self.sim.clients.get(str(name))
        if client is None:
            raise SpecError(f"{where}: unknown client {name!r}")
        return client

    def settled(self, names: list[str]) -> bool:
        world = self.sim.world
        if world is None or world.group is None or world.group.state.value != "Stable":
            return False
        for n in names:
            c = self.sim.clients[n]
            if c.phase == Phase.FATAL or c.phase == Phase.LEFT:
                continue
            if (
                c.phase != Phase.STABLE
                or c.needs_rejoin
                or c.inflight
                or c.generation != world.group.generation
            ):
                return False
        return True

    def settle(self, names: list[str], max_rounds: int, where: str) -> None:
        for _ in range(max_rounds):
            settle_round(self.sim, names, self._obs)
            if self.settled(names):
                return
        self.result.failed_expectations.append(
            f"{where}: clients {names} did not settle in {max_rounds} rounds"
        )

    # ---------------------------------------------------------------- verbs
    def run(self) -> ScenarioResult:
        return run_steps(self)

    def do(self, verb: str, arg: Any, where: str) -> None:
        sim = self.sim
        if verb == "settle":
            names = list(arg) if isinstance(arg, list) else sorted(sim.clients)
            self.settle(names, 400, where)
        elif verb == "run_for":
            names = [str(n) for n in arg.get("clients", sorted(sim.clients))]
            every = int(arg.get("every", 1000))
            end = sim.now + int(arg["ms"])
            while sim.now < end:
                for n in names:
                    self._obs(sim.client_step(n))
                self._obs(sim.advance(min(every, end - sim.now)))
        elif verb == "step":
            self._client(arg, where)
            self._obs(sim.client_step(str(arg)))
        elif verb == "advance":
            self._obs(sim.advance(int(arg)))
        elif verb == "stall":
            self._client(arg, where)
            self._obs(sim.stall(str(arg), True))
        elif verb == "resume":
            self._client(arg, where)
            self._obs(sim.stall(str(arg), False))
        elif verb == "failover":
            self._obs(sim.failover())
        elif verb == "create_topic":
            self._obs(sim.create_topic(str(arg["topic"]), int(arg["partitions"])))
            for name, c in sorted(sim.clients.items()):
                if c.member_id and c.member_id == c.leader and arg["topic"] in c.config.topics:
                    sim.rejoin(
                        name
                    )  # the leader notices the metadata change ("Topic Metadata Change", docs/protocol-reference.md#client-side-assignment)
        elif verb == "append_failure":
            self._obs(sim.append_failure())
        elif verb == "lose_response":
            self._client(arg, where)
            self._obs(sim.lose_response(str(arg)))
        elif verb == "commit":
            self._client(arg, where)
            self._obs(sim.commit(str(arg), 1))
        elif verb == "leave":
            self._client(arg, where)
            self._obs(sim.leave(str(arg)))
        elif verb == "restart":
            old = self._client(arg, where)
            self.previous_member_id[old.name] = old.member_id  # `send` with member_id: previous
            sim.restart(old.name)
        elif verb == "rejoin":
            sim.rejoin(self._client(arg, where).name)
        elif verb == "unsubscribe":  # a static member's unsubscribe, LeaveGroup suppressed (KAFKA-20983)
            self._client(arg, where)
            self._obs(sim.unsubscribe(str(arg)))
        elif verb == "stale_subscription":  # fault: the next fall-out keeps the owned partitions (PR #10985)
            sim.stale_subscription(self._client(arg, where).name)
        elif verb == "subscribe":
            sim.subscribe(self._client(arg["client"], where).name, tuple(arg["topics"]))
        elif verb == "protocols":
            sim.set_protocols(self._client(arg["client"], where).name, tuple(arg["assignors"]))
        elif verb == "send":
            self._send(arg, where)
        elif verb == "expect":
            self._expect(arg, where)
        else:
            raise SpecError(f"{where}: unknown step verb {verb!r}")

    def _send(self, arg: dict[str, Any], where: str) -> None:
        c = self._client(arg["client"], where)
        group = self.sim.world.group if self.sim.world else None
        generation = arg.get("generation", c.generation)
        if generation == "stale":
            generation = (group.generation if group else 0) - 1
        member_id = str(arg.get("member_id", c.member_id))
        if member_id == "previous":  # the member id of the client's process before its last restart
            member_id = self.previous_member_id.get(c.name, "")
        kind = arg["request"]
        request: Any
        if kind == "heartbeat":
            request = HeartbeatRequest(c.config.group_id, int(generation), member_id, c.config.instance_id)
        elif kind == "sync":
            request = SyncGroupRequest(
                c.config.group_id,
                int(generation),
                member_id,
                (),
                c.config.instance_id,
                "consumer",
                c.protocol or c.config.assignors[0],
            )
        elif kind == "join":
            request = JoinGroupRequest(
                c.config.group_id,
                member_id,
                "consumer",
                tuple((a, b"") for a in c.config.assignors),
                c.config.session_timeout_ms,
                c.config.rebalance_timeout_ms,
                arg.get("instance_id", c.config.instance_id),
                None,
                c.config.client_id,
                int(arg.get("version", c.config.join_version)),
            )
        else:
            raise SpecError(f"{where}: send: unknown request {kind!r}")
        self._obs(self.sim.send_raw(c.name, request))

    def _expect(self, arg: dict[str, Any], where: str) -> None:
        world = self.sim.world
        group = world.group if world else None
        fails = self.result.failed_expectations
        for key, want in arg.items():
            if key == "state":
                got: Any = group.state.value if group else None
            elif key == "generation":
                got = group.generation if group else None
            elif key == "protocol":
                got = group.protocol if group else None
            elif key == "members":
                got = len(group.members) if group else 0
            elif key == "leader":
                leader = group.leader if group else None
                got = next(
                    (n for n, c in self.sim.clients.items() if c.member_id and c.member_id == leader), leader
                )
            elif key == "last_error":
                for name, code in dict(want).items():
                    have = self.last_error.get(str(name))
                    if have is None or have.name != code:
                        fails.append(
                            f"{where}: {name} last error {have.name if have else None}, expected {code}"
                        )
                continue
            elif key == "owned":
                for name, parts in dict(want).items():
                    have = sorted(f"{t}-{p}" for t, p in self._client(name, where).owned)
                    if have != sorted(parts):
                        fails.append(f"{where}: {name} owns {have}, expected {sorted(parts)}")
                continue
            elif key == "phase":
                for name, phase in dict(want).items():
                    have_phase = self._client(name, where).phase.value
                    if have_phase != phase:
                        fails.append(f"{where}: {name} is {have_phase}, expected {phase}")
                continue
            else:
                raise SpecError(f"{where}: unknown expectation {key!r}")
            if got != want:
                fails.append(f"{where}: expected {key} = {want!r}, got {got!r}")
