"""Faults against real targets: what the fault proxy and coordinator restarts cost, side by side.

Rows (classic, ci profile, seed 0): the same run with the members talking to the target directly
(``GROUPCHECK_PROXY=off``: LoseResponse is then only client-side) and through the fault proxy, with
0, 1 and 4 coordinator restarts where the target can restart. Columns: the run's verdict, wall time
of the whole `check`, the run's own seconds, Heartbeat round trip (median, p95: the proxy's extra
hop shows here), answers lost on the wire, restarts and how long each took (stop, start, group
served again). One run per row, one target at a time.

Targets without a ROWS entry (librdkafka-mock, tansu, kafka-0.9) get proxy off and on. The p95 is
the nearest-rank percentile (at least the median); ``n`` is how many heartbeats were timed; ``load``
is the 1-minute load average at the row's start and end (the machine is shared).

Usage: python benchmarks/target_faults.py [TARGET ...]   (default: apache-kafka kfake)
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import sys

from conformance.cli.check import run_on_target
from conformance.errors import TargetError

ROWS = {
    "apache-kafka": [("off", 0), ("on", 0), ("on", 1), ("on", 4)],
    "kfake": [("off", 0), ("on", 0)],
}


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile of sorted ``values`` (NaN when empty)."""
    if not values:
        return float("nan")
    return values[max(0, math.ceil(0.95 * len(values)) - 1)]


def load1() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def row(name: str, proxy: str, restarts: int) -> str:
    load_start = load1()
    os.environ["GROUPCHECK_PROXY"] = proxy
    try:
        run = run_on_target(
            name, "classic", "ci", max_examples=None, seed=0, variants={}, level="protocol", restarts=restarts
        )
    finally:
        os.environ.pop("GROUPCHECK_PROXY", None)
    r = run.result
    s = run.handle.session
    hb = sorted(s.heartbeat_rtt_ms)
    med = statistics.median(hb) if hb else float("nan")
    verdict = (
        "PASSED"
        if not r.violations
        else "FAILED (" + ", ".join(sorted({v.invariant for v in r.violations})) + ")"
    )
    took = ", ".join(f"{(b - a) / 1000:.1f}" for a, _l, b in s.restart_times) or "-"
    return (
        f"| {name} | {proxy} | {restarts} | {verdict} | {run.wall_s:.1f} | {r.seconds:.1f} | {len(hb)} | {med:.2f} "
        f"| {p95(hb):.2f} | {s.wire_drops} | {s.restarts_done} | {took} | {load_start}-{load1()} |"
    )


def main(names: list[str]) -> None:
    print(f"machine: {platform.node()} {platform.machine()}, Python {platform.python_version()}")
    print(
        "| target | proxy | max restarts | protocol verdict | wall s | run s | n | heartbeat RTT median ms | p95 ms "
        "| answers lost on the wire | restarts | restart s each | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        for proxy, restarts in ROWS.get(name, [("off", 0), ("on", 0)]):
            try:
                line = row(name, proxy, restarts)
            except TargetError as exc:  # not provisioned, did not start: say so in the row
                line = f"| {name} | {proxy} | {restarts} | ERROR: {exc} |" + " - |" * 9
            print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(ROWS))
