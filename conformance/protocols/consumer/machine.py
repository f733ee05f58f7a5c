"""A Hypothesis state machine over the KIP-848 consumer protocol (docs/scenarios.md, docs/cli.md).

Virtual members behave like the KIP-848 Java consumer (`model.consumer.client`): they reconcile,
acknowledge a revocation by omitting the partitions, rejoin with epoch 0 and the same member id
after being fenced. Faults and adversaries share the group: a response lost after the coordinator
applied the request, a duplicated heartbeat, a heartbeat with a stale epoch, members stalled past
their session or rebalance timeout, slow revocation callbacks, restarts, coordinator failover and
topic changes. Every invariant is checked after every step; `converge` lets perturbations stop and
checks `consumer.eventual_convergence`. Time, stalls, lost responses, failover and the wire faults
are the rules shared with the classic machine (conformance/engine/rules.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from conformance.engine.machine import GroupMachine, MachineSettings, bind, per_run
from conformance.engine.rules import MEMBER, FaultHost, FaultRules, TimeRules, WireFaultRules, Wording
from conformance.protocols.consumer.build import consumer_settle_bound, make_consumer_sim
from conformance.protocols.consumer.realtime import (
    MODEL_CONSUMER_TIMING,
    REAL_CONSUMER_TIMING,
    ConsumerTimingChoices,
    RealTimeConsumerSim,
)
from model.consumer.sim import ConsumerSim
from model.consumer.world import HeartbeatEvent, delete_groups_response
from model.observation import Observation

SERVER_ASSIGNORS = (None, "uniform", "range")


def subscription_of(i: int, both: bool) -> tuple[str, ...] | str:
    """What the `subscribe` rule's draw means: names t (and u with ``both``), except that an odd
    member draw ``i`` subscribes with a regex over the model's topics ("[tu]", or "t" without ``both``). Read
    off the draws the rule always made, so that adding regexes moved no other draw."""
    if i % 2 == 1:
        return "[tu]" if both else "t"
    return ("t", "u") if both else ("t",)


#: Real-time runs: observations between two `converge` rules.
REAL_CONVERGE_GAP = 6

WORDING = Wording(
    advance="advance {ms} ms",
    lost="{name}'s next response is lost",
    cut="({name}'s connection was cut under its heartbeat)",
    duplicated="({name}'s heartbeat was duplicated on the wire)",
    delayed="{name}'s heartbeat is held on the wire",
    released="{name}'s delayed heartbeat arrives",
)


def make_machine(cfg: MachineSettings) -> type[RuleBasedStateMachine]:
    """The machine for one run: the wire faults (model/consumer/sim.py; on a real target the fault
    proxy) only under the `faults` profile, the targeted rule only on the model and mutants, so
    that the other profiles and real targets keep their rule sets and each seed its draws."""
    mixins = ((WireFaultRules,) if cfg.wire_faults else ()) + (() if cfg.real_time else (TargetedRules,))
    return bind(ConsumerMachine, cfg, *mixins)


def _setup_arguments(settings: MachineSettings, timing: ConsumerTimingChoices) -> dict[str, Any]:
    return {
        "members": st.integers(2, settings.max_members + 1),
        "partitions": st.integers(1, 4),
        "second_topic": st.booleans(),
        "static": st.lists(
            st.booleans(), min_size=settings.max_members + 1, max_size=settings.max_members + 1
        ),
        "assignor": st.sampled_from(SERVER_ASSIGNORS),
        "rebalance_timeout_ms": st.sampled_from(timing.rebalance_timeouts_ms),
    }


def _run_arguments(settings: MachineSettings, timing: ConsumerTimingChoices) -> dict[str, Any]:
    return {"rounds": st.integers(1, timing.max_rounds), "tick": st.sampled_from(timing.ticks)}


class ConsumerMachine(TimeRules, FaultRules, GroupMachine):
    """KIP-848 members on the model (``settings.port_factory`` None) or on a target's port."""

    protocol = "consumer"
    wording = WORDING

    @staticmethod
    def timing_of(settings: MachineSettings) -> ConsumerTimingChoices:
        return REAL_CONSUMER_TIMING if settings.real_time else MODEL_CONSUMER_TIMING

    def __init__(self, settings: MachineSettings, checker: Any = None) -> None:
        super().__init__(settings, checker)
        self.sim: ConsumerSim | None = None
        self.names: list[str] = []
        self.since_converge = 0

    # ------------------------------------------------------------ set-up
    @per_run(_setup_arguments, initialize=True)
    def setup(
        self,
        members: int,
        partitions: int,
        second_topic: bool,
        static: list[bool],
        assignor: str | None,
        rebalance_timeout_ms: int,
    ) -> None:
        cfg = self.settings
        topics = {"t": partitions}
        if second_topic:
            topics["u"] = 2
        clients = []
        for i in range(members):
            spec: dict[str, Any] = {
                "name": f"c{i + 1}",
                "topics": ["t", "u"] if (second_topic and i % 2 == 0) else ["t"],
                "rebalance_timeout_ms": rebalance_timeout_ms,
                "server_assignor": assignor if i == 0 else None,
            }
            if static[i] or (i == members - 1 and self._needs_static_rejoin(static[:members])):
                spec["instance_id"] = f"i{i + 1}"
            clients.append(spec)
        if cfg.coverage is not None:  # on the explored graph's set-up, so its states can be reached
            topics, clients = cfg.coverage.setup_of()
            members = len(clients)
        self.sim = make_consumer_sim(
            topics,
            clients,
            cfg.config,
            cfg.variants,
            port_factory=cfg.port_factory,
            sim_class=RealTimeConsumerSim if cfg.real_time else None,
        )
        if cfg.coverage is not None:
            cfg.coverage.start(self.sim)
        self.names = [c["name"] for c in clients]
        self.note(
            f"setup {members} members x {topics}, server assignor {assignor}, static {static[:members]}, "
            f"rebalance timeout {rebalance_timeout_ms} ms"
        )

    # ------------------------------------------------------------ plumbing
    def observe(self, obs: Observation[Any] | None, what: str | None = None) -> None:
        take = getattr(self.sim, "take_pre_observations", None)  # real targets: timer_split
        for pre in take(obs) if take is not None and obs is not None else []:
            self._observe_one(pre, f"timers due before: {what or self._describe(obs)}")  # type: ignore[arg-type]
        self._observe_one(obs, what)

    def _observe_one(self, obs: Observation[Any] | None, what: str | None = None) -> None:
        if obs is None:
            return
        self.observations.append(obs)
        self.since_converge += 1
        self.note(f"t={obs.now} {what or self._describe(obs)}")
        if self.settings.coverage is not None:
            self.settings.coverage.visit(self.sim)
        self.judge(obs, len(self.observations), self.sim)

    def observe_all(self, observations: Iterable[Observation[Any]]) -> None:
        for obs in observations:
            self.observe(obs)

    def record_fault(self, result: Any, what: str) -> None:
        """A lost response is only armed (None); a cut or duplicated heartbeat has its
        observations at once: either way the step is noted after them."""
        self.observe_all(result or ())
        self.note(what)

    def before_failover(self) -> bool:
        """A real target restarts within the run's budget; held heartbeats arrive first."""
        assert self.sim is not None
        left = getattr(self.sim.port, "restart_left", None)  # a real target: the run's budget
        if left is not None and not left():
            self.note("coordinator failover skipped: the run has no restart left")
            return False
        self.observe_all(self.sim.release_all())
        return True

    @staticmethod
    def _describe(obs: Observation[Any]) -> str:
        ev = obs.event
        if isinstance(ev, HeartbeatEvent):
            r = ev.request
            got = next((d.response for d in obs.deliveries if d.ref == ev.ref), None)
            outcome = "" if got is None else f" -> {got.error_code.name} epoch {got.member_epoch}"
            return f"{ev.client} heartbeat epoch {r.member_epoch}{outcome}"
        return type(ev).__name__

    def client(self, i: int) -> str:
        return self.names[i % len(self.names)]

    def flush(self, name: str) -> str:
        """A held (delayed) heartbeat of ``name`` arrives before anything else the member sends
        (one connection keeps its order): its own observed step."""
        assert self.sim is not None
        self.observe(self.sim.release(name), self.wording.released.format(name=name))
        return name

    # ------------------------------------------------------------ well-behaved members
    @precondition(lambda self: self.ready)
    @rule(i=MEMBER)
    def step(self, i: int) -> None:
        assert self.sim is not None
        self.observe(self.sim.client_step(self.client(i)))

    @per_run(_run_arguments, precondition=lambda self: self.ready)
    def run(self, rounds: int, tick: int) -> None:
        """Every member heartbeats when due, then time moves on; repeated."""
        assert self.sim is not None
        for _ in range(rounds):
            for name in self.names:
                self.observe(self.sim.client_step(name))
            self.observe(self.sim.advance(tick))

    @precondition(
        lambda self: self.ready and (not self.settings.real_time or self.since_converge >= REAL_CONVERGE_GAP)
    )
    @rule()
    def converge(self) -> None:
        """Perturbations stop; from the bound on, every step must show a converged group.

        On a real clock a convergence costs seconds (session plus rebalance timeout), so it needs
        a few perturbations since the last one."""
        assert self.sim is not None
        self.since_converge = -(10**9)  # the settle's own steps do not count
        self.note("perturbations stop")
        self.observe_all(self.sim.settle(consumer_settle_bound(self.sim), 500))
        self.since_converge = 0

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER)
    def reconcile(self, i: int) -> None:
        assert self.sim is not None
        self.observe(self.sim.reconcile(self.client(i)), f"{self.client(i)} callbacks done")

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER, slow=st.booleans())
    def slow_callbacks(self, i: int, slow: bool) -> None:
        assert self.sim is not None
        self.sim.set_slow(self.client(i), slow)
        self.note(f"{self.client(i)} callbacks {'slow' if slow else 'immediate'}")

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER)
    def commit(self, i: int) -> None:
        assert self.sim is not None
        name = self.flush(self.client(i))
        self.observe(self.sim.commit(name, len(self.observations)), f"{name} commits")

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER)
    def leave(self, i: int) -> None:
        assert self.sim is not None
        name = self.flush(self.client(i))
        self.observe(self.sim.leave(name), f"{name} leaves")

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER)
    def restart(self, i: int) -> None:
        assert self.sim is not None
        name = self.flush(self.client(i))
        self.observe(self.sim.restart(name), f"{name} restarts")

    # ------------------------------------------------------------ a static rejoin on a real clock
    STATIC_REJOIN = "consumer.sometimes_static_rejoin"

    def _needs_static_rejoin(self, static: list[bool]) -> bool:
        """On a real clock, an example whose draws have no static member gets one while the run has
        not seen a static rejoin yet: a run has few examples (ci: 6), and without a static member
        none can show `consumer.sometimes_static_rejoin` (a run without it is inconclusive)."""
        return self.settings.real_time and not any(static) and not self.checker.hits.get(self.STATIC_REJOIN)

    def teardown(self) -> None:
        """On a real clock, while the run has not seen a static rejoin: the example ends with a
        bounce of a static member that has joined, when there is one (deterministic: it depends on
        the draws and the target's answers only)."""
        if self.sim is None or not self.settings.real_time or self.checker.hits.get(self.STATIC_REJOIN):
            return
        if any(
            self.sim.client(n).instance_id is not None and self.sim.client(n).member_epoch > 0
            for n in self.names
        ):
            self.note("end of example: a static member is bounced (no static rejoin seen yet)")
            self.bounce(0)

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER)
    def bounce(self, i: int) -> None:
        """A rolling restart: close() (a static member leaves with -2), a new process joins.

        On a real clock an example has few steps (ci: 20), so the member bounced is a static one
        that has joined, when there is one: its -2 leave and its rejoin under the instance id are
        what `consumer.sometimes_static_rejoin` asks for (a bounce before the member joined
        sends no leave). The model's runs draw as before."""
        assert self.sim is not None
        name = self.client(i)
        if self.settings.real_time:
            joined = [
                n
                for n in self.names
                if self.sim.client(n).instance_id is not None and self.sim.client(n).member_epoch > 0
            ]
            name = joined[i % len(joined)] if joined else name
        name = self.flush(name)
        self.observe(self.sim.leave(name), f"{name} closes")
        self.observe(self.sim.restart(name), f"{name} restarts")
        self.observe(self.sim.client_step(name))

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER, both=st.booleans())
    def subscribe(self, i: int, both: bool) -> None:
        """Change the subscription (a member that left joins again): topic names, or for some
        members a v1 SubscribedTopicRegex (`subscription_of`; resolved off the heartbeat path,
        `model.consumer.regex_rules`)."""
        assert self.sim is not None
        name = self.client(i)
        how = subscription_of(i, both)
        if isinstance(how, str):
            self.observe(self.sim.subscribe(name, (), how), f"{name} subscribes /{how}/")
        else:
            self.observe(self.sim.subscribe(name, how), f"{name} subscribes {how}")

    # ------------------------------------------------------------ faults and adversaries
    @precondition(lambda self: self.ready)
    @rule(i=MEMBER)
    def duplicate(self, i: int) -> None:
        assert self.sim is not None
        name = self.flush(self.client(i))
        self.observe(self.sim.duplicate(name), f"{name}'s last heartbeat again")

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER, delta=st.sampled_from((-1, 1)))
    def stale_heartbeat(self, i: int, delta: int) -> None:
        assert self.sim is not None
        name = self.flush(self.client(i))
        self.observe(self.sim.stale_heartbeat(name, delta), f"{name} heartbeats with epoch {delta:+d}")

    @precondition(lambda self: self.ready and getattr(self.sim.port, "supports_delete_groups", True))
    @rule()
    def delete_group(self) -> None:
        """An admin deletes the group (DeleteGroups): Kafka deletes it, and its committed offsets,
        only when it is Empty, else NON_EMPTY_GROUP (`model.consumer.group_deletion`). Drawn on a
        real target only when it offers DeleteGroups."""
        assert self.sim is not None
        self.observe_deletion()

    def observe_deletion(self) -> None:
        assert self.sim is not None
        obs = self.sim.delete_group()
        answer = delete_groups_response(obs)
        codes = "nothing" if answer is None else ",".join(c.name for c in answer.errors().values())
        self.observe(obs, f"admin deletes group {self.sim.group_id} -> {codes}")

    @precondition(lambda self: self.ready and getattr(self.sim.port, "supports_topic_changes", True))
    @rule(action=st.sampled_from(("grow", "create", "delete")))
    def topic_change(self, action: str) -> None:
        assert self.sim is not None
        topics = self.sim.port.coordinator_state().topics
        if action == "grow":
            n = topics["t"] + 1
            self.observe(self.sim.topic("add_partitions", "t", n), f"topic t grows to {n}")
        elif action == "create" and "u" not in topics:
            self.observe(self.sim.topic("create", "u", 2), "topic u created")
        elif action == "delete" and "u" in topics:
            self.observe(self.sim.topic("delete", "u"), "topic u deleted")


class TargetedRules(FaultHost):
    """A window random exploration stepped over (model and mutant targets only)."""

    names: list[str]
    note: Any
    flush: Any
    observe_deletion: Any
    #: `delete_abandoned_group` ran in this example (it runs once)
    abandoned: bool = False

    @precondition(lambda self: self.ready)
    @rule(i=MEMBER, j=MEMBER)
    def leave_during_revocation(self, i: int, j: int) -> None:
        """While member i (slow callbacks) revokes a partition, the member that is to receive it
        shuts down: the next target can give the partition back to i, which then acknowledges
        its revocation. The window KAFKA-19449 (apache/kafka PR #20781, docs/bug-catalogue.md#row-6)
        needs; added when the kafka-19449 mutant survived random exploration."""
        assert self.sim is not None
        name = self.client(i)
        self.sim.set_slow(name, True)
        self.note(f"{name} callbacks slow")
        for _ in range(3):  # heartbeat rounds until i has to revoke (a member joined late)
            for n in self.names:
                self.observe(self.sim.client_step(n))
            world = self.sim.world
            group = None if world is None else world.groups.get(self.sim.group_id)
            member = None if group is None else group.members.get(self.sim.client(name).member_id)
            if group is not None and member is not None and member.pending_revocation:
                ids = {self.sim.client(n).member_id: n for n in self.names}
                takers = sorted(
                    ids[m]
                    for m, target in group.target.items()
                    if m != member.member_id and m in ids and target & member.pending_revocation
                )
                if takers:
                    other = takers[j % len(takers)]
                    self.observe(self.sim.leave(other), f"{other} leaves")
                    self.observe(self.sim.reconcile(name), f"{name} callbacks done")
                    self.observe(self.sim.client_step(name))
                break
            self.observe(self.sim.advance(500))
        self.sim.set_slow(name, False)
        self.note(f"{name} callbacks immediate")

    @precondition(lambda self: self.ready and not self.abandoned)
    @rule(i=MEMBER)
    def delete_abandoned_group(self, i: int) -> None:
        """Member i stalls (a partition, a long pause), the others close, its session expires and
        an admin deletes the group, now Empty; then i comes back and heartbeats with the epoch it
        had. Kafka answers GROUP_ID_NOT_FOUND, which ends the membership: the consumer rejoins with
        epoch 0 and creates the group again. The window librdkafka PR #5488 needs (a consumer that
        retries GROUP_ID_NOT_FOUND with its old epoch, docs/bug-catalogue-heldout.md#hb-21). The
        others then start again; once per example, so that the group's other windows stay open."""
        assert self.sim is not None
        name = self.flush(self.client(i))
        self.observe(self.sim.stall(name, True), f"{name} stalls")
        for other in self.names:
            if other != name:
                self.observe(self.sim.leave(self.flush(other)), f"{other} leaves")
        ms = self.sim.port.config.session_timeout_ms + 1000
        self.observe(self.sim.advance(ms), f"advance {ms} ms")
        self.observe_deletion()
        self.observe(self.sim.stall(name, False), f"{name} resumes")
        for _ in range(2):  # the old epoch's answer, then what the consumer does about it
            self.observe(self.sim.client_step(name))
            self.observe(self.sim.advance(500), "advance 500 ms")
        for other in self.names:  # the others start again (once per example: the group is back)
            if other != name:
                self.observe(self.sim.restart(other), f"{other} restarts")
        self.abandoned = True

    @precondition(lambda self: self.ready and self.regex_holders())
    @rule(i=MEMBER)
    def subscribe_to_nothing(self, i: int) -> None:
        """A member whose regex the coordinator holds subscribes to nothing (empty names, and ""
        to clear the SubscribedTopicRegex): legal after joining (KIP-848), and it must bump the
        group epoch and take the member's partitions away (KAFKA-19899). Widens `subscribe`, which
        draws non-empty subscriptions only; the member's next heartbeat carries the change."""
        assert self.sim is not None
        regex = self.regex_holders()
        name = self.flush(regex[i % len(regex)])
        self.observe(self.sim.subscribe(name, ()), f"{name} subscribes to nothing")
        self.observe(self.sim.client_step(name))

    def regex_holders(self) -> list[str]:
        """The members whose subscription, as the coordinator holds it, has a regex."""
        assert self.sim is not None
        world = self.sim.world
        group = None if world is None else world.groups.get(self.sim.group_id)
        held = {m.member_id for m in group.members.values() if m.subscribed_topic_regex} if group else set()
        return [n for n in self.names if self.sim.client(n).member_id in held]
