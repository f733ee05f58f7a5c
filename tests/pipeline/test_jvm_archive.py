"""The driver JVM's class-data-sharing archive: built once, mapped by sessions, optional but checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.errors import UsageError
from conformance.pipeline import jvm_archive
from conformance.pipeline.session import DRIVER_GC

#: a child process starting one local session and running one query (its own JVM and options)
QUERY = (
    "from conformance.pipeline.session import get_session\n"
    "s = get_session('local[1]', 'groupcheck-cds-test', shuffle_partitions=1)\n"
    "print('ROWS', s.range(1000).selectExpr('id % 3 AS k').groupBy('k').count().count())\n"
    "s.stop()\n"
)


def _session_child(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    return subprocess.run(
        [sys.executable, "-c", QUERY], env={**clean, **env}, capture_output=True, text=True, timeout=300
    )


def test_options_follow_the_mode_and_the_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GROUPCHECK_CACHE", str(tmp_path))
    monkeypatch.delenv(jvm_archive.DUMP_ENV, raising=False)
    monkeypatch.setenv("GROUPCHECK_SPARK_CDS", "auto")
    assert jvm_archive.driver_options(DRIVER_GC) == "", "no archive yet: nothing to map"
    monkeypatch.setenv("GROUPCHECK_SPARK_CDS", "require")
    with pytest.raises(UsageError, match="no archive at"):
        jvm_archive.driver_options(DRIVER_GC)
    path = jvm_archive.archive_path(DRIVER_GC)
    assert path.parent == tmp_path / "spark" and path.name.endswith(".jsa")
    assert path != jvm_archive.archive_path("-XX:+UseG1GC"), "another collector, another archive"
    path.parent.mkdir()
    path.write_bytes(b"x")
    assert f"-XX:SharedArchiveFile={path} -Xshare:on" in jvm_archive.driver_options(DRIVER_GC)
    monkeypatch.setenv("GROUPCHECK_SPARK_CDS", "auto")
    auto = jvm_archive.driver_options(DRIVER_GC)
    assert f"-XX:SharedArchiveFile={path}" in auto and "-Xshare:on" not in auto
    monkeypatch.setenv("GROUPCHECK_SPARK_CDS", "off")
    assert jvm_archive.driver_options(DRIVER_GC) == ""
    monkeypatch.setenv("GROUPCHECK_SPARK_CDS", "sometimes")
    with pytest.raises(UsageError, match="GROUPCHECK_SPARK_CDS='sometimes'"):
        jvm_archive.driver_options(DRIVER_GC)
    monkeypatch.setenv(jvm_archive.DUMP_ENV, str(tmp_path / "out.jsa"))
    assert jvm_archive.driver_options(DRIVER_GC).startswith(
        f"-XX:ArchiveClassesAtExit={tmp_path / 'out.jsa'}"
    )


def test_a_session_maps_the_built_archive_and_require_refuses_a_bad_one(tmp_path: Path) -> None:
    # the archive `make install-spark` built; built here into the same place if it is missing
    path = jvm_archive.archive_path(DRIVER_GC)
    if not path.is_file():
        path = jvm_archive.build(DRIVER_GC)
    good = _session_child({"GROUPCHECK_SPARK_CDS": "require"})
    assert good.returncode == 0 and "ROWS 3" in good.stdout, good.stderr[-2000:]
    # `require` is -Xshare:on: a JVM that cannot map the archive does not start, so the pass above
    # shows the archive was mapped
    bad_dir = tmp_path / "cache"
    (bad_dir / "spark").mkdir(parents=True)
    bad = {"GROUPCHECK_CACHE": str(bad_dir), "GROUPCHECK_SPARK_CDS": "require"}
    (bad_dir / "spark" / path.name).write_bytes(b"not an archive" * 100)
    refused = _session_child(bad)
    assert refused.returncode != 0 and "ROWS" not in refused.stdout
    assert "shared archive" in refused.stderr, refused.stderr[-2000:]
    # `auto` runs without an archive it cannot map, and prints nothing of it into the output
    tolerated = _session_child({**bad, "GROUPCHECK_SPARK_CDS": "auto"})
    assert tolerated.returncode == 0, tolerated.stderr[-2000:]
    assert tolerated.stdout.strip() == "ROWS 3"
