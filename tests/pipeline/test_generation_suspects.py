"""The suspect-trace form of `window.generation_monotonic` (what `pipeline audit` and the DuckDB
form run) finds exactly what the plain window over every step finds, for any sequence of
generations, NULLs, failovers, persisted generations and repeated steps."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.pipeline import schema, windows, windows_explode

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


GM = "window.generation_monotonic"


def _lake(rows: list[dict]):
    con = duckdb.connect()
    con.register("lake", pa.Table.from_batches([schema.rows_to_batch(rows)]))
    return con


def _plain(con) -> set[str]:
    """The plain window over every step, as DuckDB runs the exploding form."""
    return {r[0] for r in con.execute(windows_explode.window_sql(GM, "duckdb")).fetchall()}


def _suspect_form(con) -> set[str]:
    """The suspect-trace form, as DuckDB runs the grouped-states form (`pipeline audit` on Spark
    runs the same text through `windows_keyed`)."""
    return {r[0] for r in con.execute(windows.window_sql(GM, "duckdb")).fetchall()}


def _suspects(con) -> set[str]:
    """The traces the suspect-trace form windows step by step."""
    ctes = windows_explode.GENERATION_MONOTONIC_SUSPECTS.split("SELECT trace_id, min(step)")[0]
    return {r[0] for r in con.execute(ctes + "SELECT trace_id FROM suspects").fetchall()}


@settings(max_examples=300, deadline=None)
@given(TRACES)
def test_suspect_form_finds_what_the_plain_window_finds(traces):
    con = _lake(_rows(traces))
    # a trace with a repeated step has no defined order between its two rows, so the plain window
    # may judge either; every unambiguous trace must be judged the same
    ambiguous = {f"t{i}" for i, steps in enumerate(traces) if any(s[3] for s in steps[1:])}
    plain = _plain(con)
    assert plain - ambiguous == _suspect_form(con) - ambiguous
    assert plain & ambiguous <= _suspects(con)  # a tie is always windowed


def test_a_failover_fallback_is_suspect_but_not_a_violation():
    rows = _rows([[(1, False, 1, False), (3, False, 1, False), (1, True, None, False), (2, False, 1, False)]])
    rows[1]["persisted_generation"] = 1
    con = _lake(rows)
    assert _suspects(con) == {"t0"} and _suspect_form(con) == _plain(con) == set()
    rows[2]["failover"] = False
    con = _lake(rows)
    assert _suspect_form(con) == _plain(con) == {"t0"}
