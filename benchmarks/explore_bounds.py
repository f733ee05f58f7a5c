"""Explore to exhaustion: states, deepest level and whether the queue emptied, per protocol and
size, within a CPU budget per run (results: benchmarks/results/explore.md#bounds).

    .venv/bin/python benchmarks/explore_bounds.py BUDGET_CPU_SECONDS [SIZES [PROTOCOLS]]

SIZES is a comma-separated list of MEMBERSxPARTITIONS (default 1x1,2x1,2x2), PROTOCOLS a
comma-separated list of classic and consumer (default both).

The first column names the source tree imported, so the same script run with PYTHONPATH set to an
older checkout measures the anchor in the same run.
"""

import os
import sys
import time

import conformance
from conformance.engine import collector
from conformance.protocols.classic.explore import explore_classic
from conformance.protocols.consumer.explore import explore_consumer


def main() -> None:
    collector.tune()  # as `groupcheck explore` does
    tree = os.path.dirname(os.path.dirname(conformance.__file__))
    budget = float(sys.argv[1])
    sizes = sys.argv[2] if len(sys.argv) > 2 else "1x1,2x1,2x2"
    wanted = (sys.argv[3] if len(sys.argv) > 3 else "classic,consumer").split(",")
    explorers = [
        (n, f) for n, f in (("classic", explore_classic), ("consumer", explore_consumer)) if n in wanted
    ]
    for m, p in [tuple(int(x) for x in size.split("x")) for size in sizes.split(",")]:
        for name, f in explorers:
            t = time.process_time()
            w = time.perf_counter()
            r = f(m, p, depth=1000, budget_s=budget, cpu_clock=True)
            c = time.process_time() - t
            print(
                f"| {tree} | {name} | {m} x {p} | {r.levels_done} | {r.complete} | {r.states} | {r.transitions} | {c:.1f} | {time.perf_counter() - w:.0f} | {r.states / c:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
