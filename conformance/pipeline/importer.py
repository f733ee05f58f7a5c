"""Convert groupcheck NDJSON traces (`conformance/trace/`, format `groupcheck-trace` v1) into lake rows.

A trace records operations, not worlds; the model replays them exactly (`conformance.trace.replay`
refuses a trace the model no longer reproduces), and each replayed observation becomes a lake row
as a swarm step would. `trace_id` is `trace-<fingerprint>`; `config` holds the trace's header
(with the source path) so an audit counterexample points back to the original file, which
`groupcheck replay FILE` replays. A file that does not read or replay is a tool error naming it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.engine.replay import replay
from conformance.engine.swarm import ops_per_observation
from conformance.errors import UsageError
from conformance.formats import lake as codec
from conformance.formats.trace_file import read_trace
from conformance.pipeline.swarm import hooks
from conformance.protocols import get_kit


@dataclass(frozen=True)
class _Origin:
    trace_id: str
    protocol: str
    seed: int
    index: int


def trace_rows(path: Path, index: int = 0) -> list[dict[str, Any]]:
    trace = read_trace(path)
    result = replay(trace, get_kit(trace.protocol))
    if result.error:
        raise UsageError(f"{path}: cannot be imported: {result.error}")
    origin = _Origin(f"trace-{trace.fingerprint()}", trace.protocol, int(trace.header.get("seed", 0)), index)
    config = json.dumps({"source": str(path), "header": trace.header}, sort_keys=True, separators=(",", ":"))
    make_row = hooks(trace.protocol).row
    ops = ops_per_observation(result.sim.log, result.observations)
    rows = []
    for step, obs in enumerate(result.observations, 1):
        row = make_row(origin, config, step, obs, "trace")
        row["before"] = codec.dumps(obs.before) if step == 1 and obs.before is not None else None
        row["ops"] = json.dumps(ops[step - 1], sort_keys=True, separators=(",", ":"))
        rows.append(row)
    return rows


def import_traces(paths: list[Path], out: Path, overwrite: bool = False) -> tuple[int, int]:
    """Write every trace's rows as one Parquet file under `out`; returns (traces, rows)."""
    import pyarrow.parquet as pq

    from conformance.pipeline.schema import LAKE_SCHEMA, rows_to_batch

    if out.exists() and any(out.iterdir()) and not overwrite:
        raise UsageError(f"{out}: exists and is not empty (use --overwrite)")
    out.mkdir(parents=True, exist_ok=True)
    total = 0
    with pq.ParquetWriter(out / "traces.parquet", LAKE_SCHEMA, compression="zstd") as writer:
        for i, path in enumerate(sorted(paths)):
            rows = trace_rows(path, i)
            if rows:
                writer.write_batch(rows_to_batch(rows))
            total += len(rows)
    return len(paths), total
