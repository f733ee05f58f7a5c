"""Explore throughput and the largest bound finished in a 10-minute budget, per protocol, and
BFS-minimal versus Hypothesis-shrunk counterexample lengths for KAFKA-7026 (docs/traces.md#explore-and-coverage).

    .venv/bin/python benchmarks/explore.py [--budget 600] [--protocol classic|consumer|all]
                                           [--hypothesis-seeds 0,1,3] [--wall]

The budget is CPU seconds of this process by default (`--wall` for wall-clock seconds): on a
machine shared with other jobs the wall clock measures the neighbours. Classic: 2 members x 2
partitions, sticky V0 (so the same run finds KAFKA-7026), ops step/advance/stall/resume.
Consumer: 2 members x 2 partitions, the reference model. Prints a Markdown report; results are
recorded in benchmarks/results/explore.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from conformance.engine import collector
from conformance.engine.profiles import get_profile
from conformance.engine.run import run_check
from conformance.protocols.classic.explore import ExploreResult, explore_classic
from conformance.protocols.consumer.explore import explore_consumer

KAFKA_7026 = (
    "client.assignment_single_owner",
    "classic.single_owner_coordinator",
    "classic.single_owner_consumer",
)
STICKY_V0 = {"sticky": "v0", "assignor": "sticky"}


def row(name: str, r: ExploreResult, budget: float, wall: float, cpu: float) -> str:
    bound = f"{r.levels_done}" + (" (complete)" if r.complete else "")
    return (
        f"| {name} | {r.members} x {r.partitions} | {','.join(r.ops)} | {budget:g} | {bound} | {r.states} | "
        f"{r.transitions} | {r.states / max(wall, 1e-9):.0f} | {r.states / max(cpu, 1e-9):.0f} |"
    )


def main() -> None:
    collector.tune()  # as `groupcheck explore` does
    p = argparse.ArgumentParser()
    p.add_argument("--budget", type=float, default=600.0)
    p.add_argument("--protocol", default="all", choices=["classic", "consumer", "all"])
    p.add_argument("--hypothesis-seeds", default="0,1,3")
    p.add_argument("--wall", action="store_true")
    args = p.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"command: python benchmarks/explore.py --budget {args.budget:g} --protocol {args.protocol}\n")
    print(
        "| explore | members x partitions | ops | budget s | deepest BFS level finished | states | "
        "transitions | states/s (wall) | states/s (CPU) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    classic = None
    for protocol in ("classic", "consumer"):
        if args.protocol not in (protocol, "all"):
            continue
        wall, cpu = time.perf_counter(), time.process_time()
        if protocol == "classic":
            r = explore_classic(
                2, 2, depth=200, variants=STICKY_V0, budget_s=args.budget, cpu_clock=not args.wall
            )
            classic, name = r, "classic (sticky v0)"
        else:
            r = explore_consumer(2, 2, depth=200, budget_s=args.budget, cpu_clock=not args.wall)
            name = "consumer (model)"
        print(row(name, r, args.budget, time.perf_counter() - wall, time.process_time() - cpu), flush=True)
    if classic is None:
        return
    print("\n| KAFKA-7026 invariant | BFS-minimal ops | Hypothesis-shrunk ops (seed: length) |")
    print("|---|---|---|")
    shrunk: dict[str, list[str]] = {k: [] for k in KAFKA_7026}
    for seed in (int(s) for s in args.hypothesis_seeds.split(",") if s):
        check = run_check(
            "classic", profile=get_profile("ci"), max_examples=300, seed_value=seed, variants=STICKY_V0
        )
        if check.trace is not None:
            for inv in check.trace.violated:
                if inv in shrunk:
                    shrunk[inv].append(f"{seed}: {len(check.trace.steps)}")
    for inv in KAFKA_7026:
        found = classic.found.get(inv)
        bfs = str(len(found.path)) if found else f"not within depth {classic.levels_done}"
        print(f"| `{inv}` | {bfs} | {', '.join(shrunk[inv]) or 'not the first violation Hypothesis hit'} |")


if __name__ == "__main__":
    main()
