"""Every distinct divergence of a keep-going run, as Markdown (docs/keep-going.md#reports).

One table row per signature (count, where first seen, known or new against a baseline), then a
section each: the first message, the replay command of its smallest trace and that trace as an
inline Mermaid sequence diagram (GitHub renders ``mermaid`` code blocks). The diagrams are drawn by
the caller (`conformance.trace.render.mermaid`); this module only lays the page out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: a diagram longer than this many lines is cut (the trace file has it whole)
MAX_DIAGRAM_LINES = 120


@dataclass(frozen=True)
class Shown:
    """One distinct divergence as a report shows it."""

    protocol: str
    divergence: Any  # conformance.engine.divergences.Divergence
    trace_path: Path | None
    replay: str
    mermaid: str
    steps: int
    #: "known" / "new" against a baseline, "" without one
    status: str = ""


def first_seen(d: Any) -> str:
    f = d.first
    return f"group {f.group}, example {f.example}, step {f.step}"


def section(items: list[Shown], title: str = "Every distinct divergence") -> list[str]:
    """The Markdown lines of the divergences of one run (any number of protocols)."""
    if not items:
        return [f"### {title}", "", "None.", ""]
    with_status = any(i.status for i in items)
    head = "| # | protocol | signature | count | first seen | smallest trace |"
    rule = "|---|---|---|---|---|---|"
    if with_status:
        head, rule = head + " baseline |", rule + "---|"
    lines = [f"### {title}", "", head, rule]
    for k, i in enumerate(items, 1):
        d = i.divergence
        taint = ", tainted" if d.smallest.tainted else ""
        row = (
            f"| {k} | {i.protocol} | `{_cell(d.signature)}` | {d.count} | {first_seen(d)} "
            f"| {i.steps} steps{taint} |"
        )
        lines.append(row + (f" {i.status} |" if with_status else ""))
    lines.append("")
    for k, i in enumerate(items, 1):
        d = i.divergence
        lines += [f"#### {k}. {i.protocol}: `{_cell(d.signature)}`", ""]
        kind = "a safety or transition invariant of the model" if d.safety else "the target's answer"
        lines += [
            f"Seen {d.count} time(s), first at {first_seen(d)}; {kind}. First message: {_text(d.first.message)}",
            "",
        ]
        if d.smallest.tainted:
            lines += [
                "The smallest occurrence came after an adopted deviation of the same example (tainted): "
                "its replay may stop at the earlier one.",
                "",
            ]
        if i.trace_path is not None:
            lines += [f"Replay: `{i.replay}`", ""]
        if i.mermaid:
            diagram = i.mermaid.rstrip("\n").split("\n")
            if len(diagram) > MAX_DIAGRAM_LINES:
                diagram = diagram[:MAX_DIAGRAM_LINES] + [
                    "    Note over C: (cut: the trace file has every step)"
                ]
            lines += ["```mermaid", *diagram, "```", ""]
    return lines


def write_report(items: list[Shown], directory: Path, header: list[str], unseen: list[Any]) -> Path:
    """``divergences.md`` and ``divergences.json`` in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = [*header, "", *section(items)]
    if unseen:
        lines += ["### Baseline entries not seen in this run", ""]
        lines += [f"- {e.protocol}: `{_cell(e.signature)}` ({_text(e.reason)})" for e in unseen] + [""]
    (directory / "divergences.md").write_text("\n".join(lines) + "\n")
    data = [
        {
            **i.divergence.as_json(),
            "protocol": i.protocol,
            "trace": str(i.trace_path or ""),
            "status": i.status,
        }
        for i in items
    ]
    (directory / "divergences.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return directory


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def _text(text: str, limit: int = 600) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."
