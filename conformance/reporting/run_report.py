"""Per-run reports: summary.md, results.json, junit.xml, counterexamples/ (docs/cli.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.protocols import get_kit
from conformance.reporting.deviations import deviation_rows, deviation_section
from conformance.reporting.junit import write_junit
from conformance.specs import load_invariants


def reported_families(protocol: str) -> tuple[str, ...]:
    """The invariant families a report of a ``protocol`` run lists: its own and its kit's extra ones."""
    return (protocol, *get_kit(protocol).report_families)


def write_check_report(result: Any, directory: Path, counterexample: Any = None) -> Path:
    """``counterexample``: the written one (`conformance.cli.counterexample.Counterexample`), if any."""
    directory.mkdir(parents=True, exist_ok=True)
    specs = load_invariants()
    failed = {v.invariant for v in result.violations}
    deviating = {d.invariant for d in getattr(result, "deviations", ())}
    rows = []
    for inv_id, spec in sorted(specs.items()):
        if spec.protocol not in reported_families(result.protocol):
            continue
        if spec.kind == "sometimes":
            hits = result.sometimes.get(inv_id, 0)
            verdict = "SEEN" if hits else "NEVER SEEN"
        else:
            verdict = (
                "FAILED" if inv_id in failed else ("KNOWN DEVIATION" if inv_id in deviating else "PASSED")
            )
        rows.append({"id": inv_id, "kind": spec.kind, "verdict": verdict, "source": spec.source})
    data = {
        "protocol": result.protocol,
        "target": result.target,
        "seed": result.seed,
        "max_examples": result.max_examples,
        "variants": result.variants,
        "verdict": result.verdict,
        "seconds": round(result.seconds, 2),
        "invariants": rows,
        "violations": [v.__dict__ for v in result.violations],
        "known_deviations": deviation_rows(result),
        "steps": result.steps,
    }
    (directory / "results.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    lines = [
        f"# groupcheck check: {result.protocol} on {result.target}",
        "",
        f"Verdict: **{result.verdict}** (seed {result.seed}, {result.max_examples} examples, "
        f"{result.seconds:.1f} s, variants {result.variants or 'none'})",
        "",
        "| invariant | kind | verdict |",
        "|---|---|---|",
    ]
    lines += [f"| `{r['id']}` | {r['kind']} | {r['verdict']} |" for r in rows]
    lines += deviation_section(result)
    if result.violations:
        lines += ["", "## Counterexample", ""]
        lines += [f"- {v.invariant}: {v.message} (step {v.step})" for v in result.violations]
        lines += ["", "```", *result.steps, "```"]
    if counterexample is not None:
        rel = counterexample.path.resolve()
        lines += [
            "",
            f"Minimal counterexample: `{rel}` ({len(counterexample.trace.steps)} steps; "
            f"Hypothesis' shrink had {counterexample.shrunk_from})",
            "",
        ]
        lines += [f"Replay: `groupcheck replay {rel} --target {result.target}`", ""]
        lines += ["```mermaid", counterexample.mermaid.rstrip("\n"), "```"]
    (directory / "summary.md").write_text("\n".join(lines) + "\n")
    replay = None
    if counterexample is not None:
        replay = f"groupcheck replay {counterexample.path} --target {result.target}"
    write_junit(result, rows, directory / "junit.xml", replay)
    return directory
