"""Classic rules aimed at narrow windows that random exploration stepped over (model and mutants).

Each rule drives the group into one short window a known Kafka bug needs and acts there. They
were added when the matching mutant survived random exploration. `make_machine` adds them on the
model and mutant targets only: against a real coordinator the rule set, and so each seed's draws,
stays as the adapter tests and published target reports were tuned with.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from conformance.engine.rules import MEMBER, FaultHost
from conformance.protocols.classic.build import quiet_gap
from conformance.protocols.classic.settle import settle_round
from model.classic.messages import HeartbeatRequest
from model.classic.state import GroupState

#: a redeployed member's session and rebalance timeouts (ms): the model's legal session range
#: starts at 6 s (model/classic/state.py), and a rebalance timeout below the session one is legal
REDEPLOY_SESSION_MS = (6_000, 8_000, 12_000)
REDEPLOY_REBALANCE_MS = (6_000, 10_000, 15_000)
#: `live_long` ends after this many settle rounds even if its span has not passed (a group that
#: rebalances for ever; each round lets idle time run at most a third of a session)
LIVE_LONG_MAX_ROUNDS = 400
#: ... and once the group has not been Stable for this many rounds in a row
LIVE_LONG_UNSTABLE_ROUNDS = 30


class TargetedRules(FaultHost):
    """Mixin of `ClassicMachine` (conformance/protocols/classic/machine.py)."""

    names: list[str]
    incarnations: list[tuple[str, str, str]]
    note: Any
    #: `live_long` ran in this run
    lived_long = False

    @precondition(lambda self: self.ready and self.static_names())
    @rule(
        i=MEMBER,
        phase=st.sampled_from((GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE)),
        j=MEMBER,
    )
    def restart_mid_rebalance(self, i: int, phase: GroupState, j: int) -> None:
        """A static member's process restarts inside a rebalance window and its new process joins
        at once (unknown member id, same group.instance.id): member j rejoins, single client
        steps run until the group is in ``phase``, then the restart. KIP-345's replacement in
        PreparingRebalance (KAFKA-8500) and CompletingRebalance (KAFKA-9801,
        docs/protocol-reference.md#a3-1) are short windows that whole settle rounds step over.
        Added when both mutants survived random exploration (docs/mutants.md#added-invariants)."""
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

    @precondition(lambda self: self.ready)
    @rule(
        i=MEMBER,
        session=st.sampled_from(REDEPLOY_SESSION_MS),
        rebalance=st.sampled_from(REDEPLOY_REBALANCE_MS),
    )
    def redeploy(self, i: int, session: int, rebalance: int) -> None:
        """The process restarts with other session.timeout.ms and max.poll.interval.ms values (a
        redeploy with a changed config): the JoinGroup that follows carries them, and a static
        member's replacement must take them (KIP-345; KAFKA-14009). Widens the input space beyond
        one fixed timeout relation; drawn values are legal for the model's group.min/max.session.timeout.ms."""
        assert self.sim is not None
        name = self.client(i)
        old = self.sim.clients[name]
        if old.config.instance_id is not None and old.member_id:
            self.incarnations.append((name, old.member_id, old.config.instance_id))
        self.sim.restart(name, (session, rebalance))
        self.note(f"{name} restarts with session {session} ms, rebalance {rebalance} ms")

    @precondition(lambda self: self.ready and self.joined_committers())
    @rule(i=MEMBER, j=MEMBER)
    def commit_while_syncing(self, i: int, j: int) -> None:
        """A member that commits with the generation of its JoinGroup answer (kafka-python's policy,
        `ClientConfig.commit_joined_generation`) commits between that answer and its SyncGroup:
        member j rejoins, single steps run until the group is in CompletingRebalance, then the
        commit, which the coordinator answers REBALANCE_IN_PROGRESS (docs/protocol-reference.md#a7;
        dpkp/kafka-python PR #2614). Whole settle rounds send the SyncGroup at once."""
        assert self.sim is not None
        names = self.joined_committers()
        name = names[i % len(names)]
        if not self._reach(GroupState.COMPLETING_REBALANCE, self.client(j)):
            return
        self.observe(self.sim.commit(name, len(self.observations)), f"{name} commit (before its SyncGroup)")

    def joined_committers(self) -> list[str]:
        assert self.sim is not None
        return [n for n in self.names if self.sim.clients[n].config.commit_joined_generation]

    @precondition(lambda self: self.ready and not self.lived_long and self.unperturbed())
    @rule()
    def live_long(self) -> None:
        """Members act normally for longer than the coordinator's longest timer, KIP-394's new-member
        join timeout (group.new.member.join.timeout.ms, 300 s) plus a session: the settle rule's
        rounds span well under a minute, so a member never lived that long. A coordinator that
        expires a heartbeating member once that timer runs out (KAFKA-9232) shows only here. Once per
        run, with no fault armed (a normal life, not a fault's aftermath); it ends early once the group has not been Stable for `LIVE_LONG_UNSTABLE_ROUNDS` rounds: a long
        stable life is the point, and a group that keeps rebalancing would cost hundreds of
        observations per example (and per shrink attempt) for nothing new."""
        assert self.sim is not None
        config = getattr(getattr(self.sim.port, "coordinator", None), "config", None)
        span = getattr(config, "new_member_join_timeout_ms", 300_000) + max(
            c.config.session_timeout_ms for c in self.sim.clients.values()
        )
        self.lived_long = True
        end, rounds, unstable = self.sim.now + span, 0, 0
        self.note(f"members live for {span} ms")
        while self.sim.now <= end and rounds < LIVE_LONG_MAX_ROUNDS and unstable < LIVE_LONG_UNSTABLE_ROUNDS:
            settle_round(self.sim, self.names, lambda obs: self.observe(obs, "live long"))
            rounds += 1
            unstable = 0 if self.stable() else unstable + 1

    @precondition(lambda self: self.ready and self.static_names())
    @rule(i=MEMBER)
    def unsubscribe(self, i: int) -> None:
        """A static member unsubscribes, its LeaveGroup suppressed (KIP-345), and subscribes
        again at once (`ClassicClient.unsubscribe`): the client path of KAFKA-20983 /
        KAFKA-20985 (docs/bug-catalogue.md#row-15). Added so that the suite reaches that fault."""
        assert self.sim is not None
        statics = self.static_names()
        name = statics[i % len(statics)]
        self.observe(self.sim.unsubscribe(name), f"{name} unsubscribes (no LeaveGroup) and resubscribes")

    @precondition(lambda self: self.ready and self.sim.clients[self.names[0]].cooperative)
    @rule(i=MEMBER)
    def fall_out_with_stale_subscription(self, i: int) -> None:
        """A cooperative member falls out of the group (a pause past session.timeout.ms) and its
        ConsumerCoordinator does not update its SubscriptionState, so it rejoins claiming the
        partitions the group has since given to others: the invalid ownedPartitions input
        apache/kafka PR #10985 (KAFKA-12984) reports from the wild. Added when the kafka-12984
        mutant survived (no legal event made conflicting claims)."""
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

    def unperturbed(self) -> bool:
        """No member stalled and no wire fault armed or held."""
        sim = self.sim
        assert sim is not None
        return not (sim.stalled or sim.lose_next or sim.duplicate_next or sim.delay_next or sim.held)

    def stable(self) -> bool:
        assert self.sim is not None
        group = self.sim.world.group if self.sim.world is not None else None
        return group is not None and group.state == GroupState.STABLE

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
                    obs is not None and not isinstance(getattr(obs.event, "request", None), HeartbeatRequest)
                )
            if not busy:  # stalled or silent members: time runs to the next deadline
                self.observe(self.sim.advance(quiet_gap(self.sim)), "advance to the next deadline")
                if state() == phase:
                    return True
        return False


class ConvergeRules(FaultHost):
    """The classic convergence check (`classic.eventual_convergence`), on the model and mutants.

    Against a real coordinator a convergence costs real seconds (request, session and two
    rebalance timeouts), so it is not drawn there yet: docs/invariants.md#classic.eventual_convergence."""

    names: list[str]
    note: Any

    @precondition(lambda self: self.ready)
    @rule()
    def converge(self) -> None:
        """Perturbations stop; from the bound on, every step must show a converged group."""
        assert self.sim is not None
        self.note("perturbations stop")
        self.sim.converge(lambda obs: self.observe(obs, "converge"))
