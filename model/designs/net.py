"""The common world of the non-shipped designs: actors, a network and a virtual clock.

Pure and deterministic: a heap of messages in flight (fixed latency, ties broken by send order) and
each actor's timers; `run_until` delivers and fires them in time order, with an event bound so a
design that loops forever is an error, not a hang. Faults are the workload's: a paused actor
neither hears nor acts until it resumes (what arrived meanwhile is handed over then, overdue
timers fire at once); a dead actor's messages vanish; a lost connection drops what travels on it;
a lost response drops the next message to one actor. Every message carries its encoded size, so
traffic is counted in bytes.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

MAX_EVENTS = 2_000_000


class DesignError(RuntimeError):
    """A design run that cannot go on (its event bound, an op it does not know): a tool error."""


@dataclass(frozen=True)
class Msg:
    src: str
    dst: str
    kind: str
    body: Any
    size: int
    #: the connection it travels on (0: none); a lost connection drops its messages
    conn: int = 0


class Actor:
    """A process of a design: reacts to messages and to its own timers, returns what it sends."""

    name: str = ""

    def __init__(self) -> None:
        self.timers: dict[str, int] = {}

    def on_message(self, msg: Msg, now: int) -> list[Msg]:
        raise NotImplementedError

    def on_timer(self, key: str, now: int) -> list[Msg]:
        raise NotImplementedError

    def arm(self, key: str, at: int) -> None:
        self.timers[key] = at

    def disarm(self, key: str) -> None:
        self.timers.pop(key, None)


@dataclass
class Traffic:
    """Messages and bytes sent, per kind."""

    counts: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, size: int) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.sizes[kind] = self.sizes.get(kind, 0) + size

    def total(self, kinds: frozenset[str] | None = None) -> tuple[int, int]:
        keys = [k for k in self.counts if kinds is None or k in kinds]
        return sum(self.counts[k] for k in keys), sum(self.sizes[k] for k in keys)


@dataclass
class Net:
    latency_ms: int = 1
    now: int = 0
    actors: dict[str, Actor] = field(default_factory=dict)
    paused: set[str] = field(default_factory=set)
    dead: set[str] = field(default_factory=set)
    lost_conns: set[int] = field(default_factory=set)
    drop_next: set[str] = field(default_factory=set)
    traffic: Traffic = field(default_factory=Traffic)
    max_events: int = MAX_EVENTS
    _queue: list[tuple[int, int, Msg]] = field(default_factory=list)
    _inbox: dict[str, list[Msg]] = field(default_factory=dict)
    _seq: int = 0
    _conn: int = 0

    def add(self, actor: Actor) -> None:
        self.actors[actor.name] = actor
        self.dead.discard(actor.name)
        self.paused.discard(actor.name)

    def new_conn(self) -> int:
        self._conn += 1
        return self._conn

    def send(self, msgs: list[Msg]) -> None:
        for m in msgs:
            self.traffic.add(m.kind, m.size)
            if m.conn and m.conn in self.lost_conns:
                continue
            self._seq += 1
            heapq.heappush(self._queue, (self.now + self.latency_ms, self._seq, m))

    def drop_where(self, pred: Any) -> None:
        """Messages in flight for which ``pred(msg)`` holds vanish (a closed connection, a dead broker)."""
        self._queue = [e for e in self._queue if not pred(e[2])]
        heapq.heapify(self._queue)

    def kill(self, name: str) -> None:
        self.dead.add(name)
        self.paused.discard(name)
        self._inbox.pop(name, None)
        actor = self.actors.get(name)
        if actor is not None:
            actor.timers.clear()

    def pause(self, name: str) -> None:
        if name in self.actors and name not in self.dead:
            self.paused.add(name)

    def resume(self, name: str) -> None:
        """What arrived during the pause is handed over now, in arrival order; overdue timers fire next."""
        if name not in self.paused:
            return
        self.paused.discard(name)
        for m in self._inbox.pop(name, []):
            self._seq += 1
            heapq.heappush(self._queue, (self.now, self._seq, m))

    def _next_timer(self) -> tuple[int, str, str] | None:
        best: tuple[int, str, str] | None = None
        for name in sorted(self.actors):
            if name in self.dead or name in self.paused:
                continue
            for key, at in self.actors[name].timers.items():
                if best is None or (at, name, key) < best:
                    best = (at, name, key)
        return best

    def run_until(self, end: int) -> None:
        """Deliver messages and fire timers in time order up to ``end`` (messages first on a tie)."""
        events = 0
        while True:
            timer = self._next_timer()
            msg_at = self._queue[0][0] if self._queue else None
            timer_at = timer[0] if timer else None
            if msg_at is not None and msg_at <= end and (timer_at is None or msg_at <= timer_at):
                at, _, m = heapq.heappop(self._queue)
                self.now = max(self.now, at)
                self._deliver(m)
            elif timer is not None and timer[0] <= end:
                at, name, key = timer
                self.now = max(self.now, at)
                actor = self.actors[name]
                actor.timers.pop(key, None)
                self.send(actor.on_timer(key, self.now))
            else:
                break
            events += 1
            if events > self.max_events:
                raise DesignError(
                    f"more than {self.max_events} events before t={end}: the design does not settle"
                )
        self.now = max(self.now, end)

    def _deliver(self, m: Msg) -> None:
        if m.dst in self.dead or m.dst not in self.actors or (m.conn and m.conn in self.lost_conns):
            return
        if m.dst in self.drop_next:
            self.drop_next.discard(m.dst)
            return
        if m.dst in self.paused:
            self._inbox.setdefault(m.dst, []).append(m)
            return
        self.send(self.actors[m.dst].on_message(m, self.now))
