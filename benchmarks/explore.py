"""Explore throughput, the largest bound finished in a time budget, and BFS-minimal versus
Hypothesis-shrunk counterexample lengths for KAFKA-7026 (issue 5, "Done when").

    .venv/bin/python benchmarks/explore.py [--budget 600] [--seeds 0,1,3] [--skip-hypothesis]

Runs `explore_classic` (2 members x 2 partitions, sticky V0, ops step/advance/stall/resume) until
the budget ends, then `run_check` with the same variants per seed, and prints a Markdown report:
states, transitions, states/s (wall and per CPU-second of this process: other jobs on a shared
machine disturb the latter far less), the deepest BFS level finished, and for each KAFKA-7026
invariant the BFS-minimal length next to the shrunk Hypothesis trace length.
Results are recorded in benchmarks/results/explore.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from conformance.profiles import get_profile
from conformance.run import run_check
from conformance.trace.explore import explore_classic

KAFKA_7026 = (
    "client.assignment_single_owner",
    "classic.single_owner_coordinator",
    "classic.single_owner_consumer",
)
VARIANTS = {"sticky": "v0", "assignor": "sticky"}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--budget", type=float, default=600.0)
    p.add_argument("--members", type=int, default=2)
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--seeds", default="0,1,3")
    p.add_argument("--skip-hypothesis", action="store_true")
    args = p.parse_args()
    cpu = time.process_time()
    result = explore_classic(
        args.members, args.partitions, depth=200, variants=VARIANTS, budget_s=args.budget
    )
    cpu = time.process_time() - cpu
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"command: python benchmarks/explore.py --budget {args.budget:g}\n")
    print(
        "| protocol | members x partitions | ops | budget s | deepest level finished | states | transitions | states/s (wall) | states/s (CPU) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| classic (sticky v0) | {args.members} x {args.partitions} | {','.join(result.ops)} | {args.budget:g} | "
        f"{result.levels_done}{' (complete)' if result.complete else ''} | {result.states} | {result.transitions} | "
        f"{result.states / result.seconds:.0f} | {result.states / max(cpu, 1e-9):.0f} |"
    )
    print("\n| invariant | BFS-minimal ops | Hypothesis-shrunk ops (seed: length) |")
    print("|---|---|---|")
    shrunk: dict[str, list[str]] = {k: [] for k in KAFKA_7026}
    if not args.skip_hypothesis:
        for seed in (int(s) for s in args.seeds.split(",")):
            check = run_check(
                "classic", profile=get_profile("ci"), max_examples=300, seed_value=seed, variants=VARIANTS
            )
            if check.trace is not None:
                for inv in check.trace.violated:
                    if inv in shrunk:
                        shrunk[inv].append(f"{seed}: {len(check.trace.steps)}")
    for inv in KAFKA_7026:
        found = result.found.get(inv)
        bfs = str(len(found.path)) if found else f"not within depth {result.levels_done}"
        print(f"| `{inv}` | {bfs} | {', '.join(shrunk[inv]) or 'not the first violation found'} |")


if __name__ == "__main__":
    main()
