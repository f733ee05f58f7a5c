"""The Spark jobs: swarm (model runs to a Parquet trace lake) and audit (invariants over a lake).

Swarm: a DataFrame of run indices goes through `mapInArrow`; each executor draws its run's
configuration, runs the plain-Python simulator and yields Arrow batches of lake rows.
Audit: per-trace invariants through a grouped-map pandas UDF (`applyInPandas`) calling
`audit_core.audit_trace` (the registry's own predicates), then the cross-trace/time-window checks
of `windows_keyed` as Spark SQL. Violations are written as Parquet and as replayable NDJSON traces,
quarantined rows as Parquet with their reason. The only module tree that imports pyspark.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from conformance.errors import UsageError
from conformance.pipeline import schema
from conformance.pipeline.counterexamples import trace_from_rows, write_counterexample
from conformance.pipeline.windows_keyed import CHECKS, DEFAULT_OWNERLESS_BOUND_MS, candidates_sql, window_sql

RESULT_DDL = "kind string, trace_id string, step int, invariant string, message string"
BATCH_ROWS = 4096


@dataclass
class SwarmSummary:
    runs: int
    rows: int
    seconds: float
    out: Path


def swarm(
    spark: SparkSession,
    runs: int,
    out: Path,
    *,
    seed: int = 0,
    protocol: str = "classic",
    variants: Mapping[str, str] | None = None,
    steps: int = 80,
    slices: int | None = None,
    overwrite: bool = False,
    coverage: bool = False,
    shape: tuple[int, int] | None = None,
    mix: bool = False,
) -> SwarmSummary:
    from conformance.pipeline.swarm import draw_config, run_one

    if runs < 1:
        raise UsageError("--runs must be at least 1")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise UsageError(f"{out}: exists and is not empty (use --overwrite)")
    pinned = dict(variants or {})
    slices = slices or max(2, min(runs // 50 + 1, 4 * spark.sparkContext.defaultParallelism))

    def generate(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[dict[str, Any]] = []
        for batch in batches:
            for index in batch.column("id").to_pylist():
                pending.extend(
                    run_one(draw_config(seed, index, protocol, pinned, steps, coverage, shape, mix))
                )
                if len(pending) >= BATCH_ROWS:
                    yield schema.rows_to_batch(pending)
                    pending = []
        if pending:
            yield schema.rows_to_batch(pending)

    start = time.perf_counter()
    ids = spark.range(0, runs, numPartitions=slices)
    lake = ids.mapInArrow(generate, schema.LAKE_DDL)
    lake.write.mode("overwrite").option("compression", "zstd").parquet(str(out))
    rows = spark.read.parquet(str(out)).count()
    return SwarmSummary(runs, rows, time.perf_counter() - start, out)


# ---------------------------------------------------------------------- audit
@dataclass
class AuditSummary:
    lake: str
    traces: int = 0
    steps: int = 0
    violations: list[tuple[str, int, str, str]] = field(default_factory=list)
    violating_traces: dict[str, int] = field(default_factory=dict)
    quarantined: int = 0  # rows left out, one per row (`quarantine.parquet`)
    quarantine_reasons: dict[str, int] = field(default_factory=dict)
    gaps: int = 0  # truncated traces: steps missing (their rows are checked, their windows are not)
    unreadable: list[str] = field(default_factory=list)  # lake files that are not Parquet, and why
    sometimes: dict[str, int] = field(default_factory=dict)
    counterexamples: list[str] = field(default_factory=list)
    unwritten: list[str] = field(default_factory=list)  # violations whose rows do not make a trace
    seconds: float = 0.0
    bound_ms: int = DEFAULT_OWNERLESS_BOUND_MS

    @property
    def verdict(self) -> str:
        if self.violations:
            return "FAILED"
        if self.quarantined or self.gaps or self.unreadable or self.vacuous:
            return "INCONCLUSIVE"
        return "PASSED"

    @property
    def vacuous(self) -> list[str]:
        return sorted(k for k, n in self.sometimes.items() if n == 0)


def _audit_group(pdf: Any) -> Any:
    """applyInPandas body: one trace's rows in, its violations/quarantine/summary rows out."""
    import pandas as pd

    from conformance.pipeline.audit_core import audit_trace

    records = pdf.to_dict("records")
    for r in records:
        for k, v in list(r.items()):
            if isinstance(v, float) and v != v:  # NaN from a null
                r[k] = None
    tid = records[0]["trace_id"] if records else None
    out: list[tuple[str, Any, Any, Any, Any]] = []
    if tid is None:
        out.extend(
            ("quarantine", None, r.get("step"), None, "null trace_id: row belongs to no trace")
            for r in records
        )
    else:
        result = audit_trace(tid, records)
        first: dict[str, tuple[int, str]] = {}
        for step, inv, msg in result.violations:
            if inv not in first or step < first[inv][0]:
                first[inv] = (step, msg)
        out.extend(("violation", tid, s, inv, m) for inv, (s, m) in sorted(first.items()))
        out.extend(("quarantine", tid, s, None, reason) for s, reason in result.quarantined)
        out.extend(("gap", tid, s, None, reason) for s, reason in result.gaps)
        out.append(("summary", tid, result.steps, json.dumps(result.sometimes, sort_keys=True), None))
    return pd.DataFrame(out, columns=["kind", "trace_id", "step", "invariant", "message"])


def read_lake(spark: SparkSession, path: str, unreadable: list[str] | None = None) -> DataFrame:
    """The lake's readable Parquet files as one DataFrame; files that are not Parquet are left out
    and listed in ``unreadable`` (a usage error when there is no such list)."""
    from conformance.pipeline.lake_files import split_files

    good, bad = split_files(path)
    if bad:
        if unreadable is None:
            raise UsageError(f"{bad[0][0]}: {bad[0][1]}")
        unreadable.extend(f"{name}: {why}" for name, why in bad)
    try:
        df = spark.read.parquet(*good)
    except AnalysisException as exc:
        raise UsageError(f"{path}: cannot read as a Parquet trace lake: {str(exc).splitlines()[0]}") from exc
    present = {f.name: _spark_kind(f.dataType.typeName()) for f in df.schema.fields}
    schema.check_columns(present, tuple(dict.fromkeys(schema.AUDIT_COLUMNS + schema.WINDOW_COLUMNS)), path)
    return df


def _spark_kind(name: str) -> str:
    if name in ("integer", "long", "short", "byte"):
        return "integer"
    if name == "array":
        return "list"
    return name


def audit(
    spark: SparkSession,
    path: str,
    out: Path,
    *,
    bound_ms: int = DEFAULT_OWNERLESS_BOUND_MS,
    max_counterexamples: int = 20,
) -> AuditSummary:
    start = time.perf_counter()
    summary = AuditSummary(path, bound_ms=bound_ms)
    df = read_lake(spark, path, summary.unreadable)
    per_trace = (
        df.select(*schema.AUDIT_COLUMNS, "action").groupBy("trace_id").applyInPandas(_audit_group, RESULT_DDL)
    )
    results = per_trace.collect()
    sometimes: Counter[str] = Counter()
    quarantine_rows = []
    tainted: set[str] = set()  # traces with a quarantined row or a gap: their windows are not judged
    for r in results:
        if r.kind == "violation":
            summary.violations.append((r.trace_id, r.step, r.invariant, r.message))
        elif r.kind == "quarantine":
            quarantine_rows.append((r.trace_id, r.step, r.message))
        elif r.kind == "gap":
            summary.gaps += 1
            tainted.add(r.trace_id)
        else:
            summary.traces += 1
            summary.steps += r.step
            hits = json.loads(r.invariant)
            for k, n in hits.items():
                sometimes[k] += n
    summary.sometimes = dict(sorted(sometimes.items()))
    tainted |= {t for t, _s, _m in quarantine_rows if t is not None}
    valid = df.where("trace_id IS NOT NULL AND step IS NOT NULL AND now IS NOT NULL")
    if tainted:  # a window over a trace with rows left out or missing would judge a different trace
        excluded = spark.createDataFrame([(t,) for t in sorted(tainted)], "trace_id string")
        valid = valid.join(excluded, on="trace_id", how="left_anti")
    valid.createOrReplaceTempView("lake")
    # the keyed form: one scan into the few candidate rows, array work on longs (the fastest form
    # on Spark; benchmarks/results/pipeline.md)
    spark.sql(candidates_sql()).localCheckpoint().createOrReplaceTempView("candidates")
    for check in CHECKS:
        for r in spark.sql(window_sql(check, bound_ms)).collect():
            summary.violations.append((r.trace_id, r.step, r.invariant, r.message))
    summary.violations.sort(key=lambda v: (v[2], v[0], v[1]))
    summary.quarantined = len(quarantine_rows)
    summary.quarantine_reasons = dict(Counter(_reason_kind(m) for _t, _s, m in quarantine_rows))
    counts: Counter[str] = Counter(v[2] for v in summary.violations)
    summary.violating_traces = dict(sorted(counts.items()))
    out.mkdir(parents=True, exist_ok=True)
    _write_table(out / "violations.parquet", ["trace_id", "step", "invariant", "message"], summary.violations)
    _write_table(out / "quarantine.parquet", ["trace_id", "step", "reason"], quarantine_rows)
    summary.counterexamples = _write_counterexamples(
        df, summary, out / "counterexamples", max_counterexamples
    )
    summary.seconds = time.perf_counter() - start
    return summary


def _reason_kind(message: str | None) -> str:
    """Reasons are `kind: detail`; the report counts by kind."""
    return (message or "?").split(":")[0]


def _write_table(path: Path, names: list[str], rows: list[tuple[Any, ...]]) -> None:
    import pyarrow.parquet as pq

    cols = {n: [r[i] for r in rows] for i, n in enumerate(names)}
    types = {"step": pa.int32()}
    table = pa.table({n: pa.array(v, type=types.get(n, pa.string())) for n, v in cols.items()})
    pq.write_table(table, path)


def _write_counterexamples(df: DataFrame, summary: AuditSummary, directory: Path, limit: int) -> list[str]:
    """The shortest violation of each invariant first, then the next shortest, up to `limit` files."""
    by_inv: dict[str, list[tuple[str, int, str, str]]] = {}
    for v in sorted(summary.violations, key=lambda v: (v[1], v[0])):
        by_inv.setdefault(v[2], []).append(v)
    chosen: list[tuple[str, int, str, str]] = []
    rank = 0
    while len(chosen) < limit and any(rank < len(vs) for vs in by_inv.values()):
        chosen.extend(vs[rank] for _inv, vs in sorted(by_inv.items()) if rank < len(vs))
        rank += 1
    chosen = chosen[:limit]
    if not chosen:
        return []
    wanted = sorted({v[0] for v in chosen})
    cols = [
        "trace_id", "protocol", "config", "step", "now", "action", "event", "deliveries", "world", "before",
    ]  # fmt: skip
    if "ops" in df.columns:
        cols.append("ops")
    rows = df.where(F.col("trace_id").isin(wanted)).select(*cols).collect()
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_trace.setdefault(r.trace_id, []).append(r.asDict())
    windows: dict[str, list[tuple[int, str, str]]] = {}
    for tid, step, inv, msg in summary.violations:
        if inv.startswith("window."):
            windows.setdefault(tid, []).append((step, inv, msg))
    written = []
    for tid, step, inv, _msg in chosen:
        # a registry violation's trace ends at its step; a window check reads a span: whole run
        upto, spans = (None, windows.get(tid, [])) if inv.startswith("window.") else (step, [])
        try:
            trace = trace_from_rows(
                by_trace[tid], spans, upto=upto, lake=summary.lake, bound_ms=summary.bound_ms
            )
        except (UsageError, ValueError) as exc:  # a quarantined (malformed) trace: no replayable file
            summary.unwritten.append(f"{tid}: {exc}")
            continue
        written.append(str(write_counterexample(trace, directory, inv)))
    return sorted(set(written))


# ---------------------------------------------------------------------- metrics
def metrics(
    spark: SparkSession, path: str, out: Path, graph: Any = None
) -> tuple[dict[str, list[dict[str, Any]]], Any]:
    """Run every metrics query (summary tables also written as Parquet) and, when the lake has
    abstract states, the coverage queries over them; with `graph` (an explore graph, as
    `conformance.engine.explore.load_graph` returns) also a filled `Coverage` of it."""
    from conformance.pipeline.metrics import (
        ABSTRACT_QUERIES,
        QUERIES,
        REACHED_EDGES,
        REACHED_STATES,
        metrics_sql,
    )

    df = read_lake(spark, path)
    df.where("trace_id IS NOT NULL AND step IS NOT NULL AND now IS NOT NULL").createOrReplaceTempView("lake")
    if graph is not None:  # a graph of a protocol the lake has no abstract states of: say so before the work
        proto = str(graph[0].get("protocol", "classic"))
        if (
            "abstract_state" in df.columns
            and not spark.sql(REACHED_STATES.format(protocol=proto.replace("'", "")) + " LIMIT 1").collect()
        ):
            raise UsageError(
                f"{path}: no {proto} runs with abstract states for this {proto} explore graph "
                f"(run the swarm with --coverage and --protocol {proto} or both)"
            )
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict[str, Any]]] = {}
    for name in QUERIES:
        res = spark.sql(metrics_sql(name))
        results[name] = [r.asDict() for r in res.collect()]
        if name in ("rebalances", "moved", "ownerless", "coverage"):
            res.coalesce(1).write.mode("overwrite").parquet(str(out / f"{name}.parquet"))
    abstract = "abstract_state" in df.columns and bool(
        spark.sql("SELECT 1 FROM lake WHERE abstract_state IS NOT NULL LIMIT 1").collect()
    )
    explore = None
    if abstract:
        for name in ABSTRACT_QUERIES:
            results[name] = [r.asDict() for r in spark.sql(metrics_sql(name, abstract=True)).collect()]
        if graph is not None:
            from conformance.engine.coverage import Coverage
            from conformance.pipeline.swarm import swarm_kits

            meta, g = graph
            explore = Coverage(g, meta)
            proto = explore.protocol
            lake_protocols = [kit.name for kit in swarm_kits()]
            if proto not in lake_protocols:
                raise UsageError(
                    f"explore graph of protocol {proto!r}: expected {' or '.join(lake_protocols)}"
                )
            explore.nodes = {r.state for r in spark.sql(REACHED_STATES.format(protocol=proto)).collect()}
            if not explore.nodes:
                raise UsageError(
                    f"{path}: no {proto} runs with abstract states for this {proto} explore graph"
                )
            explore.edges = {
                (r.src, r.dst) for r in spark.sql(REACHED_EDGES.format(protocol=proto)).collect()
            }
    elif graph is not None:
        raise UsageError(
            f"{path}: no abstract states in this lake: run the swarm with --coverage for --graph"
        )
    return results, explore
