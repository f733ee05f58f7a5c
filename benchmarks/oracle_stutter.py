"""The classic oracle against a stuttering Apache Kafka: does a verdict depend on scheduling luck?

Runs the test `tests/test_adapters.py::test_oracle_agrees_with_apache_kafka` does (dev profile,
3 examples, seed 7, the model beside Kafka) N times on one started broker while a thread pauses
the broker's JVM (SIGSTOP, then SIGCONT) for a random 20 ms..MAX s every 0.2..1.0 s (seeded), the
way a starved or garbage-collecting JVM on a loaded machine stalls. Kafka itself is correct here,
so every failure is the suite's. Prints one line per run and the failure count.
Usage: python benchmarks/oracle_stutter.py RUNS MAX_STALL_S
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time

from conformance.cli.check import REAL_PROFILES
from conformance.engine.run import run_check
from conformance.protocols import get_kit
from conformance.targets.open import open_target


def stutter(pid: int, longest_s: float, stop: threading.Event) -> None:
    rnd = random.Random(1)
    while not stop.is_set():
        time.sleep(rnd.uniform(0.2, 1.0))
        os.kill(pid, signal.SIGSTOP)
        time.sleep(rnd.uniform(0.02, longest_s))
        os.kill(pid, signal.SIGCONT)


def main(runs: int, longest_s: float) -> None:
    stop = threading.Event()
    with open_target("apache-kafka") as handle:
        pid = handle.launcher.pids[-1]  # the broker JVM this run started
        thread = threading.Thread(target=stutter, args=(pid, longest_s, stop), daemon=True)
        if longest_s > 0:
            thread.start()
        failed = 0
        try:
            for i in range(runs):
                t0 = time.monotonic()
                result = run_check(
                    "classic", target="apache-kafka", profile=REAL_PROFILES["dev"], max_examples=3,
                    seed_value=7, port_factory=get_kit("classic").real_setup(handle, REAL_PROFILES["dev"])[0], config=handle.model_config, real_time=True,
                )  # fmt: skip
                found = [(v.invariant, v.message[:160]) for v in result.violations]
                failed += bool(found)
                print(i, f"{time.monotonic() - t0:.1f}s", "FAIL" if found else "ok", found, flush=True)
        finally:
            stop.set()
            if thread.is_alive():
                thread.join(timeout=longest_s + 2)
            os.kill(pid, signal.SIGCONT)
    print(f"failures {failed} of {runs} (stalls up to {longest_s:g} s)")


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
