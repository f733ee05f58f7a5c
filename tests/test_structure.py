"""The code's shape, checked: small modules, no import cycles, layers as pyproject.toml states them.

The layering itself is import-linter's (`make lint` runs `lint-imports`); these tests add what a
contract cannot say: a size limit per module and no cycle between any two modules of `conformance`,
whether the import sits at the top of a file or inside a function.
"""

from __future__ import annotations

from pathlib import Path

import grimp
import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 500


def test_no_module_in_model_or_conformance_is_over_500_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for pkg in ("model", "conformance")
        for p in sorted((ROOT / pkg).rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def _graph() -> nx.DiGraph:
    g = grimp.build_graph("conformance", "model", cache_dir=None)
    out = nx.DiGraph()
    for m in g.modules:
        for i in g.find_modules_directly_imported_by(m):
            out.add_edge(m, i)
    return out


def test_no_import_cycle_between_modules_of_conformance():
    g = _graph().subgraph(n for n in _graph() if n.startswith("conformance"))
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert not cycles, f"{len(cycles)} import cycle(s): {cycles[:3]}"


def test_the_model_imports_nothing_from_conformance():
    g = _graph()
    bad = sorted((a, b) for a, b in g.edges if a.startswith("model") and b.startswith("conformance"))
    assert not bad, bad
