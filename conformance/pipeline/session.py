"""One quiet, offline SparkSession (docs/pipeline.md).

Loopback only (driver host and bind address 127.0.0.1, SPARK_LOCAL_IP), no UI, our own Log4j 2
configuration (`log4j2.properties` beside this file), the driver's Python for the workers, Arrow
for pandas conversion, and a small shuffle-partition count that suits one machine. The same
builder runs under `spark-submit` on a cluster: a master given by `--master` or by spark-submit
wins over the local default.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from conformance.pipeline import jvm_archive
from conformance.resources import package_dir

LOG4J2 = package_dir("conformance.pipeline") / "log4j2.properties"

#: the collector of a driver JVM that pyspark starts itself: the throughput collector took the 10M-row
#: window audit from 29 to 25 s against G1, the default, on two cores
#: (benchmarks/results/pipeline.md#suspects); a cluster's executors keep their own settings
DRIVER_GC = "-XX:+UseParallelGC"


def get_session(
    master: str | None = None, app: str = "groupcheck", shuffle_partitions: int = 8
) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    java_opts = f"-Dlog4j2.configurationFile=file:{LOG4J2}"
    builder = SparkSession.builder.appName(app)
    if master:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:
        # under spark-submit the JVM (and its --master) already exists; otherwise local[*]
        builder = builder.master("local[*]")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        # the driver JVM is started by pyspark itself: its log4j2 file must be on its command line
        # (spark.driver.extraJavaOptions set on the builder arrives too late for Log4j's start-up)
        # with the class-data-sharing archive when one was built (`conformance.pipeline.jvm_archive`)
        driver = f"{java_opts} {DRIVER_GC} {jvm_archive.driver_options(DRIVER_GC)}".rstrip()
        os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f'--driver-java-options "{driver}" pyspark-shell')
    conf = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": java_opts,
        "spark.executor.extraJavaOptions": java_opts,
        "spark.pyspark.python": sys.executable,
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "true",
        "spark.driver.memory": os.environ.get("GROUPCHECK_SPARK_DRIVER_MEMORY", "2g"),
    }
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
