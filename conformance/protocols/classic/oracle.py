"""The oracle: a real coordinator behind the simulator's `ClassicPort`, with the model beside it.

Every request goes to the target (through the `kafka` adapter) and to the reference model on the
same inputs. The model is kept as a small set of *hypotheses* because three things are not
decided by the inputs alone (docs/oracle.md):

* Kafka's arbitrary choices (generated member ids, leader re-election, protocol-vote ties): every
  choice point of the model is enumerated through a scripted `Chooser`; the target's answer keeps
  the hypotheses that made its choice (legal) and drops the others, so the model ADOPTS it. A
  generated member id is provisional in the model until the target's answer names it, then it is
  renamed everywhere in that hypothesis.
* Real time: the target's timers run on its own clock. A model timer whose deadline lies inside the
  tolerance window around the moment of an operation (``early`` ms before, ``late`` ms after) may
  or may not have fired in the target yet, so both outcomes are kept until an answer tells them
  apart. Outside the window the model is exact. Verdicts therefore do not depend on scheduling luck
  as long as the target's timers fire within ``late`` ms of their deadline.
* Answers in flight: a model answer not yet seen from the target stays outstanding until the
  target answers (checked then) or the answer deadline passes (a finding: the target never
  answered). A target answer the model never gives, once every timer that could explain it has
  certainly fired, is a finding too.

When no hypothesis explains what the target did, that is a *divergence*: a finding at the
``protocol`` level (errors, generations, members, leader legality, assignments) with the request,
the target's answer and what each hypothesis expected. Differences that only concern Apache Kafka's
exact choices (member id format, echoed protocol fields) are ``kafka-compat`` findings.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from conformance.engine.oracle.timer_split import SplitPort, switched_from
from conformance.errors import TargetError
from conformance.protocols.classic import faults
from conformance.protocols.classic.codec import API_NAMES, api_key_of, decode_response, encode_request
from conformance.wire.connection import KafkaAdapter
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import (
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitResponse,
    Request,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.classic.records import GroupMetadataRecord, GroupUpdated
from model.classic.state import ClassicState, GroupState
from model.classic.world import GroupSnap, PersistedSnap
from model.errors import ErrorCode
from model.result import Delivery, Result

PROVISIONAL = "00000000-0000-4000-8000-"
DEBUG = bool(os.environ.get("GROUPCHECK_ORACLE_DEBUG"))


# ---------------------------------------------------------------------- findings


def crash_detail(launcher: Any) -> str:
    """ ": <the launcher's crash report>" when the target process died, else "" (classic and KIP-848
    oracles). The process may need a moment to be reaped after closing its sockets: ask for 1 s."""
    if launcher is None:
        return ""
    for _ in range(20):
        try:
            launcher.check_alive()
        except Exception as e:  # noqa: BLE001 - the launcher's crash report is the finding
            return f": {e}"
        time.sleep(0.05)
    return ""


@dataclass(frozen=True)
class Finding:
    """A divergence or wire problem about the target, with the level it counts at."""

    level: str  # protocol | kafka-compat
    rule: str  # e.g. oracle.JoinGroup, wire.trailing-bytes, target.crash
    message: str
    at_ms: int = 0


# ---------------------------------------------------------------------- choices
class ScriptChooser:
    """Follows a script of option indexes, records every choice point (kind, options) it meets."""

    def __init__(self) -> None:
        self.script: tuple[int, ...] = ()
        self.log: list[tuple[str, tuple[str, ...], int]] = []
        self.ref = 0
        self.counter = 0

    def reset(self, script: tuple[int, ...], ref: int = 0) -> None:
        self.script = script
        self.log = []
        self.ref = ref
        self.counter = 0

    def new_uuid(self) -> str:
        """Provisional and the same in every candidate of one operation (so equal hypotheses dedupe)."""
        self.counter += 1
        return f"{PROVISIONAL}{self.ref:08d}{self.counter:04d}"

    def pick(self, kind: str, options: Sequence[str]) -> str:
        i = len(self.log)
        index = self.script[i] if i < len(self.script) else 0
        self.log.append((kind, tuple(options), index))
        return options[index]


# ---------------------------------------------------------------------- hypotheses
@dataclass
class Hypo:
    state: ClassicState
    durable: list[Any] = field(default_factory=list)
    transitions: list[tuple[GroupState, GroupState]] = field(default_factory=list)
    #: model answers the target has not given yet: ref -> (response, model time)
    outstanding: dict[int, tuple[Any, int]] = field(default_factory=dict)
    matched: set[int] = field(default_factory=set)
    choices: tuple[str, ...] = ()
    #: how many of ``transitions`` the simulator has been shown (only the reported hypothesis advances it)
    reported: int = 0
    #: the model clock of this hypothesis: never behind the real clock, ahead of it by timers fired early
    now: int = 0
    #: provisional member ids this hypothesis has bound to the target's ids
    bound: dict[str, str] = field(default_factory=dict)
    #: choices this hypothesis made that the protocol allows but Apache Kafka would not (kafka-compat)
    compat: tuple[str, ...] = ()
    #: timers an operation armed, by the refs it answered (and its own): ref -> (model time, timers)
    armed: dict[int, tuple[int, tuple[tuple[str, str, int], ...]]] = field(default_factory=dict)
    #: how much later than its model deadline the target may fire a timer: (group, key, deadline) -> ms
    slack: dict[tuple[str, str, int], int] = field(default_factory=dict)
    #: timers this candidate fired before its operation: (refs they answered, the groups, how many
    #: transitions and durable records, all as they stood just before the operation); see `pre_split`
    pre: tuple[frozenset[int], dict[str, GroupSnap], int, int] | None = None
    #: the same for the timers it fired after its operation (the view: just after the operation)
    post: tuple[frozenset[int], dict[str, GroupSnap], int, int] | None = None
    #: the hypothesis this candidate was computed from, during one operation only (`_operate`
    #: clears it): `timer_split.switched_from`
    parent: Any = field(default=None, compare=False, repr=False)

    def key(self) -> Any:
        return (self.state, sorted(self.outstanding.items(), key=lambda kv: kv[0]))


def rename(obj: Any, old: str, new: str) -> Any:
    """Replace member id ``old`` by ``new`` everywhere in a model value (timer keys included)."""
    if isinstance(obj, str):
        if obj == old:
            return new
        if obj.endswith(":" + old):
            return obj[: -len(old)] + new
        return obj
    if isinstance(obj, Enum | bytes | int | float | bool) or obj is None:
        return obj
    if isinstance(obj, dict):
        return {rename(k, old, new): rename(v, old, new) for k, v in obj.items()}
    if isinstance(obj, list):
        return [rename(v, old, new) for v in obj]
    if isinstance(obj, tuple):
        return tuple(rename(v, old, new) for v in obj)
    if isinstance(obj, frozenset):
        return frozenset(rename(v, old, new) for v in obj)
    if isinstance(obj, set):
        return {rename(v, old, new) for v in obj}
    if dataclasses.is_dataclass(obj):
        return type(obj)(**{f.name: rename(getattr(obj, f.name), old, new) for f in dataclasses.fields(obj)})
    return obj


def _rename_hypo(h: Hypo, old: str, new: str) -> None:
    h.state = rename(h.state, old, new)
    h.durable = rename(h.durable, old, new)
    h.outstanding = rename(h.outstanding, old, new)
    # timer keys carry member ids: the slack a timer was given (and the timers an operation armed,
    # widened when its answer comes) must follow the rename, or a new member's pending timer loses
    # its slack the moment its MEMBER_ID_REQUIRED answer names it
    h.armed = rename(h.armed, old, new)
    h.slack = rename(h.slack, old, new)
    h.pre = rename(h.pre, old, new)
    h.post = rename(h.post, old, new)


def _ids_in(h: Hypo) -> set[str]:
    out: set[str] = set()
    for g in h.state.groups.values():
        out |= set(g.members) | set(g.pending_members)
    return out


# ---------------------------------------------------------------------- comparison
class Mismatch(Exception):
    pass


def _bind(h: Hypo, model_id: str, target_id: str, what: str) -> None:
    if model_id == target_id:
        return
    if PROVISIONAL in model_id and target_id and target_id not in _ids_in(h):
        _rename_hypo(h, model_id, target_id)
        h.bound = {**h.bound, model_id: target_id}
        return
    raise Mismatch(f"{what}: model {model_id!r}, target {target_id!r}")


def compare(h: Hypo, ref: int, target: Any) -> None:
    """Protocol-level equality of the model's answer to ``ref`` and the target's, binding provisional ids."""
    model = h.outstanding[ref][0]
    if type(model) is not type(target):
        raise Mismatch(f"answer type {type(target).__name__}, model {type(model).__name__}")
    if isinstance(model, JoinGroupResponse):
        if model.error != target.error:
            raise Mismatch(f"error {_e(target.error)}, model {_e(model.error)}")
        if model.error in (ErrorCode.MEMBER_ID_REQUIRED, ErrorCode.NONE):
            _bind(h, model.member_id, target.member_id, "member id")
        if model.error != ErrorCode.NONE:
            return
        model = h.outstanding[ref][0]
        if model.generation_id != target.generation_id:
            raise Mismatch(f"generation {target.generation_id}, model {model.generation_id}")
        if (model.protocol_name or None) != (target.protocol_name or None):
            raise Mismatch(f"protocol {target.protocol_name!r}, model {model.protocol_name!r}")
        _bind(h, model.leader, target.leader, "leader")
        model = h.outstanding[ref][0]
        if model.skip_assignment != target.skip_assignment:
            raise Mismatch(f"skip_assignment {target.skip_assignment}, model {model.skip_assignment}")
        mine = sorted((m.member_id, m.group_instance_id or "", m.metadata) for m in model.members)
        theirs = sorted((m.member_id, m.group_instance_id or "", m.metadata) for m in target.members)
        if len(mine) != len(theirs):
            raise Mismatch(f"{len(theirs)} members listed, model {len(mine)}")
        # bind provisional ids of listed members by (instance id, metadata) when unambiguous
        for mid, inst, meta in mine:
            if PROVISIONAL in mid:
                free = [t for t in theirs if t[1] == inst and t[2] == meta and t[0] not in _ids_in(h)]
                if len(free) == 1:
                    _bind(h, mid, free[0][0], "listed member")
        model = h.outstanding[ref][0]
        mine = sorted((m.member_id, m.group_instance_id or "", m.metadata) for m in model.members)
        if mine != theirs:
            raise Mismatch(f"members {[m[0] for m in theirs]}, model {[m[0] for m in mine]}")
    elif isinstance(model, SyncGroupResponse):
        if model.error != target.error:
            raise Mismatch(f"error {_e(target.error)}, model {_e(model.error)}")
        if model.error == ErrorCode.NONE and model.assignment != target.assignment:
            raise Mismatch(f"assignment {target.assignment.hex()}, model {model.assignment.hex()}")
    elif isinstance(model, LeaveGroupResponse):
        if model.error != target.error:
            raise Mismatch(f"error {_e(target.error)}, model {_e(model.error)}")
        mine = [(m.member_id, m.group_instance_id, m.error) for m in model.members]
        theirs = [(m.member_id, m.group_instance_id, m.error) for m in target.members]
        if mine != theirs:
            raise Mismatch(f"members {theirs}, model {mine}")
    elif isinstance(model, OffsetCommitResponse):
        if sorted(model.partitions) != sorted(target.partitions):
            raise Mismatch(f"partitions {sorted(target.partitions)}, model {sorted(model.partitions)}")
    elif model.error != target.error:
        raise Mismatch(f"error {_e(target.error)}, model {_e(model.error)}")


def _e(code: Any) -> str:
    return code.name if isinstance(code, ErrorCode) else str(code)


def compat_notes(request: Request, version: int, target: Any) -> list[str]:
    """Apache Kafka's exact choices that the protocol leaves open (kafka-compat level only)."""
    out = []
    if isinstance(target, JoinGroupResponse) and target.error in (
        ErrorCode.NONE,
        ErrorCode.MEMBER_ID_REQUIRED,
    ):
        assert isinstance(request, JoinGroupRequest)
        prefix = (
            request.group_instance_id if request.group_instance_id is not None else request.client_id
        ) + "-"
        mid = target.member_id
        if not request.member_id and not (mid.startswith(prefix) and _is_uuid(mid[len(prefix) :])):
            out.append(f"member id {mid!r} is not '{prefix}<UUID>' (Kafka: ClassicGroup.java L774)")
        if version >= 7 and target.error == ErrorCode.NONE and target.protocol_type != request.protocol_type:
            out.append(
                f"JoinGroup v{version} protocol_type {target.protocol_type!r}, Kafka echoes {request.protocol_type!r}"
            )
    if isinstance(target, SyncGroupResponse) and version >= 5 and target.error == ErrorCode.NONE:
        assert isinstance(request, SyncGroupRequest)
        if target.protocol_type != request.protocol_type or target.protocol_name != request.protocol_name:
            out.append(
                f"SyncGroup v5 protocol ({target.protocol_type!r}, {target.protocol_name!r}), "
                f"Kafka answers the group's ({request.protocol_type!r}, {request.protocol_name!r})"
            )
    return out


def _is_uuid(text: str) -> bool:
    import uuid

    try:
        uuid.UUID(text)
        return True
    except ValueError:
        return False


def protocol_level(coordinator: ClassicCoordinator) -> ClassicCoordinator:
    """The same coordinator (mutants included) with the protocol's freedom where Kafka is stricter.

    Kafka keeps a leader that rejoined (CG L502); the protocol only needs the leader to be a joined
    member. The oracle offers every joined member as a choice, Kafka's first; a hypothesis that
    needs another one is legal at the protocol level and marked as a kafka-compat deviation.
    """
    base = type(coordinator)

    class ProtocolLevel(base):  # type: ignore[valid-type, misc]
        def elect_joined_leader(self, tx: Any, group: Any) -> bool:
            joined = sorted(m.member_id for m in group.members.values() if m.awaiting_join is not None)
            if not joined:
                return False
            leader = group.members.get(group.leader or "")
            if leader is not None and leader.awaiting_join is not None:
                options = [leader.member_id, *(j for j in joined if j != leader.member_id)]
                pick = self.chooser.pick("leader-kept", options)
                if pick != leader.member_id:
                    tx.set(group, leader=pick)
                return True
            tx.set(group, leader=self.chooser.pick("leader", joined))
            return True

    ProtocolLevel.__name__ = f"ProtocolLevel{base.__name__}"
    out = ProtocolLevel.__new__(ProtocolLevel)
    out.__dict__.update(coordinator.__dict__)
    return out


# ---------------------------------------------------------------------- the port
@dataclass
class Timing:
    """Tolerances around the target's timers (ms) and how long an answer may take."""

    early_ms: int = 30
    late_ms: int = 500
    #: the most a timer may fire late for its arming request's answer delay (OraclePort._widen)
    slack_cap_ms: int = 2000
    #: how long after its deadline a timer counts as fired when the target has not been seen
    #: running since (OraclePort._seen_running: a target paused for longer is out of scope)
    unseen_cap_ms: int = 2000
    answer_deadline_ms: int = 8000
    max_hypotheses: int = 24


@dataclass
class TargetSession:
    """What the ports of one run share: the adapter, topic naming, the target's launcher, findings."""

    adapter: KafkaAdapter
    run_id: str
    ensure_topic: Callable[[str], None]
    launcher: Any = None
    timing: Timing = field(default_factory=Timing)
    groups: int = 0
    rtt_ms: list[float] = field(default_factory=list)
    #: round-trip times of Heartbeat requests (always answered at once), in ms
    heartbeat_rtt_ms: list[float] = field(default_factory=list)
    ops: int = 0
    compat: list[Finding] = field(default_factory=list)
    #: coordinator restarts the machine may ask for in this run (faults.restart; 0: the rule is off)
    max_restarts: int = 0
    restarts_done: int = 0
    #: how a restart stops the target: kill (SIGKILL, a crash; default) or term (clean shutdown)
    restart_signal: str = "kill"
    #: (stopped, loaded after, serving again) in port ms, per restart
    restart_times: list[tuple[int, int, int]] = field(default_factory=list)
    #: answers the fault proxy swallowed (LoseResponse on the wire), and transient-error resends
    wire_drops: int = 0
    resends: int = 0
    #: requests the proxy duplicated, connections cut (CutConnection, DuplicateRequest)
    wire_duplicates: int = 0
    wire_cuts: int = 0
    #: requests the proxy held until released (the consumer machine's delay_request)
    wire_delays: int = 0

    def real_topic(self, name: str, partitions: int) -> str:
        return f"gc-{self.run_id}-{name}-{partitions}"

    def next_group(self) -> str:
        self.groups += 1
        return f"gc-{self.run_id}-g{self.groups}"


class OraclePort(SplitPort):
    """`ClassicPort` for a real coordinator plus the model hypotheses (see module docstring). Its
    `take_pre_split` / `take_post_split` (`SplitPort`) give `Hypo.pre` / `Hypo.post` of the
    reported hypothesis: group views, transitions and durable records as they stood at the split."""

    supports_append_failure = False

    def __init__(self, coordinator: ClassicCoordinator, session: TargetSession) -> None:
        self.session = session
        self.adapter = session.adapter
        self.timing = session.timing
        self.chooser = ScriptChooser()
        coordinator = protocol_level(coordinator)
        coordinator.chooser = self.chooser
        self.coordinator = coordinator
        self.max_size = coordinator.config.max_size
        self.initial_rebalance_delay_ms = coordinator.config.initial_rebalance_delay_ms
        self.real_group = session.next_group()
        self.t0 = time.monotonic()
        self.hypos: list[Hypo] = [Hypo(ClassicState())]
        self.requests: dict[
            int, tuple[str, Request, int, int]
        ] = {}  # ref -> (member, model request, version, sent ms)
        self.answers: dict[int, tuple[Any, int]] = {}  # ref -> (model-typed target answer, arrival ms)
        self.delivered: set[int] = set()
        self.findings: list[Finding] = []
        self.current_member = "?"
        self.compat_reported = 0
        self.topics: dict[str, int] = {}
        self.log: list[str] = []
        # faults (conformance/protocols/classic/faults.py): requests in flight at a restart, answers the proxy
        # swallowed ((client address, correlation id) -> ref), what was sent, retries
        self.lost: set[int] = set()
        self.swallowed: dict[tuple[Any, int], int] = {}
        self.fault_next: str | None = None
        self.sent: dict[int, tuple[Any, str, Any]] = {}
        self.retry_since: dict[int, float] = {}
        self.retries = 0
        self.restarts: list[tuple[int, int, int]] = []  # (stopped, loaded after, serving) ms
        # duplicated requests (faults.submit): original ref -> client address; the copy's ref per
        # client address once the simulator applied it; copy answers that came first
        self.duplicated: dict[int, tuple[Any, ...]] = {}
        self.copy_ref: dict[tuple[Any, ...], int] = {}
        self.copy_early: dict[tuple[Any, ...], tuple[int, bytes, float]] = {}
        self.copy_ready: list[tuple[Any, int, bytes, float]] = []
        #: requests the proxy holds (DelayRequest, faults.hold): ref -> its connection (None: not sent)
        self.held: dict[int, Any] = {}
        # timers fired just before the last request (take_pre_split) and, while RealTimeSim shows
        # that part, the view it reads: (groups, transitions, durable records) before the request
        self.pre_split: tuple[frozenset[int], dict[str, GroupSnap], int, int] | None = None
        self.post_split: tuple[frozenset[int], dict[str, GroupSnap], int, int] | None = None
        self.mid_view: tuple[dict[str, GroupSnap], int, int] | None = None

    @property
    def supports_failover(self) -> bool:
        """Only a target whose launcher can restart it on the same state (faults.restart)."""
        launcher = self.session.launcher
        return (
            launcher is not None
            and "restart" in getattr(launcher, "capabilities", ())
            and self.session.restarts_done < self.session.max_restarts
        )

    @property
    def wire_faults(self) -> bool:
        return self.adapter.proxy is not None

    # ------------------------------------------------------------------ clock
    def clock(self) -> int:
        return int((time.monotonic() - self.t0) * 1000)

    def sleep_until(self, ms: int) -> list[Delivery]:
        """Wait (collecting answers) until the port clock reaches ``ms``."""
        while True:
            left = ms - self.clock()
            if left <= 0:
                return []
            self._collect(min(left, 50) / 1000)

    # ------------------------------------------------------------------ ClassicPort
    def send(self, ref: int, request: Request, now: int) -> list[Delivery]:
        t = self.clock()
        key = api_key_of(request)
        caps = self.adapter.connect()
        version = caps.version(key, getattr(request, "version", 99 if key != 8 else 8))
        if version is None:
            self._finding(
                "protocol", f"oracle.{API_NAMES[key]}", f"target offers no {API_NAMES[key]} version we speak"
            )
            return []
        request = self._as_sent(request, version)
        real = dataclasses.replace(request, group_id=self.real_group)
        payload = encode_request(real, version, self._real_topic)
        self.requests[ref] = (self.current_member, request, version, t)
        client_id = request.client_id if isinstance(request, JoinGroupRequest) else self.current_member
        try:
            faults.submit(self, payload, ref, client_id)
        except TargetError as e:  # cannot even connect any more: the target went away mid-run
            self._crash(t, f"cannot send {API_NAMES[key]}: {e}")
            return []
        if ref in self.held:  # held by the proxy: the model applies it at the release (faults.release)
            return []
        self.log.append(f"t={t} ref {ref} {self.current_member} {API_NAMES[key]} v{version}")
        out = self._operate(t, ("send", ref, request))
        if isinstance(request, JoinGroupRequest) and ref not in self.answers:
            self._barrier()
        return out

    def _barrier(self) -> None:
        """Wait until the target shows the group as some hypothesis has it (state and member count).

        A parked JoinGroup has no answer, and the target orders requests from different connections
        as it likes; without this, the next member's request could overtake it.
        """
        wanted = set()
        for h in self.hypos:
            g = h.state.groups.get("g")
            if g is not None:
                wanted.add((g.state.value, len(g.members)))
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            seen = self.adapter.describe(self.real_group)
            if seen is None:
                return
            if (seen[0], len(seen[1])) in wanted:
                return
            self._collect(0.005)

    def advance(self, now: int) -> list[Delivery]:
        return self._operate(self.clock(), ("advance",))

    def failover(self, now: int) -> list[Delivery]:
        return faults.restart(self)

    def lose_answer(self, ref: int) -> bool:
        return faults.lose_in_flight(self, ref)

    def cut_connection(self, ref: int) -> None:
        faults.cut(self, ref)

    def send_copy(self, ref: int, request: Request, now: int, original: int) -> list[Delivery]:
        """The copy of duplicated request ``original``, applied by the target right after it answered
        the original (faults.submit wrote it): the model applies it now and the copy's answer, which
        the proxy hands over, is judged like any other."""
        client = self.duplicated.pop(original, None)
        member, _request, version, _sent = self.requests[original]
        if client is None:  # no proxy: the copy goes on the wire now, from the same member
            self.current_member = member
            return self.send(ref, request, now)
        t = self.clock()
        self.requests[ref] = (member, self._as_sent(request, version), version, t)
        self.copy_ref[client] = ref
        early = self.copy_early.pop(client, None)
        if early is not None:
            self.copy_ready.append((client, *early))
        self.log.append(f"t={t} ref {ref}: the target applies the copy of ref {original}")
        return self._operate(t, ("send", ref, self.requests[ref][1]))

    def hold(self, ref: int, request: Request, now: int) -> None:
        """DelayRequest: the request goes on the wire and the fault proxy holds it (faults.hold);
        the model applies it at `release`, when the target sees it."""
        self.fault_next = "hold"
        self.send(ref, request, now)

    def release(self, ref: int, request: Request, now: int) -> list[Delivery]:
        return faults.release(self, ref)

    def inject_append_failure(self) -> None:
        raise NotImplementedError("append failures cannot be injected into a real target")

    def create_topic(self, topic: str, partitions: int) -> None:
        self.session.ensure_topic(self.session.real_topic(topic, partitions))
        self.topics[topic] = partitions
        for h in self.hypos:
            self.coordinator.create_topic(h.state, topic, partitions)

    def group(self, group_id: str) -> GroupSnap | None:
        if self.mid_view is not None:
            return self.mid_view[0].get(group_id)
        g = self.hypos[0].state.groups.get(group_id) if self.hypos else None
        return None if g is None else GroupSnap.of(g)

    def persisted(self, group_id: str) -> PersistedSnap | None:
        durable = self.hypos[0].durable if self.hypos else []
        if self.mid_view is not None:
            durable = durable[: self.mid_view[2]]
        return persisted_in(durable, group_id)

    def take_transitions(self) -> tuple[tuple[GroupState, GroupState], ...]:
        if not self.hypos:
            return ()
        h = self.hypos[0]
        upto = len(h.transitions) if self.mid_view is None else self.mid_view[1]
        taken = tuple(h.transitions[h.reported : upto])
        h.reported = max(h.reported, upto)
        return taken

    def renames(self) -> list[tuple[str, str]]:
        """Provisional member ids the target has named since the run began (old, new)."""
        return list(self.hypos[0].bound.items()) if self.hypos else []

    def model_now(self) -> int:
        return self.hypos[0].now if self.hypos else 0

    def take_findings(self) -> list[Finding]:
        taken, self.findings = self.findings, []
        return taken

    def close(self) -> None:
        for member in {m for m, *_ in self.requests.values()}:
            self.adapter.drop_member(member)

    # ------------------------------------------------------------------ plumbing
    def _as_sent(self, request: Request, version: int) -> Request:
        """The model request as the wire carries it at ``version`` (fields a version lacks are dropped)."""
        if isinstance(request, JoinGroupRequest):
            r = dataclasses.replace(request, version=version)
            if version < 5:
                r = dataclasses.replace(r, group_instance_id=None)
            if version == 0:
                r = dataclasses.replace(r, rebalance_timeout_ms=-1)
            return r
        if isinstance(request, SyncGroupRequest):
            r = dataclasses.replace(request, version=version)
            if version < 5:
                r = dataclasses.replace(r, protocol_type=None, protocol_name=None)
            if version < 3:
                r = dataclasses.replace(r, group_instance_id=None)
            return r
        if isinstance(request, LeaveGroupRequest):
            r = dataclasses.replace(request, version=version)
            if version < 3:
                r = dataclasses.replace(r, members=request.members[:1])
            return r
        if hasattr(request, "version"):
            r = dataclasses.replace(request, version=version)  # type: ignore[type-var]
            if version < 3 and hasattr(r, "group_instance_id"):
                r = dataclasses.replace(r, group_instance_id=None)  # type: ignore[type-var]
            return r
        return request

    def _real_topic(self, name: str) -> str:
        return (
            self.session.real_topic(name, self.topics.get(name, 0))
            if name in self.topics
            else f"gc-{self.session.run_id}-missing-{name}"
        )

    def _model_topic(self, real: str, partition: int, model_topics: list[str]) -> str:
        for name in model_topics:
            if self._real_topic(name) == real:
                return name
        return real

    def _finding(self, level: str, rule: str, message: str) -> None:
        f = Finding(level, rule, message, self.clock())
        (self.findings if level == "protocol" else self.session.compat).append(f)

    def _collect(self, timeout: float) -> None:
        for arrival in self.adapter.poll(timeout) + faults.captured(self):
            ref = arrival.tag
            entry = self.requests.get(ref)
            if entry is None:
                continue
            member, request, version, sent = entry
            at = int((arrival.at - self.t0) * 1000)
            if arrival.value is None:
                self.answers[ref] = (None, at)
                continue
            try:
                resp = decode_response(request, arrival.value, version, self._model_topic)
            except Exception as e:  # noqa: BLE001 - a kio value we cannot read is a finding
                self._finding("protocol", "wire.undecodable", f"ref {ref}: {e}")
                continue
            if faults.transient(resp) and faults.retry(self, ref, resp):
                continue
            self.answers[ref] = (resp, at)
            rtt = (arrival.at - self.t0) * 1000 - sent
            self.session.rtt_ms.append(rtt)
            if isinstance(resp, HeartbeatResponse):
                self.session.heartbeat_rtt_ms.append(rtt)
            for note in compat_notes(request, version, resp):
                self._finding(
                    "kafka-compat", f"compat.{API_NAMES[api_key_of(request)]}", f"ref {ref}: {note}"
                )
        for wf in self.adapter.take_findings():
            self._finding("protocol", f"wire.{wf.kind}", wf.describe())

    # ------------------------------------------------------------------ hypotheses
    def _run(
        self, h: Hypo, t: int, op: tuple[Any, ...], k: int, j: int, script: tuple[int, ...]
    ) -> tuple[Hypo, int, int] | None:
        """One candidate: certain timers, k uncertain ones, the op, j uncertain ones after it."""
        tm = self.timing
        c = Hypo(
            copy.deepcopy(h.state),
            list(h.durable),
            list(h.transitions),
            dict(h.outstanding),
            set(h.matched),
            h.choices,
            h.reported,
            h.now,
            h.bound,
            h.compat,
            dict(h.armed),
            dict(h.slack),
        )
        self.chooser.reset(script, op[1] if op[0] == "send" else 0)
        fired = self._fire_certain(c, t - tm.early_ms, t)
        before = self._uncertain(c, t)
        if k > len(before):
            return None
        for _ in range(k):
            self._fire_next(c)
        if op[0] == "send" and fired + k:
            c.pre = (
                frozenset(c.outstanding) - frozenset(h.outstanding),
                {gid: GroupSnap.of(g) for gid, g in c.state.groups.items()},
                len(c.transitions),
                len(c.durable),
            )
        if op[0] == "send":
            _, ref, request = op
            at = max(t, c.now)
            self._apply(c, lambda: self.coordinator.handle(c.state, request, ref, at), at, ref)
        c.now = max(c.now, t)
        after = self._uncertain(c, t)
        if j > len(after):
            return None
        if op[0] == "send" and j:
            mark = frozenset(c.outstanding)
            view = (
                {gid: GroupSnap.of(g) for gid, g in c.state.groups.items()},
                len(c.transitions),
                len(c.durable),
            )
        for _ in range(j):
            self._fire_next(c)
        if op[0] == "send" and j:
            c.post = (frozenset(c.outstanding) - mark, *view)
        c.choices = h.choices + tuple(
            f"{kind}={opts[i]}" for kind, opts, i in self.chooser.log if len(opts) > 1
        )
        return c, len(before), len(after)

    def _seen_running(self, due: int, t: int) -> bool:
        """Has the target shown it was running after ``due``, early enough before ``t``?

        A Kafka coordinator timer does not act at its deadline: `CoordinatorRuntime`'s
        `EventBasedCoordinatorTimer` turns the expired `TimerTask` (fired by the `SystemTimer`
        reaper thread) into a `CoordinatorWriteEvent` queued with `enqueueLast` behind whatever
        requests are queued already (coordinator-common `runtime/CoordinatorRuntime.java`). A broker
        that is paused (GC, a starved or stopped JVM) across a deadline queues the timeout only when
        it runs again, in a race with the requests that arrived meanwhile: a request sent well after
        the deadline may still be processed first. So a due timer counts as certainly fired only
        once the target answered a request sent at or after ``due`` (it was running then, and its
        reaper with it), that answer having arrived ``early_ms`` before ``t``; or, never seen
        running, ``unseen_cap_ms`` after ``due``. Until then both outcomes stay hypotheses.
        Requests are dated by their send time (not the answer's arrival, which a slow reader of
        the socket may see late)."""
        tm = self.timing
        if due + tm.unseen_cap_ms <= t:
            return True
        last = t - tm.early_ms
        return any(at <= last and self.requests[ref][3] >= due for ref, (_r, at) in self.answers.items())

    def _uncertain(self, c: Hypo, t: int) -> list[int]:
        tm = self.timing
        return sorted(
            tmr.deadline
            for g in c.state.groups.values()
            for tmr in g.timers.values()
            if tmr.deadline <= t + tm.late_ms
        )

    def _fire_next(self, c: Hypo) -> None:
        nxt = self.coordinator.next_deadline(c.state)
        if nxt is None:
            return
        deadline, gid, key = nxt
        c.now = max(c.now, deadline)
        self._apply(c, lambda: self.coordinator.fire_timer(c.state, gid, key, deadline), deadline)

    def _fire_certain(self, c: Hypo, cutoff: int, t: int) -> int:
        """Fire, in deadline order, the timers that have certainly fired in the target before an
        operation at ``t``: up to the first one whose deadline plus its slack lies beyond ``cutoff``
        (see `_widen`) or that the target has not been seen running past (`_seen_running`).

        Each firing is dated at its deadline, as the model applies it: the timers it arms (a join
        phase completed by its timer re-arms every session, GMM `completeClassicGroupJoin`) are
        widened by how much later than that deadline the target answered (its parked JoinGroups),
        not by how much later than this operation. Returns how many fired."""
        fired = 0
        while True:
            nxt = self.coordinator.next_deadline(c.state)
            if nxt is None or nxt[0] > cutoff:
                return fired
            deadline, gid, key = nxt
            due = deadline + c.slack.get((gid, key, deadline), 0)
            if due > cutoff or not self._seen_running(due, t):
                return fired
            fired += 1
            self._apply(c, lambda: self.coordinator.fire_timer(c.state, gid, key, deadline), deadline)  # noqa: B023

    def _apply(self, c: Hypo, call: Callable[[], Result], t: int, ref: int | None = None) -> None:
        current = {gid: g.state for gid, g in c.state.groups.items()}
        timers = {(gid, k): tm.deadline for gid, g in c.state.groups.items() for k, tm in g.timers.items()}
        result = call()
        armed = tuple(
            (gid, k, tm.deadline)
            for gid, g in c.state.groups.items()
            for k, tm in g.timers.items()
            if timers.get((gid, k)) != tm.deadline
        )
        if armed:
            for r in [d.ref for d in result.deliveries] + ([ref] if ref is not None else []):
                c.armed[r] = (t, armed)
        for rec in result.records:
            if getattr(rec, "durable", False):
                c.durable.append(rec)
            if isinstance(rec, GroupUpdated):
                for name, value in rec.changes:
                    if name == "state":
                        c.transitions.append((current.get(rec.group_id, GroupState.EMPTY), value))
                        current[rec.group_id] = value
        for d in result.deliveries:
            c.outstanding[d.ref] = (d.response, t)

    def _candidates(self, h: Hypo, t: int, op: tuple[Any, ...]) -> list[Hypo]:
        out: list[Hypo] = []
        k = 0
        while True:
            j = 0
            first = None
            while True:
                scripts: list[tuple[int, ...]] = [()]
                n_after = 0
                while scripts:
                    script = scripts.pop()
                    ran = self._run(h, t, op, k, j, script)
                    if ran is None:
                        break
                    c, n_before, n_after = ran
                    first = n_before
                    out.append(c)
                    log = self.chooser.log
                    for i in range(len(script), len(log)):
                        prefix = tuple(x for _, _, x in log[:i])
                        scripts.extend(prefix + (alt,) for alt in range(1, len(log[i][1])))
                    if len(out) > 64:
                        return out
                if j >= n_after:
                    break
                j += 1
            if first is None or k >= first:
                break
            k += 1
        return out

    def _widen(self, c: Hypo, ref: int) -> None:
        """The target's answer to ``ref`` arrived this much after the model applied the operation that
        armed timers: the target armed them as late as that (it processes an operation somewhere
        before its answer), so it may fire them that much after their model deadlines.

        Without this a timer the model counts as certainly fired (deadline more than ``early_ms``
        ago) may still be pending in a target that processed the arming request late, and the
        verdict depends on scheduling luck. The model's state and deadlines are untouched (the
        invariants read them); only the oracle's idea of "certainly fired" waits longer, and the
        timers still fire in deadline order in every hypothesis."""
        entry = c.armed.pop(ref, None)
        got = self.answers.get(ref)
        if entry is None or got is None:
            return
        mt, timers = entry
        delta = min(got[1] - mt, self.timing.slack_cap_ms)
        if delta <= 0:
            return
        for gid, key, deadline in timers:
            c.slack[(gid, key, deadline)] = max(delta, c.slack.get((gid, key, deadline), 0))

    def _evaluate(self, c: Hypo, now: int, horizon: int) -> str | None:
        """None when ``c`` is consistent with the target so far, else why not."""
        pending = sorted(
            c.outstanding.items(),
            key=lambda kv: 0 if isinstance(kv[1][0], JoinGroupResponse) and not kv[1][0].members else 1,
        )
        for ref, (model, mt) in pending:
            if ref in self.lost:  # in flight when the target restarted: the model's unload answered it
                c.outstanding.pop(ref, None)
                c.matched.add(ref)
            elif ref in self.answers:
                if self._awaits_binding(c, ref, model):
                    continue
                target, _at = self.answers[ref]
                member, request, version, _sent = self.requests[ref]
                if target is None:
                    return f"ref {ref} ({member} {API_NAMES[api_key_of(request)]} v{version}): target's answer undecodable"
                try:
                    compare(c, ref, target)
                except Mismatch as m:
                    return f"ref {ref} ({member} {API_NAMES[api_key_of(request)]} v{version}): {m}"
                c.outstanding.pop(ref, None)
                c.matched.add(ref)
                self._widen(c, ref)
            elif now - mt > self.timing.answer_deadline_ms:
                member, request, version, _sent = self.requests[ref]
                return (
                    f"ref {ref} ({member} {API_NAMES[api_key_of(request)]} v{version}): the model answered "
                    f"{_short(model)} at t={mt}; the target gave no answer within {self.timing.answer_deadline_ms} ms"
                )
        for ref, (target, at) in self.answers.items():
            if ref in c.matched or ref in c.outstanding:
                continue
            if at + 2 * self.timing.early_ms < horizon:
                member, request, version, _sent = self.requests[ref]
                return (
                    f"ref {ref} ({member} {API_NAMES[api_key_of(request)]} v{version}): target answered "
                    f"{_short(target)} at t={at}; the model had not answered it by t={horizon}"
                )
        return None

    def _awaits_binding(self, c: Hypo, ref: int, model: Any) -> bool:
        """True while the leader's JoinGroup answer lists a provisional member whose own answer has
        not arrived: that answer binds its id; the member list alone cannot when members share an
        instance id and metadata (restarted clients joining with JoinGroup v3). A join completion
        answers every member at once but on their own connections, so the leader's answer may come
        first (classic ci seed 5 on Kafka 4.4.0, only on a quiet machine); the comparison waits for
        the others, as long as the answer deadline allows any wait."""
        if not isinstance(model, JoinGroupResponse) or not model.members:
            return False
        unbound = {m.member_id for m in model.members if PROVISIONAL in m.member_id}
        return any(
            isinstance(other, JoinGroupResponse) and other.member_id in unbound and r not in self.answers
            for r, (other, _mt) in c.outstanding.items()
            if r != ref and r not in self.lost
        )

    def _operate(self, t: int, op: tuple[Any, ...]) -> list[Delivery]:
        tm = self.timing
        self.session.ops += 1
        cands: list[Hypo] = []
        reported = self.hypos[0] if self.hypos else None
        for h in self.hypos:
            for c in self._candidates(h, t, op):
                c.parent = h
                cands.append(c)
        horizon = t - tm.early_ms
        soft = t + tm.late_ms + 50
        hard = t + tm.answer_deadline_ms
        reasons: dict[int, str] = {}
        while True:
            self._collect(0)
            now = self.clock()
            keep = []
            for c in cands:
                why = self._evaluate(c, now, horizon)
                if why is None:
                    keep.append(c)
                else:
                    reasons[id(c)] = why
            if not keep:
                break
            cands = keep
            settled = [c for c in cands if not c.outstanding]
            if len(settled) == len(cands) or (settled and now >= soft) or now >= hard:
                break
            if any(f.rule in ("wire.closed", "wire.truncated") for f in self.findings):
                self._crash(t, "the target closed a connection with requests outstanding")
                return self._new_deliveries()
            self._collect(0.01)
        self.pre_split = self.post_split = self.switched = None
        if not cands or not keep:
            self._divergence(t, op, list(reasons.values()))
            return self._new_deliveries(everything=True)
        else:
            # prefer the hypotheses that already explain every answer the target gave
            # prefer hypotheses that explain every answer the target gave and wait for none of its own
            # (the simulator then sees a world consistent with the answers delivered so far)
            cands.sort(
                key=lambda c: (
                    sum(1 for r in self.answers if r not in c.matched),
                    len(c.outstanding),
                    len(c.compat),
                )
            )
            self.hypos = self._dedupe(cands)
            h0 = self.hypos[0]
            self.pre_split, self.post_split = h0.pre, h0.post
            self.switched = switched_from(reported, h0, _switch_view)
            if self.switched is not None:
                # the observation starts from the parent's state, which holds the transitions
                # that led to it (never shown: the simulator followed the refuted lineage)
                h0.reported = max(h0.reported, len(h0.parent.transitions))
            for h in self.hypos:  # no lineage chains: a parent lives for one operation
                h.parent = None
            for note in h0.compat[self.compat_reported :]:
                self._finding("kafka-compat", "compat.JoinGroup", f"t={t}: {note}")
            self.compat_reported = max(self.compat_reported, len(h0.compat))
        if DEBUG:
            print(
                f"[oracle t={t} {op[0]} {op[1] if len(op) > 1 else ''}] {len(self.hypos)} hypotheses; answers "
                f"{sorted(self.answers)}; h0 matched {sorted(self.hypos[0].matched) if self.hypos else '-'} "
                f"outstanding {sorted(self.hypos[0].outstanding) if self.hypos else '-'} choices {self.hypos[0].choices if self.hypos else ''}"
            )
            for h in self.hypos[:3]:
                g = h.state.groups.get("g")
                if g:
                    print(
                        f"    {g.state.value} gen {g.generation} leader {g.leader} members {sorted(g.members)}"
                    )
        return self._new_deliveries()

    def _divergence(self, t: int, op: tuple[Any, ...], reasons: list[str]) -> None:
        what = "time passes"
        if op[0] == "send":
            member, request, version, _ = self.requests[op[1]]
            what = f"{member} sends {API_NAMES[api_key_of(request)]} v{version} (ref {op[1]})"
        uniq = list(dict.fromkeys(reasons))
        rule = "oracle.divergence"
        for r in uniq:
            for name in ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit"):
                if f" {name} v" in r:
                    rule = f"oracle.{name}"
                    break
            break
        if not self.adapter.alive():
            self._crash(t, "the target stopped answering")
        self._finding(
            "protocol",
            rule,
            f"at t={t}, {what}: no model hypothesis explains the target ({len(uniq)} tried): "
            + " | ".join(uniq[:4]),
        )
        # keep going on the hypotheses we had, so the run can stop at the machine's next check

    def _crash(self, t: int, what: str) -> None:
        """A target that stopped answering: a finding with the launcher's crash report (exit status, log)."""
        if any(f.rule == "target.crash" for f in self.findings):
            return
        self._finding("protocol", "target.crash", f"at t={t}: {what}{crash_detail(self.session.launcher)}")

    def _dedupe(self, cands: list[Hypo]) -> list[Hypo]:
        out: list[Hypo] = []
        for c in cands:
            mine = {r: v[0] for r, v in c.outstanding.items()}
            same = next(
                (
                    o
                    for o in out
                    if o.state == c.state and {r: v[0] for r, v in o.outstanding.items()} == mine
                ),
                None,
            )
            if same is None:
                out.append(c)
            else:  # one hypothesis for both: the wider slack of each timer (a dropped twin may have had it)
                for k, v in c.slack.items():
                    if v > same.slack.get(k, 0):
                        same.slack = {**same.slack, k: v}
        return out[: self.timing.max_hypotheses]

    def _new_deliveries(self, everything: bool = False) -> list[Delivery]:
        """Target answers for the simulator: only those the reported hypothesis has explained (so
        invariants never compare an answer with a model state that has not accounted for it yet)."""
        explained = self.hypos[0].matched if self.hypos and not everything else None
        out = []
        for ref, (resp, _at) in sorted(self.answers.items(), key=lambda kv: kv[1][1]):
            if explained is not None and ref not in explained:
                continue
            if ref not in self.delivered and resp is not None:
                self.delivered.add(ref)
                out.append(Delivery(ref, resp))
        return out


def persisted_in(durable: Sequence[Any], group_id: str) -> PersistedSnap | None:
    """The group's last durable GroupMetadataRecord as the world shows it (None: none yet)."""
    for rec in reversed(durable):
        if isinstance(rec, GroupMetadataRecord) and rec.group_id == group_id:
            return PersistedSnap(rec.generation, tuple((m.member_id, m.assignment) for m in rec.members))
    return None


def _switch_view(parent: Hypo) -> tuple[dict[str, GroupSnap], tuple[Any, ...]]:
    """What `RealTimeSim` shows of a lineage switch's parent (`timer_split.switched_from`): its
    groups and durable records as they stood before the operation."""
    return {gid: GroupSnap.of(g) for gid, g in parent.state.groups.items()}, tuple(parent.durable)


def _short(resp: Any) -> str:
    if resp is None:
        return "nothing"
    err = getattr(resp, "error", None)
    name = type(resp).__name__.replace("Response", "")
    return f"{name}({_e(err)})" if err is not None else name
