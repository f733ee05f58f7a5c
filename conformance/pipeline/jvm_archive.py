"""A class-data-sharing archive of the driver JVM that pyspark starts (docs/pipeline.md#jvm-archive).

A local session's first queries spend seconds loading and verifying Spark's classes (Catalyst,
code generation, the Parquet reader). HotSpot's dynamic archive (JEP 350, JDK 13 and later:
``-XX:ArchiveClassesAtExit`` writes one when a JVM exits, ``-XX:SharedArchiveFile`` maps it at
start-up) keeps those classes parsed and verified between runs. ``groupcheck pipeline jvm-archive``
(run by ``make install-spark``) builds one by running a small swarm, audit and metrics; sessions
then use it.

``GROUPCHECK_SPARK_CDS``: ``auto`` (default) uses the archive when it exists, and a JVM that cannot
map it (another JDK, other jars) runs without it; ``off`` never uses it; ``require`` makes a JVM
that cannot map it fail (``-Xshare:on``), which is how a test shows the archive is really used.
The archive is named after what it depends on (the java executable, pyspark's version and jars
directory, the collector option), so a changed installation looks for a new one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from conformance.errors import UsageError
from conformance.targets.cache import cache_base

MODES = ("auto", "off", "require")
#: the child writing the archive names it here (``-XX:ArchiveClassesAtExit``)
DUMP_ENV = "GROUPCHECK_SPARK_CDS_DUMP"
#: a JVM's unified logging is off but for errors: a mismatched archive would print warnings to
#: stdout, which a command's output must not carry
QUIET = "-Xlog:disable -Xlog:all=error:stderr"
#: a build's total deadline, seconds (the warm-up and the JVM's writing take about a minute)
BUILD_DEADLINE_S = 600.0


def mode() -> str:
    value = os.environ.get("GROUPCHECK_SPARK_CDS", "auto").strip().lower() or "auto"
    if value not in MODES:
        raise UsageError(f"GROUPCHECK_SPARK_CDS={value!r}: expected one of {', '.join(MODES)}")
    return value


def cache_dir() -> Path:
    """``spark/`` in groupcheck's cache (beside the provisioned targets)."""
    return cache_base() / "spark"


def java_executable() -> str:
    """The java that spark-submit starts: ``$JAVA_HOME/bin/java``, else the one on the path."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return os.path.realpath(found) if found else "java"


def archive_path(collector: str) -> Path:
    import pyspark

    identity = "\n".join(
        [
            java_executable(),
            pyspark.__version__,
            os.path.realpath(os.path.dirname(pyspark.__file__)),
            collector,
        ]
    )
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return cache_dir() / f"spark-{pyspark.__version__}-{digest}.jsa"


def driver_options(collector: str) -> str:
    """The options for the driver JVM's command line: write the archive (a build's child), map it,
    or nothing."""
    dump = os.environ.get(DUMP_ENV)
    if dump:
        return f"-XX:ArchiveClassesAtExit={dump} {QUIET}"
    chosen = mode()
    if chosen == "off":
        return ""
    path = archive_path(collector)
    if chosen == "require":
        if not path.is_file():
            raise UsageError(
                f"GROUPCHECK_SPARK_CDS=require: no archive at {path} (groupcheck pipeline jvm-archive)"
            )
        return f"-XX:SharedArchiveFile={path} -Xshare:on {QUIET}"
    return f"-XX:SharedArchiveFile={path} {QUIET}" if path.is_file() else ""


def build(collector: str, deadline_s: float = BUILD_DEADLINE_S) -> Path:
    """Write the archive: a child process (`conformance.pipeline.jvm_warmup`) runs a small swarm,
    audit and metrics with the dump option and waits for its JVM to exit; the file is moved into
    place only when complete."""
    target = archive_path(collector)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="groupcheck-cds-") as work:
        partial = Path(work) / "archive.jsa"
        env = {**os.environ, DUMP_ENV: str(partial), "GROUPCHECK_SPARK_CDS": "off"}
        env.pop("PYSPARK_SUBMIT_ARGS", None)  # ours, with the dump option, not an inherited one
        try:
            child = subprocess.run(
                [sys.executable, "-m", "conformance.pipeline.jvm_warmup", work],
                env=env,
                capture_output=True,
                text=True,
                timeout=deadline_s,
            )
        except subprocess.TimeoutExpired as exc:
            raise UsageError(f"jvm-archive: the warm-up did not end within {deadline_s:.0f} s") from exc
        if child.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
            tail = (child.stderr.strip().splitlines() or ["no output"])[-1][:300]
            raise UsageError(f"jvm-archive: the warm-up wrote no archive (exit {child.returncode}): {tail}")
        staged = target.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(partial, staged)
        staged.replace(target)  # atomic: a session never maps a half-written archive
    return target
