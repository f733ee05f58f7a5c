"""Conformance runs side by side: the ci profile, classic, KIP-848 consumer and mixed groups, on the
model and on each real target, in one run.

For each target (started once, the three protocols on it, then stopped): wall time of the whole run
(start, every protocol, stop), each protocol's own seconds, its operations and operations per
second (the machine's steps per second), and the request round-trip time, median and 95th
percentile. Classic: operations are the oracle's port operations (requests sent plus time steps),
RTT is Heartbeat's (answered at once by every coordinator). Consumer and mixed: operations are the
requests sent (ConsumerGroupHeartbeat, OffsetCommit; mixed adds the classic members' JoinGroup,
SyncGroup, Heartbeat, LeaveGroup) and the RTT is every request's that the oracle timed. A target
without ConsumerGroupHeartbeat is listed as not offered / not run. The load average is recorded
before each target.
Usage: python benchmarks/targets_conformance.py [TARGET ...]   (folds in the former
benchmarks/targets_consumer.py)
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time

from conformance.cli.check import run_protocols_on_target
from conformance.engine.profiles import get_profile
from conformance.engine.run import run_check
from model.classic.port import ModelPort

DEFAULT = ["model", "apache-kafka", "kfake", "librdkafka-mock", "tansu", "kafka-0.9"]
HEADER = (
    "| target | version | protocol | profile | protocol verdict | load avg | wall s | run s | ops | ops/s "
    "| RTT median ms | RTT p95 ms |"
)


def _pct(values: list[float]) -> tuple[str, str]:
    if not values:
        return "-", "-"
    v = sorted(values)
    return f"{statistics.median(v):.2f}", f"{v[int(0.95 * (len(v) - 1))]:.2f}"


def _verdict(result: object) -> str:
    found = sorted({v.invariant for v in result.violations})  # type: ignore[attr-defined]
    return "PASSED" if not found else "FAILED (" + ", ".join(found) + ")"


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def model_rows() -> list[str]:
    ops = 0

    class Counting(ModelPort):
        def send(self, ref, request, now):  # type: ignore[no-untyped-def]
            nonlocal ops
            ops += 1
            return super().send(ref, request, now)

        def advance(self, now):  # type: ignore[no-untyped-def]
            nonlocal ops
            ops += 1
            return super().advance(now)

    load = _load()
    t0 = time.monotonic()
    result = run_check("classic", profile=get_profile("ci"), seed_value=0, port_factory=Counting)
    wall = time.monotonic() - t0
    rows = [
        f"| model | reference | classic | ci 150x40 | {result.verdict} | {load} | {wall:.1f} | {result.seconds:.1f} "
        f"| {ops} | {ops / result.seconds:.0f} | - | - |"
    ]
    load = _load()
    t0 = time.monotonic()
    result = run_check("consumer", profile=get_profile("ci"), seed_value=0)
    wall = time.monotonic() - t0
    rows.append(
        f"| model | reference | consumer | ci 150x40 | {result.verdict} | {load} | {wall:.1f} | {result.seconds:.1f} "
        "| - | - | - | - |"
    )
    load = _load()
    t0 = time.monotonic()
    result = run_check("mixed", profile=get_profile("ci"), seed_value=0)
    wall = time.monotonic() - t0
    rows.append(
        f"| model | reference | mixed | ci 150x40 | {result.verdict} | {load} | {wall:.1f} | {result.seconds:.1f} "
        "| - | - | - | - |"
    )
    return rows


def target_rows(name: str) -> list[str]:
    load = _load()
    t0 = time.monotonic()
    runs, skipped = run_protocols_on_target(
        name, ["classic", "consumer", "mixed"], "ci", max_examples=None, seed=0, variants={}, level="protocol",
        only_offered=True,
    )  # fmt: skip
    wall = time.monotonic() - t0
    rows = []
    for run in runs:
        r = run.result
        if r.protocol == "classic":
            session = run.handle.session
            ops = session.ops
            rtt = list(session.heartbeat_rtt_ms)
            shape = "ci 12x25"
        else:
            rtt = list(run.rtt_ms)  # this protocol's requests only (check.py slices the session's)
            ops = len(rtt)
            shape = f"ci {r.max_examples}x{20 if r.protocol == 'consumer' else 8}"
        med, p95 = _pct(rtt)
        rows.append(
            f"| {name} | {r.target_version} | {r.protocol} | {shape} | {_verdict(r)} | {load} | {wall:.1f} "
            f"| {r.seconds:.1f} | {ops} | {ops / max(r.seconds, 1e-9):.1f} | {med} | {p95} |"
        )
    for protocol, why in skipped:
        rows.append(f"| {name} | - | {protocol} | - | {why} | {load} | {wall:.1f} | - | - | - | - | - |")
    return rows


def main(names: list[str]) -> None:
    print(
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"started: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        for row in model_rows() if name == "model" else target_rows(name):
            print(row, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or DEFAULT)
