"""Shrunk length against BFS-minimal length for the kill matrix's counterexamples (issue 8).

    .venv/bin/python benchmarks/mutants_shrink_ratio.py [--run reports/runs/mutants-seed0] [--report reports/mutants.md]

For each mutant's counterexample under ``--run`` (written by ``groupcheck mutants``), the ops that
remain after the kill matrix's delta-debugging pass (`conformance.mutants.matrix.ddmin`: ddmin over
the recorded ops, with consumer settles flattened into primitive ops, then `compress_time` for
classic traces), counted in `explore`'s unit (one op = one BFS edge: `cont` lines are not ops), against
the BFS-minimal length the same matrix run recorded in ``--report``. Prints a markdown table and
the median and max ratio (goal <= 1.25).
"""

from __future__ import annotations

import argparse
import statistics
import sys
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
    p.add_argument("--run", type=Path, default=Path("reports/runs/mutants-seed0"))
    p.add_argument("--report", type=Path, default=Path("reports/mutants.md"))
    args = p.parse_args()
    from conformance.mutants import MUTANTS
    from conformance.mutants.matrix import ddmin
    from conformance.trace.format import read_trace

    bfs = bfs_lengths(args.report)
    print("| mutant | counterexample ops | after ddmin (ops) | BFS-minimal | ratio | s |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for name, mutant in MUTANTS.items():
        found = sorted((args.run / name).glob("*.ndjson"))
        if not found:
            continue
        trace = read_trace(found[0])
        t0 = time.process_time()
        small = ddmin(trace, sorted(trace.violated), mutant.expect)
        took = time.process_time() - t0
        n, m = ops(trace), ops(small)
        ratio = f"{m / bfs[name]:.2f}" if name in bfs else "-"
        if name in bfs:
            ratios.append(m / bfs[name])
        print(f"| `{name}` | {n} | {m} | {bfs.get(name, '-')} | {ratio} | {took:.1f} |")
    if ratios:
        print(
            f"\nShrunk / BFS-minimal over {len(ratios)} mutants with both: median "
            f"{statistics.median(ratios):.2f}, max {max(ratios):.2f} (goal <= 1.25)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
