"""The classic oracle's candidates: what each hypothesis may have become by an operation.

For an operation at ``t`` (a request sent, or time passing), every hypothesis yields one candidate
per combination of: the timers that certainly fired before it (`_fire_certain`, by the target's
evidence of running: `windows.seen_running`), ``k`` of the uncertain ones fired before it, ``j``
fired after it (`_uncertain`: deadlines inside the tolerance window), and each script of the
model's choice points (`choosers.script_alternatives`: generated ids, leader elections, votes).
A candidate remembers the timers fired around its operation as views of their own (`Hypo.pre`,
`Hypo.post`: `timer_split`) and the timers its operation armed, whose slack widens by the arming
request's answer delay (`_widen`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from conformance.engine.oracle.choosers import ScriptChooser, choices_taken, script_alternatives
from conformance.engine.oracle.windows import answer_lag, due_by, seen_running, widen
from conformance.protocols.classic.hypo import Hypo, group_views
from model.classic.coordinator import ClassicCoordinator
from model.classic.records import GroupUpdated
from model.classic.state import GroupState
from model.result import Result

#: candidates per hypothesis and operation: every timing first, then choice scripts up to this
CANDIDATES = 64
#: uncertain timers fired before (or after) one operation, at most
MAX_TIMERS = 16


class ClassicCandidates:
    """Mixed into `OraclePort`: candidate enumeration and timers (module docstring)."""

    coordinator: ClassicCoordinator
    chooser: ScriptChooser
    timing: Any
    answers: dict[int, tuple[Any, int]]
    requests: dict[int, tuple[str, Any, int, int]]
    #: choice scripts left untried by `_candidates` since the last divergence
    candidates_cut: int = 0
    #: the uncertain window after the operation when wider than ``timing.late_ms`` (a retry of an
    #: operation the target handled late: `ClassicOperation._late_retry`)
    late_now_ms: int = 0

    def _run(
        self,
        h: Hypo,
        t: int,
        op: tuple[Any, ...],
        k: int,
        j: int,
        script: tuple[int, ...],
        cleanup: bool = False,
    ) -> tuple[Hypo, int, int] | None:
        """One candidate: certain timers, the periodic cleanup if ``cleanup`` (None when it would
        delete nothing), k uncertain timers, the op, j uncertain ones after it."""
        tm = self.timing
        c = Hypo(
            h.state.clone(),
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
        if cleanup:
            if not self.coordinator.deletable_groups(c.state):
                return None
            self._apply(c, lambda: self.coordinator.cleanup_group_metadata(c.state), max(t, c.now))
            fired += 1
        before = self._uncertain(c, t)
        if k > len(before):
            return None
        for _ in range(k):
            self._fire_next(c)
        if op[0] == "send" and fired + k:
            c.pre = (
                frozenset(c.outstanding) - frozenset(h.outstanding),
                group_views(c),
                len(c.transitions),
                len(c.durable),
            )
        if op[0] == "send":
            _, ref, request, *overtaken = op
            at = max(t, c.now)
            self._apply(c, lambda: self.coordinator.handle(c.state, request, ref, at), at, ref)
            for late_ref, late_request in overtaken:  # taken by the target after ``ref``
                self.chooser.ref, self.chooser.counter = late_ref, 0
                self._apply(
                    c,
                    lambda r=late_ref, q=late_request: self.coordinator.handle(c.state, q, r, at),  # type: ignore[misc]
                    at,
                    late_ref,
                )
        c.now = max(c.now, t)
        after = self._uncertain(c, t)
        if j > len(after):
            return None
        if op[0] == "send" and j:
            mark = frozenset(c.outstanding)
            view = (group_views(c), len(c.transitions), len(c.durable))
        for _ in range(j):
            self._fire_next(c)
        if op[0] == "send" and j:
            c.post = (frozenset(c.outstanding) - mark, *view)
        c.choices = h.choices + choices_taken(self.chooser.log)
        return c, len(before), len(after)

    def _seen_running(self, due: int, t: int) -> bool:
        """Has the target shown it was running after ``due``, early enough before ``t``
        (`windows.seen_running`)?"""
        tm = self.timing
        sent = lambda ref: self.requests[ref][3]  # noqa: E731
        lag = answer_lag(self.answers, sent)
        return seen_running(due, t, tm.early_ms, tm.unseen_cap_ms, self.answers, sent, lag)

    def _uncertain(self, c: Hypo, t: int) -> list[int]:
        tm = self.timing
        return due_by(
            [tmr.deadline for g in c.state.groups.values() for tmr in g.timers.values()],
            t + max(tm.late_ms, self.late_now_ms),
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
        """Every timing (``k`` uncertain timers before the operation, ``j`` after it) with the
        model's default choices first, then the other choices breadth first across the timings, up
        to `CANDIDATES` in all.

        The cut falls on choice scripts, never on a timing: with depth-first scripts a group with
        many choice points filled the bound at ``k = 0``, so no candidate let a due timer fire
        before the operation, and a target that had completed a join round on that timer diverged
        from every hypothesis (`--groups 32` on Apache Kafka, where the runs fall far behind the
        real clock and many timers are due at once). Scripts left untried are counted
        (``candidates_cut``) and named in a divergence they may have explained."""
        out: list[Hypo] = []
        scripts: deque[tuple[int, int, tuple[int, ...]]] = deque()
        timings: list[tuple[int, int]] = []
        k = 0
        while k <= MAX_TIMERS:
            j = 0
            first = None
            while j <= MAX_TIMERS:
                ran = self._run(h, t, op, k, j, ())
                if ran is None:
                    break
                c, first, n_after = ran
                out.append(c)
                timings.append((k, j))
                scripts.extend((k, j, s) for s in script_alternatives((), self.chooser.log))
                if j >= n_after:
                    break
                j += 1
            if first is None or k >= first:
                break
            k += 1
        if self.coordinator.deletable_groups(h.state):
            out += self._cleaned(h, t, op, timings)
        while scripts and len(out) < CANDIDATES:
            k, j, script = scripts.popleft()
            ran = self._run(h, t, op, k, j, script)
            if ran is not None:
                out.append(ran[0])
                scripts.extend((k, j, s) for s in script_alternatives(script, self.chooser.log))
        self.candidates_cut += len(scripts)
        return out

    def _cleaned(self, h: Hypo, t: int, op: tuple[Any, ...], timings: list[tuple[int, int]]) -> list[Hypo]:
        """Every timing again, with Kafka's periodic metadata cleanup run before the operation:
        an Empty group without offsets may have been deleted at any moment, since the cleanup ticks
        every ``offsets.retention.check.interval.ms`` from the broker's start, a phase the oracle
        cannot see (`RebalanceRules.cleanup_group_metadata`; docs/oracle.md#cleanup). Seen on
        Apache Kafka 4.4.0 as a join answered at generation 1 after the group had reached 3."""
        out = []
        for k, j in timings:
            ran = self._run(h, t, op, k, j, (), cleanup=True)
            if ran is not None:
                out.append(ran[0])
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
        widen(c.slack, timers, delta)
