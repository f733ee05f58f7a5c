"""The mixed-group oracle: classic and KIP-848 members in one group on a real coordinator (docs/protocol-reference.md#b13).

Classic members speak JoinGroup / SyncGroup / Heartbeat / LeaveGroup through the classic wire
codec (`conformance.protocols.classic.codec`, as the classic oracle does); consumer-protocol members speak
ConsumerGroupHeartbeat through the consumer codec (`consumer_codec`). All of them share ONE real
group on the target, and the model beside it is the mixed coordinator (`model.mixed.coordinator`).

In a consumer group every classic request is answered as soon as its records are written, never
parked (GMM ``classicGroupJoinToConsumerGroup`` completes the response from ``appendFuture``,
apache/kafka@1eb7644 GroupMetadataManager.java L2084-2103; SyncGroup and Heartbeat likewise), and a
ConsumerGroupHeartbeat is always answered at once. So one operation is: send, wait for the answer
(deadline), keep the model *hypotheses* that explain it — as the consumer oracle does
(`consumer_oracle`): timers whose deadline falls in the tolerance window may or may not have
fired, and a new group's epochs start at 0 (Kafka 4.0) or 1 (4.3+, KAFKA-20268); both are kept
until an answer decides. A parked answer (a classic group in a join phase) is waited for up to the
deadline too, so the machine on real targets keeps classic groups to one member
(`conformance.protocols.mixed.machine_real`).

Kafka's arbitrary choices, checked legal and ADOPTED:

* member ids the coordinator generates (a classic JoinGroup without one): the target's id is
  legal when no member of the group has it; the model's fresh id is renamed to it;
* the server assignor's choices (uniform tie-breaking, docs/protocol-reference.md#f): when the target's answer
  differs from the model only in the partitions it gives, the target's choice is installed in
  the model's target assignment if a legal completion exists (`consumer_oracle.complete_assignment`);
  for a classic member the partitions are those of the SyncGroup assignment bytes (docs/protocol-reference.md#c1).
  What answers revealed of the current target is kept by later adoptions, as in the consumer
  oracle (`consumer_oracle.pin_revealed`, `adoption_constraints`, `install_target`): a heartbeat's
  or a SyncGroup's partitions, all of the member's target once it is reconciled. A classic member's
  JoinGroup reconciles it to partitions its answer does not show (`Unrevealed`); when an adoption
  changes that member's target before its SyncGroup, its reconciliation is done again to the new
  target (`_rereconcile`), and the request's observation starts from that state
  (`SplitPort.rewritten`). Seen at `--protocol all --profile faults --seed 1` on Kafka 4.4.0.

No hypothesis explains an answer -> a protocol finding (``oracle.<Api>``, request, answer, what
the model expected). Differences in Apache Kafka's exact bytes (the encoded assignment's version,
the heartbeat interval echoed) are kafka-compat findings.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.engine.oracle.timer_split import carry, fired_before, switched_from
from conformance.errors import TargetError
from conformance.protocols.classic.codec import API_NAMES, api_key_of, decode_response, encode_request
from conformance.protocols.classic.oracle import Finding, OraclePort, TargetSession, rename
from conformance.protocols.consumer.codec import (
    API_CONSUMER_GROUP_HEARTBEAT,
    TopicMap,
    decode_heartbeat,
    encode_heartbeat,
)
from conformance.protocols.consumer.oracle import (
    TOPIC_PROPAGATION_S,
    HypothesisFindings,
    Pin,
    _NoLegal,
    _topic_ids,
    adopting,
    adoption_constraints,
    adoption_key,
    install_target,
    pin_revealed,
    revealed_assignment,
)
from conformance.protocols.consumer.oracle import compare as compare_heartbeat
from model.classic.messages import (
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartition,
)
from model.consumer.reconcile import CurrentAssignment, reconcile
from model.consumer.records import CurrentAssignmentRecord, apply
from model.consumer.state import NO_EPOCH, ConsumerMember, MemberState
from model.embedded import (
    Assignment,
    EmbeddedDecodeError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from model.errors import ErrorCode
from model.mixed.consumer_group import MixedConfig
from model.mixed.coordinator import MixedCoordinator
from model.mixed.state import MixedState
from model.result import Result

# ---------------------------------------------------------------------- hypotheses
#: The protocol-legal model variants the first answers decide between (an index per hypothesis):
#: where a new group's epochs start (0: Kafka 4.0, 1: Kafka 4.3+, KAFKA-20268) and which epoch a
#: classic member of a consumer group must reach (`MixedConfig.classic_rejoin_epoch`).
#: ``group.consumer.migration.policy`` too, unless the target's launcher states it: a coordinator
#: that refuses an online upgrade (GROUP_ID_NOT_FOUND) may run policy ``disabled`` or ``downgrade``,
#: which is legal; the answers select the policy and a policy other than Kafka's default
#: ``bidirectional`` is a kafka-compat note.
POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")
ORIGINS = {
    i: (origin, rejoin, policy)
    for i, (policy, rejoin, origin) in enumerate(
        (p, r, o) for p in POLICIES for r in ("group", "assignment") for o in (0, 1)
    )
}


@dataclass(frozen=True)
class Unrevealed:
    """A classic member's reconciliation at its JoinGroup, which the answer shows only as a generation:
    Kafka computes the target and reconciles the member in the JoinGroup (GMM
    ``classicGroupJoinToConsumerGroup`` steps 2-3, apache/kafka@1eb7644 L2030-2061; the response
    carries ``updatedMember.memberEpoch()`` only, L2078-2081) and its SyncGroup writes nothing and
    returns the assigned partitions (``classicGroupSyncToConsumerGroup`` -> ``prepareAssignment``,
    L5361-5407). Until then, which partitions the reconciliation gave is open: a later adoption of the
    target's assignor choice may redo it (`MixedOraclePort._rereconcile`). ``start`` is the member's
    current assignment before the JoinGroup, ``owned`` what its subscription reported owning."""

    start: CurrentAssignment
    owned: frozenset[TopicPartition] | None
    generation: int
    assignment_epoch: int


@dataclass
class MHypo:
    state: MixedState
    origin: int  # the ORIGINS key of the coordinator this hypothesis runs
    now: int = 0
    adoptions: int = 0
    notes: tuple[str, ...] = ()
    #: the classic half's durable records: each group's last GroupMetadata record or tombstone, what
    #: a restarted coordinator loads for a classic group (`mixed_failover`; the consumer half is
    #: rebuilt from its state, `model.consumer.records.durable_view`)
    durable: tuple[object, ...] = ()
    #: what the target's answers revealed of members' targets since assignment epoch ``pin_epoch``
    #: (`consumer_oracle.pin_revealed`: a later adoption keeps it)
    pins: Mapping[str, Pin] = field(default_factory=dict)
    pin_epoch: int = -1
    #: classic members reconciled at a JoinGroup whose partitions no answer has shown yet
    unrevealed: Mapping[str, Unrevealed] = field(default_factory=dict)

    def copy(self) -> MHypo:
        return dataclasses.replace(self, state=self.state.copy())

    def track(self, result: Result) -> Result:
        """Keep the classic durable records ``result`` wrote (see ``durable``); returns ``result``."""
        from conformance.protocols.mixed.failover import track_durable

        self.durable = track_durable(self.durable, result.records)
        return result


@dataclass
class MixedTiming:
    late_ms: int = 500
    answer_deadline_ms: int = 5000
    max_hypotheses: int = 48


def _tps(parts: frozenset[TopicPartition] | None) -> str:
    if parts is None:
        return "none"
    return "{" + ", ".join(f"{t}-{p}" for t, p in sorted(parts)) + "}"


def _e(code: Any) -> str:
    return code.name if isinstance(code, ErrorCode) else str(code)


def sync_partitions(resp: SyncGroupResponse) -> frozenset[TopicPartition] | None:
    """The partitions a SyncGroup answer's assignment bytes give (None: not decodable)."""
    if not resp.assignment:
        return frozenset()
    try:
        return frozenset(decode_assignment(resp.assignment).partitions)
    except EmbeddedDecodeError:
        return None


def short(resp: Any) -> str:
    if resp is None:
        return "nothing"
    name = type(resp).__name__.removesuffix("Response")
    err = getattr(resp, "error_code", getattr(resp, "error", None))
    if err is not None and err != ErrorCode.NONE:
        return f"{name} {_e(err)}"
    if isinstance(resp, ConsumerGroupHeartbeatResponse):
        return f"{name} NONE epoch {resp.member_epoch} assignment {_tps(resp.assigned())}"
    if isinstance(resp, JoinGroupResponse):
        return f"{name} NONE generation {resp.generation_id} member {resp.member_id}"
    if isinstance(resp, SyncGroupResponse):
        return f"{name} NONE assignment {_tps(sync_partitions(resp))}"
    return f"{name} NONE"


def compare(model: Any, target: Any, prior: frozenset[TopicPartition] | None) -> tuple[str | None, list[str]]:
    """(protocol mismatch or None, kafka-compat notes) between the model's answer and the target's."""
    if model is None:
        return "the model parks the request (no answer yet)", []
    if type(model) is not type(target):
        return f"{type(target).__name__}, model {type(model).__name__}", []
    if isinstance(target, ConsumerGroupHeartbeatResponse):
        return compare_heartbeat(model, target, prior)
    notes: list[str] = []
    if isinstance(target, HeartbeatResponse):
        return (
            None if model.error == target.error else f"error {_e(target.error)}, model {_e(model.error)}"
        ), notes
    if isinstance(target, LeaveGroupResponse):
        if model.error != target.error:
            return f"error {_e(target.error)}, model {_e(model.error)}", notes
        mine = sorted((m.member_id, _e(m.error)) for m in model.members)
        theirs = sorted((m.member_id, _e(m.error)) for m in target.members)
        return (None if mine == theirs else f"members {theirs}, model {mine}"), notes
    if isinstance(target, JoinGroupResponse):
        if model.error != target.error:
            return f"error {_e(target.error)}, model {_e(model.error)}", notes
        if model.member_id != target.member_id:
            return f"member id {target.member_id!r}, model {model.member_id!r}", notes
        if target.error != ErrorCode.NONE:
            return None, notes
        for what in ("generation_id", "protocol_type", "protocol_name", "leader"):
            if getattr(model, what) != getattr(target, what):
                return f"{what} {getattr(target, what)!r}, model {getattr(model, what)!r}", notes
        mine = sorted(m.member_id for m in model.members)
        theirs = sorted(m.member_id for m in target.members)
        return (None if mine == theirs else f"member list {theirs}, model {mine}"), notes
    if isinstance(target, SyncGroupResponse):
        if model.error != target.error:
            return f"error {_e(target.error)}, model {_e(model.error)}", notes
        if target.error != ErrorCode.NONE:
            return None, notes
        for what in ("protocol_type", "protocol_name"):
            if getattr(model, what) != getattr(target, what):
                return f"{what} {getattr(target, what)!r}, model {getattr(model, what)!r}", notes
        mine, theirs = sync_partitions(model), sync_partitions(target)
        if theirs is None:
            return (
                "assignment bytes the consumer embedded protocol cannot read (docs/protocol-reference.md#c1)",
                notes,
            )
        if mine != theirs:
            return f"assignment {_tps(theirs)}, model {_tps(mine)}", notes
        if model.assignment != target.assignment:
            notes.append("SyncGroup assignment bytes differ from the model's encoding (same partitions)")
        return None, notes
    return (None if model == target else f"{target!r}, model {model!r}"), notes


# ---------------------------------------------------------------------- the port
@dataclass
class MixedOraclePort(HypothesisFindings):
    """One real group, both protocols' members, the mixed model beside it (module docstring)."""

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
        out: list[Any] = []
        for c in cands:
            if not any(o.origin == c.origin and o.state == c.state and o.durable == c.durable for o in out):
                out.append(c)
        return out[: self.timing.max_hypotheses]

    def _with_origin(self, origin: int, rejoin: str, policy: str) -> MixedCoordinator:
        from model.mixed.state import MigrationPolicy

        base = self.coordinator
        consumer = dataclasses.replace(base.config.consumer, initial_group_epoch=origin)
        config = dataclasses.replace(
            base.config, consumer=consumer, classic_rejoin_epoch=rejoin, policy=MigrationPolicy(policy)
        )
        coord = type(base)(config, self.chooser)
        # the server assignor's choice can be replaced by the target's (consumer_oracle._Adopting)
        coord.consumer = adopting(coord.consumer, origin)  # type: ignore[assignment]
        return coord

    # ------------------------------------------------------------------ clock
    def clock(self) -> int:
        return int((time.monotonic() - self.t0) * 1000)

    def sleep_until(self, ms: int) -> None:
        while True:
            left = ms - self.clock()
            if left <= 0:
                return
            time.sleep(min(left, 50) / 1000)

    def state(self) -> MixedState:
        return self.hypos[0].state

    def reported_coordinator(self) -> MixedCoordinator:
        return self.coords[self.hypos[0].origin] if self.hypos else self.coordinator

    def model_now(self) -> int:
        return self.hypos[0].now if self.hypos else 0

    def take_findings(self) -> list[Finding]:
        taken, self.findings = self.findings, []
        return taken

    def close(self) -> None:
        for member in self.members:
            self.adapter.drop_member(member)

    # ------------------------------------------------------------------ topics and time
    def create_topic(self, topic: str, partitions: int) -> None:
        real = self.session.real_topic(topic, partitions)
        fresh = real not in self.session.__dict__.get("topic_ids", {})
        self.session.ensure_topic(real)
        ids = _topic_ids(self.session, [real])
        if fresh:  # the coordinator learns a new topic from the next metadata image (consumer_oracle),
            # counted while the target is seen running (`topic_ops.seen_running_for`)
            from conformance.protocols.topic_ops import seen_running_for

            seen_running_for(self.adapter, real, TOPIC_PROPAGATION_S)
        if real not in ids:
            raise TargetError(f"{self.adapter.bootstrap}: Metadata does not list topic {real} with an id")
        self.topics.add(topic, real, ids[real])
        for h in self.hypos:
            self.coords[h.origin].create_topic(h.state, topic, partitions)

    def advance(self) -> None:
        t = self.clock()
        for h in self.hypos:
            self._fire_certain(h, t)

    # ------------------------------------------------------------------ one operation
    def exchange(self, member: str, request: Any, ref: int) -> Any:
        """Send ``request`` for ``member``; the target's answer (None: none), hypotheses updated."""
        self.members.add(member)
        self.current_member = member
        self.pre_split = self.switched = self.rewritten = None
        reported = self.hypos[0] if self.hypos else None
        t = self.clock()
        try:
            api, version, payload = self._encode(request)
        except _NotOffered as e:
            self._finding("protocol", f"oracle.{e.api}", str(e))
            return None
        self._pending = (request, version)
        try:
            self._submit(member, payload, ref)
        except TargetError as e:
            self._crash(t, f"cannot send {API_NAMES.get(api, api)}: {e}")
            return None
        target, t_ans = self._await(ref, t)
        if target is not None:
            self._note_answer(t, t_ans)
        name = _api_name(request)
        self.log.append(f"t={t} ref {ref} {member} {name} -> {short(target)} at t={t_ans}")
        if target is None:
            cands = [c for h in self.hypos for c, _ in self._candidates(h, t, t_ans, request, ref, None)]
            parked = bool(cands) and all(getattr(c, "_answer", None) is None for c in cands)
            self.hypos = self._dedupe(cands + list(self.hypos))
            if parked and not self.crashed:
                # the model parks it too (a join phase waiting for other classic members): consistent,
                # but this oracle waits for answers one request at a time (module docstring)
                self.unsupported = self.unsupported or (
                    f"at t={t}, {member}'s {name} (ref {ref}) is parked by the target and by the model "
                    "(a classic group of several members in a join phase): the mixed oracle on a real "
                    "target does not follow parked requests"
                )
                return None
            if not self.crashed:
                self._finding(
                    "protocol",
                    f"oracle.{name}",
                    f"at t={t}, {member} sends {name} (ref {ref}): no answer within "
                    f"{self.timing.answer_deadline_ms} ms",
                )
            return None
        prior = self._prior(request)
        cands: list[MHypo] = []
        reasons: list[str] = []
        for h in self.hypos:
            for c, why in self._candidates(h, t, t_ans, request, ref, target, prior):
                (cands if why is None else reasons).append(c if why is None else why)  # type: ignore[arg-type]
        if not cands:
            uniq = list(dict.fromkeys(reasons))
            self._finding(
                "protocol",
                f"oracle.{name}",
                f"at t={t}, {member} sends {name} (ref {ref}): the target answered {short(target)}; "
                f"no model hypothesis explains it ({len(uniq)} tried): " + " | ".join(uniq[:4]),
            )
            if not self.adapter.alive():
                self._crash(t, "the target stopped answering")
            return target
        cands.sort(key=lambda c: (c.adoptions, c.origin))
        self.hypos = self._dedupe(cands)
        h0 = self.hypos[0]
        self.pre_split = getattr(h0, "pre", None)  # the timers before the request: their own step
        self.switched = switched_from(reported, h0)
        self.rewritten = getattr(h0, "rewritten", None)  # an adoption redid what no answer had shown
        _m, notes = compare(getattr(h0, "_answer", None) or target, target, prior)
        for note in notes:
            self._finding("kafka-compat", f"compat.{name}", f"ref {ref}: {note}")
        rejoins = {ORIGINS[h.origin][1] for h in self.hypos}
        if not self.rejoin_reported and rejoins == {"assignment"}:
            self.rejoin_reported = True
            self._finding(
                "kafka-compat",
                "compat.mixed",
                f"ref {ref}: a classic member is told to rejoin when the target assignment epoch is ahead of "
                "it (as Apache Kafka 4.4.0); the model's default compares the group epoch (GMM @1eb7644 "
                "L5637): MixedConfig.classic_rejoin_epoch=assignment selected",
            )
        policies = {ORIGINS[h.origin][2] for h in self.hypos}
        if not self.policy_reported and len(policies) == 1 and policies != {"bidirectional"}:
            self.policy_reported = True
            self._finding(
                "kafka-compat",
                "compat.mixed",
                f"ref {ref}: the target behaves as group.consumer.migration.policy={policies.pop()} "
                "(Apache Kafka's default is bidirectional)",
            )
        for note in h0.notes[self.notes_reported :]:
            self._finding("kafka-compat", "compat.mixed", f"ref {ref}: {note}")
        self.notes_reported = max(self.notes_reported, len(h0.notes))
        return target

    # ------------------------------------------------------------------ wire
    def _encode(self, request: Any) -> tuple[int, int, Any]:
        caps = self.adapter.connect()
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            lo, hi = caps.api_versions.get(API_CONSUMER_GROUP_HEARTBEAT, (0, -1))
            if not lo <= request.version <= hi:
                raise _NotOffered(
                    "ConsumerGroupHeartbeat", f"target offers no ConsumerGroupHeartbeat v{request.version}"
                )
            payload = encode_heartbeat(request, request.version, self.real_group, self.topics)
            return API_CONSUMER_GROUP_HEARTBEAT, request.version, payload
        key = api_key_of(request)
        version = caps.version(key, getattr(request, "version", 99))
        if version is None:
            raise _NotOffered(API_NAMES[key], f"target offers no {API_NAMES[key]} version we speak")
        sent = OraclePort._as_sent(None, request, version)  # type: ignore[arg-type]
        if isinstance(sent, JoinGroupRequest):  # the embedded subscription names real topics
            sent = dataclasses.replace(
                sent, protocols=tuple((n, self._real_subscription(m)) for n, m in sent.protocols)
            )
        if isinstance(sent, SyncGroupRequest):
            sent = dataclasses.replace(
                sent,
                assignments=tuple(
                    (mid, self._map_assignment(a, self.topics.real_name)) for mid, a in sent.assignments
                ),
            )
        real = dataclasses.replace(sent, group_id=self.real_group)
        return key, version, encode_request(real, version, self.topics.real_name)

    def _real_subscription(self, metadata: bytes) -> bytes:
        from model.mixed.consumer_group import subscription_version

        try:
            sub = decode_subscription(metadata)
        except EmbeddedDecodeError:
            return metadata  # malformed on purpose: the target must say so
        sub = dataclasses.replace(
            sub,
            topics=tuple(self.topics.real_name(t) for t in sub.topics),
            owned_partitions=tuple((self.topics.real_name(t), p) for t, p in sub.owned_partitions),
        )
        return encode_subscription(sub, subscription_version(metadata))

    @staticmethod
    def _map_assignment(data: bytes, name: Any) -> bytes:
        from model.mixed.consumer_group import subscription_version

        if not data:
            return data
        try:
            a = decode_assignment(data)
        except EmbeddedDecodeError:
            return data
        return encode_assignment(
            Assignment(tuple((name(t), p) for t, p in a.partitions), a.user_data), subscription_version(data)
        )

    def _submit(self, member: str, payload: Any, ref: int) -> None:
        """Write the request (the wire-fault port, `mixed_faults`, puts the fault proxy to work here)."""
        self.adapter.submit(member, self.real_group, payload, ref, member)

    def _decode(self, request: Any, version: int, value: Any) -> Any:
        """The model's view of the target's answer ``value`` to ``request`` (real topic names mapped)."""
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            return decode_heartbeat(value, self.topics)
        resp = decode_response(request, value, version, lambda real, _p, _m: self.topics.model_of_name(real))
        if isinstance(resp, SyncGroupResponse):
            resp = dataclasses.replace(
                resp, assignment=self._map_assignment(resp.assignment, self.topics.model_of_name)
            )
        return resp

    def _await(self, ref: int, t: int) -> tuple[Any, int]:
        request, version = self._pending
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
                    return self._decode(request, version, arrival.value), at
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
        g = self.hypos[0].state.consumer.groups.get(request.group_id)
        m = None if g is None else g.members.get(request.member_id)
        return None if m is None else m.assigned

    # ------------------------------------------------------------------ hypotheses
    def _fire_certain(self, h: MHypo, t: int) -> None:
        cutoff = self._certain_cutoff(t)
        if cutoff > h.now:
            h.track(self.coords[h.origin].advance(h.state, cutoff))
            h.now = cutoff

    def _uncertain(self, h: MHypo, t: int, t_ans: int) -> list[int]:
        deadlines = {tm.deadline for g in h.state.consumer.groups.values() for tm in g.timers.values()} | {
            d for g in h.state.classic.groups.values() for d, *_ in _classic_deadlines(g)
        }
        return sorted(d for d in deadlines if d <= t_ans)  # not fired yet (`_fire_certain`: the certain ones)

    def _candidates(
        self, h: MHypo, t: int, t_ans: int, request: Any, ref: int, target: Any, prior: Any = None
    ) -> list[tuple[MHypo, str | None]]:
        self._t_ans = t_ans
        base = h.copy()
        self._fire_certain(base, t)
        deadlines = self._uncertain(base, t, t_ans)
        out: list[tuple[MHypo, str | None]] = []
        for k in range(len(deadlines) + 1):
            c = base.copy()
            if k:
                c.track(self.coords[c.origin].advance(c.state, deadlines[k - 1]))
                c.now = max(c.now, deadlines[k - 1])
            pre = fired_before(h, c)
            out.extend(carry(pre, self._apply_ties(c, request, ref, max(t, c.now), target, prior), h))
        return out

    def _apply_ties(
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
        coord = self.coords[c.origin]
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
            d for g in h.state.classic.groups.values() for d, *_ in _classic_deadlines(g)
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

    def _reveal(self, before: MHypo, c: MHypo, request: Any, target: Any) -> MHypo:
        """Record what an answer ``c`` explains reveals of the group's assignment: a heartbeat's or a
        SyncGroup's partitions pin the member's target (`consumer_oracle.pin_revealed`); a classic
        member's JoinGroup reconciles it without showing its partitions (`Unrevealed`), its SyncGroup
        shows them."""
        gid = getattr(request, "group_id", None)
        g = None if gid is None else c.state.consumer.groups.get(gid)
        ok = getattr(target, "error_code", getattr(target, "error", None)) == ErrorCode.NONE
        if g is None or not ok:
            return c
        if isinstance(target, ConsumerGroupHeartbeatResponse | SyncGroupResponse):
            c.pins, c.pin_epoch = pin_revealed(c.pins, c.pin_epoch, g, request.member_id)
            c.unrevealed = {m: u for m, u in c.unrevealed.items() if m != request.member_id}
        elif isinstance(target, JoinGroupResponse) and target.member_id in g.members:
            start = self._join_start(before, request, target.member_id)
            try:
                owned = frozenset(decode_subscription(request.protocols[0][1]).owned_partitions)
            except (EmbeddedDecodeError, IndexError):
                return c
            u = Unrevealed(start, owned, target.generation_id, g.assignment_epoch)
            c.unrevealed = {**c.unrevealed, target.member_id: u}
        return c

    @staticmethod
    def _join_start(before: MHypo, request: Any, member_id: str) -> CurrentAssignment:
        """The joining member's current assignment before its JoinGroup (a new member starts empty; a
        static member's replacement takes the replaced member's at epoch 0, GMM
        ``getOrMaybeSubscribeStaticConsumerGroupMember``, as `MixedCoordinator.resolve_classic_static_member`)."""
        g0 = before.state.consumer.groups.get(request.group_id)
        m0 = None if g0 is None else g0.members.get(member_id)
        if m0 is None and g0 is not None and request.group_instance_id is not None:
            static = g0.static_member(request.group_instance_id)
            if static is not None:
                m0 = dataclasses.replace(static, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        m0 = m0 or ConsumerMember(member_id)
        return CurrentAssignment(
            m0.state, m0.member_epoch, m0.previous_member_epoch, m0.assigned, m0.pending_revocation
        )

    def _adopt_member_id(
        self, c: MHypo, answer: Any, target: Any, prior: Any
    ) -> tuple[MHypo, str | None] | None:
        """The coordinator's generated member id (classic JoinGroup without one): legal when fresh."""
        if not isinstance(target, JoinGroupResponse) or not isinstance(answer, JoinGroupResponse):
            return None
        old, new = answer.member_id, target.member_id
        if not old or not new or old == new or new in _member_ids(c.state):
            return None
        d = dataclasses.replace(c, state=rename(c.state, old, new), durable=rename(c.durable, old, new))
        d._answer = dataclasses.replace(answer, member_id=new)  # type: ignore[attr-defined]
        why, _ = compare(d._answer, target, prior)  # type: ignore[attr-defined]
        return (d, None) if why is None else None

    def _adopt_assignment(
        self, before: MHypo, request: Any, ref: int, at: int, answer: Any, target: Any, prior: Any
    ) -> tuple[MHypo, str | None] | None:
        """The target's partitions for this member, installed in the model's target assignment when a
        legal completion exists (consumer_oracle.complete_assignment), then the request run again."""
        if isinstance(target, ConsumerGroupHeartbeatResponse):
            if target.error_code != ErrorCode.NONE:
                return None
            # no assignment in the answer means "unchanged" (docs/protocol-reference.md#b10): what it had before, in
            # this hypothesis (`consumer_oracle.revealed_assignment`)
            got = revealed_assignment(before.state.consumer, request, target)
            if got is None:
                return None
            gid = request.group_id
            member_id = adoption_key(
                before.state.consumer.groups.get(gid), request.member_id, request.instance_id
            )
        elif isinstance(target, SyncGroupResponse):
            if target.error != ErrorCode.NONE or not isinstance(answer, SyncGroupResponse):
                return None
            got = sync_partitions(target)
            gid, member_id = request.group_id, request.member_id
            if got is None:
                return None
        elif isinstance(target, JoinGroupResponse):
            # a classic member's rejoin: its generation is its member epoch after reconciliation, so a
            # target that takes nothing from it advances it at once where the model's (another legal
            # choice) makes it revoke first; the partitions show at its SyncGroup (seen on
            # Kafka 4.4.0 with cooperative-sticky members and four partitions)
            if (
                target.error != ErrorCode.NONE
                or not isinstance(answer, JoinGroupResponse)
                or answer.error != ErrorCode.NONE
                or target.generation_id == answer.generation_id
            ):
                return None
            gid, member_id = request.group_id, answer.member_id
            g0 = before.state.consumer.groups.get(gid)
            m0 = None if g0 is None else g0.members.get(member_id)
            if m0 is None:
                return None
            got = m0.assigned
        else:
            return None
        coord = self.coords[before.origin]
        tries: list[tuple[MHypo, bool]] = [(before.copy(), True)]  # the assignor runs in this request
        tries += [(d, False) for d in self._with_target(before, gid, member_id, got, coord)]  # it ran before
        if isinstance(target, SyncGroupResponse):
            # a classic member's partitions were decided at its JoinGroup (reconciliation), which does
            # not show them: take them as assigned now if nobody else holds any of them
            tries += (
                [(d, False) for d in self._with_assigned(tries[-1][0], gid, member_id, got)]
                if len(tries) > 1
                else []
            )
        for d, hook in tries:
            engine: Any = coord.consumer
            if hook:
                engine.adopt, engine.adopt_pins = {member_id: got}, {}
            try:
                again = self._run(d, request, ref, at, self._t_ans)
            except _NoLegal:
                continue
            finally:
                engine.adopt = None
            d.now = max(d.now, at)
            why, _ = compare(again, target, prior)
            if why is None:
                d._answer = again  # type: ignore[attr-defined]
                d.adoptions += 1
                d.notes = d.notes + (
                    f"the target's assignor gave {member_id} {_tps(got)} where the model's chose "
                    f"{_tps(_given(answer))}; legal (docs/protocol-reference.md#b11; docs/protocol-reference.md#f), adopted",
                )
                return d, None
        return None

    def _with_target(
        self, h: MHypo, gid: str, member_id: str, got: frozenset[TopicPartition], coord: MixedCoordinator
    ) -> list[MHypo]:
        """``h`` with a legal target assignment giving ``member_id`` exactly ``got`` (none if no legal one):
        what earlier answers revealed of the current target is kept (`consumer_oracle.adoption_constraints`),
        and classic members whose reconciliation no answer has shown yet are reconciled again to the
        new target (`_rereconcile`)."""
        g = h.state.consumer.groups.get(gid)
        if g is None or member_id not in g.members:
            return []
        fixed, pins = adoption_constraints(h.pins, h.pin_epoch, g, member_id, got, False)
        d = h.copy()
        changed = install_target(coord.consumer, d.state.consumer, gid, fixed, pins)
        redone = None if changed is None else self._rereconcile(d, gid, changed, coord)
        if redone is None:
            return []
        if redone:  # the request met this state, not the one shown before it (`SplitPort.rewritten`)
            d.rewritten = (d.state.copy(), d.now)  # type: ignore[attr-defined]
        d.adoptions += 1
        return [d]

    @staticmethod
    def _rereconcile(d: MHypo, gid: str, changed: set[str], coord: MixedCoordinator) -> set[str] | None:
        """Reconcile again, to their new target, the ``changed`` classic members whose JoinGroup
        reconciled them without showing their partitions (`Unrevealed`): as Kafka's JoinGroup would
        have with the target it chose (`model.consumer.reconcile`, the model's own rule, from the
        member's assignment before the join, the other members' holdings as they are). The members
        reconciled again; None when that contradicts what the JoinGroup showed (another generation)
        or would move a revocation, which this does not redo: the target's choice is then not
        explained this way."""
        g = d.state.consumer.groups[gid]
        config = coord.consumer.config
        redone: set[str] = set()
        for mid in sorted(changed):
            u, m = d.unrevealed.get(mid), g.members.get(mid)
            if u is None or m is None or m.classic is None:
                continue
            if u.assignment_epoch != g.assignment_epoch or m.member_epoch != u.generation:
                continue  # reconciled against an earlier target, or moved on since: not this join's
            others = frozenset().union(*(o.held for oid, o in g.members.items() if oid != mid))
            nxt = reconcile(
                u.start,
                g.assignment_epoch,
                g.target_of(mid),
                lambda tp, held=others: g.current_partition_epoch(tp) if tp in held else NO_EPOCH,
                u.owned,
                config.own_pending_is_free,
                config.bump_after_revocation,
            )
            now = CurrentAssignment(
                m.state, m.member_epoch, m.previous_member_epoch, m.assigned, m.pending_revocation
            )
            if nxt == now:
                continue
            revoking = MemberState.UNREVOKED_PARTITIONS
            if nxt is None or nxt.member_epoch != u.generation or revoking in (nxt.state, m.state):
                return None
            redone.add(mid)
            apply(
                d.state.consumer,
                CurrentAssignmentRecord(
                    gid,
                    mid,
                    nxt.member_epoch,
                    nxt.previous_member_epoch,
                    nxt.state,
                    tuple(sorted(nxt.assigned)),
                    tuple(sorted(nxt.pending_revocation)),
                ),
            )
        return redone

    def _with_assigned(
        self, h: MHypo, gid: str, member_id: str, got: frozenset[TopicPartition]
    ) -> list[MHypo]:
        """``h`` (whose target gives ``member_id`` exactly ``got``) with the member reconciled to it,
        when that is legal: no other member holds any of ``got`` and it revokes nothing."""
        g = h.state.consumer.groups.get(gid)
        m = None if g is None else g.members.get(member_id)
        if g is None or m is None or m.pending_revocation:
            return []
        others: frozenset[TopicPartition] = frozenset()
        for mid, other in g.members.items():
            if mid != member_id:
                others |= other.held
        if got & others or g.target_of(member_id) != got:
            return []
        d = h.copy()
        apply(
            d.state.consumer,
            CurrentAssignmentRecord(
                gid,
                member_id,
                m.member_epoch,
                m.previous_member_epoch,
                MemberState.STABLE,
                tuple(sorted(got)),
                (),
            ),
        )
        return [d]


class RefChooser:
    """The model's choices beside a real target: fresh ids depend only on the request (so equal
    hypotheses stay equal; the target's id is adopted anyway), ties take the first option."""

    def __init__(self) -> None:
        self.ref = 0
        self.counter = 0

    def reset(self, ref: int) -> None:
        self.ref, self.counter = ref, 0

    def new_uuid(self) -> str:
        self.counter += 1
        return str(uuid.UUID(int=(0x5EED << 96) | (self.ref << 16) | self.counter, version=4))

    def pick(self, kind: str, options: Any) -> str:
        return str(options[0])


class _NotOffered(Exception):
    def __init__(self, api: str, message: str) -> None:
        super().__init__(message)
        self.api = api


def _given(answer: Any) -> frozenset[TopicPartition] | None:
    if isinstance(answer, ConsumerGroupHeartbeatResponse):
        return answer.assigned()
    if isinstance(answer, SyncGroupResponse):
        return sync_partitions(answer)
    return None


def _api_name(request: Any) -> str:
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        return "ConsumerGroupHeartbeat"
    return API_NAMES[api_key_of(request)]


def _member_ids(state: MixedState) -> set[str]:
    out: set[str] = set()
    for g in state.consumer.groups.values():
        out |= set(g.members)
    for cg in state.classic.groups.values():
        out |= set(cg.members) | set(getattr(cg, "pending_members", ()))
    return out


def _classic_deadlines(group: Any) -> list[tuple[int]]:
    """The armed timers of a classic group (`model.classic.state` ``Group.timers``)."""
    return [(int(tm.deadline),) for tm in group.timers.values()]


def mixed_config(handle: Any) -> MixedConfig:
    """The mixed model with the target's group settings (launcher settings, else Kafka's defaults)."""
    from conformance.cli.check import real_profile
    from conformance.protocols.build import classic_config, consumer_config
    from conformance.protocols.consumer.setup import consumer_setup
    from model.mixed.state import MigrationPolicy

    _factory, consumer_keys, _ = consumer_setup(handle, real_profile("ci"))
    settings = dict(getattr(handle.launcher, "settings", {}) or {})
    policy = MigrationPolicy(str(settings.get("group.consumer.migration.policy", "bidirectional")).lower())
    # (the oracle keeps every policy as a hypothesis unless the launcher states it: mixed_check)
    return MixedConfig(
        policy=policy,
        classic=classic_config(handle.model_config, "target settings"),
        consumer=consumer_config(consumer_keys, {}, "target settings"),
    )


__all__ = ["MixedOraclePort", "Result", "compare", "mixed_config"]
