"""A Hypothesis RuleBasedStateMachine over the classic protocol (docs/scenarios.md, docs/cli.md).

Well-behaved virtual consumers (join, sync, heartbeat, commit, leave, restart, subscription and
protocol changes) share the group with faults and adversaries: stalls past the session timeout,
lost responses, zombie requests with stale generations, duplicated joins, failed metadata
appends, coordinator failover, topic changes. Every invariant is checked after every step; the
`sometimes` entries are counted across the whole run by the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from conformance.engine.checker import Checker, Violation
from conformance.protocols.build import make_classic_sim, quiet_gap, settle_round
from conformance.protocols.classic.trace import TracedClassicSim
from model.classic.client import Phase
from model.classic.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from model.classic.state import GroupState
from model.observation import Observation

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")


class InvariantViolation(AssertionError):
    """A conformance failure: carries the violated invariant ids and the steps that led there."""

    def __init__(
        self,
        violations: list[Violation],
        steps: list[str],
        observations: list[Observation[Any]],
        sim: Any = None,
    ):
        self.violations = violations
        self.steps = steps
        self.observations = observations
        self.sim = sim  # its log is the counterexample trace (conformance.trace)
        ids = sorted({v.invariant for v in violations})
        super().__init__(f"violated {', '.join(ids)}: {violations[0].message}")


@dataclass
class MachineSettings:
    """What the CLI passes in: variants, the checker to count `sometimes`, an optional port factory."""

    variants: dict[str, str] = field(default_factory=dict)
    checker: Checker | None = None
    port_factory: Callable[..., Any] | None = None
    max_members: int = 3
    #: model config overrides (a real target's broker settings)
    config: dict[str, int] = field(default_factory=dict)
    #: real-time runs: member timeouts, time steps, the simulator class (conformance/protocols/classic/realtime.py)
    real_time: bool = False
    #: the first violation raised in this run (a real target cannot replay it exactly: Hypothesis's
    #: final re-run may pass, so the run's verdict keeps what was first seen)
    first: list[InvariantViolation] = field(default_factory=list)

    coverage: Any = None  # conformance.trace.coverage.Coverage: abstract states reached (classic)
    #: the wire-fault rules (cut a connection, duplicate a request): the `faults` profile
    wire_faults: bool = False


def port_findings(sim: TracedClassicSim | None, step: int) -> list[Violation]:
    """Findings a real-target port recorded at this step (divergences, wire problems), as violations."""
    take = getattr(sim.port, "take_findings", None) if sim is not None else None
    if take is None:
        return []
    return [Violation(f.rule, f.message, step) for f in take()]


def make_machine(cfg: MachineSettings) -> type[RuleBasedStateMachine]:
    from conformance.protocols.classic.realtime import MODEL_TIMING, REAL_TIMING, RealTimeSim

    checker = cfg.checker or Checker("classic")
    timing = REAL_TIMING if cfg.real_time else MODEL_TIMING

    class ClassicMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.sim: TracedClassicSim | None = None
            self.names: list[str] = []
            self.steps: list[str] = []
            self.observations: list[Observation[Any]] = []
            #: previous processes of restarted static members: (name, member id, instance id)
            self.incarnations: list[tuple[str, str, str]] = []

        # ------------------------------------------------------------ set-up
        @initialize(
            members=st.integers(2, cfg.max_members),
            partitions=st.integers(1, 4),
            second_topic=st.booleans(),
            assignor=st.sampled_from(ASSIGNORS),
            static=st.lists(st.booleans(), min_size=cfg.max_members, max_size=cfg.max_members),
            join_version=st.sampled_from((9, 9, 4, 3)),
        )
        def setup(
            self,
            members: int,
            partitions: int,
            second_topic: bool,
            assignor: str,
            static: list[bool],
            join_version: int,
        ) -> None:
            variants = dict(cfg.variants)
            chosen = variants.get("assignor", "mixed")
            if chosen == "mixed":
                chosen = assignor
            topics = {"t": partitions}
            if second_topic:
                topics["u"] = 2
            clients = []
            for i in range(members):
                spec: dict[str, Any] = {
                    "name": f"c{i + 1}",
                    "assignors": [chosen],
                    "topics": sorted(topics) if (second_topic and i % 2 == 0) else ["t"],
                    "session_timeout_ms": timing.session_timeout_ms,
                    "rebalance_timeout_ms": timing.rebalance_timeout_ms,
                    "join_version": join_version,
                }
                if static[i]:
                    spec["instance_id"] = f"i{i + 1}"
                clients.append(spec)
            if cfg.coverage is not None:  # on the explored graph's set-up, so its states can be reached
                topics, clients = cfg.coverage.setup_of()
                members = len(clients)
            variants.setdefault("join_version", str(join_version) if join_version in (3, 4, 9) else "9")
            self.sim = make_classic_sim(
                topics,
                clients,
                cfg.config,
                variants,
                port_factory=cfg.port_factory,
                sim_class=RealTimeSim if cfg.real_time else TracedClassicSim,
                request_timeout_ms=timing.request_timeout_ms,
            )
            self.names = [c["name"] for c in clients]
            if cfg.coverage is not None:
                cfg.coverage.start(self.sim)
            self.note(
                f"setup {members} members x {topics}, assignor {chosen}, static {static[:members]}, join v{join_version}"
            )

        # ------------------------------------------------------------ plumbing
        def note(self, text: str) -> None:
            self.steps.append(text)

        def observe(self, obs: Observation[Any] | None, what: str) -> None:
            take = getattr(self.sim, "take_pre_observations", None)  # real targets: RealTimeSim._finish
            for pre in take() if take is not None else []:
                self._observe_one(pre, f"timers due before: {what}")
            self._observe_one(obs, what)
            take = getattr(self.sim, "take_post_observations", None)
            for post in take() if take is not None else []:
                self._observe_one(post, f"timers due after: {what}")

        def _observe_one(self, obs: Observation[Any] | None, what: str) -> None:
            if obs is None:
                return
            self.observations.append(obs)
            if cfg.coverage is not None and self.sim is not None:
                cfg.coverage.visit(self.sim)
            errors = [getattr(d.response, "error", None) for d in obs.deliveries]
            shown = ", ".join(e.name for e in errors if e is not None)
            self.note(f"t={obs.now} {what}" + (f" -> {shown}" if shown else ""))
            violations = checker.check(obs, len(self.observations))
            violations += port_findings(self.sim, len(self.observations))
            if self.sim is not None:
                self.sim.note_checks(
                    obs,
                    checker.last_checked,
                    [(v.invariant, v.message) for v in violations],
                    checker.last_sometimes,
                )
            if violations:
                exc = InvariantViolation(violations, list(self.steps), list(self.observations), self.sim)
                if not cfg.first:
                    cfg.first.append(exc)
                raise exc

        def client(self, i: int) -> str:
            return self.names[i % len(self.names)]

        @property
        def ready(self) -> bool:
            return self.sim is not None

        # ------------------------------------------------------------ well-behaved members
        @precondition(lambda self: self.ready)
        @rule(i=st.integers(0, 7))
        def step(self, i: int) -> None:
            assert self.sim is not None
            name = self.client(i)
            self.observe(self.sim.client_step(name), f"{name} step")

        @precondition(lambda self: self.ready)
        @rule(rounds=st.integers(1, timing.max_settle_rounds))
        def settle(self, rounds: int) -> None:
            """Every running member acts in turn; idle time runs to the next deadline."""
            assert self.sim is not None
            for _ in range(rounds):
                settle_round(self.sim, self.names, lambda obs: self.observe(obs, self._describe(obs)))

        def _describe(self, obs: Observation[Any]) -> str:
            ev = obs.event
            if hasattr(ev, "request"):
                return f"{ev.client} {type(ev.request).__name__}"
            return type(ev).__name__.lower()

        @precondition(lambda self: self.ready)
        @rule(i=st.integers(0, 7))
        def commit(self, i: int) -> None:
            assert self.sim is not None
            name = self.client(i)
            self.observe(self.sim.commit(name, len(self.observations)), f"{name} commit")

        @precondition(lambda self: self.ready)
        @rule(i=st.integers(0, 7))
        def leave(self, i: int) -> None:
            assert self.sim is not None
            name = self.client(i)
            self.observe(self.sim.leave(name), f"{name} leave")

        @precondition(lambda self: self.ready)
        @rule(i=st.integers(0, 7))
        def restart(self, i: int) -> None:
            """The process restarts: a fresh consumer with the same config (a static one replaces itself)."""
            assert self.sim is not None
            name = self.client(i)
            old = self.sim.clients[name]
            if old.config.instance_id is not None and old.member_id:
                self.incarnations.append((name, old.member_id, old.config.instance_id))
            self.sim.restart(name)
            self.note(f"{name} restart")

        @precondition(lambda self: self.ready)
        @rule(i=st.integers(0, 7), both=st.booleans())
        def change_subscription(self, i: int, both: bool) -> None:
            assert self.sim is not None
            name = self.client(i)
            c = self.sim.clients[name]
            topics = tuple(sorted(self.sim.topics)) if both else ("t",)
            if topics != c.config.topics:
                self.sim.subscribe(name, topics)
                self.note(f"{name} subscribes to {topics}")

        # ------------------------------------------------------------ time and faults
        @precondition(lambda self: self.ready)
        @rule(ms=st.sampled_from(timing.advances))
        def advance(self, ms: int) -> None:
            assert self.sim is not None
            self.observe(self.sim.advance(ms), f"advance {ms}ms")

        @precondition(lambda self: self.ready)
        @rule(i=st.integers(0, 7), stalled=st.booleans())
        def stall(self, i: int, stalled: bool) -> None:
            assert self.sim is not None
            name = self.client(i)
            self.observe(self.sim.stall(name, stalled), f"{name} {'stalls' if stalled else 'resumes'}")

        @precondition(lambda self: self.ready)
        @rule(i=st.integers(0, 7))
        def lose_response(self, i: int) -> None:
            assert self.sim is not None
            name = self.client(i)
            self.observe(self.sim.lose_response(name), f"{name}'s next response is lost")

        @precondition(lambda self: self.ready and getattr(self.sim.port, "supports_failover", True))
        @rule()
        def failover(self) -> None:
            assert self.sim is not None
            self.observe(self.sim.failover(), "coordinator failover")

        @precondition(lambda self: self.ready and getattr(self.sim.port, "supports_append_failure", True))
        @rule()
        def append_failure(self) -> None:
            assert self.sim is not None
            self.observe(self.sim.append_failure(), "next metadata append fails")

        @precondition(lambda self: self.ready and self.sim.topics["t"] <= 6)
        @rule(extra=st.integers(1, 2))
        def grow_topic(self, extra: int) -> None:
            assert self.sim is not None
            n = self.sim.topics["t"] + extra
            self.observe(self.sim.create_topic("t", n), f"topic t grows to {n} partitions")
            for name, c in sorted(self.sim.clients.items()):
                if c.member_id and c.member_id == c.leader:
                    self.sim.rejoin(name)

        # ------------------------------------------------------------ adversaries
        @precondition(lambda self: self.ready)
        @rule(
            i=st.integers(0, 7), kind=st.sampled_from(("heartbeat", "sync")), delta=st.sampled_from((-1, 1))
        )
        def zombie_request(self, i: int, kind: str, delta: int) -> None:
            """A request with a generation other than the group's (a zombie or a confused member)."""
            assert self.sim is not None and self.sim.world is not None
            name = self.client(i)
            c = self.sim.clients[name]
            group = self.sim.world.group
            gen = (group.generation if group else 0) + delta
            req: Any
            if kind == "heartbeat":
                req = HeartbeatRequest(c.config.group_id, gen, c.member_id, c.config.instance_id)
            else:
                req = SyncGroupRequest(
                    c.config.group_id,
                    gen,
                    c.member_id,
                    (),
                    c.config.instance_id,
                    "consumer",
                    c.protocol or c.config.assignors[0],
                )
            self.observe(self.sim.send_raw(name, req), f"{name} sends {kind} with generation {gen}")

        @precondition(lambda self: self.ready)
        @rule(i=st.integers(0, 7))
        def duplicate_join(self, i: int) -> None:
            """The member's JoinGroup arrives twice (a client retry after a lost response)."""
            assert self.sim is not None
            name = self.client(i)
            c = self.sim.clients[name]
            if not c.member_id or c.phase in (Phase.FATAL, Phase.LEFT):
                return
            protocols = tuple((a, b"") for a in c.config.assignors)
            req = JoinGroupRequest(
                c.config.group_id,
                c.member_id,
                "consumer",
                protocols,
                c.config.session_timeout_ms,
                c.config.rebalance_timeout_ms,
                c.config.instance_id,
                None,
                c.config.client_id,
                c.config.join_version,
            )
            self.observe(self.sim.send_raw(name, req), f"{name} JoinGroup duplicated")

        # Wire faults (profile `faults`; model/classic/sim.py CutConnection, DuplicateRequest; on a
        # real target the fault proxy, conformance/protocols/classic/faults.py). Off by default so that the
        # other profiles keep their rule set and each seed its draws.
        if cfg.wire_faults:

            @precondition(lambda self: self.ready)
            @rule(i=st.integers(0, 7))
            def cut_connection(self, i: int) -> None:
                assert self.sim is not None
                name = self.client(i)
                self.observe(self.sim.cut_connection(name), f"{name}'s connection is cut")

            @precondition(lambda self: self.ready)
            @rule(i=st.integers(0, 7))
            def duplicate_request(self, i: int) -> None:
                assert self.sim is not None
                name = self.client(i)
                self.observe(self.sim.duplicate_request(name), f"{name}'s next request is duplicated")

            @precondition(lambda self: self.ready)
            @rule(i=st.integers(0, 7))
            def delay_request(self, i: int) -> None:
                """model/classic/sim.py DelayRequest: the member's next request is held on the wire."""
                assert self.sim is not None
                name = self.client(i)
                self.observe(self.sim.delay_request(name), f"{name}'s next request is held on the wire")

            @precondition(lambda self: self.ready and bool(self.sim.held))
            @rule(i=st.integers(0, 7))
            def release(self, i: int) -> None:
                """The held request arrives, after what others sent and the time that passed meanwhile."""
                assert self.sim is not None
                held = sorted(self.sim.held)
                name = held[i % len(held)]
                self.observe(self.sim.release(name), f"{name}'s held request arrives")

        # Model and mutant targets only: against a real coordinator the rule set (and so each seed's
        # draws) stays as the adapter tests and published target reports were tuned with.
        if not cfg.real_time:

            @precondition(lambda self: self.ready and self.static_names())
            @rule(
                i=st.integers(0, 7),
                phase=st.sampled_from((GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE)),
                j=st.integers(0, 7),
            )
            def restart_mid_rebalance(self, i: int, phase: GroupState, j: int) -> None:
                """A static member's process restarts inside a rebalance window and its new process joins
                at once (unknown member id, same group.instance.id): member j rejoins, single client
                steps run until the group is in ``phase``, then the restart. KIP-345's replacement in
                PreparingRebalance (KAFKA-8500) and CompletingRebalance (KAFKA-9801, docs/protocol-reference.md#a3-1) are
                short windows that whole settle rounds step over. Added when both mutants
                survived random exploration (docs/mutants.md#added-invariants)."""
                assert self.sim is not None
                statics = self.static_names()
                name = statics[i % len(statics)]
                if not self._reach(phase, self.client(j)):
                    return
                old = self.sim.clients[name]
                if old.member_id:
                    assert old.config.instance_id is not None
                    self.incarnations.append((name, old.member_id, old.config.instance_id))
                self.sim.restart(name)
                self.note(f"{name} restart in {phase.value}")
                self.observe(self.sim.client_step(name), f"{name} step (new process)")
                group = self.sim.world.group if self.sim.world is not None else None
                if phase == GroupState.COMPLETING_REBALANCE and group is not None:
                    # the window closes with the leader's SyncGroup (its next step)
                    leader = [n for n in self.names if self.sim.clients[n].member_id == group.leader]
                    for n in leader:
                        self.observe(self.sim.client_step(n), f"{n} step (leader)")

            @precondition(lambda self: self.ready and self.static_names())
            @rule(i=st.integers(0, 7))
            def unsubscribe(self, i: int) -> None:
                """A static member unsubscribes, its LeaveGroup suppressed (KIP-345), and subscribes
                again at once (`ClassicClient.unsubscribe`): the client path of KAFKA-20983 /
                KAFKA-20985 (docs/bug-catalogue.md#row-15). Added so that the suite reaches that fault."""
                assert self.sim is not None
                statics = self.static_names()
                name = statics[i % len(statics)]
                self.observe(
                    self.sim.unsubscribe(name), f"{name} unsubscribes (no LeaveGroup) and resubscribes"
                )

            @precondition(lambda self: self.ready and self.sim.clients[self.names[0]].cooperative)
            @rule(i=st.integers(0, 7))
            def fall_out_with_stale_subscription(self, i: int) -> None:
                """A cooperative member falls out of the group (a pause past session.timeout.ms) and its
                ConsumerCoordinator does not update its SubscriptionState, so it rejoins claiming the
                partitions the group has since given to others: the invalid ownedPartitions input
                apache/kafka PR #10985 (KAFKA-12984) reports from the wild. Added when the
                kafka-12984 mutant survived (no legal event made conflicting claims)."""
                assert self.sim is not None
                name = self.client(i)
                c = self.sim.clients[name]
                if not c.owned or not c.member_id:
                    return
                self.sim.stale_subscription(name)
                self.note(f"{name} keeps a stale SubscriptionState")
                self.observe(self.sim.stall(name, True), f"{name} stalls")
                ms = c.config.session_timeout_ms + 1
                self.observe(self.sim.advance(ms), f"advance {ms}ms")
                self.observe(self.sim.stall(name, False), f"{name} resumes")

        def static_names(self) -> list[str]:
            assert self.sim is not None
            return [n for n in self.names if self.sim.clients[n].config.instance_id is not None]

        def _reach(self, phase: GroupState, trigger: str) -> bool:
            """Single client steps, round robin, until the group is in ``phase`` (bounded)."""
            assert self.sim is not None and self.sim.world is not None

            def state() -> GroupState | None:
                assert self.sim is not None and self.sim.world is not None
                group = self.sim.world.group
                return group.state if group is not None else None

            if state() == phase:
                return True
            if state() == GroupState.STABLE:
                self.sim.rejoin(trigger)
                self.note(f"{trigger} rejoins")
            for _ in range(6):
                busy = False
                for name in self.names:
                    obs = self.sim.client_step(name)
                    self.observe(obs, f"{name} step")
                    if state() == phase:
                        return True
                    busy = busy or (
                        obs is not None
                        and not isinstance(getattr(obs.event, "request", None), HeartbeatRequest)
                    )
                if not busy:  # stalled or silent members: time runs to the next deadline
                    self.observe(self.sim.advance(quiet_gap(self.sim)), "advance to the next deadline")
                    if state() == phase:
                        return True
            return False

        @precondition(lambda self: self.ready and bool(self.incarnations))
        @rule(i=st.integers(0, 7), kind=st.sampled_from(("heartbeat", "sync", "commit", "join")))
        def old_incarnation(self, i: int, kind: str) -> None:
            """A restarted static member's previous process still sends with its old member id (a
            zombie; KIP-345 fencing, KAFKA-8225). Added when the kafka-8225 mutant survived."""
            assert self.sim is not None and self.sim.world is not None
            name, member_id, instance_id = self.incarnations[i % len(self.incarnations)]
            c = self.sim.clients[name]
            group = self.sim.world.group
            gen = group.generation if group else 0
            req: Any
            if kind == "heartbeat":
                req = HeartbeatRequest(c.config.group_id, gen, member_id, instance_id)
            elif kind == "sync":
                req = SyncGroupRequest(
                    c.config.group_id,
                    gen,
                    member_id,
                    (),
                    instance_id,
                    "consumer",
                    c.protocol or c.config.assignors[0],
                )
            elif kind == "commit":
                req = OffsetCommitRequest(
                    c.config.group_id, gen, member_id, (OffsetCommitPartition("t", 0, 0),), instance_id
                )
            else:
                protocols = tuple((a, b"") for a in c.config.assignors)
                req = JoinGroupRequest(
                    c.config.group_id,
                    member_id,
                    "consumer",
                    protocols,
                    c.config.session_timeout_ms,
                    c.config.rebalance_timeout_ms,
                    instance_id,
                    None,
                    c.config.client_id,
                    c.config.join_version,
                )
            self.observe(self.sim.send_raw(name, req), f"{name}'s old process ({member_id}) sends {kind}")

        def teardown(self) -> None:
            close = getattr(self.sim.port, "close", None) if self.sim is not None else None
            if close is not None:
                close()

        @invariant()
        def world_exists(self) -> None:
            if self.sim is not None:
                assert self.sim.world is not None

    return ClassicMachine
