"""The part of an oracle port every protocol shares: its clock, its findings, its hypotheses' report.

An oracle port stands where the simulator's model port would be: every request goes to the real
target and to the model beside it, kept as hypotheses (`hypotheses`), and what no hypothesis
explains is a finding (`findings`). `OracleBase` is what every oracle has (the classic
`OraclePort`, which lets answers arrive in any order, included); `ExchangePort` adds what the
oracles that send one request and wait for its answer share (KIP-848 `ConsumerOraclePort`, mixed
`MixedOraclePort`): the answer's wait with a deadline, the timing window of `windows.certain_cutoff`,
and the judgement of the answer against every candidate. Each protocol keeps its comparison and
its adoption rules (`protocols/*/judge.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from conformance.engine.oracle.findings import Finding, crash_detail, tried
from conformance.engine.oracle.hypotheses import dedupe, explained, tie_variants, timer_prefixes
from conformance.engine.oracle.timer_split import SplitPort, switched_from
from conformance.engine.oracle.windows import certain_cutoff, due_by
from conformance.errors import TargetError


class OracleBase(SplitPort):
    """Clock, findings and the reported hypothesis (``hypos[0]``) of an oracle port. The port sets
    ``session``, ``adapter``, ``timing``, ``findings``, ``hypos`` and ``t0``."""

    session: Any
    adapter: Any
    timing: Any
    findings: list[Finding]
    hypos: list[Any]
    t0: float
    #: kafka-compat notes of the reported hypotheses reported so far (`_report_notes`)
    notes_reported: int = 0
    #: the target crashed: nothing more to wait for (the simulator stops sleeping)
    crashed: bool = False
    #: ``--keep-going``: a divergent answer is adopted as a known deviation and the run goes on
    keep_going: bool = False
    #: divergent answers adopted so far: the hypotheses after the first are tainted
    adopted: int = 0

    def clock(self) -> int:
        return int((time.monotonic() - self.t0) * 1000)

    def model_now(self) -> int:
        """The reported hypothesis' clock: every model timer up to it has fired (lags the real clock
        by at most the tolerance window)."""
        return self.hypos[0].now if self.hypos else 0

    def take_findings(self) -> list[Finding]:
        taken, self.findings = self.findings, []
        return taken

    def _finding(self, level: str, rule: str, message: str) -> None:
        f = Finding(level, rule, message, self.clock())
        (self.findings if level == "protocol" else self.session.compat).append(f)

    def _crash(self, t: int, what: str) -> None:
        """A target that stopped answering: a finding with the launcher's crash report (exit status, log)."""
        self.crashed = True
        if any(f.rule == "target.crash" for f in self.findings):
            return
        self._finding("protocol", "target.crash", f"at t={t}: {what}{crash_detail(self.session.launcher)}")

    def _report_notes(self, notes: Sequence[str], rule: str, prefix: str) -> None:
        """The reported hypothesis' kafka-compat notes not reported yet (legal choices it adopted)."""
        for note in notes[self.notes_reported :]:
            self._finding("kafka-compat", rule, f"{prefix}: {note}")
        self.notes_reported = max(self.notes_reported, len(notes))


class ExchangePort(OracleBase):
    """An oracle port that sends one request, waits for its answer (with a deadline), then keeps the
    hypotheses that explain it. The port provides the model's side (``_run_timers``,
    ``_deadlines``, ``_apply_candidate``), ``_decode_arrival`` and ``members``; its hypotheses have
    ``copy()``, ``state``, ``origin`` and ``now``."""

    members: set[str]
    real_group: str
    #: margin between an answer that shows the target running and an operation it vouches for, and
    #: how long after a deadline a timer counts as fired when the target has not been seen running
    seen_margin_ms = 30
    unseen_cap_ms = 2000

    def sleep_until(self, ms: int) -> None:
        while True:
            left = ms - self.clock()
            if left <= 0:
                return
            time.sleep(min(left, 50) / 1000)

    def close(self) -> None:
        for member in self.members:
            self.adapter.drop_member(member)

    # ------------------------------------------------------------------ timing window
    def _note_answer(self, sent: int, at: int) -> None:
        """An operation sent at ``sent`` was answered at ``at`` (port ms), for `_certain_cutoff`."""
        self.__dict__.setdefault("answered", []).append((sent, at))

    def _certain_cutoff(self, t: int) -> int:
        """Model timers due up to this have certainly fired in the target before an operation at
        ``t`` (`windows.certain_cutoff`)."""
        answered: list[tuple[int, int]] = self.__dict__.get("answered", [])
        return certain_cutoff(answered, t, self.timing.late_ms, self.seen_margin_ms, self.unseen_cap_ms)

    def _dedupe(self, cands: list[Any]) -> list[Any]:
        return dedupe(
            cands, lambda o, c: o.origin == c.origin and o.state == c.state, self.timing.max_hypotheses
        )

    # ------------------------------------------------------------------ one exchange
    def _send(self, t: int, member: str, payload: Any, ref: int, name: Any) -> bool:
        """Write the request sent at ``t`` (`_submit`); False when the target is gone (a crash)."""
        try:
            self._submit(member, payload, ref)
        except TargetError as e:
            self._crash(t, f"cannot send {name}: {e}")
            return False
        return True

    def _submit(self, member: str, payload: Any, ref: int) -> None:
        """Write the request (the wire-fault ports put the fault proxy to work here)."""
        self.adapter.submit(member, self.real_group, payload, ref, member)

    def _await(self, ref: int, t: int) -> tuple[Any, int]:
        """The target's answer to ``ref`` sent at ``t`` and when it arrived; (None, now) when none
        came within the answer deadline, was undecodable, or the connection closed."""
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
                    return self._decode_arrival(arrival), at
                except Exception as e:  # noqa: BLE001 - a value we cannot map is a finding
                    self._finding("protocol", "wire.undecodable", f"ref {ref}: {e}")
                    return None, at
            for wf in self.adapter.take_findings():
                self._finding("protocol", f"wire.{wf.kind}", wf.describe())
                if wf.kind in ("closed", "truncated"):
                    self._crash(t, "the target closed a connection with a request outstanding")
                    return None, self.clock()
        return None, self.clock()

    def _decode_arrival(self, arrival: Any) -> Any:
        raise NotImplementedError

    def _unanswered(self, t: int, t_ans: int, request: Any, ref: int) -> list[Any]:
        """No answer: unknown whether the target applied the request, so every hypothesis is kept
        both with and without it; the candidates that applied it."""
        cands = [c for h in self.hypos for c, _ in self._candidates(h, t, t_ans, request, ref, None)]
        self.hypos = self._dedupe(cands + list(self.hypos))
        return cands

    def _no_answer(self, rule: str, t: int, what: str) -> None:
        self._finding(
            "protocol", rule, f"at t={t}, {what}: no answer within {self.timing.answer_deadline_ms} ms"
        )

    def _explain(
        self, t: int, t_ans: int, request: Any, ref: int, target: Any, prior: Any
    ) -> tuple[list[Any], list[str]]:
        """(the candidates that explain ``target``, why the others do not); the others are kept
        for `_unexplained` to adopt under ``--keep-going``."""
        self.rejected: list[Any] = []
        return explained(
            self.hypos, lambda h: self._candidates(h, t, t_ans, request, ref, target, prior), self.rejected
        )

    def _unexplained(self, rule: str, t: int, what: str, answered: str, reasons: list[str]) -> None:
        """No hypothesis explains the target's answer: a protocol finding (a crash if it is gone)."""
        self._finding(
            "protocol",
            rule,
            f"at t={t}, {what}: the target answered {answered}; no model hypothesis explains it "
            + tried(reasons),
        )
        if not self.adapter.alive():
            self._crash(t, "the target stopped answering")
        elif self.keep_going and self.rejected:
            # the deviation is adopted: the model's nearest hypotheses, with the request applied,
            # go on beside the target (the answer the simulator sees is the target's)
            self.hypos = self._dedupe(self.rejected)
            self.adopted += 1

    def _follow(self, cands: list[Any], rank: Callable[[Any], Any], reported: Any) -> Any:
        """Keep the candidates that explain the answer, best ``rank`` first; the reported one, with
        the timers it fired before the request (`SplitPort`) and a lineage switch noted."""
        cands.sort(key=rank)
        self.hypos = self._dedupe(cands)
        h0 = self.hypos[0]
        self.pre_split = getattr(h0, "pre", None)  # the timers before the request: their own step
        self.switched = switched_from(reported, h0)
        return h0

    # ------------------------------------------------------------------ candidates
    def _fire_certain(self, h: Any, t: int) -> None:
        """Run ``h``'s timers that have certainly fired before an operation at ``t``."""
        cutoff = self._certain_cutoff(t)
        if cutoff > h.now:
            self._run_timers(h, cutoff)
            h.now = cutoff

    def _uncertain(self, h: Any, t: int, t_ans: int) -> list[int]:
        """The deadlines that may have fired by the answer (`_fire_certain` fired the certain ones)."""
        return due_by(self._deadlines(h), t_ans)

    def _fire_to(self, c: Any, deadline: int, k: int) -> None:
        """Candidate ``c`` with its timers up to the ``k``-th uncertain ``deadline`` fired."""
        self._run_timers(c, deadline)
        c.now = max(c.now, deadline)

    def _candidates(
        self, h: Any, t: int, t_ans: int, request: Any, ref: int, target: Any, prior: Any = None
    ) -> list[tuple[Any, str | None]]:
        """Each (candidate, None or why it does not explain ``target``) of ``h`` for ``request``
        sent at ``t`` and answered at ``t_ans`` (`hypotheses.timer_prefixes`); when two timers
        expire at the same instant by then, each tie order is a hypothesis (`tie_variants`)."""
        out: list[tuple[Any, str | None]] = []
        for v in tie_variants(h, self._timer_deadlines(h), t_ans):
            out += timer_prefixes(
                v,
                t,
                self._fire_certain,
                lambda base: self._uncertain(base, t, t_ans),
                self._fire_to,
                lambda c, at: self._apply_candidate(c, request, ref, at, target, prior),
            )
        return out

    def _timer_deadlines(self, h: Any) -> list[int]:
        """Every armed timer's deadline whose tie order the model chooses (repeats kept)."""
        return sorted(self._deadlines(h))

    def _run_timers(self, h: Any, to: int) -> None:
        """Fire ``h``'s model timers due up to ``to``."""
        raise NotImplementedError

    def _deadlines(self, h: Any) -> set[int]:
        """The deadlines of ``h``'s armed model timers."""
        raise NotImplementedError

    def _apply_candidate(
        self, c: Any, request: Any, ref: int, at: int, target: Any, prior: Any
    ) -> list[tuple[Any, str | None]]:
        """The request applied to candidate ``c`` at ``at``: it and the adoptions it allows, each
        with None or why it does not explain ``target``."""
        raise NotImplementedError
