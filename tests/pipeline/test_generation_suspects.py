"""The suspect-trace form of `window.generation_monotonic` (what `pipeline audit` and the DuckDB
form run) finds exactly what the plain window over every step finds, for any sequence of
generations, NULLs, failovers, persisted generations and repeated steps."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.pipeline import schema, windows_explode

duckdb = pytest.importorskip("duckdb")

STEP = st.tuples(
    st.one_of(st.none(), st.integers(0, 4)),  # generation
    st.booleans(),  # failover
    st.one_of(st.none(), st.integers(0, 4)),  # persisted generation
    st.booleans(),  # repeat the previous step number
)
TRACES = st.lists(st.lists(STEP, min_size=1, max_size=12), min_size=1, max_size=6)


def _rows(traces: list[list[tuple]]) -> list[dict]:
    rows = []
    for i, steps in enumerate(traces):
        step = 0
        for generation, failover, persisted, repeat in steps:
            step += 0 if repeat and step else 1
            rows.append(
                {
                    "trace_id": f"t{i}",
                    "step": step,
                    "now": step * 100,
                    "group_state": "Stable",
                    "generation": generation,
                    "failover": failover,
                    "persisted_generation": persisted,
                    "holdings": [],
                    "subscribed": [],
                    "topic_partitions": [],
                }
            )
    return rows


def _found(con, sql: str) -> set[str]:
    return {r[0] for r in con.execute(sql.replace("AS STRING", "AS VARCHAR")).fetchall()}


@settings(max_examples=300, deadline=None)
@given(TRACES)
def test_suspect_form_finds_what_the_plain_window_finds(traces):
    con = duckdb.connect()
    con.register("lake", pa.Table.from_batches([schema.rows_to_batch(_rows(traces))]))
    # a trace with a repeated step has no defined order between its two rows, so the plain window
    # may judge either; every unambiguous trace must be judged the same
    ambiguous = {f"t{i}" for i, steps in enumerate(traces) if any(s[3] for s in steps[1:])}
    plain = _found(con, windows_explode.GENERATION_MONOTONIC)
    suspects = _found(con, windows_explode.GENERATION_MONOTONIC_SUSPECTS)
    assert plain - ambiguous == suspects - ambiguous
    if ambiguous:
        suspect_ids = _found(
            con,
            windows_explode.GENERATION_MONOTONIC_SUSPECTS.split("SELECT trace_id, min(step)")[0]
            + "SELECT trace_id FROM suspects",
        )
        assert plain & ambiguous <= suspect_ids  # a tie is always windowed


def test_a_failover_fallback_is_suspect_but_not_a_violation():
    rows = _rows([[(1, False, 1, False), (3, False, 1, False), (1, True, None, False), (2, False, 1, False)]])
    rows[1]["persisted_generation"] = 1
    con = duckdb.connect()
    con.register("lake", pa.Table.from_batches([schema.rows_to_batch(rows)]))
    assert _found(con, windows_explode.GENERATION_MONOTONIC_SUSPECTS) == set()
    rows[2]["failover"] = False
    con.register("lake", pa.Table.from_batches([schema.rows_to_batch(rows)]))
    assert _found(con, windows_explode.GENERATION_MONOTONIC_SUSPECTS) == {"t0"}
