"""The benchmark's trace lakes: a real swarm as the base, scaled and copied under new trace ids.

Used by `benchmarks/pipeline.py`; every engine reads the same files.
"""

from __future__ import annotations

from pathlib import Path

#: every tenth base run pins the broken sticky V0 leader, so the checks have violations to agree on
BROKEN_EVERY = 10
BROKEN = {"sticky": "v0", "assignor": "sticky"}


def make_base(work: Path, runs: int) -> Path:
    """A real swarm (plain Python, seed 0) as one Parquet file: the seed of every scaled lake."""
    import pyarrow.parquet as pq

    from conformance.pipeline.schema import rows_to_batch
    from conformance.pipeline.swarm import draw_config, run_one

    base = work / f"base-mix-{runs}.parquet"
    if not base.exists():
        tmp = base.with_suffix(".tmp")
        with pq.ParquetWriter(tmp, rows_to_batch([]).schema, compression="zstd") as w:
            for i in range(runs):
                pinned = BROKEN if i % BROKEN_EVERY == 0 else None
                w.write_batch(rows_to_batch(list(run_one(draw_config(0, i, pinned=pinned)))))
        tmp.rename(base)
    return base


def make_scaled(work: Path, base: Path, rows: int) -> Path:
    """`rows` window-check rows: the base's flat columns repeated under new trace ids."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from conformance.pipeline.schema import WINDOW_COLUMNS

    out = work / f"lake-{base.stem}-{rows}"
    if (out / "_done").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    table = pq.read_table(base, columns=list(WINDOW_COLUMNS))
    copy, written, part = 0, 0, 0
    writer = None
    while written < rows:
        take = min(table.num_rows, rows - written)
        t = table.slice(0, take)
        ids = pc.binary_join_element_wise(t.column("trace_id"), pa.scalar(f"#{copy}"), "")
        t = t.set_column(0, "trace_id", ids)
        if writer is None or written // 5_000_000 != part:
            if writer is not None:
                writer.close()
            part = written // 5_000_000
            writer = pq.ParquetWriter(out / f"part-{part:04d}.parquet", t.schema, compression="zstd")
        writer.write_table(t, row_group_size=500_000)
        written += take
        copy += 1
    assert writer is not None
    writer.close()
    (out / "_done").write_text(str(rows))
    return out


def make_big(work: Path, lake: Path, rows: int) -> Path:
    """A lake of `rows` rows as copies of a scaled lake, written file by file (cheap: pyarrow).

    Each copy rewrites only `trace_id` (suffix `@k`) one row group at a time, so memory stays at one
    row group and the other columns are re-encoded unchanged; copy k of the 10M-row lake holds
    exactly that lake's violations under new ids. (The earlier `make_scaled` per 160,000-row slice
    took over 27 minutes for 75M rows under load; this wrote 100M rows in 618 s at load 5-18.)"""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    out = work / f"big-{lake.name}-{rows}"
    if (out / "_done").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    sources = sorted(lake.glob("*.parquet"))
    per_copy = sum(pq.ParquetFile(f).metadata.num_rows for f in sources)
    if rows % per_copy:
        raise SystemExit(f"--big {rows} is not a multiple of the {per_copy:,} rows of {lake}")
    for k in range(rows // per_copy):
        for f in sources:
            target = out / f"copy{k:03d}-{f.name}"
            if target.exists():
                continue
            src = pq.ParquetFile(f)
            tmp = target.with_suffix(".tmp")
            with pq.ParquetWriter(tmp, src.schema_arrow, compression="zstd") as w:
                for g in range(src.num_row_groups):
                    t = src.read_row_group(g)
                    ids = pc.binary_join_element_wise(t.column("trace_id"), pa.scalar(f"@{k}"), "")
                    w.write_table(t.set_column(0, "trace_id", ids))
            tmp.rename(target)
    (out / "_done").write_text(str(rows))
    return out
