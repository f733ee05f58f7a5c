"""The keyed window checks (`windows_keyed`, what `pipeline audit` runs on Spark) find what the
exploding form and the plain-Python checks find, trace for trace, step for step, message for
message, on the planted lake of `test_window_forms` plus holdings of topics a row does not list."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conformance.pipeline import schema, windows_explode, windows_keyed
from conformance.pipeline.windows import python_window_checks

from .test_window_forms import _stable, _trace, planted_lake

pytestmark = pytest.mark.spark

V1 = {"sticky": "v1"}


def unlisted_topics() -> list[dict]:
    """Holdings of topics the row's `topic_partitions` does not list share the key position 0: one
    partition of one such topic held twice is a double holder, the same partition number of two
    such topics (equal keys) is not."""
    twice = _trace(9, 2, V1, "plant-unlisted")
    row = next(r for r in _stable(twice) if len({h["client"] for h in r["holdings"]}) > 1)
    a = row["holdings"][0]
    b = next(h for h in row["holdings"] if h["client"] != a["client"])
    row["holdings"] = row["holdings"] + [
        {**a, "topic": "zz", "partition": 3},
        {**b, "topic": "zz", "partition": 3},
    ]
    apart = _trace(9, 2, V1, "plant-collide")
    row = next(r for r in _stable(apart) if len({h["client"] for h in r["holdings"]}) > 1)
    a = row["holdings"][0]
    b = next(h for h in row["holdings"] if h["client"] != a["client"])
    row["holdings"] = row["holdings"] + [
        {**a, "topic": "za", "partition": 1},
        {**b, "topic": "zb", "partition": 1},
    ]
    return twice + apart


def _forms(spark, rows: list[dict], bound_ms: int, tmp: Path) -> tuple[set, set]:
    pq.write_table(pa.Table.from_batches([schema.rows_to_batch(rows)]), tmp / "lake.parquet")
    spark.read.parquet(str(tmp / "lake.parquet")).createOrReplaceTempView("lake")
    spark.sql(windows_keyed.candidates_sql()).localCheckpoint().createOrReplaceTempView("candidates")
    keyed = {
        tuple(r)
        for c in windows_keyed.CHECKS
        for r in spark.sql(windows_keyed.window_sql(c, bound_ms)).collect()
    }
    explode = {
        tuple(r)
        for c in windows_explode.CHECKS
        for r in spark.sql(windows_explode.window_sql(c, "spark", bound_ms)).collect()
    }
    return keyed, explode


@pytest.mark.parametrize("bound_ms", [0, 1_000, 60_000])
def test_keyed_form_finds_the_same_violations_as_the_exploding_form_and_python(spark, bound_ms, tmp_path):
    rows = planted_lake() + unlisted_topics()
    keyed, explode = _forms(spark, rows, bound_ms, tmp_path)
    assert keyed == explode  # trace, first step, invariant and message
    ordered = sorted(rows, key=lambda r: (r["trace_id"], r["step"]))
    assert {x[:3] for x in keyed} == {(t, s, i) for t, s, i, _m in python_window_checks(ordered, bound_ms)}
    found = {(t, i) for t, _s, i, _m in keyed}
    assert ("plant-generation", "window.generation_monotonic") in found
    assert ("plant-double", "window.single_holder") in found
    assert ("plant-unlisted", "window.single_holder") in found
    assert ("plant-collide", "window.single_holder") not in found
    assert any(t.startswith("v0-") and i == "window.single_holder" for t, i in found)
    if bound_ms == 0:
        assert {
            ("plant-ownerless", "window.ownerless_bound"),
            ("plant-ownerless-copy", "window.ownerless_bound"),
        } <= found


def test_keyed_form_keeps_two_stretches_of_one_trace_apart(spark, tmp_path):
    rows = planted_lake()
    stable = _stable([r for r in rows if r["trace_id"] == "plant-ownerless"])
    whole = stable[-1]["now"] - stable[0]["now"]
    longest = max(stable[7]["now"] - stable[0]["now"], stable[-1]["now"] - stable[-8]["now"])
    bound = (longest + whole) // 2
    keyed, explode = _forms(spark, rows, bound, tmp_path)
    assert keyed == explode
    assert not any(m.endswith(f"without owner for {whole} ms while Stable") for _t, _s, _i, m in keyed)
