"""A Hypothesis state machine over the classic protocol (docs/scenarios.md, docs/cli.md).

Well-behaved virtual consumers (join, sync, heartbeat, commit, leave, restart, subscription and
protocol changes) share the group with faults and adversaries: stalls past the session timeout,
lost responses, zombie requests with stale generations, duplicated joins, failed metadata
appends, coordinator failover, topic changes. Every invariant is checked after every step; the
`sometimes` entries are counted across the whole run by the caller. Time, stalls, lost
responses, failover and the wire faults are the rules shared with the KIP-848 machine
(conformance/engine/rules.py).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from conformance.engine.machine import (
    GroupMachine,
    InvariantViolation,
    MachineSettings,
    bind,
    per_run,
    port_findings,
)
from conformance.engine.rules import MEMBER, FaultRules, TimeRules, WireFaultRules, Wording
from conformance.protocols.classic.build import make_classic_sim, settle_round
from conformance.protocols.classic.machine_strays import StrayRules
from conformance.protocols.classic.machine_targeted import (
    REDEPLOY_REBALANCE_MS,
    REDEPLOY_SESSION_MS,
    ConvergeRules,
    TargetedRules,
)
from conformance.protocols.classic.realtime import MODEL_TIMING, MemberTiming, RealTimeSim, real_timing
from conformance.protocols.classic.trace import TracedClassicSim
from conformance.protocols.classic.versions import member_versions, resolve
from model.classic.client import Phase
from model.classic.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from model.observation import Observation

__all__ = [
    "ASSIGNORS",
    "ClassicMachine",
    "InvariantViolation",
    "MachineSettings",
    "make_machine",
    "port_findings",
]

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")

WORDING = Wording(
    advance="advance {ms}ms",
    lost="{name}'s next response is lost",
    cut="{name}'s connection is cut",
    duplicated="{name}'s next request is duplicated",
    delayed="{name}'s next request is held on the wire",
    released="{name}'s held request arrives",
)


def make_machine(cfg: MachineSettings) -> type[RuleBasedStateMachine]:
    """The machine for one run. The wire faults (model/classic/sim.py CutConnection,
    DuplicateRequest, DelayRequest; on a real target the fault proxy) only under the `faults`
    profile; the targeted and stray-request rules only on the model and mutants: against a real coordinator the rule
    set (and so each seed's draws) stays as the adapter tests and published reports were tuned with."""
    mixins = ((WireFaultRules,) if cfg.wire_faults else ()) + (
        () if cfg.real_time else (TargetedRules, ConvergeRules, StrayRules)
    )
    return bind(ClassicMachine, cfg, *mixins)


def _setup_arguments(settings: MachineSettings, timing: MemberTiming) -> dict[str, Any]:
    return {
        "members": st.integers(2, settings.max_members),
        "partitions": st.integers(1, 4),
        "second_topic": st.booleans(),
        "assignor": st.sampled_from(ASSIGNORS),
        "static": st.lists(st.booleans(), min_size=settings.max_members, max_size=settings.max_members),
        # per member, every version of every group API (conformance/protocols/classic/versions.py)
        "versions": st.lists(member_versions(), min_size=settings.max_members, max_size=settings.max_members),
        # the model only: now and then a group.max.size the members reach (GROUP_MAX_SIZE_REACHED,
        # KIP-389); a real target keeps the size it was started with (learned, conformance/targets/settings.py)
        **({} if settings.real_time else {"max_size": st.sampled_from((0, 0, 0, 0, 1, 2))}),
        # the model only: per member, commits before SyncGroup completes (kafka-python's policy,
        # `ClientConfig.commit_joined_generation`) or only while Stable (Java's)
        **({} if settings.real_time else {"joined_commits": _per_member(settings, st.booleans())}),
        # the model only: per member, session and rebalance timeouts across legal values and
        # relations (a rebalance timeout below the session one included), mostly the default pair
        **({} if settings.real_time else {"timeouts": _per_member(settings, st.sampled_from(TIMEOUT_PAIRS))}),
        # real targets: now and then the last member asks for a session the target rejects
        **({"outside": st.sampled_from((False,) * 5 + (True,))} if timing.outside_session_ms else {}),
    }


#: the model's default pair (MODEL_TIMING) four times in ten, else any of the redeploy values
TIMEOUT_PAIRS = ((MODEL_TIMING.session_timeout_ms, MODEL_TIMING.rebalance_timeout_ms),) * 6 + tuple(
    (s, r) for s in REDEPLOY_SESSION_MS for r in REDEPLOY_REBALANCE_MS
)


def _per_member(settings: MachineSettings, values: Any) -> Any:
    return st.lists(values, min_size=settings.max_members, max_size=settings.max_members)


class ClassicMachine(TimeRules, FaultRules, GroupMachine):
    """Classic members on the model (``settings.port_factory`` None) or on a target's port."""

    protocol = "classic"
    wording = WORDING

    @staticmethod
    def timing_of(settings: MachineSettings) -> MemberTiming:
        return real_timing(settings.config) if settings.real_time else MODEL_TIMING

    def __init__(self, settings: MachineSettings, checker: Any = None) -> None:
        super().__init__(settings, checker)
        self.sim: TracedClassicSim | None = None
        self.names: list[str] = []
        #: previous processes of restarted static members: (name, member id, instance id)
        self.incarnations: list[tuple[str, str, str]] = []

    # ------------------------------------------------------------ set-up
    @per_run(_setup_arguments, initialize=True)
    def setup(
        self,
        members: int,
        partitions: int,
        second_topic: bool,
        assignor: str,
        static: list[bool],
        versions: list[tuple[int, ...]],
        outside: bool = False,
        max_size: int = 0,
        joined_commits: list[bool] | None = None,
        timeouts: list[tuple[int, int]] | None = None,
    ) -> None:
        cfg, timing = self.settings, self.timing
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
                **resolve(versions[i], static[i]).as_spec(),
            }
            if static[i]:
                spec["instance_id"] = f"i{i + 1}"
            if joined_commits and joined_commits[i]:
                spec["commit_joined_generation"] = True
            if timeouts:
                spec["session_timeout_ms"], spec["rebalance_timeout_ms"] = timeouts[i]
            if outside and i == members - 1 and timing.outside_session_ms:
                spec["session_timeout_ms"] = timing.outside_session_ms  # INVALID_SESSION_TIMEOUT
            clients.append(spec)
        if cfg.coverage is not None:  # on the explored graph's set-up, so its states can be reached
            topics, clients = cfg.coverage.setup_of()
            members = len(clients)
        self.sim = make_classic_sim(
            topics,
            clients,
            {**cfg.config, "max_size": max_size} if max_size else cfg.config,
            variants,
            port_factory=cfg.port_factory,
            sim_class=RealTimeSim if cfg.real_time else TracedClassicSim,
            request_timeout_ms=timing.request_timeout_ms,
        )
        self.names = [c["name"] for c in clients]
        if cfg.coverage is not None:
            cfg.coverage.start(self.sim)
        self.note(
            f"setup {members} members x {topics}, assignor {chosen}, static {static[:members]}, versions "
            + " ".join(resolve(versions[i], static[i]).short() for i in range(members))
            + (f", group.max.size {max_size}" if max_size else "")
            + (
                f", session/rebalance ms {' '.join(f'{a}/{b}' for a, b in timeouts[:members])}"
                if timeouts
                else f", session {timing.session_timeout_ms} ms"
            )
            + (f" (c{members}: {timing.outside_session_ms} ms, outside the legal range)" if outside else "")
        )

    # ------------------------------------------------------------ plumbing
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
        coverage = self.settings.coverage
        if coverage is not None and self.sim is not None:
            coverage.visit(self.sim)
        errors = [getattr(d.response, "error", None) for d in obs.deliveries]
        shown = ", ".join(e.name for e in errors if e is not None)
        self.note(f"t={obs.now} {what}" + (f" -> {shown}" if shown else ""))
        self.judge(obs, len(self.observations), self.sim)

    def client(self, i: int) -> str:
        return self.names[i % len(self.names)]

    # ------------------------------------------------------------ well-behaved members
    @precondition(lambda self: self.ready)
    @rule(i=MEMBER)
    def step(self, i: int) -> None:
        assert self.sim is not None
        name = self.client(i)
        self.observe(self.sim.client_step(name), f"{name} step")

    @per_run(
        lambda settings, timing: {"rounds": st.integers(1, timing.max_settle_rounds)},
        precondition=lambda self: self.ready,
    )
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
    @rule(i=MEMBER)
    def commit(self, i: int) -> None:
        assert self.sim is not None
        name = self.client(i)
        self.observe(self.sim.commit(name, len(self.observations)), f"{name} commit")

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER)
    def leave(self, i: int) -> None:
        assert self.sim is not None
        name = self.client(i)
        self.observe(self.sim.leave(name), f"{name} leave")

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER)
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
    @rule(i=MEMBER, both=st.booleans())
    def change_subscription(self, i: int, both: bool) -> None:
        assert self.sim is not None
        name = self.client(i)
        c = self.sim.clients[name]
        topics = tuple(sorted(self.sim.topics)) if both else ("t",)
        if topics != c.config.topics:
            self.sim.subscribe(name, topics)
            self.note(f"{name} subscribes to {topics}")

    # ------------------------------------------------------------ coordinator faults
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
        self.observe(self.sim.grow_topic("t", n), f"topic t grows to {n} partitions")

    # ------------------------------------------------------------ adversaries
    @precondition(lambda self: self.ready)
    @rule(i=MEMBER, kind=st.sampled_from(("heartbeat", "sync")), delta=st.sampled_from((-1, 1)))
    def zombie_request(self, i: int, kind: str, delta: int) -> None:
        """A request with a generation other than the group's (a zombie or a confused member)."""
        assert self.sim is not None and self.sim.world is not None
        name = self.client(i)
        c = self.sim.clients[name]
        group = self.sim.world.group
        gen = (group.generation if group else 0) + delta
        req: Any
        if kind == "heartbeat":
            req = HeartbeatRequest(
                c.config.group_id, gen, c.member_id, c.config.instance_id, c.config.heartbeat_version
            )
        else:
            req = self._sync(name, gen, c.member_id, c.config.instance_id)
        self.observe(self.sim.send_raw(name, req), f"{name} sends {kind} with generation {gen}")

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER)
    def duplicate_join(self, i: int) -> None:
        """The member's JoinGroup arrives twice (a client retry after a lost response)."""
        assert self.sim is not None
        name = self.client(i)
        c = self.sim.clients[name]
        if not c.member_id or c.phase in (Phase.FATAL, Phase.LEFT):
            return
        req = self._join(name, c.member_id, c.config.instance_id)
        self.observe(self.sim.send_raw(name, req), f"{name} JoinGroup duplicated")

    @precondition(lambda self: self.ready and bool(self.incarnations))
    @rule(i=MEMBER, kind=st.sampled_from(("heartbeat", "sync", "commit", "join")))
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
            req = HeartbeatRequest(c.config.group_id, gen, member_id, instance_id, c.config.heartbeat_version)
        elif kind == "sync":
            if group is not None and group.leader == member_id:
                # still the leader of this generation: its SyncGroup carries the assignment it
                # computed, never an empty one (that is a broken assignor, not a zombie; thorough
                # classic profile, seed 3: an empty leader sync left a partition unassigned for good)
                return
            req = self._sync(name, gen, member_id, instance_id)
        elif kind == "commit":
            req = OffsetCommitRequest(
                c.config.group_id,
                gen,
                member_id,
                (OffsetCommitPartition("t", 0, 0),),
                instance_id,
                c.config.commit_version,
            )
        else:
            req = self._join(name, member_id, instance_id)
        self.observe(self.sim.send_raw(name, req), f"{name}'s old process ({member_id}) sends {kind}")

    def _sync(self, name: str, gen: int, member_id: str, instance_id: str | None) -> SyncGroupRequest:
        """An empty SyncGroup in member ``name``'s protocol, as ``member_id`` of generation ``gen``."""
        assert self.sim is not None
        c = self.sim.clients[name]
        protocol = c.protocol or c.config.assignors[0]
        v = c.config.sync_version  # the protocol type and name from v5 (KIP-559)
        return SyncGroupRequest(
            c.config.group_id, gen, member_id, (), instance_id, "consumer" if v >= 5 else None,
            protocol if v >= 5 else None, v,
        )  # fmt: skip

    def _join(self, name: str, member_id: str, instance_id: str | None) -> JoinGroupRequest:
        """Member ``name``'s JoinGroup (its config and subscription), sent as ``member_id``. The
        subscription was empty bytes until thorough classic seed 2 showed a duplicated JoinGroup
        whose leader then could not read its member's subscription: an input no client sends."""
        assert self.sim is not None
        c = self.sim.clients[name]
        protocols = c.join_protocols()
        return JoinGroupRequest(
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

    def teardown(self) -> None:
        """On a real clock, while the run has not seen a rebalance complete (its timeouts stretched to
        the target's learned session range leave few per example), the example ends settling: every
        member acts, idle time runs to the next deadline, at most ``max_settle_rounds`` rounds."""
        done = self.checker.hits.get("classic.sometimes_rebalance_completed")
        if self.sim is not None and self.settings.real_time and not done and self.names:
            self.note("end of example: settle (no rebalance completed yet)")
            self.settle(self.timing.max_settle_rounds)
        close = getattr(self.sim.port, "close", None) if self.sim is not None else None
        if close is not None:
            close()

    @invariant()
    def world_exists(self) -> None:
        if self.sim is not None:
            assert self.sim.world is not None
