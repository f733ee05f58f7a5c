"""Spark commands with and without the driver JVM's class archive, interleaved in one run (results:
benchmarks/results/pipeline.md#jvm-archive).

    .venv/bin/python benchmarks/jvm_archive.py LAKE [ROUNDS]

Each round runs, first with ``GROUPCHECK_SPARK_CDS=off`` (the anchor) and then with ``require``
(the archive `groupcheck pipeline jvm-archive` built; a JVM that cannot map it fails), a child
that starts a session and runs one small query (both timed), then ``groupcheck pipeline audit
LAKE``; it prints wall seconds with the load average before each (the driver JVM is not a child
the command waits for, so its CPU time cannot be counted here). The archive must exist (``make install-spark``).
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SESSION = (
    "import time\n"
    "t0 = time.perf_counter()\n"
    "from conformance.pipeline.session import get_session\n"
    "s = get_session()\n"
    "t1 = time.perf_counter()\n"
    "s.range(100000).selectExpr('id % 7 AS k').groupBy('k').count().collect()\n"
    "print('TIMES', t1 - t0, time.perf_counter() - t1)\n"
    "s.stop()\n"
)


def run_session(mode: str) -> tuple[float, float]:
    env = {**os.environ, "GROUPCHECK_SPARK_CDS": mode}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    p = subprocess.run([sys.executable, "-c", SESSION], env=env, capture_output=True, text=True, timeout=600)
    for line in p.stdout.splitlines():
        if line.startswith("TIMES "):
            start, query = line.split()[1:]
            return float(start), float(query)
    raise SystemExit(f"the session child failed (exit {p.returncode}): {p.stderr.strip()[-300:]}")


def run_audit(lake: str, mode: str, out: str) -> tuple[float, int]:
    env = {**os.environ, "GROUPCHECK_SPARK_CDS": mode}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    groupcheck = str(Path(sys.executable).with_name("groupcheck"))
    start = time.perf_counter()
    p = subprocess.run(
        [groupcheck, "pipeline", "audit", lake, "--out", out], env=env, capture_output=True, timeout=1800
    )
    return time.perf_counter() - start, p.returncode


def main() -> None:
    lake = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    print(f"Machine: {platform.machine()}, nproc {os.cpu_count()}, Python {platform.python_version()}")
    print(f"Command: .venv/bin/python benchmarks/jvm_archive.py {lake} {rounds}\n")
    print("| round | archive | session start s | first query s | audit wall s | audit exit | load before |")
    print("|---|---|---|---|---|---|---|")
    walls: dict[str, list[float]] = {"off": [], "require": []}
    starts: dict[str, list[float]] = {"off": [], "require": []}
    with tempfile.TemporaryDirectory(prefix="groupcheck-cds-bench-") as work:
        for r in range(1, rounds + 1):
            for mode in ("off", "require"):
                load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
                start, query = run_session(mode)
                wall, code = run_audit(lake, mode, str(Path(work) / f"{mode}-{r}"))
                walls[mode].append(wall)
                starts[mode].append(start)
                print(
                    f"| {r} | {mode} | {start:.1f} | {query:.1f} | {wall:.1f} | {code} | {load} |", flush=True
                )
    for name, got in (("session start", starts), ("audit", walls)):
        off, on = statistics.median(got["off"]), statistics.median(got["require"])
        print(f"Medians, {name}: off {off:.1f} s, with the archive {on:.1f} s ({off / on:.2f}x)")


if __name__ == "__main__":
    main()
