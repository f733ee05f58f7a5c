"""The parallel frontier: the same search on one process and on N forked workers, one after the
other in one run, to exhaustion or a wall-clock budget (results:
benchmarks/results/explore.md#workers).

    .venv/bin/python benchmarks/explore_workers.py BUDGET_WALL_SECONDS [WORKERS]

Each row gives wall seconds, the CPU seconds of every process (the parent and its workers) and the
speed-up against the one-process row of the same protocol and size, measured just before it.
"""

import resource
import sys
import time

from conformance.engine import collector
from conformance.protocols.classic.explore import explore_classic
from conformance.protocols.consumer.explore import explore_consumer


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    collector.tune()  # as `groupcheck explore` does
    budget = float(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    print(
        "| protocol | members x partitions | workers | complete | states | levels | wall s | CPU s | states per wall s | speed-up |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, f, m, p in (("classic", explore_classic, 2, 2), ("consumer", explore_consumer, 2, 2)):
        base = None
        for workers in (1, n):
            cpu, wall = _cpu(), time.perf_counter()
            r = f(m, p, depth=1000, budget_s=budget, workers=workers)
            wall, cpu = time.perf_counter() - wall, _cpu() - cpu
            base = wall if base is None else base
            print(
                f"| {name} | {m} x {p} | {workers} | {r.complete} | {r.states} | {r.levels_done} | {wall:.1f} | {cpu:.1f} | {r.states / wall:.0f} | {base / wall:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
