"""docs/invariants.md is generated from specs/invariants.yaml (conformance/reporting/invariant_table.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.errors import SpecError
from conformance.reporting.invariant_table import DOC, END, START, main, render_table, rewrite
from conformance.specs import SPECS_DIR, load_invariants

CATALOGUE = SPECS_DIR / "invariants.yaml"


def test_committed_table_is_the_generated_one() -> None:
    committed = DOC.read_text(encoding="utf-8")
    assert committed == rewrite(committed, render_table()), "docs/invariants.md is stale: run make docs"


def test_every_invariant_has_a_row_with_its_anchor_and_statement() -> None:
    table = render_table()
    for inv_id, spec in load_invariants(CATALOGUE, check_registry=False).items():
        row = next(line for line in table.splitlines() if f'<a id="{inv_id}"></a>' in line)
        assert " ".join(spec.statement.split()).replace("|", "\\|") in row


def test_docs_citations_become_relative_links() -> None:
    table = render_table()
    assert "[protocol-reference.md#b13](protocol-reference.md#b13)" in table
    assert "[bug-catalogue.md#row-1](bug-catalogue.md#row-1)" in table


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    specs = tmp_path / "invariants.yaml"
    specs.write_text(CATALOGUE.read_text(encoding="utf-8"), encoding="utf-8")
    doc = tmp_path / "invariants.md"
    doc.write_text(DOC.read_text(encoding="utf-8"), encoding="utf-8")
    return specs, doc


def test_a_changed_statement_makes_the_committed_table_stale(tmp_path: Path) -> None:
    specs, doc = _copy(tmp_path)
    text = specs.read_text(encoding="utf-8")
    old = "A non-empty group's leader is one of its members"
    assert old in text
    specs.write_text(text.replace(old, "A non-empty group's leader is some member"), encoding="utf-8")
    assert main(["--specs", str(specs), "--doc", str(doc), "--check"]) == 1
    assert main(["--specs", str(specs), "--doc", str(doc)]) == 0
    assert "A non-empty group's leader is some member" in doc.read_text(encoding="utf-8")
    assert main(["--specs", str(specs), "--doc", str(doc), "--check"]) == 0


def test_text_outside_the_markers_is_kept() -> None:
    document = f"intro\n{START}\nold table\n{END}\noutro\n"
    assert rewrite(document, "new\n") == f"intro\n{START}\nnew\n{END}\noutro\n"


def test_missing_markers_are_a_spec_error() -> None:
    with pytest.raises(SpecError, match="markers not found"):
        rewrite("no markers here\n", "table\n")


def test_bad_yaml_exits_2_with_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs, doc = _copy(tmp_path)
    specs.write_text("version: 1\ninvariants:\n  - id: [unclosed\n", encoding="utf-8")
    assert main(["--specs", str(specs), "--doc", str(doc)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(specs) in err
