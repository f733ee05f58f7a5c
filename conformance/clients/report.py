"""A Markdown verdict table for one `groupcheck assignors` run (`--report FILE`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from conformance.clients.assignors import Cell, replay_command


def table(cells: Sequence[Cell]) -> list[str]:
    lines = [
        "| library | version | assignor | verdict | judged | raised | seconds |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for c in cells:
        lines.append(
            f"| {c.library.name} | {c.version or c.library.version} | {c.assignor} | {c.verdict} "
            f"| {c.examples} | {c.raised} | {c.seconds:.1f} |"
        )
    return lines


def findings(cells: Sequence[Cell]) -> list[str]:
    lines: list[str] = []
    for c in cells:
        if c.verdict == "UNAVAILABLE":
            lines.append(f"- {c.library.spec} {c.assignor}: not run ({c.note})")
        for f in c.findings:
            lines.append(f"- {c.library.spec} {c.assignor}, {f.outcome}:")
            lines.extend(f"  - `{inv}`: {msg}" for inv, msg in f.messages)
            lines.append(f"  - trace `{f.path}`; replay: `{replay_command(f.path, c.library)}`")
    return lines


def write_report(
    path: Path, cells: Sequence[Cell], *, seed_value: int, max_examples: int, inputs: str = "all"
) -> None:
    spec = cells[0].library.spec if cells else ""
    body = [
        f"# Assignors of {spec}",
        "",
        f"`groupcheck assignors --library {spec} --inputs {inputs} --seed {seed_value} --max-examples {max_examples}`",
        "",
        *table(cells),
        "",
        "## Findings",
        "",
        *(findings(cells) or ["None."]),
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(body))
