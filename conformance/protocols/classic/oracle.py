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

import dataclasses
import time
from typing import Any

from conformance.engine.oracle.adoption import rename
from conformance.engine.oracle.choosers import PROVISIONAL, ScriptChooser
from conformance.engine.oracle.findings import Finding, crash_detail
from conformance.engine.oracle.port import OracleBase
from conformance.errors import TargetError
from conformance.protocols.classic import faults
from conformance.protocols.classic.candidates import ClassicCandidates
from conformance.protocols.classic.codec import API_NAMES, api_key_of, as_sent, encode_request
from conformance.protocols.classic.hypo import Hypo
from conformance.protocols.classic.hypo import rename_hypo as _rename_hypo
from conformance.protocols.classic.judge import protocol_level
from conformance.protocols.classic.operation import ClassicOperation
from conformance.wire.session import TargetSession, Timing
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import JoinGroupRequest, Request
from model.classic.port import persisted_in
from model.classic.state import ClassicState, GroupState
from model.classic.world import GroupSnap, PersistedSnap
from model.result import Delivery


class OraclePort(ClassicOperation, ClassicCandidates, OracleBase):
    """`ClassicPort` for a real coordinator plus the model hypotheses (see module docstring). Its
    `take_pre_split` / `take_post_split` (`SplitPort`) give `Hypo.pre` / `Hypo.post` of the
    reported hypothesis: group views, transitions and durable records as they stood at the split.
    Its candidates are `ClassicCandidates`', one operation's judgement `ClassicOperation`'s."""

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
        self.stamp_slack_ms = self.timing.unseen_cap_ms  # ClassicWorld.stamp_slack_ms
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
        self.notes_reported = 0
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
        version = caps.nearest(key, getattr(request, "version", 99 if key != 8 else 8))
        if version is None:
            self._finding(
                "protocol", f"oracle.{API_NAMES[key]}", f"target offers no {API_NAMES[key]} version we speak"
            )
            return []
        request = as_sent(request, version)
        real = dataclasses.replace(request, group_id=self.real_group if request.group_id else "")
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
        prior = self.hypos
        out = self._operate(t, ("send", ref, request))
        self._parked(ref, request, prior)
        return out

    def _parked(self, ref: int, request: Request, prior: list[Hypo]) -> None:
        """After a JoinGroup the target has not answered: wait for the barrier, and when what it
        shows (state, member count) is also how the group stood before the join (a member's rejoin
        during PreparingRebalance changes neither), the next request may overtake the join
        (`ClassicOperation._overtaking`)."""
        if not isinstance(request, JoinGroupRequest) or ref in self.answers:
            return
        seen = self._barrier()
        before = {
            (g.state.value, len(g.members)) for h in prior if (g := h.state.groups.get("g")) is not None
        }
        if seen is None or seen in before or not before:
            self.overtakable = (ref, request, prior)

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
        self.requests[ref] = (member, as_sent(request, version), version, t)
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

    def close(self) -> None:
        for member in {m for m, *_ in self.requests.values()}:
            self.adapter.drop_member(member)

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


#: names other modules import from here (their homes: engine/oracle, wire/session, this package)
__all__ = [
    "PROVISIONAL",
    "Finding",
    "Hypo",
    "OraclePort",
    "TargetSession",
    "Timing",
    "_rename_hypo",
    "crash_detail",
    "persisted_in",
    "rename",
]
