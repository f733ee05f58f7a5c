"""Known deviations of Apache Kafka met by a run, as CLI lines and report sections (model.deviations).

A known deviation breaks a protocol promise the way Apache Kafka does; the run reports it at the
protocol level with its public record and does not fail on it (docs/known-deviations.md)."""

from __future__ import annotations

from typing import Any

from model.deviations import load_all


def deviation_rows(result: Any) -> list[dict[str, Any]]:
    """One row per known deviation met: id, promise, title, sources, finding, how often, first step."""
    registry = load_all()
    rows = []
    for d in getattr(result, "deviations", ()):
        dev = registry[d.id]
        rows.append(
            {
                "id": d.id,
                "invariant": d.invariant,
                "title": dev.title,
                "sources": list(dev.sources),
                "finding": dev.finding,
                "observations": d.count,
                "first_message": d.message,
            }
        )
    return rows


def deviation_lines(result: Any) -> list[str]:
    """Terminal lines: one per deviation, indented under the run's verdict."""
    out = []
    for r in deviation_rows(result):
        out.append(f"  known deviation of Apache Kafka: {r['id']} breaks {r['invariant']} ({r['finding']})")
        out.append(f"    {r['observations']} observation(s); first: {r['first_message']}")
    return out


def deviation_section(result: Any) -> list[str]:
    """A markdown section for summary.md (empty when none was met)."""
    rows = deviation_rows(result)
    if not rows:
        return []
    lines = ["", "## Known deviations of Apache Kafka", ""]
    lines += [
        "The run met promise violations that Apache Kafka itself shows; they are reported here and "
        "do not fail the run (docs/known-deviations.md).",
        "",
        "| deviation | promise | what | sources | finding | observations |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| `{r['id']}` | `{r['invariant']}` | {r['title']} | {'; '.join(r['sources'])} | "
        f"{r['finding']} | {r['observations']} |"
        for r in rows
    ]
    return lines
