"""When a model timer has certainly fired in the target: the oracles' timing windows.

The target's timers run on its own clock. A model timer whose deadline lies inside a tolerance
window around an operation may or may not have fired in the target yet, so an oracle keeps both
outcomes as hypotheses until an answer tells them apart; outside the window the model is exact
(docs/oracle.md#timing). Where the window ends is the question this module answers.

A Kafka coordinator timer does not act at its deadline: `CoordinatorRuntime`'s
`EventBasedCoordinatorTimer` turns the expired `TimerTask` (fired by the `SystemTimer` reaper
thread) into a `CoordinatorWriteEvent` queued with `enqueueLast` behind whatever requests are
queued already (apache/kafka coordinator-common `runtime/CoordinatorRuntime.java`). A broker that
is paused (GC, a starved or stopped JVM) across a deadline queues the timeout only when it runs
again, in a race with the requests that arrived meanwhile: a request sent well after the deadline
may still be processed first. So a due timer counts as certainly fired only once the target has
been SEEN RUNNING past it (it answered a request sent at or after the deadline, that answer having
arrived a margin before the operation), or, never seen running, a cap after the deadline.
Requests are dated by their send time (not the answer's arrival, which a slow reader of the socket
may see late).

The model dates a timer from the send of the request that armed it; Kafka from its handling,
anywhere up to the answer (GroupMetadataManager ``scheduleConsumerGroupSessionTimeout`` schedules a
relative ``sessionTimeoutMs`` delay, L3018-3030, apache/kafka mirror 1eb7644; server-common
`util/timer/SystemTimer.java` ``add`` adds it to the clock at that moment, L67-70). So the target's
deadline may lie up to the answer delay after the model's: the classic oracle widens each armed
timer's slack by its arming request's answer delay (`widen`), the one-request-at-a-time oracles
subtract the longest recent answer delay from what being seen running vouches for
(`certain_cutoff`; `benchmarks/results/oracle_false_alarms.md`, consumer ci seed 2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

#: a model timer as an oracle tracks it: (group id, timer key, deadline)
TimerKey = tuple[str, str, int]


def seen_running(
    due: int,
    t: int,
    early_ms: int,
    unseen_cap_ms: int,
    answers: Mapping[int, tuple[Any, int]],
    sent_at: Callable[[int], int],
    lag_ms: int = 0,
) -> bool:
    """Has the target shown it was running after ``due``, early enough before ``t``?

    ``answers``: ref -> (answer, arrival ms); ``sent_at(ref)``: when that request was sent. True
    once the target answered a request sent at or after ``due`` plus ``lag_ms`` (how late the
    target has recently been answering: a timer event queues behind the requests as they do) and
    that answer arrived ``early_ms`` before ``t``; or, never seen running, ``unseen_cap_ms`` after
    ``due``."""
    if due + unseen_cap_ms <= t:
        return True
    last = t - early_ms
    return any(at <= last and sent_at(ref) >= due + lag_ms for ref, (_r, at) in answers.items())


def answer_lag(
    answers: Mapping[int, tuple[Any, int]], sent_at: Callable[[int], int], recent: int = 32
) -> int:
    """The longest answer delay (arrival minus send, ms) of the ``recent`` latest answered refs."""
    refs = sorted(r for r, (resp, _at) in answers.items() if resp is not None)[-recent:]
    return max((answers[r][1] - sent_at(r) for r in refs), default=0)


def certain_cutoff(
    answered: Sequence[tuple[int, int]], t: int, late_ms: int, seen_margin_ms: int, unseen_cap_ms: int
) -> int:
    """Model timers due up to this have certainly fired in the target before an operation at ``t``.

    ``answered``: (sent, answered) port ms of each answered operation, oldest first. A deadline
    counts as passed when it lies ``late_ms`` before ``t`` and the target answered, at least
    ``seen_margin_ms`` before ``t``, a request sent at or after it plus the longest recent answer
    delay (the last 32); or ``unseen_cap_ms`` before ``t``."""
    lag = max((a - s for s, a in answered[-32:]), default=0)
    running = max((s for s, a in answered if a <= t - seen_margin_ms), default=None)
    if running is None:
        return t - unseen_cap_ms
    return max(min(t - late_ms, running - lag), t - unseen_cap_ms)


def widen(slack: dict[TimerKey, int], timers: Iterable[TimerKey], delta: int) -> None:
    """Let each of ``timers`` fire up to ``delta`` ms after its model deadline (the widest wins):
    the target armed them as late as its answer to the arming request came after the model's
    operation. The model's deadlines are untouched (the invariants read them)."""
    for key in timers:
        slack[key] = max(delta, slack.get(key, 0))


def due_by(deadlines: Iterable[int], limit: int) -> list[int]:
    """The deadlines up to ``limit`` in order: the timers that may have fired by then."""
    return sorted(d for d in deadlines if d <= limit)
