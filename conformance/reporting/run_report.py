"""Per-run reports: summary.md, results.json, junit.xml, counterexamples/ (docs/cli.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from conformance.specs import load_invariants


def write_check_report(result: Any, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    specs = load_invariants()
    failed = {v.invariant for v in result.violations}
    rows = []
    for inv_id, spec in sorted(specs.items()):
        if spec.protocol not in (result.protocol, "client" if result.protocol == "classic" else ""):
            continue
        if spec.kind == "sometimes":
            hits = result.sometimes.get(inv_id, 0)
            verdict = "SEEN" if hits else "NEVER SEEN"
        else:
            verdict = "FAILED" if inv_id in failed else "PASSED"
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
    if result.violations:
        lines += ["", "## Counterexample", ""]
        lines += [f"- {v.invariant}: {v.message} (step {v.step})" for v in result.violations]
        lines += ["", "```", *result.steps, "```"]
    (directory / "summary.md").write_text("\n".join(lines) + "\n")
    cases = []
    for r in rows:
        body = ""
        if r["verdict"] in ("FAILED", "NEVER SEEN"):
            msgs = "; ".join(v.message for v in result.violations if v.invariant == r["id"]) or r["verdict"]
            body = f'<failure message="{escape(msgs, {chr(34): "&quot;"})}"/>'
        cases.append(
            f'  <testcase classname="groupcheck.{result.protocol}" name="{r["id"]}">{body}</testcase>'
        )
    failures = sum(1 for r in rows if r["verdict"] in ("FAILED", "NEVER SEEN"))
    junit = (
        f'<?xml version="1.0" encoding="utf-8"?>\n<testsuite name="groupcheck" tests="{len(rows)}" '
        f'failures="{failures}">\n' + "\n".join(cases) + "\n</testsuite>\n"
    )
    (directory / "junit.xml").write_text(junit)
    return directory
