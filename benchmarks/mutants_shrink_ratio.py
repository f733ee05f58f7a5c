"""Shrunk length against BFS-minimal length for the kill matrix's counterexamples, over seeds (docs/mutants.md#shrinking).

    .venv/bin/python benchmarks/mutants_shrink_ratio.py [--seeds 0 1 2] [--report reports/mutants.md] \
        [--budget 60] [--polish-budget 5] [--mutant NAME ...]

For each mutant with a BFS-minimal length in ``--report`` (written by ``groupcheck mutants
--bfs-budget S``; the length does not depend on the seed) and each seed: the suite from scratch
(`conformance.power.matrix.run_mutant`: ``check --seed S``, Hypothesis' shrink), then the kill
matrix's delta debugging without the BFS polish (`ddmin` with ``polish_budget_s=0``: ddmin over the
recorded ops, consumer settles flattened into primitive ops, `compress_time` for classic traces),
then the BFS polish (`conformance.engine.polish`, ``--polish-budget`` CPU seconds) and ddmin again.
Lengths are counted in `explore`'s unit (one op = one BFS edge: ``cont`` lines are not ops).
Prints a markdown table and, per stage, the median and max ratio to BFS-minimal (goal <= 1.25).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path


def bfs_lengths(report: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in report.read_text().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 12 and cells[1].startswith("`") and cells[11].isdigit():
            out[cells[1].strip("`")] = int(cells[11])
    return out


def ops(trace: object) -> int:
    return sum(1 for s in trace.steps if s.action.get("op") != "cont")  # type: ignore[attr-defined]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--report", type=Path, default=Path("reports/mutants.md"))
    p.add_argument("--budget", type=float, default=60.0, help="seconds per mutant and seed (as the matrix)")
    p.add_argument("--polish-budget", type=float, default=5.0)
    p.add_argument("--mutant", action="append", default=[])
    args = p.parse_args()
    from conformance.engine.minimise import minimise
    from conformance.engine.polish import polish
    from conformance.engine.profiles import get_profile
    from conformance.formats.trace_file import read_trace
    from conformance.mutants import MUTANTS
    from conformance.power.matrix import run_mutant

    bfs = bfs_lengths(args.report)
    names = [n for n in (args.mutant or MUTANTS) if n in bfs]
    started = time.time()
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}; "
        f"load average at start {os.getloadavg()[0]:.1f}"
    )
    print(
        f"Command: `{' '.join(['.venv/bin/python', 'benchmarks/mutants_shrink_ratio.py', *sys.argv[1:]])}`\n"
    )
    print(
        "| mutant | seed | Hypothesis-shrunk ops | + ddmin | + BFS polish | BFS-minimal | ratio (ddmin) | ratio (polish) | polish CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    plain: list[float] = []
    polished_r: list[float] = []
    missed: list[str] = []
    for name in names:
        mutant = MUTANTS[name]
        for seed in args.seeds:
            with tempfile.TemporaryDirectory() as tmp:
                row = run_mutant(
                    name,
                    profile=get_profile("ci"),
                    budget_s=args.budget,
                    seed=seed,
                    run_dir=Path(tmp),
                    polish_budget_s=0.0,
                )
                if not row.caught or row.trace_path is None:
                    missed.append(f"{name}@{seed}")
                    print(f"| `{name}` | {seed} | not caught | - | - | {bfs[name]} | - | - | - |")
                    continue
                small = read_trace(Path(row.trace_path))
            wanted = next((i for i in row.invariants if i in mutant.expect), row.invariants[0])
            t0 = time.process_time()
            better = polish(small, wanted, budget_s=args.polish_budget)
            if len(better.steps) < len(small.steps):
                better = minimise(better, wanted)
            took = time.process_time() - t0
            n_plain, n_pol = ops(small), min(ops(small), ops(better))
            plain.append(n_plain / bfs[name])
            polished_r.append(n_pol / bfs[name])
            print(
                f"| `{name}` | {seed} | {row.hypothesis_steps} | {n_plain} | {n_pol} | {bfs[name]} | "
                f"{n_plain / bfs[name]:.2f} | {n_pol / bfs[name]:.2f} | {took:.1f} |",
                flush=True,
            )
    if plain:
        print(
            f"\nOver {len(plain)} counterexamples ({len(names)} mutants x {len(args.seeds)} seeds), shrunk / BFS-minimal:\n"
            f"* ddmin (no polish): median {statistics.median(plain):.2f}, max {max(plain):.2f}\n"
            f"* ddmin + BFS polish: median {statistics.median(polished_r):.2f}, max {max(polished_r):.2f} "
            f"(goal <= 1.25)\n"
            f"* not caught within the budget: {', '.join(missed) or 'none'}\n"
            f"* benchmark wall time {time.time() - started:.0f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
