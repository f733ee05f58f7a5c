"""Conformance runs side by side: the classic ci profile on the model and on each real target.

For each target: wall time of the whole `check` (provision check, start, run, stop), the run's own
seconds, port operations (requests sent + time steps) per second, and the round-trip time of
Heartbeat requests (answered at once by every coordinator), median and 95th percentile. One run,
one target at a time. Usage: python benchmarks/targets_conformance.py [TARGET ...]
"""

from __future__ import annotations

import platform
import statistics
import sys
import time

from conformance.adapters.check import run_on_target
from conformance.profiles import get_profile
from conformance.run import run_check
from model.classic.sim import ModelPort

DEFAULT = ["model", "apache-kafka", "kfake", "librdkafka-mock", "tansu", "kafka-0.9"]


def model_row() -> str:
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

    t0 = time.monotonic()
    result = run_check("classic", profile=get_profile("ci"), seed_value=0, port_factory=Counting)
    wall = time.monotonic() - t0
    return (
        f"| model | reference | ci 150x40 | {result.verdict} | {wall:.1f} | {result.seconds:.1f} | {ops} "
        f"| {ops / result.seconds:.0f} | - | - |"
    )


def target_row(name: str) -> str:
    run = run_on_target(name, "classic", "ci", max_examples=None, seed=0, variants={}, level="protocol")
    r = run.result
    session = run.handle.session
    hb = sorted(session.heartbeat_rtt_ms)
    med = statistics.median(hb) if hb else float("nan")
    p95 = hb[int(0.95 * (len(hb) - 1))] if hb else float("nan")
    verdict = (
        "PASSED"
        if not r.violations
        else "FAILED (" + ", ".join(sorted({v.invariant for v in r.violations})) + ")"
    )
    return (
        f"| {name} | {r.target_version} | ci 12x25 | {verdict} | {run.wall_s:.1f} | {r.seconds:.1f} | {session.ops} "
        f"| {session.ops / max(r.seconds, 1e-9):.0f} | {med:.2f} | {p95:.2f} |"
    )


def main(names: list[str]) -> None:
    print(f"machine: {platform.node()} {platform.machine()}, Python {platform.python_version()}")
    print(
        "| target | version | profile | protocol verdict | wall s | run s | port ops | ops/s | heartbeat RTT median ms | p95 ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        print(model_row() if name == "model" else target_row(name), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or DEFAULT)
