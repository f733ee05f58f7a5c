"""Steps per second of seeded random walks on the reference model, with and without invariant checks.

Goal (issue: classic foundation): >= 20k steps/s per core without checks. Run:
    .venv/bin/python benchmarks/model_throughput.py [--steps N] [--protocol classic|consumer|all] [--gc tuned|default]
Prints a Markdown table (wall-clock rate, and the rate per CPU-second of this process, which
other jobs on the machine disturb far less); results are recorded in benchmarks/results/model_throughput.md.
"""

from __future__ import annotations

import argparse
import platform
import random
import time

from conformance.engine import collector
from conformance.engine.checker import Checker
from conformance.protocols.build import make_classic_sim, make_consumer_sim


def classic_walk(steps: int, check: bool, seed: int) -> tuple[float, float]:
    """A random walk: members act, time advances, members stall and resume, failovers happen."""
    rng = random.Random(seed)
    clients = [{"name": f"c{i}", "assignors": [a]} for i, a in enumerate(["range", "roundrobin", "sticky"])]
    sim = make_classic_sim({"t": 4, "u": 2}, clients, {}, {}, seed=seed)
    checker = Checker("classic") if check else None
    names = list(sim.clients)
    done = 0
    start, cpu = time.perf_counter(), time.process_time()
    while done < steps:
        r = rng.random()
        if r < 0.80:
            obs = sim.client_step(rng.choice(names))
        elif r < 0.93:
            obs = sim.advance(rng.choice((100, 1000, 3000)))
        elif r < 0.98:
            name = rng.choice(names)
            obs = sim.stall(name, name not in sim.stalled)
        else:
            obs = sim.failover()
        if obs is None:
            continue
        done += 1
        if checker is not None:
            checker.check(obs, done)
    return steps / (time.perf_counter() - start), steps / (time.process_time() - cpu)


def consumer_walk(steps: int, check: bool, seed: int) -> tuple[float, float]:
    """The KIP-848 twin: heartbeats, time, stalls, lost responses, slow callbacks, failovers."""
    rng = random.Random(seed)
    clients = [
        {"name": f"c{i}", "topics": ["t", "u"] if i % 2 else ["t"], "instance_id": "s" if i == 2 else None}
        for i in range(4)
    ]
    sim = make_consumer_sim({"t": 4, "u": 2}, clients, {}, {}, seed=seed)
    checker = Checker("consumer") if check else None
    names = sorted(sim.clients)
    done = 0
    start, cpu = time.perf_counter(), time.process_time()
    while done < steps:
        r = rng.random()
        name = rng.choice(names)
        if r < 0.75:
            obs = sim.client_step(name)
        elif r < 0.88:
            obs = sim.advance(rng.choice((100, 500, 1000, 3100)))
        elif r < 0.92:
            obs = sim.stall(name, not sim.clients[name].crashed)
        elif r < 0.95:
            sim.lose_response(name)
            obs = sim.client_step(name)
        elif r < 0.98:
            obs = sim.reconcile(name)
        else:
            obs = sim.failover()
        if obs is None:
            continue
        done += 1
        if checker is not None:
            checker.check(obs, done)
    return steps / (time.perf_counter() - start), steps / (time.process_time() - cpu)


WALKS = {"classic": classic_walk, "consumer": consumer_walk}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--protocol", choices=["classic", "consumer", "all"], default="all")
    ap.add_argument(
        "--gc",
        choices=["tuned", "default"],
        default="tuned",
        help="collector thresholds: the CLI's, or CPython's",
    )
    args = ap.parse_args()
    if args.gc == "tuned":
        collector.tune()  # as `groupcheck` does for every command
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} python {platform.python_version()}, 1 core used"
    )
    print("| protocol | invariant checks | steps | steps/s (wall) | steps per CPU-second |")
    print("|---|---|---|---|---|")
    protocols = list(WALKS) if args.protocol == "all" else [args.protocol]
    for protocol in protocols:
        for check in (False, True):
            wall, cpu = WALKS[protocol](args.steps, check, args.seed)
            print(f"| {protocol} | {'on' if check else 'off'} | {args.steps} | {wall:,.0f} | {cpu:,.0f} |")


if __name__ == "__main__":
    main()
