"""Liveness and upgrade measurements on fixed workloads, the same for every design.

Time runs in 100 ms ticks from the trigger on; the group has converged at the first tick from
which every subscribed partition is owned and nobody's partitions change again until the window
(after the trigger's own time) ends; the time reported counts from the trigger.
Rebalances are the design's own count (generations formed, ownership stored, epochs bumped).
Availability is the share of ticks at which every subscribed partition was owned. Designs that model
offsets (seed 001's) also report what new owners read again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from model.designs import make_engine
from model.designs import ops as o
from model.designs.invariants import eventually_owned, single_owner
from model.designs.view import DesignView
from model.observation import Observation

TICK_MS = 100
WINDOW_MS = 60_000
TOPICS = {"t": 6}
BASE = [o.Join("A"), o.Join("B"), o.Join("C"), o.Advance(30_000)]


@dataclass(frozen=True)
class Measure:
    workload: str
    converged_ms: int | None  # None: not within the window
    rebalances: int
    availability: float
    double_owned_ticks: int
    final_strategy: str = ""
    fatal: int = 0
    #: consumption new owners read again (ms, summed over partitions); None: the design has no offsets
    reread_ms: int | None = None


def _owned(view: DesignView) -> bool:
    probe = DesignView(**{**view.__dict__, "checkpoint": True})
    return not list(eventually_owned(Observation(None, None, (), probe, view.now)))


def _holds(view: DesignView) -> tuple[Any, ...]:
    return tuple((m.name, tuple(sorted(m.holds))) for m in view.members if m.alive)


def observe(engine: Any, trigger: list[Any], window_ms: int = WINDOW_MS, label: str = "") -> Measure:
    """Apply ``trigger`` (the ops that disturb the group, time included), then watch ``window_ms``."""
    start = engine.view()
    reread = getattr(engine, "reread_ms", None)
    seen: list[tuple[bool, tuple[Any, ...]]] = []
    double = 0

    def tick(view: DesignView) -> None:
        nonlocal double
        seen.append((_owned(view), _holds(view)))
        if list(single_owner(Observation(None, None, (), view, view.now))):
            double += 1

    for op in trigger:
        if isinstance(op, o.Advance):
            for _ in range(op.ms // TICK_MS):
                engine.apply(o.Advance(TICK_MS))
                tick(engine.view())
        else:
            engine.apply(op)
    for _ in range(window_ms // TICK_MS):
        engine.apply(o.Advance(TICK_MS))
        tick(engine.view())
    end = engine.view()
    converged = None
    last = seen[-1][1] if seen else ()
    for i in range(len(seen) - 1, -1, -1):
        if not seen[i][0] or seen[i][1] != last:
            break
        converged = i
    ms = None if converged is None or not seen[-1][0] else (converged + 1) * TICK_MS
    available = sum(1 for ok, _ in seen if ok) / max(1, len(seen))
    fatal = sum(1 for m in end.members if m.alive and m.fatal)
    again = None if reread is None else engine.reread_ms - reread
    return Measure(
        label, ms, end.rebalances - start.rebalances, round(available, 3), double, end.strategy, fatal, again
    )


def churn(every_ms: int, count: int, topic: str, start: int) -> list[Any]:
    out: list[Any] = []
    for k in range(count):
        out += [o.SetTopic(topic, start + k + 1), o.Advance(every_ms)]
    return out


def flapping(every_ms: int, count: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(count):
        out += [o.Join("D"), o.Advance(every_ms), o.Leave("D"), o.Advance(every_ms)]
    return out


def upgrade() -> list[Any]:
    out: list[Any] = []
    for name in ("A", "B", "C"):
        out += [o.Upgrade(name, 2), o.Advance(10_000)]
    return out


WORKLOADS: dict[str, tuple[dict[str, int], list[Any]]] = {
    "join": (TOPICS, [o.Join("D")]),
    "leave": (TOPICS, [o.Leave("C")]),
    "crash": (TOPICS, [o.Crash("C")]),
    "failover": (TOPICS, [o.Failover()]),
    "churn-subscribed": (TOPICS, churn(2_000, 15, "t", 6)),
    "churn-other-topic": ({**TOPICS, "x": 1}, churn(2_000, 15, "x", 1)),
    "flapping-member": (TOPICS, flapping(1_500, 10)),
    "rolling-upgrade": (TOPICS, upgrade()),
}


def measure(design: str, options: dict[str, str], workload: str, seed: int = 0) -> Measure:
    topics, trigger = WORKLOADS[workload]
    engine = make_engine(design, topics, options, seed)
    for op in BASE:
        engine.apply(op)
    return observe(engine, trigger, label=workload)


def balance(
    design: str, options: dict[str, str], members: int = 5, partitions: int = 20, seed: int = 0
) -> float:
    """Largest share over the even share after settling (1.0 = perfectly even)."""
    engine = make_engine(design, {"t": partitions}, options, seed)
    for i in range(members):
        engine.apply(o.Join(f"m{i}"))
    engine.apply(o.Advance(40_000))
    loads = [len(m.holds) for m in engine.view().members if m.alive]
    return round(max(loads) / (partitions / members), 2) if loads else 0.0
