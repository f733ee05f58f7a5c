"""The KIP-848 consumer protocol (ci profile, seed 0) on each real target that offers it, side by side.

For each target: wall time of the whole run (start, run, stop), the run's own seconds, requests sent
(ConsumerGroupHeartbeat and OffsetCommit) and their round-trip time, median and 95th percentile, on
the member's own connection. One run, one target at a time; a target without ConsumerGroupHeartbeat
is listed as not offered. Usage: python benchmarks/targets_consumer.py [TARGET ...]
"""

from __future__ import annotations

import platform
import statistics
import sys

from conformance.adapters.check import run_protocols_on_target

DEFAULT = ["apache-kafka", "kfake", "librdkafka-mock", "tansu"]


def target_row(name: str) -> str:
    runs, skipped = run_protocols_on_target(
        name, ["consumer"], "ci", max_examples=None, seed=0, variants={}, level="protocol", only_offered=True
    )
    if skipped:
        return f"| {name} | - | - | {skipped[0][1]} | - | - | - | - | - |"
    run = runs[0]
    r = run.result
    rtt = sorted(run.rtt_ms)
    med = statistics.median(rtt) if rtt else float("nan")
    p95 = rtt[int(0.95 * (len(rtt) - 1))] if rtt else float("nan")
    verdict = (
        "PASSED"
        if not r.violations
        else "FAILED (" + ", ".join(sorted({v.invariant for v in r.violations})) + ")"
    )
    return (
        f"| {name} | {r.target_version} | ci {r.max_examples}x20 | {verdict} | {run.wall_s:.1f} | {r.seconds:.1f} "
        f"| {len(rtt)} | {med:.2f} | {p95:.2f} |"
    )


def main(names: list[str]) -> None:
    print(f"machine: {platform.node()} {platform.machine()}, Python {platform.python_version()}")
    print(
        "| target | version | profile | protocol verdict | wall s | run s | requests | RTT median ms | p95 ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        print(target_row(name), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or DEFAULT)
