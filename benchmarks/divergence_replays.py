"""Replays each published keep-going divergence on its own target and on Apache Kafka.

For every trace under ``reports/conformance/<target>/<protocol>/divergences/`` (the untainted ones
unless ``--all``): ``groupcheck replay FILE --target <target>`` and ``groupcheck replay FILE
--target apache-kafka``, each bounded by ``--timeout`` seconds. A divergence of the target shows as
FAILED on it and FIXED (or PASSED) on Apache Kafka. Prints a Markdown table.

Usage: python benchmarks/divergence_replays.py TARGET [TARGET ...] [--all] [--timeout 240] [--on both|own|kafka]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

PUBLISHED = Path("reports") / "conformance"


def verdict(trace: Path, target: str, timeout: float) -> str:
    cmd = [sys.executable, "-m", "conformance.cli.main", "replay", str(trace), "--target", target]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "TIMEOUT"
    for line in out.stdout.splitlines():
        if line.startswith("replay "):
            return line.rsplit(": ", 1)[-1].strip()
    return f"exit {out.returncode}: {(out.stderr.strip().splitlines() or [''])[-1][:80]}"


def tainted(trace: Path) -> bool:
    header = json.loads(trace.read_text().split("\n", 1)[0])
    return bool(header.get("origin", {}).get("tainted"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("targets", nargs="+")
    ap.add_argument("--all", action="store_true", help="tainted traces too")
    ap.add_argument("--timeout", type=float, default=240.0)
    ap.add_argument(
        "--on", default="both", choices=["both", "own", "kafka"], help="which targets to replay on"
    )
    args = ap.parse_args()
    print("| target | trace | on the target | on apache-kafka |")
    print("|---|---|---|---|")
    for target in args.targets:
        for trace in sorted((PUBLISHED / target).glob("*/divergences/*.ndjson")):
            if tainted(trace) and not args.all:
                continue
            own = verdict(trace, target, args.timeout) if args.on != "kafka" else "-"
            kafka = verdict(trace, "apache-kafka", args.timeout) if args.on != "own" else "-"
            print(f"| {target} | `{trace.relative_to(PUBLISHED)}` | {own} | {kafka} |", flush=True)


if __name__ == "__main__":
    main()
