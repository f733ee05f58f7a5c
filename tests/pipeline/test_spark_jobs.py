"""Swarm and audit on Spark (local[2], one shared session): end to end, quarantine, schema errors."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conformance.errors import UsageError
from conformance.pipeline import schema
from conformance.pipeline.swarm import draw_config, run_one
from conformance.pipeline.windows import python_window_checks

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def v0_lake(spark, tmp_path_factory) -> Path:
    from conformance.pipeline.jobs import swarm

    out = tmp_path_factory.mktemp("lake") / "v0"
    # seed 4 reaches KAFKA-7026 in runs 0 and 4 (a small swarm keeps CI time low)
    summary = swarm(
        spark, 8, out, seed=4, variants={"sticky": "v0", "assignor": "sticky"}, steps=80, slices=2
    )
    assert summary.rows == 8 * 80
    return out


def test_swarm_writes_the_same_rows_as_the_plain_simulator(spark, v0_lake):
    table = pq.read_table(v0_lake)
    assert table.schema.names == schema.LAKE_SCHEMA.names
    got = sorted(
        table.select(["trace_id", "step", "world"]).to_pylist(), key=lambda r: (r["trace_id"], r["step"])
    )
    want = [
        r for i in range(8) for r in run_one(draw_config(4, i, pinned={"sticky": "v0", "assignor": "sticky"}))
    ]
    assert got == [{"trace_id": r["trace_id"], "step": r["step"], "world": r["world"]} for r in want]


def test_audit_finds_kafka_7026_on_v0_and_writes_replayable_traces(spark, v0_lake, tmp_path):
    from conformance.pipeline.jobs import audit

    summary = audit(spark, str(v0_lake), tmp_path / "audit", max_counterexamples=6)
    assert summary.traces == 8 and summary.steps == 640 and summary.quarantined == 0
    assert summary.violating_traces.get("classic.single_owner_consumer", 0) >= 1
    assert summary.violating_traces.get("window.single_holder", 0) >= 1
    # the Spark SQL window checks agree with the plain-Python implementation of the same checks
    rows = sorted(pq.read_table(v0_lake).to_pylist(), key=lambda r: (r["trace_id"], r["step"]))
    py = {(t, s, i) for t, s, i, _m in python_window_checks(rows)}
    assert {(t, s, i) for t, s, i, _m in summary.violations if i.startswith("window.")} == py
    # the exploding form (a persisted `prep` table, benchmarks/pipeline.py --modes prep) finds the same
    from conformance.pipeline.windows_explode import CHECKS, prepare_sql, window_sql

    spark.read.parquet(str(v0_lake)).createOrReplaceTempView("lake")
    prep = spark.sql(prepare_sql("spark")).persist()
    prep.createOrReplaceTempView("prep")
    one_scan = {
        tuple(r)[:3] for c in CHECKS for r in spark.sql(window_sql(c, "spark", prepared=True)).collect()
    }
    prep.unpersist()
    assert one_scan == py
    from conformance.pipeline import windows  # the grouped-states form, Spark dialect

    spark.sql(windows.candidates_sql("spark")).localCheckpoint().createOrReplaceTempView("candidates")
    grouped = {
        tuple(r)[:3] for c in windows.CHECKS for r in spark.sql(windows.window_sql(c, "spark")).collect()
    }
    assert grouped == py
    files = [Path(p) for p in summary.counterexamples]
    assert files and all(p.exists() for p in files)
    from conformance.cli.main import main
    from conformance.formats.trace_file import read_trace

    kinds = {i.split(".")[0] for p in files for i in read_trace(p).violated}
    assert {"classic", "window"} <= kinds  # registry and window violations, both as project traces
    assert any(p.name.startswith("window.single_holder_") for p in files)
    for p in files:  # every written counterexample replays as FAILED on the model (exit 1)
        assert main(["replay", str(p)]) == 1, p
    stored = pq.read_table(tmp_path / "audit" / "violations.parquet").num_rows
    assert stored == len(summary.violations)


def test_quarantine_counts_bad_rows_and_wrong_schema_is_a_tool_error(spark, tmp_path):
    from conformance.pipeline.jobs import audit

    rows = list(run_one(draw_config(4, 2))) + list(run_one(draw_config(4, 3)))
    rows[3]["world"] = rows[3]["world"][:50]  # truncated
    del rows[10]  # a gap
    rows[90]["trace_id"] = None
    rows[100]["step"] = 2**31 - 1  # far out of range, with an old world: no window may judge it
    rows[100]["generation"], rows[100]["world"] = 0, rows[82]["world"]
    rows[110]["event"] = "[" * 100_000 + "]" * 100_000  # a 100,000-deep JSON value
    lake = tmp_path / "bad"
    lake.mkdir()
    null_ok = pa.schema([f.with_nullable(True) for f in schema.LAKE_SCHEMA])
    pq.write_table(pa.Table.from_pylist(rows, schema=null_ok), lake / "part-0.parquet")
    (lake / "part-1.parquet").write_text("not a Parquet file")
    summary = audit(spark, str(lake), tmp_path / "audit")
    # one entry per row left out; the gaps (the deleted row, and the rows without a trace id or
    # with an out-of-range step in their own traces) are counted apart
    assert summary.quarantined == 4 and summary.verdict == "INCONCLUSIVE" and not summary.violations
    assert summary.quarantine_reasons == {"malformed row": 2, "null trace_id": 1, "step out of range": 1}
    assert summary.gaps == 3
    assert [Path(u.split(":")[0]).name for u in summary.unreadable] == ["part-1.parquet"]
    q = pq.read_table(tmp_path / "audit" / "quarantine.parquet").to_pylist()
    assert len(q) == 4 and all(r["reason"] for r in q)
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    pq.write_table(pa.table({"trace_id": ["a"], "step": ["one"]}), wrong / "x.parquet")
    with pytest.raises(UsageError, match="not a groupcheck trace lake: missing column"):
        audit(spark, str(wrong), tmp_path / "audit2")
    retyped = tmp_path / "retyped"
    retyped.mkdir()
    t = pa.Table.from_pylist(rows[:5], schema=null_ok)
    t = t.set_column(t.schema.get_field_index("step"), "step", pa.array([str(r["step"]) for r in rows[:5]]))
    pq.write_table(t, retyped / "x.parquet")
    with pytest.raises(UsageError, match="column 'step' has type string, expected integer"):
        audit(spark, str(retyped), tmp_path / "audit3")


def test_metrics_report_with_plots_and_abstract_coverage(spark, tmp_path):
    from conformance.engine.coverage import Coverage, load_graph
    from conformance.engine.explore import save_graph
    from conformance.pipeline.jobs import metrics, swarm
    from conformance.pipeline.report import write_metrics_report
    from conformance.protocols.classic.explore import explore_classic

    # runs shaped like explore's graph (2 dynamic members, one topic of 2 partitions, range)
    lake = tmp_path / "cov"
    swarm(
        spark,
        6,
        lake,
        seed=3,
        variants={"assignor": "range"},
        steps=40,
        slices=2,
        coverage=True,
        shape=(2, 2),
    )
    graph = save_graph(explore_classic(2, 2, depth=8, variants={"assignor": "range"}), tmp_path / "g.json")
    results, explore = metrics(spark, str(lake), tmp_path / "m", load_graph(graph))
    assert isinstance(explore, Coverage) and explore.nodes
    assert 0 < explore.covered_nodes() < explore.graph.number_of_nodes()  # the swarm reached part of it
    cov = {r["protocol"]: r for r in results["abstract"]}["classic"]
    assert (
        cov["states"] == len(explore.nodes) and cov["transitions"] == len(explore.edges) and cov["runs"] == 6
    )
    rebalances = {r["assignor"] for r in results["rebalances"]}
    assert rebalances == {"range"} and results["rebalance_spans"]
    assert sum(r["new_states"] for r in results["growth"]) == cov["states"]
    summary = write_metrics_report(results, str(lake), tmp_path / "m", explore)
    text = summary.read_text()
    for png in ("rebalance-steps.png", "rebalance-ms.png", "moved.png", "ownerless.png", "coverage-growth.png",
                "state-machine-classic.png", "explore-coverage.png"):  # fmt: skip
        assert f"]({png})" in text and (tmp_path / "m" / png).stat().st_size > 10_000, png
    assert (tmp_path / "m" / "coverage.parquet").exists()


def test_metrics_over_a_lake_without_abstract_states(spark, v0_lake, tmp_path):
    from conformance.pipeline.jobs import metrics

    results, explore = metrics(spark, str(v0_lake), tmp_path / "metrics")
    assert explore is None and "abstract" not in results
    rebalances = {r["assignor"]: r for r in results["rebalances"]}
    assert set(rebalances) == {"sticky"} and rebalances["sticky"]["rebalances"] > 8
    assert {(r["protocol"], r["variant"]) for r in results["rebalance_spans"]} == {("classic", "sticky=v0")}
    assert results["moved"] and results["moved"][0]["stable_generations"] > 0
    cov = results["coverage"][0]
    assert cov["protocol"] == "classic" and cov["states"] > 5 and cov["transitions"] > 5
    with pytest.raises(UsageError, match="run the swarm with --coverage"):
        metrics(spark, str(v0_lake), tmp_path / "metrics2", ({}, None))


def test_consumer_coverage_is_computed_against_the_consumer_explore_graph(spark, tmp_path):
    """A lake of both protocols (`--protocol both --coverage --shape 2,2`) against a consumer explore
    graph: only the consumer runs' abstract states count, and they are consumer_explore's keys."""
    from conformance.engine.explore import load_graph, save_graph
    from conformance.pipeline.jobs import metrics
    from conformance.pipeline.schema import LAKE_SCHEMA, rows_to_batch
    from conformance.protocols.consumer.explore import explore_consumer

    rows = [r for i in range(6) for r in run_one(draw_config(3, i, "both", None, 30, True, (2, 2)))]
    lake = tmp_path / "both"
    lake.mkdir()
    pq.write_table(pa.Table.from_batches([rows_to_batch(rows)], LAKE_SCHEMA), lake / "part-0.parquet")
    consumer_keys = {r["abstract_state"] for r in rows if r["protocol"] == "consumer"}
    classic_keys = {r["abstract_state"] for r in rows if r["protocol"] == "classic"}
    assert consumer_keys and classic_keys and not consumer_keys & classic_keys
    graph = load_graph(save_graph(explore_consumer(2, 2, depth=4), tmp_path / "c.json"))
    results, explore = metrics(spark, str(lake), tmp_path / "m", graph)
    assert explore.protocol == "consumer" and explore.nodes == consumer_keys
    assert 0 < explore.covered_nodes() < explore.graph.number_of_nodes()
    assert all(a in consumer_keys and b in consumer_keys for a, b in explore.edges)
    assert {r["protocol"] for r in results["rebalances"]} == {"classic", "consumer"}
    classic_only = tmp_path / "classic"
    classic_only.mkdir()
    mine = [r for r in rows if r["protocol"] == "classic"]
    pq.write_table(pa.Table.from_batches([rows_to_batch(mine)], LAKE_SCHEMA), classic_only / "p.parquet")
    with pytest.raises(UsageError, match="no consumer runs with abstract states"):
        metrics(spark, str(classic_only), tmp_path / "m2", graph)
