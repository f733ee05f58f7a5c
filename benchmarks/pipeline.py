"""Pipeline benchmarks: window-audit throughput (Spark local vs DuckDB vs plain Python) and swarm throughput.

One run measures, on the same Parquet data:
* the three window checks (Spark: the keyed form of `conformance.pipeline.windows_keyed`; DuckDB:
  the grouped states of `conformance.pipeline.windows`; other forms with `--modes`; the
  plain-Python implementation for Python) at 1M and 10M lake rows, and Spark (and DuckDB) at
  100M rows (goal: no out-of-memory);
* the per-trace registry audit (Spark applyInPandas vs a plain loop over `audit_trace`);
* the swarm: Spark mapInArrow vs a multiprocessing pool writing the same rows to Parquet.
The scaled lakes are the rows of a real swarm (`--base-runs` runs of seed 0, every tenth with the
broken sticky V0 leader so that there are violations to agree on) repeated under new trace ids, so
every engine reads identical files. "seconds" is the checks' time inside the process (after the
JVM or interpreter started); "process s" includes the start-up. Each measurement runs in its own process (a fresh JVM
or interpreter) that reports its wall time and the peak resident memory of itself and its children.

    .venv/bin/python benchmarks/pipeline.py [--sizes 1e6,1e7] [--big 1e8] [--work DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pipeline_lakes import make_base, make_big, make_scaled  # noqa: E402


# ---------------------------------------------------------------------- memory sampling
def _tree_rss_kib(pid: int) -> int:
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
            todo += [int(k) for k in kids]
        except (OSError, ValueError):
            continue
    return total


class PeakRss:
    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.peak = max(self.peak, _tree_rss_kib(os.getpid()))

    def __enter__(self) -> PeakRss:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, _tree_rss_kib(os.getpid()))


# ---------------------------------------------------------------------- engines (one process each)
#: two per core: AQE coalesces small shuffles further; more only adds task overhead on 2 cores
SHUFFLE_PARTITIONS = 4


def engine_spark_windows(path: str, mode: str = "keyed") -> dict[str, Any]:
    """mode "keyed" (what `pipeline audit` runs): one scan into small checkpointed per-row
    `candidates` keyed by longs (`windows_keyed`); "states": the grouped states of `windows`;
    "direct" and "prep": the exploding form of `windows_explode`, each check scanning the lake or
    all three reading one persisted `prep` table."""
    from pyspark import StorageLevel

    from conformance.pipeline import windows, windows_explode, windows_keyed
    from conformance.pipeline.session import get_session

    spark = get_session(None, "groupcheck-bench", shuffle_partitions=SHUFFLE_PARTITIONS)
    spark.read.parquet(path).createOrReplaceTempView("lake")
    start = time.perf_counter()
    if mode == "keyed":
        spark.sql(windows_keyed.candidates_sql()).localCheckpoint().createOrReplaceTempView("candidates")
        found = sum(len(spark.sql(windows_keyed.window_sql(c)).collect()) for c in windows_keyed.CHECKS)
    elif mode == "states":
        spark.sql(windows.candidates_sql("spark")).localCheckpoint().createOrReplaceTempView("candidates")
        found = sum(len(spark.sql(windows.window_sql(c, "spark")).collect()) for c in windows.CHECKS)
    else:
        if mode == "prep":
            prep = spark.sql(windows_explode.prepare_sql("spark")).persist(StorageLevel.MEMORY_AND_DISK)
            prep.createOrReplaceTempView("prep")
            prep.count()
        found = sum(
            len(spark.sql(windows_explode.window_sql(c, "spark", prepared=mode == "prep")).collect())
            for c in windows_explode.CHECKS
        )
    seconds = time.perf_counter() - start
    spark.stop()
    return {"seconds": seconds, "violations": found}


def engine_duckdb_windows(path: str, mode: str = "states") -> dict[str, Any]:
    """mode "states" (the faster DuckDB form), "direct" or "prep"; "keyed" is Spark SQL only and
    runs "states" here."""
    import duckdb

    from conformance.pipeline import windows, windows_explode

    con = duckdb.connect()
    con.execute("SET threads = 2; SET memory_limit = '8GB'; SET preserve_insertion_order = false")
    con.execute(f"CREATE VIEW lake AS SELECT * FROM read_parquet('{path}/*.parquet')")
    start = time.perf_counter()
    if mode in ("states", "keyed"):
        con.execute("CREATE TEMP TABLE candidates AS " + windows.candidates_sql("duckdb"))
        found = sum(len(con.execute(windows.window_sql(c, "duckdb")).fetchall()) for c in windows.CHECKS)
        return {"seconds": time.perf_counter() - start, "violations": found}
    if mode == "prep":
        con.execute("CREATE TEMP TABLE prep AS " + windows_explode.prepare_sql("duckdb"))
    found = sum(
        len(con.execute(windows_explode.window_sql(c, "duckdb", prepared=mode == "prep")).fetchall())
        for c in windows_explode.CHECKS
    )
    return {"seconds": time.perf_counter() - start, "violations": found}


def engine_python_windows(path: str) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from conformance.pipeline.schema import WINDOW_COLUMNS
    from conformance.pipeline.windows import python_window_checks

    def rows():
        for f in sorted(Path(path).glob("*.parquet")):
            for batch in pq.ParquetFile(f).iter_batches(batch_size=65_536, columns=list(WINDOW_COLUMNS)):
                yield from batch.to_pylist()

    start = time.perf_counter()
    found = len(python_window_checks(rows()))
    return {"seconds": time.perf_counter() - start, "violations": found}


def engine_spark_registry(path: str) -> dict[str, Any]:
    from conformance.pipeline import jobs
    from conformance.pipeline.schema import AUDIT_COLUMNS
    from conformance.pipeline.session import get_session

    spark = get_session(None, "groupcheck-bench", shuffle_partitions=SHUFFLE_PARTITIONS)
    df = spark.read.parquet(path)
    start = time.perf_counter()
    res = (
        df.select(*AUDIT_COLUMNS, "action")
        .groupBy("trace_id")
        .applyInPandas(jobs._audit_group, jobs.RESULT_DDL)
    )
    found = res.where("kind = 'violation'").count()
    seconds = time.perf_counter() - start
    spark.stop()
    return {"seconds": seconds, "violations": found}


def engine_python_registry(path: str) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from conformance.pipeline.audit_core import audit_trace
    from conformance.pipeline.schema import AUDIT_COLUMNS

    start = time.perf_counter()
    table = pq.read_table(path, columns=list(AUDIT_COLUMNS))
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for r in table.to_pylist():
        by_trace.setdefault(r["trace_id"], []).append(r)
    found = sum(len({v[1] for v in audit_trace(t, rs).violations}) for t, rs in by_trace.items())
    return {"seconds": time.perf_counter() - start, "violations": found}


def engine_spark_swarm(runs: str, out: str) -> dict[str, Any]:
    from conformance.pipeline import jobs
    from conformance.pipeline.session import get_session

    spark = get_session(None, "groupcheck-bench")
    start = time.perf_counter()
    s = jobs.swarm(spark, int(runs), Path(out), seed=7, overwrite=True)
    seconds = time.perf_counter() - start
    spark.stop()
    return {"seconds": seconds, "rows": s.rows}


def _pool_run(index: int) -> Any:
    from conformance.pipeline.schema import rows_to_batch
    from conformance.pipeline.swarm import draw_config, run_one

    return rows_to_batch(list(run_one(draw_config(7, index))))


def engine_pool_swarm(runs: str, out: str) -> dict[str, Any]:
    import multiprocessing as mp

    import pyarrow.parquet as pq

    Path(out).mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows = 0
    with mp.get_context("fork").Pool(os.cpu_count() or 2) as pool:
        from conformance.pipeline.schema import LAKE_SCHEMA

        with pq.ParquetWriter(Path(out) / "part-0.parquet", LAKE_SCHEMA, compression="zstd") as w:
            for batch in pool.imap(_pool_run, range(int(runs)), chunksize=16):
                w.write_batch(batch)
                rows += batch.num_rows
    return {"seconds": time.perf_counter() - start, "rows": rows}


ENGINES = {
    "spark-windows": engine_spark_windows,
    "duckdb-windows": engine_duckdb_windows,
    "python-windows": engine_python_windows,
    "spark-registry": engine_spark_registry,
    "python-registry": engine_python_registry,
    "spark-swarm": engine_spark_swarm,
    "pool-swarm": engine_pool_swarm,
}


def child(engine: str, args: list[str]) -> None:
    with PeakRss() as rss:
        result = ENGINES[engine](*args)
    result["peak_rss_mib"] = round(rss.peak / 1024)
    print("RESULT " + json.dumps(result))


def measure(engine: str, *args: str, timeout_s: float = 3600) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", engine, *args]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout_s:.0f} s"}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            r: dict[str, Any] = json.loads(line[7:])
            r["process_s"] = round(time.perf_counter() - t0, 1)
            return r
    tail = (p.stderr.strip().splitlines() or ["?"])[-1]
    return {"error": f"exit {p.returncode}: {tail[:200]}"}


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs="+")
    ap.add_argument("--sizes", default="1e6,1e7")
    ap.add_argument("--big", default="1e8", help="rows for the no-OOM run (0: skip)")
    ap.add_argument("--base-runs", type=int, default=2000)
    ap.add_argument(
        "--registry-rows-runs", type=int, default=500, help="runs for the registry audit (0: skip)"
    )
    ap.add_argument("--swarm-runs", type=int, default=1000, help="0: skip")
    ap.add_argument(
        "--duel",
        default="0",
        help="rows of an interleaved Spark/DuckDB duel (spark, duckdb, spark, ...; 0: skip)",
    )
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the duel")
    ap.add_argument(
        "--modes",
        default="keyed,direct",
        help="window-check modes in the duel (keyed, states, direct, prep; MODE/spark or MODE/duckdb: one engine)",
    )
    ap.add_argument("--work", type=Path, default=Path("/tmp/groupcheck-bench"))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per measurement")
    a = ap.parse_args()
    if a.child:
        child(a.child[0], a.child[1:])
        return
    a.work.mkdir(parents=True, exist_ok=True)
    lines = [
        "Command: `.venv/bin/python benchmarks/pipeline.py " + " ".join(sys.argv[1:]) + "`",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"{round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GiB, Python {platform.python_version()}",
        f"Load average at start: {loadavg()}",
        "",
    ]
    print("\n".join(lines), flush=True)
    t0 = time.perf_counter()
    base = make_base(a.work, a.base_runs)
    print(f"base lake: {a.base_runs} runs in {time.perf_counter() - t0:.0f} s", flush=True)
    table = [
        "| rows | engine | seconds | rows/s | violating traces | peak RSS MiB | process s | load avg |",
        "|---|---|---|---|---|---|---|---|",
    ]
    sizes = [int(float(s)) for s in a.sizes.split(",") if s]
    for n in sizes:
        path = str(make_scaled(a.work, base, n))
        for engine in ("spark-windows", "duckdb-windows", "python-windows"):
            r = measure(engine, path, timeout_s=a.timeout)
            table.append(_row(n, engine, r))
            print(table[-1], flush=True)
    duel = int(float(a.duel))
    duel_lines: list[str] = []
    if duel:
        duel_lines = _duel(a, make_scaled(a.work, base, duel), duel)
    big = int(float(a.big))
    if big:
        t1 = time.perf_counter()
        path = str(make_big(a.work, make_scaled(a.work, base, sizes[-1] if sizes else 10_000_000), big))
        print(f"big lake: {big:,} rows ready in {time.perf_counter() - t1:.0f} s", flush=True)
        for engine in ("spark-windows", "duckdb-windows"):
            r = measure(engine, path, timeout_s=max(a.timeout, 1800))
            table.append(_row(big, engine, r))
            print(table[-1], flush=True)
    reg = [
        "| rows | engine | seconds | rows/s | violations | peak RSS MiB | process s | load avg |",
        "|---|---|---|---|---|---|---|---|",
    ]
    reg_base = make_base(a.work, a.registry_rows_runs) if a.registry_rows_runs else None
    n = a.registry_rows_runs * 80
    for engine in ("spark-registry", "python-registry") if reg_base else ():
        reg.append(_row(n, engine, measure(engine, str(reg_base), timeout_s=a.timeout)))
        print(reg[-1], flush=True)
    sw = [
        "| runs | engine | seconds | runs/s | rows | peak RSS MiB | load avg |",
        "|---|---|---|---|---|---|---|",
    ]
    for engine in ("spark-swarm", "pool-swarm") if a.swarm_runs else ():
        r = measure(engine, str(a.swarm_runs), str(a.work / f"swarm-{engine}"), timeout_s=a.timeout)
        rate = f"{a.swarm_runs / r['seconds']:,.1f}" if "seconds" in r else "-"
        sw.append(
            f"| {a.swarm_runs} | {engine} | {r.get('seconds', 0):.1f} | {rate} | {r.get('rows', r.get('error'))} "
            f"| {r.get('peak_rss_mib', '-')} | {loadavg()} |"
        )
        print(sw[-1], flush=True)
    text = "\n".join(
        lines
        + duel_lines
        + ["### Window audit (3 SQL checks; same Parquet files)", ""] + table
        + ["", "### Per-trace registry audit", ""] + reg
        + ["", "### Swarm", ""] + sw + ["", f"Load average at end: {loadavg()}", ""]
    )  # fmt: skip
    if a.out:
        a.out.write_text(text)
    print(text)


def _duel(a: argparse.Namespace, lake: Path, n: int) -> list[str]:
    """Spark and DuckDB in turn on one lake, `--rounds` times per mode, each in a fresh process,
    with the load average before and after each: on a shared machine neither engine gets the quiet
    minutes alone. The summary is the median per engine and mode and the Spark/DuckDB ratio of the
    medians (and per round, of neighbouring runs)."""
    import statistics

    rows = [
        f"### Interleaved duel at {n:,} rows ({a.rounds} rounds; each run a fresh process)",
        "",
        "| round | mode | engine | seconds | violating traces | peak RSS MiB | process s | load before | load after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    times: dict[tuple[str, str], list[float]] = {}
    ratios: dict[str, list[float]] = {}
    for rnd in range(1, a.rounds + 1):
        for spec in [m for m in a.modes.split(",") if m]:
            mode, _, only = spec.partition("/")  # "direct/spark": that mode on Spark only
            got = {}
            for engine in [e for e in ("spark-windows", "duckdb-windows") if e.startswith(only)]:
                before = loadavg()
                r = measure(engine, str(lake), mode, timeout_s=a.timeout)
                after = loadavg()
                if "error" in r:
                    rows.append(
                        f"| {rnd} | {mode} | {engine} | - | {r['error']} | - | - | {before} | {after} |"
                    )
                else:
                    got[engine] = r["seconds"]
                    times.setdefault((engine, mode), []).append(r["seconds"])
                    rows.append(
                        f"| {rnd} | {mode} | {engine} | {r['seconds']:.1f} | {r['violations']} | "
                        f"{r['peak_rss_mib']} | {r['process_s']} | {before} | {after} |"
                    )
                print(rows[-1], flush=True)
            if len(got) == 2:
                ratios.setdefault(mode, []).append(got["spark-windows"] / got["duckdb-windows"])
    rows += ["", "| mode | engine | runs | median s | min s | max s |", "|---|---|---|---|---|---|"]
    for (engine, mode), ts in sorted(times.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        rows.append(
            f"| {mode} | {engine} | {len(ts)} | {statistics.median(ts):.1f} | {min(ts):.1f} | {max(ts):.1f} |"
        )
    rows.append("")
    for mode in ratios:
        sp, dk = times.get(("spark-windows", mode)), times.get(("duckdb-windows", mode))
        if sp and dk:
            rows.append(
                f"* {mode}: Spark / DuckDB = **{statistics.median(sp) / statistics.median(dk):.2f}x** "
                f"(medians); per round {', '.join(f'{x:.2f}x' for x in ratios[mode])}"
            )
    rows.append("")
    return rows


def _row(n: int, engine: str, r: dict[str, Any]) -> str:
    if "error" in r:
        return f"| {n:,} | {engine} | - | - | {r['error']} | - | - | {loadavg()} |"
    return (
        f"| {n:,} | {engine} | {r['seconds']:.1f} | {n / r['seconds']:,.0f} | {r['violations']} "
        f"| {r['peak_rss_mib']} | {r['process_s']} | {loadavg()} |"
    )


if __name__ == "__main__":
    main()
