"""Generated lake rows and cells: the decoder raises only its own error and runs nothing, the audit
accounts for every row exactly once and reports violations only at rows it checked, and a
counterexample built from the rows is either refused with its trace named or is a trace file that
reads back (docs/pipeline.md, docs/hostile-input.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from conformance.errors import UsageError
from conformance.formats import lake as codec
from conformance.formats.trace_file import read_trace
from conformance.pipeline.audit_core import audit_trace
from conformance.pipeline.counterexamples import trace_from_rows, write_counterexample
from conformance.pipeline.swarm import draw_config, run_one

from .support import FUZZ

ROWS = {seed: list(run_one(draw_config(2, seed))) for seed in (3, 9)}
TEXT_COLUMNS = ("event", "deliveries", "world", "before", "config", "ops", "protocol")

json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=10)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
tags = st.sampled_from(["@", "@e", "@b", "@fs", "@s", "@l", "@d", "@mp"])
tagged = st.builds(lambda t, v: json.dumps({t: v}), tags, json_value)
cell_text = st.one_of(
    json_value.map(json.dumps),
    tagged,
    st.text(max_size=30),
    st.sampled_from(
        ["[" * 100_000 + "]" * 100_000, '{"@l": ' * 5000 + "[]" + "}" * 5000, "9" * 5000, "NaN", ""]
    ),
)
cell = st.one_of(cell_text, st.none())


@FUZZ
@given(text=st.one_of(cell_text, st.binary(max_size=40).map(lambda b: b.decode("latin-1"))))
def test_the_lake_decoder_raises_only_its_own_error(text: str) -> None:
    try:
        codec.loads(text)
        event("decoded")
    except codec.LakeFormatError:
        event("refused (LakeFormatError)")


@st.composite
def hostile_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    rows = [dict(r) for r in ROWS[draw(st.sampled_from(sorted(ROWS)))]]
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(rows) - 1))
        how = draw(st.sampled_from(["cell", "step", "now", "drop", "duplicate"]))
        if how == "cell":
            rows[i][draw(st.sampled_from(TEXT_COLUMNS))] = draw(cell)
        elif how == "step":
            rows[i]["step"] = draw(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)))
        elif how == "now":
            rows[i]["now"] = draw(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)))
        elif how == "drop" and len(rows) > 2:
            del rows[i]
        else:
            rows.insert(i, dict(rows[draw(st.integers(0, len(rows) - 1))]))
    return rows


@FUZZ
@given(rows=hostile_rows())
def test_every_row_is_checked_or_quarantined_once_and_only_checked_rows_violate(
    rows: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    audit = audit_trace("t", rows)
    assert len(audit.quarantined) + audit.steps == len(rows)
    assert all(reason for _, reason in audit.quarantined)
    checked = {int(r["step"]) for r in rows if r.get("step") is not None} - {
        s for s, _ in audit.quarantined if s is not None and sum(1 for r in rows if r.get("step") == s) == 1
    }
    assert {s for s, _, _ in audit.violations} <= checked
    out = tmp_path_factory.mktemp("cx")
    try:
        trace = trace_from_rows(rows)
    except (UsageError, ValueError) as exc:  # ValueError: the lake codec's own error, or no rows
        assert str(exc)
        event("counterexample refused")
        return
    event("counterexample written and read back")
    path = write_counterexample(trace, out)
    assert read_trace(Path(path)).steps  # what the pipeline writes, the tool reads back
