"""The invariant catalogue for citation: `reports/invariants.md` and `groupcheck explain`'s example.

One anchor per invariant id (link as `reports/invariants.md#<id>`), with its statement, source,
how it is checked (Hypothesis, z3 bound, trace replay, Spark, scenarios, explore) and links to the
committed counterexamples that violate it (`tests/regressions/`, `reports/counterexamples/`).
Regenerate with `groupcheck explain --write-catalogue`; a test keeps the committed file current.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from conformance.formats.trace_file import TraceError, read_trace
from conformance.resources import regressions_dir
from conformance.specs import SPECS_DIR, load_invariants, load_scenarios

ROOT = SPECS_DIR.parent
COUNTEREXAMPLE_DIRS = ("tests/regressions", "reports/counterexamples")
CATALOGUE = ROOT / "reports" / "invariants.md"

CHECKER_TEXT = {
    "hypothesis": "Hypothesis state machine after every step (`groupcheck check`)",
    "z3": "z3 bounded proof or counterexample (`groupcheck prove`)",
    "trace": "trace checker: every step of a recorded or replayed trace (`groupcheck replay`)",
    "spark": "Spark audit over trace data (`conformance/pipeline/`)",
    "scenario": "named scenarios (`groupcheck scenario run`)",
    "explore": "breadth-first exploration of the abstract state graph (`groupcheck explore`)",
}


@dataclass(frozen=True)
class Example:
    path: Path  # relative to the repository root
    steps: int
    origin: dict[str, Any]
    variants: dict[str, str]


def committed_counterexamples(
    root: Path = ROOT, folders: tuple[str, ...] = COUNTEREXAMPLE_DIRS
) -> dict[str, list[Example]]:
    """Invariant id -> committed traces violating it, shortest first (ties by path)."""
    out: dict[str, list[Example]] = {}
    for folder in folders:
        for file in sorted((root / folder).glob("*.ndjson")):
            try:
                trace = read_trace(file)
            except TraceError:
                continue  # a broken committed trace fails its own test, not the catalogue
            ex = Example(
                file.relative_to(root), len(trace.steps), trace.header["origin"], trace.header["variants"]
            )
            for inv in trace.violated:
                out.setdefault(inv, []).append(ex)
    for examples in out.values():
        examples.sort(key=lambda e: (e.steps, str(e.path)))
    return out


def _scenarios_for(inv_id: str, scenarios: dict[str, Any]) -> list[tuple[str, Path, dict[str, str]]]:
    rows = []
    for sid, sc in sorted(scenarios.items()):
        for exp in sc.expect:
            if inv_id in (exp.get("violated") or []):
                rows.append((sid, sc.path, dict(exp.get("variants") or {})))
    return rows


def render() -> str:
    specs = load_invariants()
    examples = committed_counterexamples()
    scenarios = load_scenarios()
    lines = [
        "# The groupcheck invariant catalogue",
        "",
        "Generated from `specs/invariants.yaml` and the committed counterexamples by",
        "`groupcheck explain --write-catalogue`; do not edit by hand. Cite an invariant as",
        "`reports/invariants.md#<id>`. Kinds: safety (every state), transition (every step), liveness",
        "(bounded on the virtual clock), sometimes (must happen in a run, or the run is inconclusive).",
        "",
        "| id | kind | counterexamples |",
        "|---|---|---|",
    ]
    for inv_id, spec in sorted(specs.items()):
        n = len(examples.get(inv_id, []))
        lines.append(f"| [`{inv_id}`](#{inv_id}) | {spec.kind} | {n or ''} |")
    for inv_id, spec in sorted(specs.items()):
        lines += ["", f'<a id="{inv_id}"></a>', f"## {inv_id}", ""]
        lines.append(f"*{spec.kind}, protocol {spec.protocol}* -- {spec.statement}")
        lines += ["", f"- Source: {spec.source}", "- Checked by:"]
        for checker in spec.checkers:
            text = CHECKER_TEXT.get(checker, checker)
            if checker == "z3" and spec.extra.get("bound"):
                text += f"; bound {spec.extra['bound']}"
            lines.append(f"  - {text}")
        for sid, path, variants in _scenarios_for(inv_id, scenarios):
            shown = ", ".join(f"{k}={v}" for k, v in sorted(variants.items())) or "default variants"
            lines.append(f"- Scenario [`{sid}`](../{path.relative_to(ROOT)}) violates it with {shown}")
        for ex in examples.get(inv_id, []):
            shown = ", ".join(f"{k}={v}" for k, v in sorted(ex.variants.items())) or "none"
            lines.append(
                f"- Counterexample [`{ex.path.name}`](../{ex.path}) -- {ex.steps} steps, "
                f"from {ex.origin.get('kind')}, variants {shown}"
            )
    return "\n".join(lines) + "\n"


def write(path: Path = CATALOGUE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render())
    return path


def shortest(inv_id: str) -> Example | None:
    """The shortest regression trace violating ``inv_id`` among those the package ships (its path is
    absolute), never a checkout's files: the installed ``conformance._regressions``."""
    shipped = regressions_dir()
    if shipped is None:
        return None
    found = committed_counterexamples(shipped, (".",)).get(inv_id)
    return replace(found[0], path=shipped / found[0].path) if found else None
