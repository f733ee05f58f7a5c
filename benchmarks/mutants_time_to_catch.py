"""Time-to-catch: how fast the suite, from scratch, finds each mutant (docs/mutants.md#kill-matrix).

For every mutant (`conformance/mutants/`) and several seeds, run the kill matrix's `run_mutant`
(exactly ``groupcheck check --variant mutant=NAME --seed S``, then S+1, ... within the budget) and
record the examples, wall-clock seconds and CPU seconds to the first violated invariant (before
shrinking). With ``--shrink`` the first seed also shrinks (Hypothesis, then ddmin over the recorded
ops), giving the shrunk counterexample length, and ``--bfs-budget`` adds the BFS-minimal length from
`groupcheck explore` against the mutant (`conformance/power/bfs.py`) and the ratio shrunk /
BFS-minimal. Goals: median <= 5 s, max <= 60 s over mutants, ratio <= 1.25. Run:
    .venv/bin/python benchmarks/mutants_time_to_catch.py [--seeds 0 1 2] [--budget 30] [--protocol all] \
        [--shrink] [--bfs-budget 30]
Prints Markdown; results are recorded in benchmarks/results/mutants_time_to_catch.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

from conformance.engine.profiles import get_profile
from conformance.mutants import MUTANTS
from conformance.power.matrix import run_mutant


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--budget", type=float, default=30.0)
    p.add_argument("--profile", default="ci")
    p.add_argument("--protocol", default="all", choices=["classic", "consumer", "all"])
    p.add_argument("--mutant", action="append", default=[])
    p.add_argument("--shrink", action="store_true", help="shrink the first seed's counterexample too")
    p.add_argument("--bfs-budget", type=float, default=0.0, help="CPU s of explore per mutant (0: skip)")
    args = p.parse_args()
    names = args.mutant or [m.name for m in MUTANTS.values() if args.protocol in ("all", m.protocol)]
    profile = get_profile(args.profile)
    started = time.time()
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}; "
        f"load average at start {os.getloadavg()[0]:.1f}",
        f"Command: `{' '.join(['.venv/bin/python', 'benchmarks/mutants_time_to_catch.py', *sys.argv[1:]])}`",
        f"Profile {profile.name} ({profile.max_examples} examples x {profile.step_count} steps per check run), "
        f"budget {args.budget:g} s per mutant and seed, seeds {args.seeds}.",
        "",
        "| mutant | protocol | caught (seeds) | examples to 1st failure | wall s to 1st failure (per seed) | "
        "CPU s to 1st failure (per seed) | median wall s | max wall s | shrunk steps (seed "
        f"{args.seeds[0]}) | BFS-minimal | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    medians: list[float] = []
    every: list[float] = []
    every_cpu: list[float] = []
    survived: list[str] = []
    ratios: list[float] = []
    for name in names:
        rows = [
            run_mutant(name, profile=profile, budget_s=args.budget, seed=s, shrink=args.shrink and i == 0)
            for i, s in enumerate(args.seeds)
        ]
        caught = [r for r in rows if r.caught and r.seconds is not None]
        walls = [r.seconds for r in caught if r.seconds is not None]
        cpus = [r.cpu_seconds for r in caught if r.cpu_seconds is not None]
        # a survivor counts as the whole budget: it was not caught within it
        walls_all = walls + [args.budget] * (len(rows) - len(caught))
        every += walls_all
        every_cpu += cpus
        med = statistics.median(walls_all)
        medians.append(med)
        if len(caught) < len(rows):
            survived.append(name)
        bfs, ratio = None, None
        if args.bfs_budget > 0:
            from conformance.power.bfs import bfs_minimal

            bfs, _ = bfs_minimal(name, budget_s=args.bfs_budget)
            rows[0].bfs_minimal = bfs
            ratio = rows[0].ratio if args.shrink else None
            if ratio is not None:
                ratios.append(ratio)
        lines.append(
            f"| `{name}` | {MUTANTS[name].protocol} | {len(caught)}/{len(rows)} | "
            f"{', '.join(str(r.examples) if r.caught else '-' for r in rows)} | "
            f"{', '.join(f'{r.seconds:.2f}' if r.caught and r.seconds is not None else 'survived' for r in rows)} | "
            f"{', '.join(f'{r.cpu_seconds:.2f}' if r.cpu_seconds is not None else '-' for r in rows)} | "
            f"{med:.2f} | {max(walls_all):.2f} | {rows[0].shrunk_steps if rows[0].caught and args.shrink else '-'} | "
            f"{bfs if bfs is not None else '-'} | {f'{ratio:.2f}' if ratio is not None else '-'} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    lines += [
        "",
        f"Over {len(names)} mutants x {len(args.seeds)} seeds (a survivor counts as the full budget):",
        f"* median of per-mutant medians: {statistics.median(medians):.2f} s wall; "
        f"max over all runs: {max(every):.2f} s wall (goal: median <= 5 s, max <= 60 s)",
        f"* CPU seconds to first failure over caught runs: median {statistics.median(every_cpu):.2f}, "
        f"max {max(every_cpu):.2f}"
        if every_cpu
        else "* no mutant caught",
        f"* survivors (some seed): {', '.join(survived) or 'none'}",
        f"* benchmark wall time {time.time() - started:.0f} s",
        f"* shrunk / BFS-minimal length over {len(ratios)} mutants with both: median "
        f"{statistics.median(ratios):.2f}, max {max(ratios):.2f} (goal <= 1.25)"
        if ratios
        else "* shrunk / BFS-minimal length: not measured (needs --shrink and --bfs-budget)",
    ]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
