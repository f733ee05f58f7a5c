"""The grouped-states window checks (`windows`) find what the exploding form (`windows_explode`)
and the plain-Python checks find, trace for trace, on a lake with planted violations."""

from __future__ import annotations

import pyarrow as pa
import pytest

from conformance.pipeline import schema, windows, windows_explode
from conformance.pipeline.swarm import draw_config, run_one
from conformance.pipeline.windows import python_window_checks

V0 = {"sticky": "v0", "assignor": "sticky"}
V1 = {"sticky": "v1"}


def _trace(seed: int, index: int, pinned: dict[str, str], tid: str) -> list[dict]:
    rows = [dict(r) for r in run_one(draw_config(seed, index, pinned=pinned))]
    for r in rows:
        r["trace_id"] = tid
    return rows


def _stable(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["group_state"] == "Stable" and r["generation"] is not None]


def _drop_holding(r: dict, topic: str, part: int) -> None:
    r["holdings"] = [h for h in r["holdings"] if (h["topic"], h["partition"]) != (topic, part)]


def planted_lake() -> list[dict]:
    """Swarm traces (V0 reaches KAFKA-7026) plus v1 traces with planted violations: a generation
    that goes back, a second holder at one step, and a partition left without owner in two
    separate stretches of one trace whose rows are otherwise equal (one grouped state, two spans)."""
    rows = [r for i in range(12) for r in _trace(4, i, V0, f"v0-{i}")]
    rows += [r for i in range(6) for r in _trace(2, i, V1, f"v1-{i}")]
    back = _trace(9, 1, V1, "plant-generation")
    later = [r for r in back if r["generation"] and r["generation"] > 1 and not r["failover"]]
    later[-1]["generation"] = 0
    double = _trace(9, 2, V1, "plant-double")
    row = next(r for r in _stable(double) if len({h["client"] for h in r["holdings"]}) > 1)
    first, other = (
        row["holdings"][0],
        next(h for h in row["holdings"] if h["client"] != row["holdings"][0]["client"]),
    )
    row["holdings"] = row["holdings"] + [{**other, "topic": first["topic"], "partition": first["partition"]}]
    gaps = _trace(9, 3, V1, "plant-ownerless")
    stable = _stable(gaps)
    held = stable[0]["holdings"][0]
    for r in stable[:8] + stable[-8:]:
        _drop_holding(r, held["topic"], held["partition"])
    copy = [{**r, "trace_id": "plant-ownerless-copy"} for r in gaps]  # same states, other trace
    return rows + back + double + gaps + copy


def _sql_forms(rows: list[dict], bound_ms: int) -> tuple[set, set]:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.register("lake", pa.Table.from_batches([schema.rows_to_batch(rows)]))
    con.execute("CREATE TEMP TABLE candidates AS " + windows.candidates_sql("duckdb"))
    new = {
        tuple(x)
        for c in windows.CHECKS
        for x in con.execute(windows.window_sql(c, "duckdb", bound_ms)).fetchall()
    }
    old = {
        tuple(x)
        for c in windows_explode.CHECKS
        for x in con.execute(windows_explode.window_sql(c, "duckdb", bound_ms)).fetchall()
    }
    return new, old


@pytest.mark.parametrize("bound_ms", [0, 1_000, 60_000])
def test_grouped_states_find_the_same_violations_as_the_exploding_form_and_python(bound_ms):
    rows = planted_lake()
    new, old = _sql_forms(rows, bound_ms)
    assert new == old  # trace, first step, invariant and message
    py = {
        (t, s, i)
        for t, s, i, _m in python_window_checks(
            sorted(rows, key=lambda r: (r["trace_id"], r["step"])), bound_ms
        )
    }
    assert {x[:3] for x in new} == py
    found = {(t, i) for t, _s, i, _m in new}
    assert ("plant-generation", "window.generation_monotonic") in found
    assert ("plant-double", "window.single_holder") in found
    assert any(t.startswith("v0-") and i == "window.single_holder" for t, i in found)
    if bound_ms == 0:
        assert {
            ("plant-ownerless", "window.ownerless_bound"),
            ("plant-ownerless-copy", "window.ownerless_bound"),
        } <= found


def test_two_stretches_of_one_trace_are_two_spans_not_one():
    """The planted partition is ownerless at the first and last Stable steps; with a bound between
    the longer stretch and the whole trace, a form that joined the stretches would report it."""
    rows = planted_lake()
    stable = _stable([r for r in rows if r["trace_id"] == "plant-ownerless"])
    whole = stable[-1]["now"] - stable[0]["now"]
    longest = max(stable[7]["now"] - stable[0]["now"], stable[-1]["now"] - stable[-8]["now"])
    assert longest < whole
    bound = (longest + whole) // 2
    new, old = _sql_forms(rows, bound)
    py = {
        (t, s, i)
        for t, s, i, _m in python_window_checks(sorted(rows, key=lambda r: (r["trace_id"], r["step"])), bound)
    }
    assert new == old and {x[:3] for x in new} == py
    held = stable[0]["holdings"]
    assert not any(m.endswith(f"without owner for {whole} ms while Stable") for _t, _s, _i, m in new), held
