"""Where an explored transition's CPU time goes, against the time the 10,000-states goal allows it.

Runs `explore` at one size per protocol for a CPU budget with the explorer's four parts timed (the
model's step, the invariant checks, the state copy and the abstract key; the rest is the search's
own bookkeeping), then prints, per protocol, the microseconds each part takes per transition and
the microseconds per transition that 10,000 new states per CPU second would allow at the measured
ratio of transitions to new states. Results: benchmarks/results/explore.md#budget.

    .venv/bin/python benchmarks/explore_budget.py [BUDGET_CPU_SECONDS [SIZE]]     # default 60 2x2

Timing wraps each part with `time.process_time_ns`; the wrappers' own cost (two clock reads per
call) is measured and taken off each part.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from conformance.engine import collector
from conformance.engine.checker import Checker
from conformance.protocols.classic import explore as classic_explore
from conformance.protocols.consumer import explore as consumer_explore
from conformance.protocols.consumer.trace import TracedConsumerSim

GOAL_STATES_PER_CPU_S = 10_000
PARTS = ("model step", "invariant checks", "state copy", "abstract key")


class Clock:
    """Accumulated CPU nanoseconds and calls per part."""

    def __init__(self) -> None:
        self.ns = dict.fromkeys(PARTS, 0)
        self.calls = dict.fromkeys(PARTS, 0)

    def wrap(self, part: str, f: Callable[..., Any]) -> Callable[..., Any]:
        ns, calls, clock = self.ns, self.calls, time.process_time_ns

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = clock()
            try:
                return f(*args, **kwargs)
            finally:
                ns[part] += clock() - t
                calls[part] += 1

        return timed


def _clock_cost_ns() -> float:
    """The CPU time of one wrapper's two clock reads, taken off every timed call."""
    clock, n = time.process_time_ns, 200_000
    t = clock()
    for _ in range(n):
        clock()
        clock()
    return (clock() - t) / n


def _timed_run(protocol: str, members: int, partitions: int, budget: float) -> tuple[Any, Clock, float]:
    clock = Clock()
    if protocol == "classic":
        mod, patches = (
            classic_explore,
            {"apply_op": "model step", "clone": "state copy", "abstract_key": "abstract key"},
        )
        run = classic_explore.explore_classic
    else:
        mod, patches = consumer_explore, {"clone": "state copy", "consumer_key": "abstract key"}
        run = consumer_explore.explore_consumer
    saved = {name: getattr(mod, name) for name in patches}
    replay, check = TracedConsumerSim.replay, Checker.check
    try:
        for name, part in patches.items():
            setattr(mod, name, clock.wrap(part, saved[name]))
        if protocol == "consumer":
            TracedConsumerSim.replay = clock.wrap("model step", replay)  # type: ignore[method-assign]
        Checker.check = clock.wrap("invariant checks", check)  # type: ignore[method-assign]
        t = time.process_time()
        result = run(members, partitions, depth=1000, budget_s=budget, cpu_clock=True)
        cpu = time.process_time() - t
    finally:
        for name, f in saved.items():
            setattr(mod, name, f)
        TracedConsumerSim.replay = replay  # type: ignore[method-assign]
        Checker.check = check  # type: ignore[method-assign]
    return result, clock, cpu


def main() -> None:
    collector.tune()  # as `groupcheck explore` does
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    members, partitions = (int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "2x2").split("x"))
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"machine: {platform.machine()} python {platform.python_version()}, commit {commit}, one core")
    overhead = _clock_cost_ns()
    print(f"wrapper clock cost: {overhead:.0f} ns per call, taken off each part\n")
    print("| protocol | size | complete | states | transitions | transitions per new state | CPU s "
          "| states per CPU s | us per transition | allowed by the goal | "
          + " | ".join(PARTS) + " | model step + checks | the rest |")  # fmt: skip
    print("|---" * (13 + len(PARTS)) + "|")
    for protocol in ("classic", "consumer"):
        result, clock, cpu = _timed_run(protocol, members, partitions, budget)
        per_state = result.transitions / result.states
        per_t = cpu * 1e6 / result.transitions
        allowed = 1e6 / GOAL_STATES_PER_CPU_S / per_state
        parts = {
            p: max(0.0, clock.ns[p] - clock.calls[p] * overhead) / 1e3 / result.transitions for p in PARTS
        }
        rest = per_t - sum(parts.values())
        print(
            f"| {protocol} | {members} x {partitions} | {result.complete} | {result.states} | {result.transitions} "
            f"| {per_state:.2f} | {cpu:.1f} | {result.states / cpu:,.0f} | {per_t:.0f} | {allowed:.0f} | "
            + " | ".join(f"{parts[p]:.0f}" for p in PARTS)
            + f" | {parts['model step'] + parts['invariant checks']:.0f} | {rest:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
