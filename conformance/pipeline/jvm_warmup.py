"""The workload whose classes go into the driver JVM's archive (`conformance.pipeline.jvm_archive`).

Run as ``python -m conformance.pipeline.jvm_warmup WORKDIR`` by `jvm_archive.build` with the dump
option set: a swarm of both protocols, the audit and the metrics over its lake, so the classes
of the Parquet writer and reader, the window checks and the pandas exchange are all loaded. The
JVM writes the archive when it exits; this process waits for that.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: seconds to wait for the driver JVM to exit once its session stopped (writing the archive)
EXIT_WAIT_S = 300


def main(work: str) -> int:
    from pyspark import SparkContext

    from conformance.pipeline import jobs
    from conformance.pipeline.session import get_session

    spark = get_session(None, "groupcheck-jvm-archive")
    lake = Path(work) / "lake"
    jobs.swarm(spark, 2, lake, protocol="both", steps=20, overwrite=True)
    jobs.audit(spark, str(lake), Path(work) / "audit", max_counterexamples=2)
    jobs.metrics(spark, str(lake), Path(work) / "metrics", None)
    gateway = SparkContext._gateway
    spark.stop()
    proc = getattr(gateway, "proc", None)
    if proc is None:  # a JVM this process did not start: nothing to wait for
        return 0
    if proc.stdin is not None:
        proc.stdin.close()  # the JVM ends when this pipe closes (pyspark/java_gateway.py)
    proc.wait(timeout=EXIT_WAIT_S)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
