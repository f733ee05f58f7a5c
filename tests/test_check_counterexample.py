"""`groupcheck check` leaves a minimal, replayable counterexample with its pictures, a summary that
embeds the Mermaid diagram, and a JUnit file a CI can show (one case per invariant and rule)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.formats.trace_file import read_trace

STICKY_V0 = ["--protocol", "classic", "--variant", "sticky=v0", "--variant", "assignor=sticky"]


@pytest.mark.slow
def test_sticky_v0_check_writes_a_minimal_counterexample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["check", "--target", "model", *STICKY_V0, "--max-examples", "300", "--report-dir", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert code == 1, out
    (path,) = (tmp_path / "classic" / "counterexamples").glob("*.ndjson")
    trace = read_trace(path)
    # minimal in actions: a `converge` is one action however many observations its group needs
    actions = [s.action.get("op") for s in trace.steps if s.action.get("op") != "cont"]
    assert len(actions) <= 15, actions
    assert "client.assignment_single_owner" in trace.violated
    assert path.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    mermaid = path.with_suffix(".mmd").read_text()
    assert mermaid.startswith("sequenceDiagram")
    summary = (tmp_path / "classic" / "summary.md").read_text()
    assert "```mermaid\n" + mermaid.rstrip("\n") + "\n```" in summary
    assert f"groupcheck replay {path.resolve()} --target model" in summary

    suite = ET.parse(tmp_path / "classic" / "junit.xml").getroot()
    props = {p.get("name"): p.get("value") for p in suite.find("properties") or []}
    assert props["seed"] == "0" and props["variants"] == "assignor=sticky,sticky=v0"
    assert props["target_version"].startswith("groupcheck ")
    cases = {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}
    assert ("groupcheck.classic.rule", "JoinGroup") in cases
    failed = {name for (_, name), c in cases.items() if c.find("failure") is not None}
    results = json.loads((tmp_path / "classic" / "results.json").read_text())
    assert failed == {v["invariant"] for v in results["violations"]}, failed  # exactly what the run saw
    assert "client.assignment_single_owner" in failed
    bad = cases[("groupcheck.classic.invariant", "client.assignment_single_owner")]
    assert "groupcheck replay" in (bad.findtext("system-out") or "")
    assert int(suite.get("failures") or 0) == len(failed)
    assert results["verdict"] == "FAILED"

    assert main(["replay", str(path), "--target", "model"]) == 1  # the written trace fails again
    assert "FAILED" in capsys.readouterr().out
