"""Operations per second with ``--groups 1`` and ``--groups N`` on one Apache Kafka, and false alarms at N.

Starts one apache-kafka broker, then on it, in one process:

1. the anchor: ``--keep-going --groups 1`` (one group, the plain run), PROTOCOL, EXAMPLES examples;
2. ``--keep-going --groups N`` with the same examples per group;
3. RUNS more runs at ``--groups N`` on seeds 1..RUNS, FA_EXAMPLES per group (the false-alarm count: Apache Kafka 4.4.0 is
   the reference, so every protocol-level divergence reported against it is a false alarm of the
   suite; each one's trace is kept under ``--keep DIR``).

An operation is one request the target answered (the oracle's round trips). Prints one line per run
and a Markdown table.

Usage: python benchmarks/groups_throughput.py [--groups 32] [--runs 20] [--protocol classic]
       [--examples 12] [--fa-examples 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from conformance.cli.check import _run_one
from conformance.cli.keep_going import KeepGoing
from conformance.engine.profiles import real_profile
from conformance.formats.trace_file import write_trace
from conformance.targets.open import open_target


def one(handle: Any, protocol: str, examples: int, seed: int, groups: int) -> tuple[Any, float]:
    t0 = time.monotonic()
    run = _run_one(
        handle, protocol, real_profile("ci"), examples, seed, {}, "protocol", t0, KeepGoing(True, 0, groups)
    )
    return run, time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=32)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--protocol", default="classic")
    ap.add_argument("--examples", type=int, default=12, help="examples per group, anchor and throughput runs")
    ap.add_argument("--fa-examples", type=int, default=3, help="examples per group, false-alarm runs")
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    rows = []
    false_alarms = 0
    with open_target("apache-kafka") as handle:
        plan = [(1, 0, "anchor")] + [(args.groups, 0, "throughput")]
        plan += [(args.groups, seed, "false alarms") for seed in range(1, args.runs + 1)]
        for groups, seed, what in plan:
            examples = args.fa_examples if what == "false alarms" else args.examples
            run, wall = one(handle, args.protocol, examples, seed, groups)
            r = run.result
            ops_s = run.ops / wall
            found = len(r.divergences)
            if what == "false alarms":
                false_alarms += found
            for k, d in enumerate(r.divergences):
                print(f"    divergence: {d.signature} (group {d.first.group}, example {d.first.example})")
                if args.keep and d.trace is not None:
                    write_trace(d.trace, args.keep / f"groups{groups}-seed{seed}-{k}.ndjson")
            if r.error:
                print("    error:", r.error)
            line = (
                f"{what:13s} groups {groups:3d} seed {seed:3d}: {run.ops:5d} answers in {wall:6.1f} s = "
                f"{ops_s:7.1f} ops/s, {found} divergence(s){' ERROR ' + r.error if r.error else ''}"
            )
            print(line, flush=True)
            rows.append((what, groups, seed, run.ops, wall, ops_s, found))
    print()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}; "
          f"load {os.getloadavg()[0]:.1f}; git {_commit()}")  # fmt: skip
    print("| run | groups | seed | answers | wall s | ops/s | divergences |")
    print("|---|---|---|---|---|---|---|")
    for what, groups, seed, ops, wall, ops_s, found in rows:
        print(f"| {what} | {groups} | {seed} | {ops} | {wall:.1f} | {ops_s:.1f} | {found} |")
    anchor = max(rows[0][5], 1e-9)
    print(
        f"\nspeed-up at {args.groups} groups: {rows[1][5] / anchor:.1f}x over the anchor ({anchor:.1f} ops/s)"
    )
    print(f"false alarms over {args.runs} runs at {args.groups} groups: {false_alarms}")


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
