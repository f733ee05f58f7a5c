"""The consumer-protocol oracle: a real KIP-848 coordinator behind `ConsumerPort`, the model beside it.

The twin of `conformance.protocols.classic.oracle` for ConsumerGroupHeartbeat (api key 68), OffsetCommit
v9 and an admin's DeleteGroups (api key 42). Every request goes to the target over its member's own connection and to the model on the same
input. A ConsumerGroupHeartbeat is answered at once (Kafka never parks it, GroupMetadataManager
``consumerGroupHeartbeat``), so one operation is: send, wait for the answer (with a deadline), then
keep the model *hypotheses* that explain it. Four things the inputs alone do not decide:

* Real time. A model timer (session, rebalance; docs/protocol-reference.md#b8) whose deadline lies in
  ``(t - late, t_answer]`` may or may not have fired in the target when it handled the request
  (sent at ``t``, answered at ``t_answer``); every prefix of those timers in deadline order is a
  candidate. Earlier deadlines have certainly fired, later ones certainly not.
* The server assignor's free choices (docs/protocol-reference.md#b11, #f: the uniform assignor's tie-breaking
  follows Java hash-map order): when the target's answer differs from the model only in the
  assignment, the oracle ADOPTS the target's choice if a legal completion exists (`adoption`);
  otherwise the target's choice is illegal, a protocol finding.
* Where a new group's epochs start: Kafka 4.0 starts at 0, Kafka 4.3+ at 1 (KAFKA-20268,
  apache/kafka#21700, ``initial_group_epoch``). Both are protocol-legal; the first join decides.
* The member id a v0 join without one is given (KIP-848; v1 members bring their own, KIP-1082): the
  hypotheses run the join under the target's id when no member has it (`generated_member_id`).

No hypothesis explains the answer -> a protocol finding (rule ``oracle.ConsumerGroupHeartbeat`` or
``oracle.OffsetCommit``) with the request, the target's answer and what the model expected.
Differences that only concern Apache Kafka's exact choices (the heartbeat interval echoed, an
unchanged assignment sent again) are kafka-compat findings.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.engine.oracle.findings import Finding
from conformance.engine.oracle.port import ExchangePort
from conformance.protocols.consumer.adoption import AssignmentAdoption, adopting, revealed_assignment
from conformance.protocols.consumer.assignment import complete_assignment, legal_assignment
from conformance.protocols.consumer.codec import (
    API_CONSUMER_GROUP_HEARTBEAT,
    API_DELETE_GROUPS,
    API_OFFSET_COMMIT,
    OFFSET_COMMIT_VERSION,
    TopicMap,
    encode_delete_groups,
    encode_heartbeat,
    encode_offset_commit,
)
from conformance.protocols.consumer.hypo import CHypo
from conformance.protocols.consumer.judge import compare
from conformance.protocols.consumer.operation import ConsumerOperation
from conformance.wire.session import TargetSession
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    OffsetCommitRequest,
)
from model.consumer.state import ConsumerCoordinatorState
from model.consumer.txn import ConsumerCoordinatorConfig
from model.result import Result

#: the port the consumer and mixed oracles share (`conformance.engine.oracle.port.ExchangePort`)
HypothesisFindings = ExchangePort


@dataclass
class ConsumerTiming:
    late_ms: int = 500
    answer_deadline_ms: int = 5000
    max_hypotheses: int = 16


@dataclass
class ConsumerOraclePort(ConsumerOperation, AssignmentAdoption, ExchangePort):
    """`ConsumerPort` for a real coordinator plus the model hypotheses (see module docstring); one
    operation: `ConsumerOperation`; the assignor choices it adopts: `AssignmentAdoption`."""

    coordinator: ConsumerCoordinator
    session: TargetSession
    timing: ConsumerTiming = field(default_factory=ConsumerTiming)

    #: which run's restart budget this port spends (`consumer_failover.restarts_left`)
    protocol_name = "consumer"

    @property
    def supports_failover(self) -> bool:
        """The target restarts on its own state (static, so the machine's rule set is the same in
        every example Hypothesis replays; the run's budget is `restart_left`)."""
        from conformance.protocols.consumer.failover import can_restart

        return can_restart(self)

    def restart_left(self) -> bool:
        """The run's restart budget (`check --restarts N`, per protocol) has one left."""
        from conformance.protocols.consumer.failover import restarts_left

        return restarts_left(self)

    def _own_topics(self) -> bool:
        """The target creates topics on request (not seeded at start), so this port names its own."""
        launcher = self.session.launcher
        return launcher is None or "create_topics" in getattr(launcher, "capabilities", ())

    @property
    def supports_topic_changes(self) -> bool:
        """CreatePartitions and DeleteTopics offered (`topic_ops`) on a target that creates topics on
        request; topic creation was there before."""
        versions = self.adapter.connect().api_versions
        return self._own_topics() and all(versions.get(k, (0, -1))[1] >= 0 for k in (37, 20))

    @property
    def supports_delete_groups(self) -> bool:
        """The target offers DeleteGroups (ApiVersions): the `delete_group` rule is drawn only then."""
        return self.adapter.connect().api_versions.get(API_DELETE_GROUPS, (0, -1))[1] >= 0

    def __post_init__(self) -> None:
        self.adapter = self.session.adapter
        self.config: ConsumerCoordinatorConfig = self.coordinator.config
        self.coords = {e: adopting(self.coordinator, e) for e in (0, 1)}
        self.real_group = self.session.next_group()
        self.t0 = time.monotonic()
        self.hypos: list[CHypo] = [CHypo(ConsumerCoordinatorState(), 0), CHypo(ConsumerCoordinatorState(), 1)]
        self.topics = TopicMap()
        if self._own_topics():  # a regex subscription must match the port's own topic names
            from conformance.protocols import topic_ops

            self.topics.frame = topic_ops.fresh_frame(self.session, topic_ops.topic_owner(self))
        self.findings: list[Finding] = []
        self.current_member = "?"
        self.log: list[str] = []
        self.answers: dict[int, Any] = {}
        #: every request sent: ref -> (member, model request, version on the wire, port ms)
        self.requests: dict[int, tuple[str, Any, int, int]] = {}
        self.members: set[str] = set()
        self.notes_reported = 0
        self.adoptions = 0
        self.origin_reported = False
        #: the model group the members join (`consumer_failover` reads the recovered group under it)
        self.group_id = "g"
        #: the target crashed: nothing more to wait for (the simulator stops sleeping)
        self.crashed = False

    # ------------------------------------------------------------------ ConsumerPort
    def heartbeat(self, request: ConsumerGroupHeartbeatRequest, ref: int, now: int) -> Result:
        self.group_id = request.group_id
        version = request.version
        if not _offers(self.adapter.connect(), API_CONSUMER_GROUP_HEARTBEAT, version):
            self._finding(
                "protocol",
                "oracle.ConsumerGroupHeartbeat",
                f"target offers no ConsumerGroupHeartbeat v{request.version} "
                f"(offers {self.adapter.connect().api_versions.get(API_CONSUMER_GROUP_HEARTBEAT)})",
            )
            return Result()
        payload = encode_heartbeat(request, version, self.real_group, self.topics)
        return self._exchange(API_CONSUMER_GROUP_HEARTBEAT, request, payload, ref)

    def offset_commit(self, request: object, ref: int, now: int) -> Result:
        assert isinstance(request, OffsetCommitRequest)
        if not _offers(self.adapter.connect(), API_OFFSET_COMMIT, OFFSET_COMMIT_VERSION):
            self._finding("protocol", "oracle.OffsetCommit", "target offers no OffsetCommit v9")
            return Result()
        payload = encode_offset_commit(request, OFFSET_COMMIT_VERSION, self.real_group, self.topics)
        return self._exchange(API_OFFSET_COMMIT, request, payload, ref)

    def delete_groups(self, request: DeleteGroupsRequest, ref: int, now: int) -> Result:
        """An admin's DeleteGroups, on its own connection to the group's coordinator (as the admin
        client sends it), at the highest version (v0-v2) the target offers."""
        lo, hi = self.adapter.connect().api_versions.get(API_DELETE_GROUPS, (0, -1))
        version = min(hi, request.version)
        if version < max(lo, 0):
            self._finding(
                "protocol", "oracle.DeleteGroups", f"target offers no DeleteGroups v0-v{request.version}"
            )
            return Result()
        payload = encode_delete_groups(request, version, {self.group_id: self.real_group})
        return self._exchange(API_DELETE_GROUPS, request, payload, ref)

    def advance(self, now: int) -> Result:
        t = self.clock()
        for h in self.hypos:
            self._fire_certain(h, t)
        return Result()

    def topic(self, action: str, topic: str, partitions: int) -> Result:
        """A topic change on the target (`topic_ops`), then on every hypothesis. Topics are this
        port's own (named per group), so growing or deleting one never touches another example's."""
        from conformance.protocols import topic_ops

        topic_ops.change_on_target(self, action, topic, partitions, self._own_topics())
        self.log.append(f"t={self.clock()} topic {action} {topic} {partitions or ''}".rstrip())
        for h in self.hypos:
            coord = self.coords[h.origin]
            if action == "create":
                coord.create_topic(h.state, topic, partitions)
            elif action == "add_partitions":
                coord.add_partitions(h.state, topic, partitions)
            else:
                coord.delete_topic(h.state, topic)
        return Result()

    def failover(self, now: int) -> Result:
        """Restart the target and reload the hypotheses' durable state (`consumer_failover`)."""
        from conformance.protocols.consumer.failover import restart

        result: Result = restart(self)
        return result

    def coordinator_state(self) -> ConsumerCoordinatorState:
        return self.hypos[0].state

    # ------------------------------------------------------------------ hypotheses
    def _run_timers(self, h: CHypo, to: int) -> None:
        coord = self.coords[h.origin]
        coord.reverse_ties = h.ties_reversed
        coord.advance(h.state, to)

    def _deadlines(self, h: CHypo) -> set[int]:
        return set(self._timer_deadlines(h))

    def _timer_deadlines(self, h: CHypo) -> list[int]:
        return sorted(tm.deadline for g in h.state.groups.values() for tm in g.timers.values())

    def _fire_to(self, c: CHypo, deadline: int, k: int) -> None:
        super()._fire_to(c, deadline, k)
        c.fired = k

    def _apply_candidate(
        self, c: CHypo, request: Any, ref: int, at: int, target: Any, prior: Any
    ) -> list[tuple[CHypo, str | None]]:
        return self._apply(c, request, ref, at, target, prior)

    def _run(self, c: CHypo, request: Any, ref: int, at: int) -> Any:
        coord = self.coords[c.origin]
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            result = coord.handle_consumer_group_heartbeat(c.state, request, ref, at)
        elif isinstance(request, DeleteGroupsRequest):
            result = coord.handle_delete_groups(c.state, request, ref, at)
        else:
            result = coord.handle_offset_commit(c.state, request, ref, at)
        return next((d.response for d in result.deliveries if d.ref == ref), None)


def _offers(caps: Any, api_key: int, version: int) -> bool:
    """ApiVersions lists ``version`` of ``api_key`` (kio encodes every version the schemas have)."""
    lo, hi = caps.api_versions.get(api_key, (0, -1))
    return bool(lo <= version <= hi)


PortFactory = Callable[[ConsumerCoordinator], ConsumerOraclePort]

#: names other modules import from here (their homes: this package, engine/oracle)
__all__ = ["ConsumerOraclePort", "ConsumerTiming", "HypothesisFindings", "PortFactory", "compare"]
__all__ += ["complete_assignment", "legal_assignment", "revealed_assignment"]
