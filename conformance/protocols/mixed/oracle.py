"""The mixed-group oracle: classic and KIP-848 members in one group on a real coordinator (docs/protocol-reference.md#b13).

Classic members speak JoinGroup / SyncGroup / Heartbeat / LeaveGroup through the classic wire
codec (`conformance.protocols.classic.codec`, as the classic oracle does); consumer-protocol members speak
ConsumerGroupHeartbeat through the consumer codec (`mixed/codec.py`). All of them share ONE real
group on the target, and the model beside it is the mixed coordinator (`model.mixed.coordinator`).

In a consumer group every classic request is answered as soon as its records are written, never
parked (GMM ``classicGroupJoinToConsumerGroup`` completes the response from ``appendFuture``,
apache/kafka@1eb7644 GroupMetadataManager.java L2084-2103; SyncGroup and Heartbeat likewise), and a
ConsumerGroupHeartbeat is always answered at once. So one operation is: send, wait for the answer
(deadline), keep the model *hypotheses* that explain it — as the consumer oracle does
(`ExchangePort`): timers whose deadline falls in the tolerance window may or may not have
fired, and a new group's epochs start at 0 (Kafka 4.0) or 1 (4.3+, KAFKA-20268); both are kept
until an answer decides. A parked answer (a classic group in a join phase) is waited for up to the
deadline too, as long as the classic oracle waits for a parked join, and the model's timers up to
the answer complete the join phase (`_run`); the machine on real targets keeps one classic member
live (`conformance.protocols.mixed.machine_real`).

Kafka's arbitrary choices (generated member ids, the server assignor's tie-breaks) are checked
legal and ADOPTED (`adoption`, `assignor_ties`).

No hypothesis explains an answer -> a protocol finding (``oracle.<Api>``, request, answer, what
the model expected). Differences in Apache Kafka's exact bytes (the encoded assignment's version,
the heartbeat interval echoed) are kafka-compat findings.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from conformance.engine.oracle.choosers import RefChooser
from conformance.engine.oracle.findings import Finding
from conformance.engine.oracle.hypotheses import dedupe
from conformance.engine.oracle.port import ExchangePort
from conformance.protocols.consumer.adoption import adopting
from conformance.protocols.consumer.codec import TopicMap
from conformance.protocols.mixed.adoption import MixedAdoption
from conformance.protocols.mixed.hypo import ORIGINS, POLICIES, MHypo, MixedTiming, classic_deadlines
from conformance.protocols.mixed.judge import compare, short, sync_partitions
from conformance.protocols.mixed.operation import MixedOperation
from conformance.wire.session import TargetSession
from model.mixed.consumer_group import MixedConfig
from model.mixed.coordinator import MixedCoordinator
from model.mixed.state import MixedState
from model.result import Result


@dataclass
class MixedOraclePort(MixedOperation, MixedAdoption, ExchangePort):
    """One real group, both protocols' members, the mixed model beside it (module docstring); one
    operation: `MixedOperation`; the target's choices it adopts: `MixedAdoption`."""

    coordinator: MixedCoordinator
    session: TargetSession
    timing: MixedTiming = field(default_factory=MixedTiming)
    #: the target's launcher states ``group.consumer.migration.policy`` (else it is a hypothesis)
    policy_known: bool = False

    def __post_init__(self) -> None:
        self.adapter = self.session.adapter
        self.chooser = RefChooser()
        known = self.coordinator.config.policy.value if self.policy_known else None
        origins = {k: v for k, v in ORIGINS.items() if known is None or v[2] == known}
        self.coords = {k: self._with_origin(*v) for k, v in origins.items()}
        self.policy_reported = False
        self.real_group = self.session.next_group()
        self.t0 = time.monotonic()
        self.hypos: list[MHypo] = [MHypo(MixedState(), k) for k in self.coords]
        self.topics = TopicMap()
        self.findings: list[Finding] = []
        self.log: list[str] = []
        self.members: set[str] = set()
        self.notes_reported = 0
        self.crashed = False
        self._t_ans = 0
        #: why the run left what this oracle follows (a request parked by target and model), or None
        self.unsupported: str | None = None
        self.rejoin_reported = False
        self.current_member = "?"
        self._pending: tuple[Any, int] = (None, 0)  # the request `_await` decodes an answer to

    # ------------------------------------------------------------------ failover
    #: which run's restart budget this port spends; the model group (consumer_failover)
    protocol_name = "mixed"
    group_id = "g"

    @property
    def supports_failover(self) -> bool:
        """The target restarts on its own state (static; the budget is `restart_left`; a group of
        either type fails over, `mixed_failover`)."""
        from conformance.protocols.consumer.failover import can_restart

        return can_restart(self)

    def restart_left(self) -> bool:
        from conformance.protocols.consumer.failover import restarts_left

        return restarts_left(self)

    def failover(self) -> None:
        """Restart the target and reload the hypotheses' group, consumer or classic (`mixed_failover`)."""
        from conformance.protocols.mixed.failover import restart

        restart(self)

    def _dedupe(self, cands: list[Any]) -> list[Any]:
        """Equal hypotheses also keep equal durable classic records (`MHypo.durable`)."""
        return dedupe(
            cands,
            lambda o, c: o.origin == c.origin and o.state == c.state and o.durable == c.durable,
            self.timing.max_hypotheses,
        )

    def _with_origin(self, origin: int, rejoin: str, policy: str) -> MixedCoordinator:
        from model.mixed.state import MigrationPolicy

        base = self.coordinator
        consumer = dataclasses.replace(base.config.consumer, initial_group_epoch=origin)
        config = dataclasses.replace(
            base.config, consumer=consumer, classic_rejoin_epoch=rejoin, policy=MigrationPolicy(policy)
        )
        coord = type(base)(config, self.chooser)
        # the server assignor's choice can be replaced by the target's (`consumer.adoption.Adopting`)
        coord.consumer = adopting(coord.consumer, origin)  # type: ignore[assignment]
        return coord

    def state(self) -> MixedState:
        return self.hypos[0].state

    def reported_coordinator(self) -> MixedCoordinator:
        return self.coords[self.hypos[0].origin] if self.hypos else self.coordinator

    # ------------------------------------------------------------------ topics and time
    def create_topic(self, topic: str, partitions: int) -> None:
        from conformance.protocols.topic_ops import seeded_topic

        seeded_topic(self.session, self.topics, topic, partitions)
        for h in self.hypos:
            self.coords[h.origin].create_topic(h.state, topic, partitions)

    def advance(self) -> None:
        t = self.clock()
        for h in self.hypos:
            self._fire_certain(h, t)

    # ------------------------------------------------------------------ hypotheses
    def _run_timers(self, h: MHypo, to: int) -> None:
        h.track(self._coord(h).advance(h.state, to))

    def _coord(self, h: MHypo) -> MixedCoordinator:
        """``h``'s coordinator, its consumer timers' tie order set as ``h`` has it."""
        coord = self.coords[h.origin]
        coord.consumer.reverse_ties = h.ties_reversed
        return coord

    def _timer_deadlines(self, h: MHypo) -> list[int]:
        """The consumer timers' deadlines (their tie order is the model's choice)."""
        return sorted(tm.deadline for g in h.state.consumer.groups.values() for tm in g.timers.values())

    def _candidates(
        self, h: MHypo, t: int, t_ans: int, request: Any, ref: int, target: Any, prior: Any = None
    ) -> list[tuple[MHypo, str | None]]:
        self._t_ans = t_ans  # `_run` answers a parked request with the timers due by then
        return super()._candidates(h, t, t_ans, request, ref, target, prior)

    def _apply_candidate(
        self, c: MHypo, request: Any, ref: int, at: int, target: Any, prior: Any
    ) -> list[tuple[MHypo, str | None]]:
        """`_apply`, plus the uniform assignor's other legal tie-breaks (`assignor_ties`)."""
        from conformance.protocols.mixed.assignor_ties import apply_with_ties

        return apply_with_ties(self, c, request, ref, at, target, prior)

    def _run(self, c: MHypo, request: Any, ref: int, at: int, until: int | None = None) -> Any:
        """The model's answer to ``request`` at ``at``; a request the model parks (a classic join
        phase that a timer completes, e.g. the initial rebalance delay) is answered by the timers
        due up to ``until`` (the target's answer time), fired in deadline order."""
        self.chooser.reset(ref)
        coord = self._coord(c)
        result = c.track(coord.handle(c.state, request, ref, at))
        answer = next((d.response for d in result.deliveries if d.ref == ref), None)
        horizon = at if until is None else max(at, until)
        while answer is None:
            due = [d for d in self._deadlines(c) if d <= horizon]
            if not due:
                break
            step = min(due)
            later = c.track(coord.advance(c.state, step))
            c.now = max(c.now, step)
            answer = next((d.response for d in later.deliveries if d.ref == ref), None)
        return answer

    def _deadlines(self, h: MHypo) -> set[int]:
        return {tm.deadline for g in h.state.consumer.groups.values() for tm in g.timers.values()} | {
            d for g in h.state.classic.groups.values() for d, *_ in classic_deadlines(g)
        }

    def _apply(
        self, c: MHypo, request: Any, ref: int, at: int, target: Any, prior: Any
    ) -> list[tuple[MHypo, str | None]]:
        before = c.copy()
        answer = self._run(c, request, ref, at, self._t_ans)
        # the model handled the request at ``at``: its clock is there, but never past a timer this
        # hypothesis left unfired (inside the tolerance window the target may not have fired it
        # yet), so invariants about deadlines do not read it as overdue (seen at
        # `check --protocol mixed` once a failover rule changed the draws)
        unfired = [d for d in self._deadlines(c) if d <= at]
        c.now = max(c.now, min([at] + [d - 1 for d in unfired]))
        c._answer = answer  # type: ignore[attr-defined]
        if target is None:
            return [(c, None)]
        why, _ = compare(answer, target, prior)
        if why is None:
            return [(self._reveal(before, c, request, target), None)]
        adopted = self._adopt_member_id(c, answer, target, prior)
        if adopted is None:
            adopted = self._adopt_assignment(before, request, ref, at, answer, target, prior)
        if adopted is not None:
            return [(self._reveal(before, adopted[0], request, target), None)]
        return [(c, f"{short(target)} vs model {short(answer)}: {why}")]


def mixed_config(handle: Any) -> MixedConfig:
    """The mixed model with the target's learned group settings (`conformance.targets.settings`)."""
    from conformance.protocols.build import classic_config, consumer_config
    from conformance.protocols.consumer.setup import consumer_model_config
    from model.mixed.state import MigrationPolicy

    consumer_keys = consumer_model_config(handle)
    policy = MigrationPolicy(str(handle.settings["group.consumer.migration.policy"]))
    # (the oracle keeps every policy as a hypothesis unless the launcher states it: mixed_check)
    return MixedConfig(
        policy=policy,
        classic=classic_config(handle.model_config, "target settings"),
        consumer=consumer_config(consumer_keys, {}, "target settings"),
    )


#: names other modules import from here (their homes: this package, engine/oracle)
__all__ = [
    "ORIGINS",
    "POLICIES",
    "MHypo",
    "MixedOraclePort",
    "RefChooser",
    "Result",
    "compare",
    "mixed_config",
]
__all__ += ["sync_partitions"]
