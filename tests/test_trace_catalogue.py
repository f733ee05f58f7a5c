"""reports/invariants.md is current; `explain` shows the shortest committed counterexample."""

from __future__ import annotations

import re

import pytest

from conformance.cli.main import main
from conformance.specs import load_invariants
from conformance.trace.catalogue import CATALOGUE, ROOT, committed_counterexamples, render


def test_committed_catalogue_is_current() -> None:
    assert CATALOGUE.read_text() == render(), "run: groupcheck explain --write-catalogue"


def test_one_anchor_per_invariant_and_links_resolve() -> None:
    text = render()
    anchors = re.findall(r'<a id="([^"]+)"></a>', text)
    assert sorted(anchors) == sorted(load_invariants())
    for target in re.findall(r"\]\(\.\./([^)]+)\)", text):
        assert (CATALOGUE.parent.parent / target).exists(), target


def test_regressions_are_linked_from_their_invariants() -> None:
    examples = committed_counterexamples()
    k7026 = examples["classic.single_owner_consumer"]
    assert k7026 and k7026 == sorted(k7026, key=lambda e: (e.steps, str(e.path)))
    assert "client.cooperative_no_direct_transfer" in examples


def test_explain_shows_the_shortest_counterexample(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "classic.single_owner_consumer"]) == 0
    out = capsys.readouterr().out
    shipped = committed_counterexamples(ROOT, ("tests/regressions",))["classic.single_owner_consumer"]
    best = shipped[0]
    assert f"counterexample: {best.path.name} ({best.steps} steps" in out
    assert "!! VIOLATED classic.single_owner_consumer" in out
    assert main(["explain", "classic.max_size"]) == 0
    assert "none shipped" in capsys.readouterr().out
    assert main(["explain"]) == 2
