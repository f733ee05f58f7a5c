"""Look for counterexamples: seeded random workloads, shrunk to the ops that matter.

Workloads are drawn from the design-neutral vocabulary with one generator for every design, so the
same seed gives every design the same workloads. Each ends with a `Settle` long enough for any of
the designs to converge (the liveness checkpoint). A violation that the design's baseline shares is
not a counterexample against the design and is passed over.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from conformance.designs.shrink import distinguishes, shrink
from model.designs import DESIGNS, make_engine
from model.designs import ops as o
from model.designs.driver import run
from model.designs.invariants import design_invariants

TOPICS = {"t": 4, "a": 2}
MEMBERS = ("A", "B", "C", "D")
SUBSCRIPTIONS: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("t",), False),
    (("a", "t"), False),
    (("t",), True),
)
SETTLE_MS = 40_000


def workload(rng: random.Random, length: int) -> list[Any]:
    running: list[str] = []
    ops: list[Any] = []

    def join(name: str) -> None:
        topics, regex = rng.choice(SUBSCRIPTIONS)
        ops.append(o.Join(name, topics, regex, rng.choice((1, 1, 2))))
        running.append(name)

    for name in MEMBERS[:2]:
        join(name)
    ops.append(o.Advance(rng.choice((2_000, 10_000))))
    for _ in range(length):
        kind = rng.choice(
            (
                "join",
                "leave",
                "crash",
                "pause",
                "advance",
                "advance",
                "topic",
                "stale",
                "refresh",
                "socket",
                "response",
                "failover",
                "upgrade",
            )
        )
        idle = [m for m in MEMBERS if m not in running]
        who = rng.choice(running) if running else None
        if kind == "join" and idle:
            join(rng.choice(idle))
        elif kind in ("leave", "crash") and who and len(running) > 1:
            ops.append(o.Leave(who) if kind == "leave" else o.Crash(who))
            running.remove(who)
        elif kind == "pause" and who:
            ops += [o.Pause(who), o.Advance(rng.choice((3_000, 8_000))), o.Resume(who)]
        elif kind == "advance":
            ops.append(o.Advance(rng.choice((300, 2_000, 7_000))))
        elif kind == "topic":
            ops.append(o.SetTopic(rng.choice(("t", "a", "u")), rng.choice((3, 5, 6))))  # a grow or a no-op
        elif kind == "stale" and who:
            ops.append(o.StaleMetadata(who, rng.choice(("t", "a")), 1))
        elif kind == "refresh" and who:
            ops.append(o.Refresh(who))
        elif kind == "socket" and who:
            ops.append(o.LoseSocket(who))
        elif kind == "response" and who:
            ops.append(o.LoseResponse(who))
        elif kind == "failover":
            ops.append(o.Failover())
        elif kind == "upgrade" and who:
            ops.append(o.Upgrade(who, 2))
    ops.append(o.Settle(SETTLE_MS))
    return ops


@dataclass
class Counterexample:
    design: str
    options: dict[str, str]
    invariant: str
    ops: list[Any]
    seed: int
    origin: dict[str, Any] = field(default_factory=dict)


@dataclass
class SearchResult:
    design: str
    options: dict[str, str]
    workloads: int = 0
    found: dict[str, Counterexample] = field(default_factory=dict)
    #: violations the baseline shares (not counted against the design)
    shared: dict[str, int] = field(default_factory=dict)


def search(
    design: str,
    options: dict[str, str],
    *,
    seed: int = 0,
    workloads: int = 30,
    length: int = 8,
    shrink_budget: int = 200,
) -> SearchResult:
    spec = DESIGNS[design]
    out = SearchResult(design, dict(options))
    rng = random.Random(seed)
    ids = [inv.id for inv in design_invariants()]
    for k in range(workloads):
        ops = workload(rng, length)
        out.workloads += 1
        result = run(make_engine(design, TOPICS, options, seed), ops)
        new = [i for i in ids if i in result.violated and i not in out.found]
        if not new:
            continue
        base = run(make_engine(spec.baseline, TOPICS, spec.baseline_options, seed), ops)
        for inv in new:
            if inv in base.violated:
                out.shared[inv] = out.shared.get(inv, 0) + 1
                continue
            check = distinguishes(design, options, TOPICS, seed, inv)
            if not check(ops):
                out.shared[inv] = out.shared.get(inv, 0) + 1
                continue
            small = shrink(ops, check, shrink_budget)
            origin = {"kind": "search", "seed": seed, "workload": k, "ops_before_shrink": len(ops)}
            out.found[inv] = Counterexample(design, dict(options), inv, small, seed, origin)
    return out
