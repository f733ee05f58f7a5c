"""Counterexample traces: written canonically, read strictly, replayed exactly; every trace the design
review links replays FAILED on its design and PASSED on the shipped protocol it is compared with."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.designs import trace as tr
from model.designs import DESIGNS, make_engine
from model.designs import ops as o
from model.designs.driver import run

ROOT = Path(__file__).resolve().parent.parent
REVIEW = ROOT / "reports" / "design-review.md"
LINKS = (
    sorted(set(re.findall(r"\]\((design-review/traces/[^)]+\.ndjson)\)", REVIEW.read_text())))
    if REVIEW.exists()
    else []
)
SOCKET = [o.Join("A"), o.Join("B"), o.Join("C"), o.Settle(30_000), o.LoseSocket("B"), o.Settle(30_000)]


def written(tmp_path: Path, design: str = "broker-coordinator", ops: list[object] | None = None) -> Path:
    result = run(make_engine(design, {"t": 4}, {}, 0), ops or SOCKET)
    return tr.write(
        tr.trace_of(result, options={}, seed=0, topics={"t": 4}, origin={"kind": "test"}),
        tmp_path / "x.ndjson",
    )


def test_review_links_traces() -> None:
    assert len(LINKS) >= 8, "the design review links its counterexamples"


@pytest.mark.parametrize("link", LINKS)
def test_linked_trace_fails_on_its_design_and_passes_on_the_baseline(link: str) -> None:
    trace = tr.read(REVIEW.parent / link)
    assert trace.verdict == "FAILED"
    here = tr.replay(trace)
    assert here.verdict == "FAILED" and set(trace.violated) <= set(here.result.violated)  # type: ignore[union-attr]
    spec = DESIGNS[trace.design]
    assert tr.replay(trace, spec.baseline, spec.baseline_options).verdict == "PASSED"


def test_same_run_same_bytes_and_a_readable_render(tmp_path: Path) -> None:
    a = written(tmp_path).read_bytes()
    assert a == written(tmp_path).read_bytes()
    text = tr.render(tr.read(tmp_path / "x.ndjson"))
    assert "VIOLATED design.single_owner" in text and "losesocket member=B" in text


def test_bad_traces_name_the_line(tmp_path: Path) -> None:
    path = written(tmp_path)
    lines = path.read_text().splitlines()
    path.write_text(
        "\n".join([lines[0], lines[1].replace('"op":"join"', '"op":"teleport"'), *lines[2:]]) + "\n"
    )
    with pytest.raises(tr.DesignTraceError, match=r"x.ndjson:2: field 'op'"):
        tr.read(path)
    path.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(tr.DesignTraceError, match="verdict"):
        tr.read(path)


def test_a_stale_trace_is_an_error(tmp_path: Path) -> None:
    path = written(tmp_path)
    text = path.read_text().replace('"t-2"', '"t-1"')
    path.write_text(text)
    assert tr.replay(tr.read(path)).verdict == "ERROR"
