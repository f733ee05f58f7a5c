"""The metrics report of a trace lake: tables, plots and coverage (which abstract states
and transitions the runs reached; docs/pipeline.md, docs/traces.md#explore-and-coverage).

`write_metrics_report` turns the rows of `jobs.metrics` into `summary.md` (tables, embedded PNGs),
`results.json` and the PNGs of `plots`. Coverage is reported twice: over the lake's coarse states
(protocol, group state, members, members in sync; every lake has them) and, when the swarm ran
with `--coverage`, over the abstract states of each protocol's kit (``ProtocolKit.state_key``), the
same keys `groupcheck explore` builds its graph from. Given that graph (`--graph G.json`), the report also gives the share of the explored
states and transitions the swarm reached and draws the covered state machine
(`conformance.engine.coverage.Coverage.picture`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.pipeline import plots

TITLES = {
    "rebalances": "Rebalance length (steps and virtual ms per rebalance)",
    "moved": "Partitions moved per completed rebalance (Stable owner changed between generations)",
    "ownerless": "Time without an owner while Stable (virtual ms per span)",
    "coverage": "Coverage: distinct states and transitions reached",
}
#: rows kept per table in summary.md (the JSON and Parquet have them all)
TABLES = ("rebalances", "moved", "ownerless", "coverage")


def cumulative(new_rows: list[dict[str, Any]], points: int = 200) -> list[dict[str, Any]]:
    """(protocol, run_index, new_states, new_transitions) -> cumulative counts, at most `points` per protocol."""
    out: list[dict[str, Any]] = []
    by_proto: dict[str, list[dict[str, Any]]] = {}
    for r in new_rows:
        by_proto.setdefault(r["protocol"], []).append(r)
    for proto, rows in sorted(by_proto.items()):
        rows.sort(key=lambda r: r["run_index"])
        last = rows[-1]["run_index"]
        every = max(1, (last + 1) // points)
        states = transitions = 0
        for i, r in enumerate(rows):
            states += int(r["new_states"] or 0)
            transitions += int(r["new_transitions"] or 0)
            nxt = rows[i + 1]["run_index"] if i + 1 < len(rows) else None
            if nxt is None or nxt // every != r["run_index"] // every:
                out.append(
                    {
                        "protocol": proto,
                        "runs": r["run_index"] + 1,
                        "states": states,
                        "transitions": transitions,
                    }
                )
    return out


def write_metrics_report(
    results: dict[str, list[dict[str, Any]]],
    lake: str,
    out: Path,
    explore: Any = None,
) -> Path:
    """summary.md + results.json + PNGs under `out`; `explore` is a filled `Coverage` or None."""
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"# Pipeline metrics: `{lake}`", ""]
    for name in TABLES:
        rows = results.get(name, [])
        lines += [f"## {TITLES[name]}", ""]
        lines += _table(rows) if rows else ["(no rows)"]
        lines.append("")
    pics = plots.distributions(
        results.get("rebalance_spans", []),
        results.get("moved_rows", []),
        results.get("ownerless_rows", []),
        out,
    )
    lines += ["## Plots", ""] + [f"![{p.stem}]({p.name})" for p in pics] + [""]
    abstract = bool(results.get("abstract"))
    what = (
        "abstract state graph" if abstract else "coarse state graph (protocol, group state, members, in sync)"
    )
    growth = cumulative(results.get("growth", []))
    results["growth_cumulative"] = growth
    lines += ["## Coverage", ""]
    if abstract:
        lines += _table(results["abstract"]) + [""]
    else:
        lines += [
            "This lake has no abstract states (swarm without `--coverage`): coverage is over the coarse",
            "states only.",
            "",
        ]
    if growth:
        pic = plots.coverage_growth(growth, out / "coverage-growth.png", what)
        lines += [f"![coverage growth]({pic.name})", ""]
    edges = results.get("state_edges", [])
    for proto in sorted({e["protocol"] for e in edges}):
        mine = [e for e in edges if e["protocol"] == proto]
        pic = plots.state_machine(
            mine, out / f"state-machine-{proto}.png", f"{proto}: group-state edges walked by the lake's runs"
        )
        lines += [f"![{proto} state machine]({pic.name})", ""]
    if explore is not None:
        pic = explore.picture(out / "explore-coverage.png")
        results["explore_coverage"] = [
            {
                "graph_states": explore.graph.number_of_nodes(),
                "graph_transitions": explore.graph.number_of_edges(),
                "covered_states": explore.covered_nodes(),
                "covered_transitions": explore.covered_edges(),
                "states_outside": len(explore.nodes) - explore.covered_nodes(),
            }
        ]
        lines += [
            "## Coverage of the explored graph",
            "",
            explore.summary(),
            "",
            f"![explored graph]({pic.name})",
            "",
        ]
    (out / "summary.md").write_text("\n".join(lines), encoding="utf-8")
    (out / "results.json").write_text(
        json.dumps({k: v for k, v in results.items() if not k.endswith("_rows") and k != "rebalance_spans"},
                   indent=2, sort_keys=True, default=str) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    return out / "summary.md"


def _table(rows: list[dict[str, Any]]) -> list[str]:
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r[c]) for c in cols) + " |" for r in rows]
    return lines


def _fmt(v: Any) -> str:
    return f"{v:,.1f}" if isinstance(v, float) else str(v)
