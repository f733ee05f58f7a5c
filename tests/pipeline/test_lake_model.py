"""The pipeline's plain-Python parts: codec, swarm runs, per-trace audit, quarantine, window checks, replay."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from conformance.errors import UsageError
from conformance.formats import lake as codec
from conformance.pipeline import schema, windows_explode
from conformance.pipeline.audit_core import audit_trace
from conformance.pipeline.counterexamples import trace_from_rows, write_counterexample
from conformance.pipeline.swarm import draw_config, observations, run_one
from conformance.pipeline.windows import CHECKS, candidates_sql, python_window_checks, window_sql

V0 = {"sticky": "v0", "assignor": "sticky"}


def rows_for(indices, pinned=None, seed=1):
    out = []
    for i in indices:
        out.extend(run_one(draw_config(seed, i, pinned=pinned)))
    return out


@pytest.fixture(scope="module")
def v0_rows():
    return rows_for(range(12), V0, seed=4)  # runs 0 and 4 reach KAFKA-7026


def first_violating(rows, invariant):
    by_trace: dict[str, list] = {}
    for r in rows:
        by_trace.setdefault(r["trace_id"], []).append(r)
    for tid, trs in sorted(by_trace.items()):
        audit = audit_trace(tid, trs)
        hits = [v for v in audit.violations if v[1] == invariant]
        if hits:
            return trs, hits[0]
    raise AssertionError(f"no trace violates {invariant}")


def test_codec_round_trips_worlds_events_and_deliveries():
    _initial, observed = observations(draw_config(3, 7))
    for obs, _ in observed:
        for value in (obs.after, obs.event, obs.deliveries):
            assert codec.loads(codec.dumps(value)) == value
    assert codec.dumps(observed[-1][0].after) == codec.dumps(observed[-1][0].after)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"@":"os:system","command":"x"}', "not a class of the model package"),
        ('{"@":"model.classic.world:NoSuchThing"}', "unknown type tag"),
        ('{"@":"model.classic.world:ClientSnap","name":"c1"}', "ClientSnap"),
        ('{"@e":"model.classic.state:GroupState","v":"Sleeping"}', "bad enum value"),
        ('{"plain":1}', "untagged"),
        ("{", "not JSON"),
    ],
)
def test_codec_rejects_what_is_not_a_model_value(text, reason):
    with pytest.raises(codec.LakeFormatError, match=reason):
        codec.loads(text)


def test_swarm_runs_are_deterministic_and_drawn_per_run():
    a = list(run_one(draw_config(5, 3)))
    b = list(run_one(draw_config(5, 3)))
    assert a == b and len(a) == 80
    configs = {draw_config(5, i).to_json().split('"index"')[0] for i in range(30)}
    assert len(configs) > 20  # members, topics, assignors and fault mixes differ between runs
    assert a[0]["before"] is not None and all(r["before"] is None for r in a[1:])
    assert [r["step"] for r in a] == list(range(1, 81))


def test_rows_fit_the_lake_schema_and_the_spark_ddl_matches_it():
    batch = schema.rows_to_batch(list(run_one(draw_config(1, 2))))
    assert batch.schema.equals(schema.LAKE_SCHEMA)
    ddl_names = [part.strip().split(" ")[0] for part in _split_top(schema.LAKE_DDL)]
    assert ddl_names == [n for n, *_ in schema.LAKE_FIELDS]


def _split_top(ddl: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in ddl:
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def test_v0_sticky_swarm_violates_kafka_7026_invariants_and_v1_does_not(v0_rows):
    found = set()
    for tid in sorted({r["trace_id"] for r in v0_rows}):
        found |= {v[1] for v in audit_trace(tid, [r for r in v0_rows if r["trace_id"] == tid]).violations}
    assert {"classic.single_owner_consumer", "client.assignment_single_owner"} <= found
    v1 = rows_for(range(12), {"sticky": "v1", "assignor": "sticky"}, seed=4)
    v1_found = set()
    for tid in sorted({r["trace_id"] for r in v1}):
        v1_found |= {v[1] for v in audit_trace(tid, [r for r in v1 if r["trace_id"] == tid]).violations}
    assert not v1_found & {"classic.single_owner_consumer", "client.assignment_single_owner"}


def test_a_planted_double_owner_in_a_v1_trace_is_caught():
    """Mutant: give two clients the same delivered partition in one row's world."""
    rows = list(run_one(draw_config(1, 4, pinned={"sticky": "v1"})))
    assert not [v for v in audit_trace("x", rows).violations if v[1] == "classic.single_owner_consumer"]
    target = next(r for r in rows if codec.loads(r["world"]).delivered)
    world = codec.loads(target["world"])
    gen, holders = world.delivered[-1]
    names = [c.name for c in world.clients][:2]
    planted = ((gen, tuple((n, frozenset({("t", 0)})) for n in names)),)
    target["world"] = codec.dumps(type(world)(**{**world.__dict__, "delivered": planted}))
    hits = [v for v in audit_trace("x", rows).violations if v[1] == "classic.single_owner_consumer"]
    assert hits and hits[0][0] == target["step"]


def test_bad_rows_are_quarantined_with_reasons_and_checking_goes_on():
    rows = list(run_one(draw_config(2, 9)))
    rows[4]["world"] = '{"@":"model.classic.world:ClassicWorld"'  # truncated JSON
    rows[10]["event"] = None
    del rows[20:23]  # a gap: steps 21-23 missing
    rows[30]["protocol"] = "mystery"
    rows.append(dict(rows[40]))  # a duplicated step
    audit = audit_trace("t", rows)
    reasons = dict(audit.quarantined)
    assert reasons[5].startswith("malformed row: not JSON")
    assert reasons[11] == "malformed row: null event"
    assert dict(audit.gaps)[24] == "truncated trace: steps 21..23 missing" and 24 not in reasons
    assert reasons[34] == "unknown protocol: 'mystery'"
    assert any(r == "duplicate step: already seen" for _, r in audit.quarantined)
    assert audit.steps == 77 - 3  # the rest (the row after the gap too) was checked


def test_window_checks_agree_between_python_and_duckdb_and_have_teeth(v0_rows):
    duckdb = pytest.importorskip("duckdb")  # the spark extra installs it; make test installs the extra
    rows = v0_rows + rows_for(range(20), {"sticky": "v1"}, seed=2)
    # mutants: a generation that goes back, and a partition without owner for a long Stable stretch
    mutant = [dict(r) for r in run_one(draw_config(9, 1, pinned={"sticky": "v1"}))]
    for r in mutant:
        r["trace_id"] = "mutant-1"
    gen_rows = [r for r in mutant if r["generation"] and r["generation"] > 1 and not r["failover"]]
    gen_rows[-1]["generation"] = 0
    rows += mutant
    py = python_window_checks(sorted(rows, key=lambda r: (r["trace_id"], r["step"])))
    con = duckdb.connect()
    con.register("lake", pa.Table.from_batches([schema.rows_to_batch(rows)]))
    con.execute("CREATE TEMP TABLE candidates AS " + candidates_sql("duckdb"))
    sql = [tuple(x[:3]) for c in CHECKS for x in con.execute(window_sql(c, "duckdb")).fetchall()]
    assert sorted(sql) == sorted(tuple(x[:3]) for x in py)
    con.execute("CREATE TEMP TABLE prep AS " + windows_explode.prepare_sql("duckdb"))  # exploding form
    one_scan = [
        tuple(x[:3])
        for c in CHECKS
        for x in con.execute(windows_explode.window_sql(c, "duckdb", prepared=True)).fetchall()
    ]
    assert sorted(one_scan) == sorted(sql)
    kinds = {(t, inv) for t, _s, inv, _m in py}
    assert ("mutant-1", "window.generation_monotonic") in kinds
    assert any(inv == "window.single_holder" for _t, inv in kinds)
    tight = {
        inv
        for _t, _s, inv, _m in python_window_checks(sorted(rows, key=lambda r: (r["trace_id"], r["step"])), 0)
    }
    assert "window.ownerless_bound" in tight and "window.ownerless_bound" not in {i for _t, i in kinds}


def _schema_valid(path: Path) -> None:
    import jsonschema

    from conformance.formats.schema import SCHEMA_PATH

    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    for line in path.read_text().splitlines():
        validator.validate(json.loads(line))


def test_counterexamples_are_project_traces_that_replay_show_and_fix(v0_rows, tmp_path: Path, capsys):
    from conformance.cli.main import main
    from conformance.formats.trace_file import read_trace
    from conformance.trace.replay import replay

    rows, (step, inv, _msg) = first_violating(v0_rows, "classic.single_owner_consumer")
    path = write_counterexample(trace_from_rows(rows, upto=step, lake="mem"), tmp_path)
    again = write_counterexample(trace_from_rows(rows, upto=step, lake="mem"), tmp_path / "again")
    assert again.read_bytes() == path.read_bytes()
    _schema_valid(path)
    trace = read_trace(path)
    assert trace.verdict == "FAILED" and inv in trace.violated
    # named after an invariant it violates (the consumer view, classic.no_partition_held_twice, too)
    assert any(path.name.startswith(f"{v}_") for v in trace.violated)
    assert sum(1 for s in trace.steps if s.event is not None) == step  # one event step per lake row
    assert trace.header["origin"]["kind"] == "swarm" and trace.header["setup"]["clients"]
    result = replay(trace)
    assert result.verdict == "FAILED" and result.exact and inv in {v.invariant for v in result.violations}
    assert main(["replay", str(path)]) == 1
    assert main(["pipeline", "replay", str(path)]) == 1
    assert main(["replay", str(path), "--variant", "sticky=v1"]) == 0  # the KIP-341 fix: FIXED
    assert "FIXED" in capsys.readouterr().out
    assert main(["show", str(path), "--format", "text"]) == 0
    assert "classic.single_owner_consumer" in capsys.readouterr().out
    # a recording the model no longer produces is an ERROR (exit 2), not a pass
    lines = path.read_text().splitlines()
    k = next(
        i for i, ln in enumerate(lines) if '"classic.JoinGroupResponse"' in ln and '"generation_id":1' in ln
    )
    tampered = tmp_path / "tampered.ndjson"
    lines_t = [*lines[:k], lines[k].replace('"generation_id":1', '"generation_id":7'), *lines[k + 1 :]]
    tampered.write_text("\n".join(lines_t) + "\n")
    assert main(["replay", str(tampered)]) == 2
    said = capsys.readouterr()  # the verdict on stdout, the divergence as a tool error on stderr
    assert "differ from the recorded ones" in said.out + said.err
    truncated = tmp_path / "truncated.ndjson"
    truncated.write_text("\n".join(lines[:-1]) + "\n")
    assert main(["replay", str(truncated)]) == 2
    assert main(["pipeline", "replay", str(tmp_path / "nope.ndjson")]) == 2
    assert main(["pipeline", "swarm", "--runs", "1", "--variant", "sticky=v9"]) == 2


def test_window_violation_traces_replay_with_their_bound(v0_rows, tmp_path: Path):
    from conformance.formats.trace_file import read_trace
    from conformance.trace.replay import replay

    rows = v0_rows
    found = python_window_checks(sorted(rows, key=lambda r: (r["trace_id"], r["step"])), 0)
    tid, step, inv, msg = next(v for v in found if v[2] == "window.ownerless_bound")
    mine = [r for r in rows if r["trace_id"] == tid]
    path = write_counterexample(trace_from_rows(mine, [(step, inv, msg)], bound_ms=0), tmp_path)
    _schema_valid(path)
    trace = read_trace(path)
    assert trace.violated == ("window.ownerless_bound",) and len([s for s in trace.steps if s.event]) == len(
        mine
    )
    assert replay(trace).verdict == "FAILED"
    # the same run judged with a bound no span reaches: the window check finds nothing
    trace.header["origin"]["ownerless_bound_ms"] = 10**9
    assert replay(trace).verdict == "FIXED"


def test_consumer_swarm_round_trips_and_its_audit_catches_kafka_16147():
    _initial, observed = observations(draw_config(2, 1, "consumer"))
    assert observed and all(codec.loads(codec.dumps(o.after)) == o.after for o, _ in observed[::10])
    rows = list(run_one(draw_config(2, 1, "consumer")))
    assert rows == list(run_one(draw_config(2, 1, "consumer"))) and rows[0]["protocol"] == "consumer"
    clean = set()
    broken = set()
    for i in range(4):
        clean |= {v[1] for v in audit_trace("c", run_one(draw_config(2, i, "consumer"))).violations}
        mutant = draw_config(2, i, "consumer", {"mutant": "kafka-16147"})
        broken |= {v[1] for v in audit_trace("m", run_one(mutant)).violations}
    assert not clean
    assert "consumer.single_partition_holder" in broken


def test_ndjson_traces_import_into_the_lake_and_audit_the_same(tmp_path: Path):
    import pyarrow.parquet as pq

    from conformance.cli.main import main
    from conformance.pipeline.importer import import_traces

    assert (
        main(
            ["scenario", "run", "kafka-7026", "--variant", "sticky=v0", "--report-dir", str(tmp_path / "sc")]
        )
        == 1
    )
    traces = sorted((tmp_path / "sc").rglob("*.ndjson"))
    assert traces
    n, rows = import_traces(traces, tmp_path / "lake")
    table = pq.read_table(tmp_path / "lake")
    assert n == len(traces) and table.num_rows == rows > 0 and table.schema.equals(schema.LAKE_SCHEMA)
    got = table.to_pylist()
    audit = audit_trace(got[0]["trace_id"], got)
    assert "classic.single_owner_consumer" in {v[1] for v in audit.violations} and not audit.quarantined
    step, inv, _msg = next(v for v in audit.violations if v[1] == "classic.single_owner_consumer")
    cx = write_counterexample(trace_from_rows(got, upto=step), tmp_path / "cx")
    assert main(["replay", str(cx)]) == 1  # the imported run, as a project trace, fails again
    with pytest.raises(UsageError, match="not empty"):
        import_traces(traces, tmp_path / "lake")


def test_consumer_counterexamples_are_project_traces_that_replay(tmp_path: Path):
    from conformance.cli.main import main
    from conformance.formats.trace_file import read_trace

    for i in range(4):
        rows = list(run_one(draw_config(2, i, "consumer", {"mutant": "kafka-16147"})))
        hits = [v for v in audit_trace("m", rows).violations if v[1] == "consumer.single_partition_holder"]
        if hits:
            break
    else:
        raise AssertionError("no consumer run with the kafka-16147 mutant broke single_partition_holder")
    path = write_counterexample(trace_from_rows(rows, upto=hits[0][0]), tmp_path)
    _schema_valid(path)
    trace = read_trace(path)
    assert trace.protocol == "consumer" and trace.header["variants"]["mutant"] == "kafka-16147"
    assert main(["replay", str(path)]) == 1
    assert main(["show", str(path), "--format", "mermaid"]) == 0


HOSTILE_CELLS = [
    # a tag that walks attributes to os.system: the registry has no such entry, nothing is called
    ('{"@e": "model.choice:random._os.system", "v": "touch {marker}"}', "unknown type tag"),
    ('{"@": "model.choice:random._os.system", "command": "touch {marker}"}', "unknown type tag"),
    ('{"@": "model.classic.state:GroupState"}', "is not a dataclass"),
    ('{"@e": "model.classic.world:ClassicWorld", "v": 1}', "is not an enum"),
    ('{"@": ["model.classic.world", "ClassicWorld"]}', "is not a string"),
    ("[" * 100_000 + "]" * 100_000, "not JSON"),
    ("[" * 70 + "]" * 70, "nested deeper"),
    ("1" * 5000, "not JSON"),
    (str(2**70), "64-bit"),
    ('{"@d": [1, 2]}', "pairs"),
    ('{"@fs": [{"@d": []}]}', "unhashable"),
    ('{"@b": 5}', "base64"),
]


@pytest.mark.parametrize(("text", "reason"), HOSTILE_CELLS)
def test_the_lake_decoder_calls_nothing_outside_its_registry(tmp_path, text, reason):
    marker = tmp_path / "ran"
    with pytest.raises(codec.LakeFormatError, match=reason):
        codec.loads(text.replace("{marker}", str(marker)))
    assert not marker.exists()


def test_a_hostile_row_is_quarantined_with_its_reason_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    rows = list(run_one(draw_config(2, 9)))
    rows[6]["event"] = json.dumps({"@e": "model.choice:random._os.system", "v": f"touch {marker}"})
    audit = audit_trace("t", rows)
    reasons = dict(audit.quarantined)
    assert reasons[7].startswith("malformed row: unknown type tag 'model.choice:random._os.system'")
    assert not marker.exists()
    assert not audit.violations
