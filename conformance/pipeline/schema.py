"""The trace lake's schema: one Parquet row per step of a run (documented in docs/pipeline.md#lake-schema).

Columns `event`, `deliveries`, `world` (and `before` on a trace's first row) are type-tagged JSON
(`conformance.formats.lake`) from which the auditor rebuilds each `Observation` and runs the
registry's predicates. The flat columns (`group_state`, `generation`, `holdings`, ...) are derived
from `world` so that cross-trace and time-window checks run as plain DataFrame/SQL jobs.
pyarrow only: this module must not import pyspark.
"""

from __future__ import annotations

import pyarrow as pa

from conformance.errors import UsageError

HOLDING = pa.struct(
    [
        ("client", pa.string()),
        ("member_id", pa.string()),
        ("generation", pa.int32()),
        ("phase", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
    ]
)
TOPIC = pa.struct([("topic", pa.string()), ("partitions", pa.int32())])

#: (name, type, nullable, meaning) -- README's table is generated from this list.
LAKE_FIELDS: tuple[tuple[str, pa.DataType, bool, str], ...] = (
    ("trace_id", pa.string(), False, "one run: `<protocol>-<seed>-<index>`"),
    ("protocol", pa.string(), False, "classic | consumer"),
    ("seed", pa.int64(), False, "swarm seed"),
    ("run_index", pa.int64(), False, "run number within the swarm"),
    ("config", pa.string(), False, "the run's drawn configuration (JSON, `SwarmConfig`)"),
    ("step", pa.int32(), False, "1-based step number; a trace's steps are contiguous"),
    ("now", pa.int64(), False, "virtual time in ms after the step"),
    ("action", pa.string(), False, "the swarm action that produced the step"),
    ("event_kind", pa.string(), False, "simulator event class (Send, Advance, Failover, ...)"),
    ("event", pa.string(), False, "the event (tagged JSON)"),
    ("deliveries", pa.string(), False, "responses delivered at this step (tagged JSON)"),
    ("world", pa.string(), False, "world after the step (tagged JSON)"),
    ("before", pa.string(), True, "world before step 1 (tagged JSON), null on later steps"),
    (
        "ops",
        pa.string(),
        True,
        "the trace ops that led to this step (JSON list, `conformance/trace` step actions; null in older lakes)",
    ),
    (
        "abstract_state",
        pa.string(),
        True,
        "abstract state after the step (`groupcheck explore` key; swarm `--coverage` only, else null)",
    ),
    ("group_state", pa.string(), True, "coordinator's group state after the step (null: no group)"),
    ("generation", pa.int32(), True, "group generation (classic) or group epoch (consumer)"),
    ("leader", pa.string(), True, "classic group leader"),
    ("member_count", pa.int32(), False, "members in the coordinator's group"),
    ("failover", pa.bool_(), False, "the step was a coordinator failover"),
    ("persisted_generation", pa.int32(), True, "generation of the last durable group record"),
    ("holdings", pa.list_(HOLDING), False, "partitions each client believes it owns"),
    ("subscribed", pa.list_(pa.string()), False, "topics subscribed by the group's members"),
    ("topic_partitions", pa.list_(TOPIC), False, "partition count per topic"),
)

LAKE_SCHEMA = pa.schema([pa.field(n, t, nullable=null) for n, t, null, _ in LAKE_FIELDS])

#: Spark DDL for the same schema (mapInArrow output); kept in step with LAKE_FIELDS by a test.
LAKE_DDL = (
    "trace_id string, protocol string, seed bigint, run_index bigint, config string, step int, now bigint, "
    "action string, event_kind string, event string, deliveries string, world string, before string, ops string, abstract_state string, "
    "group_state string, generation int, leader string, member_count int, failover boolean, "
    "persisted_generation int, "
    "holdings array<struct<client:string,member_id:string,generation:int,phase:string,topic:string,partition:int>>, "
    "subscribed array<string>, topic_partitions array<struct<topic:string,partitions:int>>"
)

#: Columns the per-trace audit needs; the window checks need the flat ones.
AUDIT_COLUMNS = ("trace_id", "protocol", "config", "step", "now", "event", "deliveries", "world", "before")
WINDOW_COLUMNS = (
    "trace_id", "step", "now", "group_state", "generation", "failover", "persisted_generation",
    "holdings", "subscribed", "topic_partitions",
)  # fmt: skip

VIOLATION_DDL = "trace_id string, step int, invariant string, message string"
QUARANTINE_DDL = "trace_id string, step int, reason string"


def check_columns(present: dict[str, str], needed: tuple[str, ...], where: str) -> None:
    """A lake without the columns (or with the wrong top-level types) is a tool error naming them."""
    expected = {n: t for n, t, _, _ in LAKE_FIELDS}
    missing = [c for c in needed if c not in present]
    if missing:
        raise UsageError(f"{where}: not a groupcheck trace lake: missing column(s) {', '.join(missing)}")
    for c in needed:
        want = _kind(expected[c])
        if want != present[c]:
            raise UsageError(f"{where}: column {c!r} has type {present[c]}, expected {want}")


def _kind(t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_list(t):
        return "list"
    return str(t)


def rows_to_batch(rows: list[dict[str, object]]) -> pa.RecordBatch:
    """Lake rows (dicts) to one Arrow batch of `LAKE_SCHEMA` (missing nullable columns become null)."""
    cols = {name: [r.get(name) for r in rows] for name in LAKE_SCHEMA.names}
    return pa.RecordBatch.from_pydict(cols, schema=LAKE_SCHEMA)
