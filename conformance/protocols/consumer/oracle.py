"""The consumer-protocol oracle: a real KIP-848 coordinator behind `ConsumerPort`, the model beside it.

The twin of `conformance.protocols.classic.oracle` for ConsumerGroupHeartbeat (api key 68) and OffsetCommit
v9. Every request goes to the target over its member's own connection and to the model on the same
input. A ConsumerGroupHeartbeat is answered at once (Kafka never parks it, GroupMetadataManager
``consumerGroupHeartbeat``), so one operation is: send, wait for the answer (with a deadline), then
keep the model *hypotheses* that explain it. Three things the inputs alone do not decide:

* Real time. A model timer (session, rebalance; docs/protocol-reference.md#b8) whose deadline lies in
  ``(t - late, t_answer]`` may or may not have fired in the target when it handled the request
  (sent at ``t``, answered at ``t_answer``); every prefix of those timers in deadline order is a
  candidate. Earlier deadlines have certainly fired, later ones certainly not.
* The server assignor's free choices (docs/protocol-reference.md#b11, #f: the uniform assignor's tie-breaking
  follows Java hash-map order). When the target's answer differs from the model only in the
  assignment, the oracle ADOPTS the target's choice: it installs a target assignment in which the
  member gets what the target gave and the other members' targets are completed legally — each
  partition to at most one member, only subscribed topics, every subscribed partition assigned,
  balanced as the assignor promises (uniform: sizes differ by at most one on homogeneous
  subscriptions; range: per topic). A member whose target has been revealed since the assignment
  was computed is never changed by a later adoption; if no legal completion exists the
  target's choice is illegal — a protocol finding.
* Where a new group's epochs start: Kafka 4.0 starts at 0, Kafka 4.3+ at 1 (KAFKA-20268,
  apache/kafka#21700, ``initial_group_epoch``). Both are protocol-legal; the first join decides.

No hypothesis explains the answer -> a protocol finding (rule ``oracle.ConsumerGroupHeartbeat`` or
``oracle.OffsetCommit``) with the request, the target's answer and what the model expected.
Differences that only concern Apache Kafka's exact choices (the heartbeat interval echoed, an
unchanged assignment sent again) are kafka-compat findings.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.engine.oracle.timer_split import SplitPort, carry, fired_before, switched_from
from conformance.errors import TargetError
from conformance.protocols.classic.oracle import Finding, TargetSession, crash_detail
from conformance.protocols.consumer.codec import (
    API_CONSUMER_GROUP_HEARTBEAT,
    API_OFFSET_COMMIT,
    OFFSET_COMMIT_VERSION,
    TopicMap,
    decode_heartbeat,
    decode_offset_commit,
    encode_heartbeat,
    encode_offset_commit,
    topic_ids,
)
from model.consumer.assignors import AssignmentMember, GroupAssignment
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    TopicPartition,
)
from model.consumer.records import TargetAssignmentMemberRecord, apply
from model.consumer.state import ConsumerCoordinatorState, ConsumerGroup, MemberState
from model.consumer.txn import ConsumerCoordinatorConfig
from model.errors import ErrorCode
from model.result import Delivery, Result

#: How long a new topic takes to reach the group coordinator's metadata image (generous on a busy box).
TOPIC_PROPAGATION_S = 1.0
NAMES = {API_CONSUMER_GROUP_HEARTBEAT: "ConsumerGroupHeartbeat", API_OFFSET_COMMIT: "OffsetCommit"}


# ---------------------------------------------------------------------- legality of an assignment
def legal_assignment(
    assignment: Mapping[str, frozenset[TopicPartition]],
    members: Mapping[str, AssignmentMember],
    topics: Mapping[str, int],
    assignor: str,
    homogeneous: bool,
) -> str | None:
    """None when ``assignment`` is one the assignor may return (docs/protocol-reference.md#b11), else why not."""
    seen: dict[TopicPartition, str] = {}
    for member_id, parts in sorted(assignment.items()):
        spec = members.get(member_id)
        if spec is None:
            return f"partitions targeted to {member_id}, not a member"
        for tp in sorted(parts):
            topic, index = tp
            if topic not in spec.subscribed:
                return f"{topic}-{index} targeted to {member_id}, which does not subscribe to {topic}"
            if topic not in topics or not 0 <= index < topics[topic]:
                return f"{topic}-{index} targeted to {member_id} does not exist"
            if tp in seen:
                return f"{topic}-{index} targeted to both {seen[tp]} and {member_id}"
            seen[tp] = member_id
    for topic, count in sorted(topics.items()):
        subscribers = [m for m, spec in members.items() if topic in spec.subscribed]
        if not subscribers:
            continue
        for index in range(count):
            if (topic, index) not in seen:
                return f"{topic}-{index} is subscribed but targeted to nobody"
        if assignor == "range":
            sizes = [sum(1 for t, _ in assignment.get(m, ()) if t == topic) for m in subscribers]
            if max(sizes) - min(sizes) > 1:
                return f"range: {topic} split {sorted(sizes)} among its subscribers, not balanced"
    if assignor == "uniform" and homogeneous and members:
        sizes = [len(assignment.get(m, frozenset())) for m in members]
        if max(sizes) - min(sizes) > 1:
            return f"uniform: target sizes {sorted(sizes)} differ by more than one on a homogeneous group"
    return None


def complete_assignment(
    base: Mapping[str, frozenset[TopicPartition]],
    fixed: Mapping[str, frozenset[TopicPartition]],
    members: Mapping[str, AssignmentMember],
    topics: Mapping[str, int],
    assignor: str,
    homogeneous: bool,
    pins: Mapping[str, Pin] | None = None,
) -> GroupAssignment | None:
    """A legal assignment giving ``fixed`` members exactly their sets, ``pins`` members at least their
    floor and none of their excluded partitions, the others what they had in ``base`` as far as
    possible (sticky), filled least-loaded first; None when there is none."""
    pins = dict(pins or {})
    floors = {m: p.floor for m, p in pins.items() if m in members and m not in fixed}
    taken: set[TopicPartition] = set()
    for parts in list(fixed.values()) + list(floors.values()):
        if parts & taken:
            return None
        taken |= parts
    free_members = sorted(m for m in members if m not in fixed)
    out: dict[str, set[TopicPartition]] = {m: set(fixed[m]) for m in fixed if m in members}
    for m in free_members:
        out[m] = set(floors.get(m, frozenset()))

    def allowed(m: str, tp: TopicPartition) -> bool:
        pin = pins.get(m)
        return tp[0] in members[m].subscribed and (pin is None or tp not in pin.exclude)

    for m in free_members:
        keep = {tp for tp in base.get(m, frozenset()) if tp not in taken and allowed(m, tp)}
        out[m] |= keep
        taken |= keep
    every = [
        (t, p)
        for t in sorted(topics)
        for p in range(topics[t])
        if any(t in s.subscribed for s in members.values())
    ]
    if assignor == "uniform" and homogeneous and members:
        quota_lo, extra = divmod(len(every), len(members))
        quota_hi = quota_lo + (1 if extra else 0)
        for m in free_members:  # trim over-quota free members (never below their floor)
            for tp in sorted(out[m] - floors.get(m, frozenset()), reverse=True):
                if len(out[m]) <= quota_hi:
                    break
                out[m].discard(tp)
        for m in sorted(free_members, key=lambda m: len(out[m])):
            if sum(1 for x in members if len(out[x]) > quota_lo) <= extra:
                break
            spare = sorted(out[m] - floors.get(m, frozenset()))
            if len(out[m]) > quota_lo and spare:
                out[m].discard(spare[-1])
    taken = set().union(*out.values()) if out else set()
    for tp in every:
        if tp in taken:
            continue
        eligible = [m for m in free_members if allowed(m, tp)]
        if not eligible:
            return None
        owner = min(eligible, key=lambda m: (len(out[m]), m))
        out[owner].add(tp)
    result = {m: frozenset(ps) for m, ps in out.items()}
    if legal_assignment(result, members, topics, assignor, homogeneous) is not None:
        return None
    return result


@dataclass(frozen=True)
class Pin:
    """What the target's answers revealed about a member's target since the assignment was computed:
    it contains ``floor`` (the member's assigned partitions), none of ``exclude`` (partitions it was
    told to revoke), and is exactly ``floor`` when the member is reconciled (``exact``)."""

    floor: frozenset[TopicPartition]
    exclude: frozenset[TopicPartition]
    exact: bool


# ---------------------------------------------------------------------- hypotheses
@dataclass
class CHypo:
    state: ConsumerCoordinatorState
    origin: int  # initial_group_epoch of the coordinator this hypothesis runs
    now: int = 0
    #: what the target revealed of members' targets since the assignment epoch ``pin_epoch``
    pins: Mapping[str, Pin] = field(default_factory=dict)
    pin_epoch: int = -1
    adoptions: int = 0
    fired: int = 0
    #: what this hypothesis adopted from the target (kafka-compat notes: legal, but not the model's choice)
    notes: tuple[str, ...] = ()

    def copy(self) -> CHypo:
        return dataclasses.replace(self, state=self.state.copy())


class _Adopting:
    """Mixed into the model coordinator: `run_assignor` returns the adopted assignment when one is set."""

    adopt: dict[str, frozenset[TopicPartition]] | None = None
    adopt_pins: Mapping[str, Pin] = {}

    def run_assignor(  # type: ignore[no-untyped-def]
        self, name, members, topics, homogeneous
    ) -> GroupAssignment:
        base = super().run_assignor(name, members, topics, homogeneous)  # type: ignore[misc]
        if self.adopt is None:
            return base  # type: ignore[no-any-return]
        done = complete_assignment(base, self.adopt, members, topics, name, homogeneous, self.adopt_pins)
        if done is None:
            raise _NoLegal(f"no legal {name} assignment gives {sorted(self.adopt)} what the target gave")
        return done


class _NoLegal(Exception):
    pass


def adopting(coordinator: ConsumerCoordinator, initial_group_epoch: int) -> ConsumerCoordinator:
    """A copy of ``coordinator`` (mutants included) with the adoption hook and the epoch origin."""
    base = type(coordinator)
    cls = type(f"Adopting{base.__name__}", (_Adopting, base), {})
    out = cls.__new__(cls)
    out.__dict__.update(coordinator.__dict__)
    out.config = dataclasses.replace(coordinator.config, initial_group_epoch=initial_group_epoch)
    out.adopt = None
    return out  # type: ignore[no-any-return]


#: coordinator errors a client answers by finding the coordinator again (Errors.java 14, 15, 16)
COORDINATOR_MOVED = frozenset(
    {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR}
)
#: how long a request is resent after such answers (the classic oracle's bound, faults.RETRY_DEADLINE_S)
RESEND_DEADLINE_S = 30.0


def _coordinator_moved(answer: Any) -> bool:
    if answer is None:
        return False
    if isinstance(answer, OffsetCommitResponse):
        codes = set(answer.errors().values())
        return bool(codes) and codes <= COORDINATOR_MOVED
    return answer.error_code in COORDINATOR_MOVED


# ---------------------------------------------------------------------- comparison
def compare(model: Any, target: Any, prior: frozenset[TopicPartition] | None) -> tuple[str | None, list[str]]:
    """(protocol mismatch or None, kafka-compat notes) between a model answer and the target's."""
    notes: list[str] = []
    if isinstance(model, OffsetCommitResponse):
        mine, theirs = model.errors(), target.errors()
        if mine != theirs:
            return f"partition errors {_errs(theirs)}, model {_errs(mine)}", notes
        return None, notes
    if model.error_code != target.error_code:
        return f"error {_e(target.error_code)}, model {_e(model.error_code)}", notes
    if model.error_code != ErrorCode.NONE:
        return None, notes
    if model.member_id != target.member_id:
        return f"member id {target.member_id!r}, model {model.member_id!r}", notes
    if model.member_epoch != target.member_epoch:
        return f"member epoch {target.member_epoch}, model {model.member_epoch}", notes
    mine, theirs = model.assigned(), target.assigned()
    if mine != theirs:
        # an absent assignment means "unchanged" (docs/protocol-reference.md#b10): the same information either way
        if mine is None and theirs == prior:
            notes.append("sends the unchanged assignment again (the model omits it, GMM L1811)")
        elif theirs is None and mine == prior:
            notes.append("omits an assignment the model sends (full request or join, GMM L1811)")
        else:
            return f"assignment {_tps(theirs)}, model {_tps(mine)}", notes
    if model.heartbeat_interval_ms != target.heartbeat_interval_ms:
        notes.append(
            f"heartbeat interval {target.heartbeat_interval_ms} ms, model {model.heartbeat_interval_ms} ms"
        )
    return None, notes


def _e(code: Any) -> str:
    return code.name if isinstance(code, ErrorCode) else str(code)


def _tps(parts: frozenset[TopicPartition] | None) -> str:
    if parts is None:
        return "none"
    return "{" + ", ".join(f"{t}-{p}" for t, p in sorted(parts)) + "}"


def _errs(errors: Mapping[TopicPartition, Any]) -> str:
    return "{" + ", ".join(f"{t}-{p}: {_e(c)}" for (t, p), c in sorted(errors.items())) + "}"


def _short(resp: Any) -> str:
    if resp is None:
        return "nothing"
    if isinstance(resp, OffsetCommitResponse):
        return f"OffsetCommit{_errs(resp.errors())}"
    if resp.error_code != ErrorCode.NONE:
        return f"{_e(resp.error_code)}"
    return f"NONE epoch {resp.member_epoch} assignment {_tps(resp.assigned())}"


# ---------------------------------------------------------------------- the port
@dataclass
class ConsumerTiming:
    late_ms: int = 500
    answer_deadline_ms: int = 5000
    max_hypotheses: int = 16


class HypothesisFindings(SplitPort):
    """What the consumer and the mixed oracle ports share: pruning equal hypotheses, recording a
    finding at its level, a crash of the target as a finding with the launcher's report, and the
    timers fired before a request as an observation of their own (`SplitPort`: the reported
    hypothesis' ``pre``, `timer_split.fired_before`). The port provides ``timing``, ``findings``, ``session``, ``clock`` and ``crashed``."""

    timing: Any
    findings: list[Finding]
    session: TargetSession
    clock: Any
    crashed: bool

    #: margin between an answer that shows the target running and an operation it vouches for, and
    #: how long after a deadline a timer counts as fired when the target has not been seen running
    seen_margin_ms = 30
    unseen_cap_ms = 2000

    def _note_answer(self, sent: int, at: int) -> None:
        """An operation sent at ``sent`` was answered at ``at`` (port ms), for `_certain_cutoff`."""
        self.__dict__.setdefault("answered", []).append((sent, at))

    def _certain_cutoff(self, t: int) -> int:
        """Model timers due up to this have certainly fired in the target before an operation at ``t``.

        As in the classic oracle (`OraclePort._seen_running`): a due Kafka timer is queued as a
        `CoordinatorWriteEvent` by the timer's reaper thread (coordinator-common
        `runtime/CoordinatorRuntime.java`, `EventBasedCoordinatorTimer`), so a broker paused across
        the deadline races it with the requests that arrived meanwhile. A deadline counts as passed
        only when it lies ``late_ms`` before ``t`` and the target answered, at least
        ``seen_margin_ms`` before ``t``, a request sent at or after it plus the longest recent
        answer delay (it was running then, past its own deadline, below); or ``unseen_cap_ms``
        before ``t``.

        The model dates a timer from the send of the request that armed it; Kafka from its handling,
        anywhere up to the answer (GroupMetadataManager ``scheduleConsumerGroupSessionTimeout``
        schedules a relative ``sessionTimeoutMs`` delay, L3018-3030, apache/kafka mirror 1eb7644;
        server-common `util/timer/SystemTimer.java` ``add`` adds it to the clock at that moment,
        L67-70). So the target's deadline may lie up to the recent answer delay after the model's,
        and being seen running vouches for a deadline only that much earlier (a heartbeat answered
        787 ms late armed a session Kafka had not expired for a request sent 885 ms after the model's
        deadline, though it had answered one sent 378 ms after it: "Consumer ci seed 2 under load" in
        `benchmarks/results/oracle_false_alarms.md`)."""
        answered: list[tuple[int, int]] = self.__dict__.get("answered", [])
        lag = max((a - s for s, a in answered[-32:]), default=0)
        running = max((s for s, a in answered if a <= t - self.seen_margin_ms), default=None)
        if running is None:
            return t - self.unseen_cap_ms
        return max(min(t - self.timing.late_ms, running - lag), t - self.unseen_cap_ms)

    def _dedupe(self, cands: list[Any]) -> list[Any]:
        out: list[Any] = []
        for c in cands:
            if not any(o.origin == c.origin and o.state == c.state for o in out):
                out.append(c)
        return out[: self.timing.max_hypotheses]

    # ------------------------------------------------------------------ findings
    def _finding(self, level: str, rule: str, message: str) -> None:
        f = Finding(level, rule, message, self.clock())
        (self.findings if level == "protocol" else self.session.compat).append(f)

    def _crash(self, t: int, what: str) -> None:
        self.crashed = True
        if any(f.rule == "target.crash" for f in self.findings):
            return
        self._finding("protocol", "target.crash", f"at t={t}: {what}{crash_detail(self.session.launcher)}")


@dataclass
class ConsumerOraclePort(HypothesisFindings):
    """`ConsumerPort` for a real coordinator plus the model hypotheses (see module docstring)."""

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

    def __post_init__(self) -> None:
        self.adapter = self.session.adapter
        self.config: ConsumerCoordinatorConfig = self.coordinator.config
        self.coords = {e: adopting(self.coordinator, e) for e in (0, 1)}
        self.real_group = self.session.next_group()
        self.t0 = time.monotonic()
        self.hypos: list[CHypo] = [CHypo(ConsumerCoordinatorState(), 0), CHypo(ConsumerCoordinatorState(), 1)]
        self.topics = TopicMap()
        self.findings: list[Finding] = []
        self.current_member = "?"
        self.log: list[str] = []
        self.answers: dict[int, Any] = {}
        self.members: set[str] = set()
        self.notes_reported = 0
        self.adoptions = 0
        self.origin_reported = False
        #: the model group the members join (`consumer_failover` reads the recovered group under it)
        self.group_id = "g"
        #: the target crashed: nothing more to wait for (the simulator stops sleeping)
        self.crashed = False

    # ------------------------------------------------------------------ clock
    def clock(self) -> int:
        return int((time.monotonic() - self.t0) * 1000)

    def sleep_until(self, ms: int) -> None:
        while True:
            left = ms - self.clock()
            if left <= 0:
                return
            time.sleep(min(left, 50) / 1000)

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

    def advance(self, now: int) -> Result:
        t = self.clock()
        for h in self.hypos:
            self._fire_certain(h, t)
        return Result()

    def topic(self, action: str, topic: str, partitions: int) -> Result:
        """A topic change on the target (`topic_ops`), then on every hypothesis. Topics are this
        port's own (named per group), so growing or deleting one never touches another example's."""
        from conformance.protocols import topic_ops

        if action == "create" and not self._own_topics():
            # a target whose topics are seeded at start (the librdkafka mock): the run's shared names
            real = self.session.real_topic(topic, partitions)
            fresh = real not in self.session.__dict__.get("topic_ids", {})
            self.session.ensure_topic(real)
            ids = _topic_ids(self.session, [real])
            if fresh:  # counted while the target is seen running (`topic_ops.seen_running_for`)
                topic_ops.seen_running_for(self.session.adapter, real, TOPIC_PROPAGATION_S)
            if real not in ids:
                raise TargetError(
                    f"{self.session.adapter.bootstrap}: Metadata does not list topic {real} with an id"
                )
            self.topics.add(topic, real, ids[real])
        elif action == "create":
            # a re-created topic keeps its name (members subscribe by name; Kafka gives it a new id)
            real = self.topics.real.get(topic) or topic_ops.fresh_name(
                self.session, topic, partitions, self.real_group.rsplit("-", 1)[-1]
            )
            topic_ops.create_topic(self.session, real, partitions)
            # the coordinator learns a topic from the next metadata image (GMM onNewMetadataImage):
            # wait until Metadata lists it with leaders, plus the coordinator's margin
            topic_ops.wait_until(self.adapter, real, partitions)
            self.session.__dict__.setdefault("topic_ids", {}).pop(real, None)
            ids = _topic_ids(self.session, [real])
            if real not in ids:
                raise TargetError(
                    f"{self.session.adapter.bootstrap}: Metadata does not list topic {real} with an id"
                )
            self.topics.add(topic, real, ids[real])
        elif action == "add_partitions":
            topic_ops.create_partitions(self.adapter, self.topics.real_name(topic), partitions)
        elif action == "delete":
            topic_ops.delete_topic(self.adapter, self.topics.real_name(topic))
        else:
            raise ValueError(f"unknown topic action {action!r}")
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

    def model_now(self) -> int:
        """The reported hypothesis' clock: every model timer up to it has fired (lags the real clock
        by at most the tolerance window)."""
        return self.hypos[0].now if self.hypos else 0

    def take_findings(self) -> list[Finding]:
        taken, self.findings = self.findings, []
        return taken

    def close(self) -> None:
        for member in self.members:
            self.adapter.drop_member(member)

    # ------------------------------------------------------------------ one operation
    def _exchange(self, api: int, request: Any, payload: Any, ref: int) -> Result:
        member = self.current_member
        self.members.add(member)
        self.pre_split = self.switched = None
        reported = self.hypos[0] if self.hypos else None
        t = self.clock()
        try:
            self._submit(member, payload, ref)
        except TargetError as e:
            self._crash(t, f"cannot send {NAMES[api]}: {e}")
            return Result()
        target, t_ans = self._await(ref, t)
        since = time.monotonic()
        while _coordinator_moved(target) and time.monotonic() - since < RESEND_DEADLINE_S:
            # the coordinator is loading or moved (a restart): find it again and resend, as the Java
            # consumer does (AbstractHeartbeatRequestManager.onErrorResponse); only the answer after
            # that is judged
            self.log.append(f"t={t} ref {ref} {member} {NAMES[api]} -> {_short(target)}: resent")
            self.session.resends += 1
            self.adapter.coordinators.pop(self.real_group, None)
            try:
                self.adapter.find_coordinator(self.real_group, deadline_s=RESEND_DEADLINE_S)
                time.sleep(0.05)
                t = self.clock()
                self._submit(member, payload, ref)
            except TargetError as e:
                self._crash(t, f"cannot resend {NAMES[api]}: {e}")
                return Result()
            target, t_ans = self._await(ref, t)
        if target is not None:
            self._note_answer(t, t_ans)
        self.log.append(f"t={t} ref {ref} {member} {NAMES[api]} -> {_short(target)} at t={t_ans}")
        if target is None:
            # unknown whether the target applied it: keep both
            cands = [c for h in self.hypos for c, _ in self._candidates(h, t, t_ans, request, ref, None)]
            cands += [h for h in self.hypos]
            self.hypos = self._dedupe(cands)
            if not any(f.rule == "target.crash" for f in self.findings):
                self._finding(
                    "protocol",
                    f"oracle.{NAMES[api]}",
                    f"at t={t}, {member} sends {NAMES[api]} (ref {ref}): no answer within "
                    f"{self.timing.answer_deadline_ms} ms",
                )
            return Result()
        self.answers[ref] = target
        prior = self._prior(request)
        cands: list[CHypo] = []
        reasons: list[str] = []
        for h in self.hypos:
            for c, why in self._candidates(h, t, t_ans, request, ref, target, prior):
                if why is None:
                    cands.append(c)
                else:
                    reasons.append(why)
        if not cands:
            what = f"{member} sends {NAMES[api]} v{getattr(request, 'version', '?')} (ref {ref})"
            uniq = list(dict.fromkeys(reasons))
            self._finding(
                "protocol",
                f"oracle.{NAMES[api]}",
                f"at t={t}, {what}: the target answered {_short(target)}; no model hypothesis explains it "
                f"({len(uniq)} tried): " + " | ".join(uniq[:4]),
            )
            if not self.adapter.alive():
                self._crash(t, "the target stopped answering")
        else:
            cands.sort(key=lambda c: (c.adoptions, c.origin, -c.fired))
            self.hypos = self._dedupe(cands)
            h0 = self.hypos[0]
            self.pre_split = getattr(h0, "pre", None)  # the timers before the request: their own step
            self.switched = switched_from(reported, h0)
            _m, notes = compare(self._model_answer(h0, ref) or target, target, prior)
            for note in notes:
                self._finding("kafka-compat", f"compat.{NAMES[api]}", f"ref {ref}: {note}")
            for note in h0.notes[self.notes_reported :]:
                self._finding("kafka-compat", "compat.assignor", f"ref {ref}: {note}")
            self.notes_reported = max(self.notes_reported, len(h0.notes))
            self.adoptions = max(self.adoptions, h0.adoptions)
            origins = {h.origin for h in self.hypos}
            if (
                not self.origin_reported
                and len(origins) == 1
                and isinstance(target, ConsumerGroupHeartbeatResponse)
                and target.member_epoch > 0
            ):
                self.origin_reported = True
                if origins == {0}:
                    self._finding(
                        "kafka-compat",
                        "compat.ConsumerGroupHeartbeat",
                        f"ref {ref}: a new group starts at epoch 0; Apache Kafka 4.3+ starts it at 1 "
                        "(KAFKA-20268, apache/kafka#21700)",
                    )
        return Result(deliveries=[Delivery(ref, target)])

    def _submit(self, member: str, payload: Any, ref: int) -> None:
        """Write the request (the wire-fault port, consumer_faults.py, puts the fault proxy to work here)."""
        self.adapter.submit(member, self.real_group, payload, ref, member)

    def _await(self, ref: int, t: int) -> tuple[Any, int]:
        end = t + self.timing.answer_deadline_ms
        while self.clock() < end:
            for arrival in self.adapter.poll(0.02):
                if arrival.tag != ref:
                    continue
                at = int((arrival.at - self.t0) * 1000)
                self.session.rtt_ms.append(at - t)
                if arrival.value is None:
                    return None, at
                try:
                    if arrival.api_key == API_CONSUMER_GROUP_HEARTBEAT:
                        return decode_heartbeat(arrival.value, self.topics), at
                    return decode_offset_commit(arrival.value, self.topics), at
                except Exception as e:  # noqa: BLE001 - a value we cannot map is a finding
                    self._finding("protocol", "wire.undecodable", f"ref {ref}: {e}")
                    return None, at
            for wf in self.adapter.take_findings():
                self._finding("protocol", f"wire.{wf.kind}", wf.describe())
                if wf.kind in ("closed", "truncated"):
                    self._crash(t, "the target closed a connection with a request outstanding")
                    return None, self.clock()
        return None, self.clock()

    def _prior(self, request: Any) -> frozenset[TopicPartition] | None:
        if not isinstance(request, ConsumerGroupHeartbeatRequest) or not self.hypos:
            return None
        g = self.hypos[0].state.groups.get(request.group_id)
        m = None if g is None else g.members.get(request.member_id)
        return None if m is None else m.assigned

    def _model_answer(self, h: CHypo, ref: int) -> Any:
        return getattr(h, "_answer", None)

    # ------------------------------------------------------------------ hypotheses
    def _fire_certain(self, h: CHypo, t: int) -> None:
        cutoff = self._certain_cutoff(t)
        if cutoff > h.now:
            self.coords[h.origin].advance(h.state, cutoff)
            h.now = cutoff

    def _uncertain(self, h: CHypo, t: int, t_ans: int) -> list[int]:
        return sorted(
            {
                tm.deadline
                for g in h.state.groups.values()
                for tm in g.timers.values()
                if tm.deadline <= t_ans  # all not fired yet (`_fire_certain` fired the certain ones)
            }
        )

    def _candidates(
        self,
        h: CHypo,
        t: int,
        t_ans: int,
        request: Any,
        ref: int,
        target: Any,
        prior: frozenset[TopicPartition] | None = None,
    ) -> list[tuple[CHypo, str | None]]:
        base = h.copy()
        self._fire_certain(base, t)
        deadlines = self._uncertain(base, t, t_ans)
        out: list[tuple[CHypo, str | None]] = []
        for k in range(len(deadlines) + 1):
            c = base.copy()
            if k:
                self.coords[c.origin].advance(c.state, deadlines[k - 1])
                c.now = max(c.now, deadlines[k - 1])
                c.fired = k
            pre = fired_before(h, c)
            out.extend(carry(pre, self._apply(c, request, ref, max(t, c.now), target, prior), h))
        return out

    def _run(self, c: CHypo, request: Any, ref: int, at: int) -> Any:
        coord = self.coords[c.origin]
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            result = coord.handle_consumer_group_heartbeat(c.state, request, ref, at)
        else:
            result = coord.handle_offset_commit(c.state, request, ref, at)
        return next((d.response for d in result.deliveries if d.ref == ref), None)

    def _apply(
        self, c: CHypo, request: Any, ref: int, at: int, target: Any, prior: frozenset[TopicPartition] | None
    ) -> list[tuple[CHypo, str | None]]:
        before = c.state.copy()
        answer = self._run(c, request, ref, at)
        c._answer = answer  # type: ignore[attr-defined]
        if target is None:
            return [(c, None)]
        why, _notes = compare(answer, target, prior)
        if why is None:
            self._freeze(c, request, target)
            return [(c, None)]
        why = f"{_short(target)} vs model {_short(answer)}: {why}"
        if (
            not isinstance(request, ConsumerGroupHeartbeatRequest)
            or target.error_code != ErrorCode.NONE
            or answer.error_code != ErrorCode.NONE
        ):
            return [(c, why)]
        got = revealed_assignment(before, request, target)
        if got is None:
            return [(c, why)]
        out: list[tuple[CHypo, str | None]] = []
        for adopted, why2 in self._adopt(c, before, request, ref, at, target, prior, got):
            out.append((adopted, why2))
        if not any(w is None for _, w in out):
            out.append((c, why))
        return out

    def _adopt(
        self,
        c: CHypo,
        before: ConsumerCoordinatorState,
        request: ConsumerGroupHeartbeatRequest,
        ref: int,
        at: int,
        target: ConsumerGroupHeartbeatResponse,
        prior: frozenset[TopicPartition] | None,
        got: frozenset[TopicPartition],
    ) -> list[tuple[CHypo, str | None]]:
        """The target's assignment choice (``got``: what the member holds as assigned after the
        answer, `revealed_assignment`), installed in the model when it is legal (module docstring)."""
        coord = self.coords[c.origin]
        gid = request.group_id
        after_group = c.state.groups.get(gid)
        member_after = None if after_group is None else after_group.members.get(request.member_id)
        model_target = frozenset() if after_group is None else after_group.target_of(request.member_id)
        held_by_others: frozenset[TopicPartition] = frozenset()
        if after_group is not None:
            for mid, m in after_group.members.items():
                if mid != request.member_id:
                    held_by_others |= m.held
        options = [got]
        if member_after is not None and member_after.state != MemberState.STABLE:
            options.append(got | (model_target - got))
        options.append(got | (held_by_others & model_target))
        options = list(dict.fromkeys(options))
        recomputed = after_group is not None and (
            before.groups.get(gid) is None
            or before.groups[gid].assignment_epoch != after_group.assignment_epoch
        )
        out: list[tuple[CHypo, str | None]] = []
        for want in options:
            d = CHypo(before.copy(), c.origin, c.now, c.pins, c.pin_epoch, c.adoptions + 1, c.fired, c.notes)
            g = d.state.groups.get(gid)
            key = adoption_key(g, request.member_id, request.instance_id)
            fixed, pins = adoption_constraints(d.pins, d.pin_epoch, g, key, want, recomputed)
            try:
                if recomputed:
                    coord.adopt, coord.adopt_pins = fixed, {}  # type: ignore[attr-defined]
                    try:
                        answer = self._run(d, request, ref, at)
                    finally:
                        coord.adopt = None  # type: ignore[attr-defined]
                else:
                    if g is None or key not in g.members:
                        continue
                    if not self._install(d, gid, fixed, pins):
                        out.append((d, f"adopting {_tps(want)} for {request.member_id}: no legal completion"))
                        continue
                    answer = self._run(d, request, ref, at)
            except _NoLegal as e:
                out.append((d, str(e)))
                continue
            why, _ = compare(answer, target, prior)
            d._answer = answer  # type: ignore[attr-defined]
            if why is None:
                self._freeze(d, request, target)
                g_after = d.state.groups.get(gid)
                name = (g_after.last_assignor if g_after is not None else None) or "uniform"
                why_free = (
                    "uniform tie-breaking follows Java hash-map order, docs/protocol-reference.md#f"
                    if name == "uniform"
                    else "Kafka's range assignor is deterministic (RA L243): a kafka-compat deviation"
                )
                d.notes = d.notes + (
                    f"the target's {name} assignor targeted {_tps(want)} to {request.member_id} where the "
                    f"model's chose {_tps(model_target)}; both legal ({why_free}), adopted",
                )
            out.append((d, None if why is None else f"adopted {_tps(want)}: {why}"))
        return out

    def _install(
        self, d: CHypo, gid: str, fixed: dict[str, frozenset[TopicPartition]], pins: Mapping[str, Pin]
    ) -> bool:
        """Replace the current target assignment by a legal one with ``fixed`` members' sets."""
        return install_target(self.coords[d.origin], d.state, gid, fixed, pins) is not None

    def _freeze(self, c: CHypo, request: Any, target: Any) -> None:
        """Pin what the member's (matched) answer revealed of its target; later adoptions keep it."""
        if not isinstance(request, ConsumerGroupHeartbeatRequest) or target.error_code != ErrorCode.NONE:
            return
        g = c.state.groups.get(request.group_id)
        if g is not None:
            c.pins, c.pin_epoch = pin_revealed(c.pins, c.pin_epoch, g, request.member_id)


def install_target(
    coord: ConsumerCoordinator,
    state: ConsumerCoordinatorState,
    gid: str,
    fixed: Mapping[str, frozenset[TopicPartition]],
    pins: Mapping[str, Pin],
) -> set[str] | None:
    """Replace group ``gid``'s current target assignment in ``state`` by a legal one giving ``fixed``
    members exactly their sets and ``pins`` members their floor and none of their exclusions
    (`complete_assignment`, the group's assignor and subscriptions); the members whose target
    changed, or None when no legal completion exists (nothing changed). Shared by the consumer and
    the mixed oracle."""
    from model.consumer.assignors import is_homogeneous

    g = state.groups.get(gid)
    if g is None:
        return None
    specs = coord.assignment_specs(state, g)
    homogeneous = is_homogeneous(coord.subscribed_topics(state, m) for m in g.members.values())
    name = g.last_assignor or coord.config.assignors[0]
    done = complete_assignment(
        dict(g.target), fixed, specs, dict(g.subscription_metadata), name, homogeneous, pins
    )
    if done is None:
        return None
    changed: set[str] = set()
    for member_id, parts in sorted(done.items()):
        if parts != g.target_of(member_id):
            changed.add(member_id)
            apply(state, TargetAssignmentMemberRecord(gid, member_id, tuple(sorted(parts))))
    return changed


def pin_revealed(
    pins: Mapping[str, Pin], pin_epoch: int, group: ConsumerGroup, member_id: str
) -> tuple[Mapping[str, Pin], int]:
    """``(pins, pin_epoch)`` once an answer to ``member_id`` matched: what the member is assigned and
    revokes now is what the target told it, so a later adoption keeps it (its floor and exclusions;
    all of it when the member is reconciled to the assignment epoch). Pins of an older assignment
    epoch are dropped: a new target may move anything. Shared by the consumer and the mixed oracle
    (there a classic member's SyncGroup answer reveals its assigned partitions, GMM
    ``classicGroupSyncToConsumerGroup`` -> ``prepareAssignment``, apache/kafka@1eb7644 L5361-5407)."""
    if pin_epoch != group.assignment_epoch:
        pins, pin_epoch = {}, group.assignment_epoch
    m = group.members.get(member_id)
    if m is None:
        return pins, pin_epoch
    exact = m.state == MemberState.STABLE and m.member_epoch == group.assignment_epoch
    return {**pins, member_id: Pin(m.assigned, m.pending_revocation, exact)}, pin_epoch


def adoption_key(group: ConsumerGroup | None, member_id: str, instance_id: str | None) -> str:
    """The member id under which the target's choice for ``member_id`` is adopted: a static member's
    replacement (a new member id with a known instance id) copies the departing member's target
    assignment (docs/protocol-reference.md#b7, GMM L2204-2290), so Kafka's choice is that member's."""
    if group is not None and member_id not in group.members and instance_id is not None:
        static = group.static_member(instance_id)
        if static is not None:
            return static.member_id
    return member_id


def adoption_constraints(
    pins: Mapping[str, Pin],
    pin_epoch: int,
    group: ConsumerGroup | None,
    key: str,
    want: frozenset[TopicPartition],
    recomputed: bool,
) -> tuple[dict[str, frozenset[TopicPartition]], dict[str, Pin]]:
    """(members whose target is fixed, members pinned to a floor) for adopting ``want`` as ``key``'s
    target: ``key`` gets ``want``, members the target has shown reconciled keep exactly their sets,
    others their floor and exclusions. Pins hold only while the assignment epoch they were taken at
    is the group's and the adoption does not recompute the target."""
    kept: dict[str, Pin] = {}
    if group is not None and pin_epoch == group.assignment_epoch and not recomputed:
        kept = {m: p for m, p in pins.items() if m in group.members and m != key}
    fixed = {m: p.floor for m, p in kept.items() if p.exact}
    fixed[key] = want
    return fixed, {m: p for m, p in kept.items() if not p.exact}


def revealed_assignment(
    before: ConsumerCoordinatorState, request: Any, target: Any
) -> frozenset[TopicPartition] | None:
    """What a matched-in-all-but-assignment heartbeat answer says the member is assigned now.

    An answer without an assignment says "unchanged" (docs/protocol-reference.md#b10): Kafka sets it only for a join,
    a full request or when the member's assigned partitions changed (group-coordinator
    GroupMetadataManager ``consumerGroupHeartbeat``: ``isFullRequest ||
    hasAssignedPartitionsChanged(member, updatedMember)``, apache/kafka mirror 1eb7644). So an
    omitted assignment reveals as much as an explicit one: the member still holds what it held before
    the request (in this hypothesis). That is how a target whose uniform assignor gave the freed
    partition to another member (hash-map order, docs/protocol-reference.md#f) answers a member that gets nothing
    new. None when the hypothesis does not know the member (nothing to adopt against)."""
    got: frozenset[TopicPartition] | None = target.assigned()
    if got is not None:
        return got
    g = before.groups.get(request.group_id)
    m = None if g is None else g.members.get(request.member_id)
    return None if m is None else m.assigned


def _offers(caps: Any, api_key: int, version: int) -> bool:
    """ApiVersions lists ``version`` of ``api_key`` (kio encodes every version the schemas have)."""
    lo, hi = caps.api_versions.get(api_key, (0, -1))
    return bool(lo <= version <= hi)


def _topic_ids(session: TargetSession, names: list[str]) -> dict[str, Any]:
    """Topic ids by Metadata v12 on a fresh connection, cached per session (retried while a new
    topic's metadata propagates)."""
    from conformance.wire.connection import _blocking_exchange
    from conformance.wire.framing import decode_frame

    cache: dict[str, Any] = session.__dict__.setdefault("topic_ids", {})
    missing = [n for n in names if n not in cache]
    adapter = session.adapter
    lo, hi = adapter.connect().api_versions.get(3, (0, -1))
    version = min(12, hi)
    if version < max(10, lo):
        raise TargetError(f"{adapter.bootstrap}: no Metadata v10+ (topic ids, KIP-516); offers v{lo}-v{hi}")
    end = time.monotonic() + 30
    while missing:

        def exchange(req: Any) -> Any:
            frame = _blocking_exchange(adapter.host, adapter.port, req, adapter.timeout_s, adapter.client_id)
            value, findings = decode_frame(req.__api_key__, req.__version__, frame)
            if value is None:
                raise TargetError(f"{adapter.bootstrap}: Metadata answer is garbage: {findings[0].message}")
            return value

        try:
            cache.update(topic_ids(exchange, missing, version))
        except (OSError, ConnectionError) as e:
            raise TargetError(f"{adapter.bootstrap}: Metadata failed: {e}") from e
        missing = [n for n in names if n not in cache]
        if missing and time.monotonic() > end:
            break
        if missing:
            time.sleep(0.1)
    return {n: cache[n] for n in names if n in cache}


PortFactory = Callable[[ConsumerCoordinator], ConsumerOraclePort]
