"""One operation of the classic oracle: the target's answers collected and judged against every candidate.

An operation (a request sent, or time passing) turns each hypothesis into candidates
(`candidates.ClassicCandidates`); the oracle then collects the target's answers until every
surviving candidate has been answered, or ``late_ms`` (plus a margin) has passed with some settled,
or the answer deadline: a candidate survives while each target answer matches its model answer
(`judge.compare`) and it gives no answer the target has not (`_evaluate`). None survives: a
divergence (a protocol finding naming the request and what each candidate expected). The
survivors are ranked (explaining every answer, waiting for none, fewest kafka-compat choices) and
the first is shown to the simulator; only answers it has explained are delivered.
"""

from __future__ import annotations

import os
import time
from typing import Any

from conformance.engine.oracle.choosers import PROVISIONAL
from conformance.engine.oracle.findings import Finding, tried
from conformance.engine.oracle.hypotheses import dedupe
from conformance.engine.oracle.timer_split import switched_from
from conformance.protocols.classic import faults
from conformance.protocols.classic.codec import API_NAMES, api_key_of, decode_response
from conformance.protocols.classic.hypo import Hypo, switch_view
from conformance.protocols.classic.judge import Mismatch, compare, compat_notes, short
from model.classic.messages import HeartbeatResponse, JoinGroupResponse
from model.result import Delivery

DEBUG = bool(os.environ.get("GROUPCHECK_ORACLE_DEBUG"))


class ClassicOperation:
    """Mixed into `OraclePort`: collecting answers and judging one operation (module docstring)."""

    adapter: Any
    session: Any
    timing: Any
    real_group: str
    t0: float
    hypos: list[Hypo]
    requests: dict[int, tuple[str, Any, int, int]]
    answers: dict[int, tuple[Any, int]]
    delivered: set[int]
    lost: set[int]
    findings: list[Finding]
    #: a parked JoinGroup the barrier could not see processed: (ref, request, the hypotheses before
    #: it); the next request may have overtaken it (`_overtaking`)
    overtakable: tuple[int, Any, list[Hypo]] | None = None

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

    def _barrier(self) -> tuple[str, int] | None:
        """Wait until the target shows the group as some hypothesis has it (state and member count);
        what it showed last, or None when it could not be asked.

        A parked JoinGroup has no answer, and the target orders requests from different connections
        as it likes; without this, the next member's request could overtake it.
        """
        wanted = set()
        for h in self.hypos:
            g = h.state.groups.get("g")
            if g is not None:
                wanted.add((g.state.value, len(g.members)))
        end = time.monotonic() + 1.0
        shown = None
        while time.monotonic() < end:
            seen = self.adapter.describe(self.real_group)
            if seen is None:
                return None
            shown = (seen[0], len(seen[1]))
            if shown in wanted:
                return shown
            self._collect(0.005)
        return shown

    def _evaluate(self, c: Hypo, now: int, horizon: int) -> str | None:
        """None when ``c`` is consistent with the target so far, else why not."""
        pending = sorted(
            c.outstanding.items(),
            key=lambda kv: 0 if isinstance(kv[1][0], JoinGroupResponse) and not kv[1][0].members else 1,
        )
        accepted = self.__dict__.get("accepted", ())
        for ref, (model, mt) in pending:
            if (
                ref in self.lost or ref in accepted
            ):  # in flight when the target restarted: the model's unload answered it
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
                    compare(c, ref, target, version)
                except Mismatch as m:
                    return f"ref {ref} ({member} {API_NAMES[api_key_of(request)]} v{version}): {m}"
                c.outstanding.pop(ref, None)
                c.matched.add(ref)
                self._widen(c, ref)
            elif now - mt > self.timing.answer_deadline_ms:
                member, request, version, _sent = self.requests[ref]
                return (
                    f"ref {ref} ({member} {API_NAMES[api_key_of(request)]} v{version}): the model answered "
                    f"{short(model)} at t={mt}; the target gave no answer within {self.timing.answer_deadline_ms} ms"
                )
        for ref, (target, at) in self.answers.items():
            if ref in c.matched or ref in c.outstanding or ref in accepted:
                continue
            if at + 2 * self.timing.early_ms < horizon:
                member, request, version, _sent = self.requests[ref]
                return (
                    f"ref {ref} ({member} {API_NAMES[api_key_of(request)]} v{version}): target answered "
                    f"{short(target)} at t={at}; the model had not answered it by t={horizon}"
                )
        return None

    def _rank(self, c: Hypo) -> tuple[int, int, int]:
        """Candidates that explain every answer the target gave and wait for none of their own come
        first (the simulator then sees a world consistent with the answers delivered so far)."""
        return (sum(1 for r in self.answers if r not in c.matched), len(c.outstanding), len(c.compat))

    def _adopt(self, cands: list[Hypo], now: int, horizon: int) -> list[Hypo]:
        """``--keep-going``: the answers the target gave so far are taken as they are (a known
        deviation), and the last candidates that explained the rest go on; [] when not adopting."""
        if not getattr(self, "keep_going", False) or not cands or not self.adapter.alive():
            return []
        accepted = self.__dict__.setdefault("accepted", set())
        accepted.update(self.answers)
        self.adopted = getattr(self, "adopted", 0) + 1
        return [c for c in cands if self._evaluate(c, now, horizon) is None]

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
        reported = self.hypos[0] if self.hypos else None
        horizon = t - tm.early_ms
        overtaken, self.overtakable = self.overtakable, None
        waited = self._await(self._all_candidates(t, op) + self._overtaking(t, op, overtaken), t, horizon)
        if waited is None:
            return self._new_deliveries()
        cands, keep, reasons, now = waited
        if not keep and op[0] == "send":
            retried = self._late_retry(t, op, horizon, now)
            if retried is not None and retried[1]:
                cands, keep, _, now = retried
            elif retried is None:
                return self._new_deliveries()
        self.pre_split = self.post_split = self.switched = None
        if not cands or not keep:
            self._divergence(t, op, list(reasons.values()))
            keep = self._adopt(cands, now, horizon)
            if not keep:
                return self._new_deliveries(everything=True)
            cands = keep
        if keep:
            # prefer the hypotheses that already explain every answer the target gave
            # prefer hypotheses that explain every answer the target gave and wait for none of its own
            # (the simulator then sees a world consistent with the answers delivered so far)
            cands.sort(key=self._rank)
            self.hypos = self._dedupe(cands)
            h0 = self.hypos[0]
            self.pre_split, self.post_split = h0.pre, h0.post
            self.switched = switched_from(reported, h0, switch_view)
            if self.switched is not None:
                # the observation starts from the parent's state, which holds the transitions
                # that led to it (never shown: the simulator followed the refuted lineage)
                h0.reported = max(h0.reported, len(h0.parent.transitions))
            for h in self.hypos:  # no lineage chains: a parent lives for one operation
                h.parent = None
            self._report_notes(h0.compat, "compat.JoinGroup", f"t={t}")
        if DEBUG:
            _debug(self.hypos, self.answers, t, op)
        return self._new_deliveries()

    def _all_candidates(self, t: int, op: tuple[Any, ...]) -> list[Hypo]:
        cands: list[Hypo] = []
        for h in self.hypos:
            for c in self._candidates(h, t, op):
                c.parent = h
                cands.append(c)
        return cands

    def _await(
        self, cands: list[Hypo], t: int, horizon: int
    ) -> tuple[list[Hypo], list[Hypo], dict[int, str], int] | None:
        """Collect answers and judge ``cands`` until they settle or a deadline passes: (the last
        candidates alive, the survivors, why each dead one died, the clock); None when the target
        closed a connection (the run is over)."""
        tm = self.timing
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
                return cands, keep, reasons, now
            cands = keep
            settled = [c for c in cands if not c.outstanding]
            # past the soft deadline, stop once the candidate that will be shown waits for nothing:
            # one that explains more of the answers but still waits for another answer of the
            # same completion (a join answered on several connections) is waited for up to the
            # hard deadline, or the observation would show the completion with an answer missing
            if len(settled) == len(cands) or (now >= soft and not min(cands, key=self._rank).outstanding):
                return cands, keep, reasons, now
            if now >= hard:
                return cands, keep, reasons, now
            if any(f.rule in ("wire.closed", "wire.truncated") for f in self.findings):
                self._crash(t, "the target closed a connection with requests outstanding")
                return None
            self._collect(0.01)

    def _late_retry(
        self, t: int, op: tuple[Any, ...], horizon: int, now: int
    ) -> tuple[list[Hypo], list[Hypo], dict[int, str], int] | None:
        """No candidate explains a request the target answered later than ``late_ms``: the target
        handled it somewhere before its answer, so a model timer due by then may have fired first
        (a starved broker expired a session during the wait: seen with 32 groups on Apache Kafka
        4.4.0, an OffsetCommit answered UNKNOWN_MEMBER_ID 890 ms after its send). The candidates
        are enumerated once more with the window after the operation stretched to the answer's
        delay, at most ``unseen_cap_ms`` (a longer pause is out of scope, docs/oracle.md#timing).
        Returns the same as `_await`; its survivors, if any, stand (never tried when the answer
        came within ``late_ms``: the verdict then is the plain one)."""
        tm = self.timing
        answered = self.answers.get(op[1])
        delay = min((answered[1] if answered is not None else now) - t, tm.unseen_cap_ms)
        if delay <= tm.late_ms:
            return [], [], {}, now
        self.late_now_ms = delay
        try:
            cands = self._all_candidates(t, op)
        finally:
            self.late_now_ms = 0
        return self._await(cands, t, horizon)

    def _overtaking(
        self, t: int, op: tuple[Any, ...], overtaken: tuple[int, Any, list[Hypo]] | None
    ) -> list[Hypo]:
        """Candidates for a request sent right after a parked JoinGroup that the barrier could not see
        processed (`OraclePort._parked`): the target may have taken this request first, as the two
        came on different connections. They grow from the hypotheses before that JoinGroup, with
        this request applied before it, and stand beside the others until answers tell the two
        orders apart (the superseded join's answer may come only at a later operation). Seen with 32
        groups on Apache Kafka 4.4.0: a member's rejoin on a fresh connection (its own was blocked
        by a parked join) was overtaken by the other member's join, which completed the round with
        the parked join's answer."""
        if overtaken is None or op[0] != "send":
            return []
        ref, request, prior = overtaken
        cands: list[Hypo] = []
        for h in prior:
            for c in self._candidates(h, t, (*op, (ref, request))):
                c.parent = h
                cands.append(c)
        return cands

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
        cut = ""
        if self.candidates_cut:
            cut = f" ({self.candidates_cut} choice scripts of the model left untried before it: candidate bound)"
            self.candidates_cut = 0
        self._finding(
            "protocol",
            rule,
            f"at t={t}, {what}: no model hypothesis explains the target " + tried(uniq) + cut,
        )
        # keep going on the hypotheses we had, so the run can stop at the machine's next check

    def _dedupe(self, cands: list[Hypo]) -> list[Hypo]:
        """Equal state and equal outstanding answers: one hypothesis, with the wider slack of each
        timer (a dropped twin may have had it) and the earlier clock (`_merge`)."""
        return dedupe(cands, _same, self.timing.max_hypotheses, _merge)

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


def _answers(h: Hypo) -> dict[int, Any]:
    return {r: v[0] for r, v in h.outstanding.items()}


def _same(kept: Hypo, c: Hypo) -> bool:
    return kept.state == c.state and _answers(kept) == _answers(c)


def _merge(kept: Hypo, dropped: Hypo) -> None:
    """Twins may differ in their clock: one reached the state by a timer fired after the operation,
    at a deadline still ahead of the real clock (the window after an operation), the other by an
    earlier one. The next operation is applied at the later of its time and the clock, so keeping
    the later clock would date it, and every timer it arms, in the future: seen with 32 groups on
    Apache Kafka 4.4.0, a group emptied by its last session expiry and by its join timer alike,
    whose next join then armed the initial rebalance a second late and missed the target's answer.
    So the twin with the earlier clock stands (in the kept one's place)."""
    slack = dict(kept.slack)
    for k, v in dropped.slack.items():
        if v > slack.get(k, 0):
            slack[k] = v
    if dropped.now < kept.now:
        vars(kept).update(vars(dropped))
    kept.slack = slack


def _debug(hypos: list[Hypo], answers: dict[int, Any], t: int, op: tuple[Any, ...]) -> None:
    print(
        f"[oracle t={t} {op[0]} {op[1] if len(op) > 1 else ''}] {len(hypos)} hypotheses; answers "
        f"{sorted(answers)}; h0 matched {sorted(hypos[0].matched) if hypos else '-'} "
        f"outstanding {sorted(hypos[0].outstanding) if hypos else '-'} choices {hypos[0].choices if hypos else ''}"
    )
    for h in hypos[:3]:
        g = h.state.groups.get("g")
        if g:
            print(f"    {g.state.value} gen {g.generation} leader {g.leader} members {sorted(g.members)}")
