"""The quarantine of the pipeline audit, without Spark: exact counts by reason, quarantined rows never
checked, out-of-range steps named as such, hostile cells and files reported (docs/pipeline.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conformance.errors import UsageError
from conformance.pipeline import schema
from conformance.pipeline.audit_core import MAX_STEP, audit_trace
from conformance.pipeline.counterexamples import trace_from_rows
from conformance.pipeline.lake_files import split_files
from conformance.pipeline.swarm import draw_config, run_one


@pytest.fixture(scope="module")
def rows() -> list[dict[str, object]]:
    return list(run_one(draw_config(2, 9)))


@pytest.mark.parametrize("step", [-5, 0, MAX_STEP + 1, 2**31 - 1])
def test_a_step_out_of_range_is_quarantined_as_such_and_never_checked(rows, step) -> None:
    bad = [dict(r) for r in rows]
    bad[10]["step"] = step
    bad[10]["world"] = bad[2]["world"]  # an older world: would break generation_monotonic if checked
    audit = audit_trace("t", bad)
    assert audit.quarantined == [(step, f"step out of range: {step} (1..{MAX_STEP})")]
    assert not audit.violations
    assert audit.gaps == [(12, "truncated trace: steps 11..11 missing")]


def test_counts_are_one_per_excluded_row_and_gaps_are_apart(rows) -> None:
    bad = [dict(r) for r in rows]
    bad[3]["world"] = bad[3]["world"][:40]  # malformed
    bad[5]["event"] = None  # malformed
    bad[7]["protocol"] = "mystery"  # unknown protocol
    bad[9]["step"] = -1  # out of range (also leaves a gap at 10)
    bad.append(dict(rows[20]))  # a duplicate
    del bad[30:33]  # a gap of three steps
    audit = audit_trace("t", bad)
    kinds = sorted(reason.split(":")[0] for _, reason in audit.quarantined)
    assert kinds == [
        "duplicate step",
        "malformed row",
        "malformed row",
        "step out of range",
        "unknown protocol",
    ]
    assert len(audit.quarantined) == 5 and audit.steps == len(bad) - 5
    assert [s for s, _ in audit.gaps] == [11, 34]


def test_a_100000_deep_json_cell_is_quarantined(rows) -> None:
    bad = [dict(r) for r in rows]
    bad[4]["world"] = "[" * 100_000 + "]" * 100_000
    bad[6]["deliveries"] = '{"@l": ' * 70_000 + "[]" + "}" * 70_000
    audit = audit_trace("t", bad)
    reasons = dict(audit.quarantined)
    assert reasons[5].startswith("malformed row:") and reasons[7].startswith("malformed row:")
    assert len(audit.quarantined) == 2


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("config", "[" * 100_000 + "]" * 100_000, "config: nested deeper than 64 levels"),
        ("config", '{"seed": ' + "9" * 5000 + "}", "config: an integer of 5000 digits"),
        ("config", "[1, 2]", "config: config is not a JSON object"),
        ("config", "{}", "config does not describe a run"),
        ("ops", "[]", "ops: not a non-empty JSON list"),
        ("ops", '[{"op": "advance", "ms": -7}]', "ops: action.ms: -7 is out of range"),
        ("ops", '[{"op": "settle", "bound_ms": 10, "tick_ms": 0}]', "ops: action.tick_ms: 0 is out of range"),
        ("ops", "[[]]", "ops: an entry is not an action"),
    ],
)
def test_a_counterexample_from_hostile_cells_is_a_usage_error_naming_the_trace(
    rows, column, value, message
) -> None:
    bad = [dict(r) for r in rows[:5]]
    for r in bad:
        r[column] = value
    with pytest.raises(UsageError, match=message) as info:
        trace_from_rows(bad)
    assert str(info.value).startswith(f"lake trace {rows[0]['trace_id']}")


def test_a_good_counterexample_header_fits_the_schema(rows) -> None:
    trace = trace_from_rows(rows[:5])
    assert trace.header["protocol"] == json.loads(rows[0]["config"]).get("protocol", "classic")


def test_files_that_are_not_parquet_are_named_and_left_out(rows, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema.LAKE_SCHEMA), lake / "part-0.parquet")
    (lake / "part-1.parquet").write_text("not parquet at all")
    (lake / "_SUCCESS").write_text("")
    (lake / "part-2.parquet").write_bytes((lake / "part-0.parquet").read_bytes()[:-100])  # truncated
    good, bad = split_files(str(lake))
    assert good == [str(lake / "part-0.parquet")]
    assert [Path(name).name for name, _ in bad] == ["part-1.parquet", "part-2.parquet"]
    assert all("not a Parquet file" in why for _, why in bad)
    (lake / "part-0.parquet").unlink()
    with pytest.raises(UsageError, match="not a Parquet trace lake"):
        split_files(str(lake))
    with pytest.raises(UsageError, match="no such trace lake"):
        split_files(str(tmp_path / "nowhere"))
