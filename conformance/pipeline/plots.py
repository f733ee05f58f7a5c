"""Pictures of a trace lake's metrics and coverage (matplotlib, Agg backend: no display, no network).

Inputs are plain rows (dicts) from the metrics jobs (`conformance.pipeline.metrics`), so the same
functions draw Spark's results and the tests' small ones. One PNG per question a reader asks:
how long rebalances take, how many partitions move, how long a partition waits for an owner (per
assignor and variant), how fast the swarm discovers new abstract states, and which edges of the
group state machine it walked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: where each group state sits in the state-machine picture (classic: ClassicGroupState.java;
#: consumer: ConsumerGroup.ConsumerGroupState, KIP-848)
PLACES = {
    "none": (-0.6, 2.3),
    "Empty": (0.0, 1.0),
    "PreparingRebalance": (1.0, 2.0),
    "CompletingRebalance": (2.0, 1.0),
    "Stable": (1.0, 0.0),
    "Dead": (-1.0, 0.0),
    "Assigning": (1.0, 2.0),
    "Reconciling": (2.0, 1.0),
}


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def label(row: Mapping[str, Any]) -> str:
    """`assignor` plus the variants that differ from the correct defaults (metrics' `variant`)."""
    parts = [str(row.get("assignor") or "?")]
    if row.get("variant"):
        parts.append(str(row["variant"]))
    return " ".join(parts)


def _groups(rows: Iterable[Mapping[str, Any]], value: str) -> dict[str, dict[str, list[float]]]:
    """protocol -> label -> values."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get(value) is not None:
            out[str(r.get("protocol") or "classic")][label(r)].append(float(r[value]))
    return {p: dict(sorted(g.items())) for p, g in sorted(out.items())}


def _box(ax: Any, groups: dict[str, list[float]], title: str, ylabel: str) -> None:
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel, fontsize=9)
    if not groups:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        return
    names = list(groups)
    ax.boxplot([groups[n] for n in names], showmeans=True, whis=(5, 95), flierprops={"markersize": 2})
    ax.set_xticks(range(1, len(names) + 1))
    ax.set_xticklabels([f"{n}\n(n={len(groups[n]):,})" for n in names], fontsize=7.5, rotation=25, ha="right")
    ax.grid(axis="y", alpha=0.3)


def _panels(plt: Any, by_proto: dict[str, dict[str, list[float]]], title: str, ylabel: str) -> Any:
    """One box-plot panel per protocol, widths by the number of boxes (classic has more)."""
    protos = list(by_proto) or ["(none)"]
    widths = [max(2, len(by_proto.get(p, {}))) for p in protos]
    fig, axes = plt.subplots(
        1, len(protos), figsize=(2.2 + 1.3 * sum(widths), 5.2), dpi=100, squeeze=False,
        gridspec_kw={"width_ratios": widths},
    )  # fmt: skip
    for ax, proto in zip(axes[0], protos, strict=True):
        _box(ax, by_proto.get(proto, {}), f"{proto} protocol", ylabel)
    fig.suptitle(f"{title} (box 25-75%, whiskers 5-95%, triangle = mean)", fontsize=10)
    fig.tight_layout()
    return fig


def _ccdf_panels(plt: Any, by_proto: dict[str, dict[str, list[float]]], title: str, xlabel: str) -> Any:
    """Share of values longer than x, one line per assignor/variant and one panel per protocol.

    Virtual-time spans are mostly 0 ms (a partition changes owner within one step at the same
    virtual time), which flattens box plots; the complementary CDF (log scale: the tail is a few
    percent) shows the tail instead, and the legend gives each line's share of zero-length spans."""
    protos = list(by_proto) or ["(none)"]
    fig, axes = plt.subplots(1, len(protos), figsize=(7.2 * len(protos), 5.2), dpi=100, squeeze=False)
    for ax, proto in zip(axes[0], protos, strict=True):
        groups = by_proto.get(proto, {})
        ax.set_title(f"{proto} protocol", fontsize=10)
        if not groups:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
            continue
        lowest = 1.0
        for name, values in groups.items():
            xs = sorted(values)
            n = len(xs)
            distinct = sorted(set(xs))
            # P(X > x) at each distinct value (xs is sorted: count from the right)
            longer, j, shares = n, 0, []
            for x in distinct:
                while j < n and xs[j] <= x:
                    j += 1
                longer = n - j
                shares.append(longer / n)
            zero = sum(1 for v in xs if v == 0) / n
            kept = [(x, y) for x, y in zip(distinct, shares, strict=True) if y > 0]  # log scale: > 0
            if kept and len(kept) < len(distinct):  # the last step runs on to the largest value
                kept.append((distinct[len(kept)], kept[-1][1]))
            lowest = min([lowest, *(y for _, y in kept)])
            ax.step([x for x, _ in kept], [y for _, y in kept], where="post",
                    label=f"{name} (n={n:,}, {zero:.0%} at 0)")  # fmt: skip
        ax.set_xscale("symlog", linthresh=100)
        ax.set_xlim(left=0)
        ax.set_yscale("log")
        ax.set_ylim(lowest / 2, 1.05)
        ax.set_xlabel(xlabel, fontsize=9)
        ax.set_ylabel("share longer than x", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7.5)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def distributions(
    rebalances: list[dict[str, Any]],
    moved: list[dict[str, Any]],
    ownerless: list[dict[str, Any]],
    out: Path,
) -> list[Path]:
    """Per assignor and variant, one panel per protocol: rebalance-steps.png and rebalance-ms.png
    (rebalance length), moved.png (partitions moved per completed rebalance), ownerless.png."""
    plt = _plt()
    out.mkdir(parents=True, exist_ok=True)
    boxes = [
        ("rebalance-steps.png", _groups(rebalances, "steps"), "Rebalance length in steps", "steps per rebalance"),
        ("moved.png", _groups(moved, "moved"), "Partitions moved per completed rebalance", "partitions"),
    ]  # fmt: skip
    written = [_save(_panels(plt, g, title, ylabel), out / name, plt) for name, g, title, ylabel in boxes]
    tails = [
        ("rebalance-ms.png", _groups(rebalances, "ms"), "Rebalance length in virtual time", "ms per rebalance"),
        ("ownerless.png", _groups(ownerless, "ms"), "Time without an owner while Stable, per span", "virtual ms"),
    ]  # fmt: skip
    written += [
        _save(_ccdf_panels(plt, g, title, xlabel), out / name, plt) for name, g, title, xlabel in tails
    ]
    return sorted(written)


def coverage_growth(growth: list[dict[str, Any]], out: Path, what: str) -> Path:
    """States and transitions reached against runs: flattening means the swarm stops finding new ones."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.8), dpi=100)
    by_proto: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in growth:
        by_proto[r["protocol"]].append(r)
    for proto, rows in sorted(by_proto.items()):
        rows.sort(key=lambda r: r["runs"])
        xs = [r["runs"] for r in rows]
        ax.plot(xs, [r["states"] for r in rows], label=f"{proto}: states")
        ax.plot(xs, [r["transitions"] for r in rows], "--", label=f"{proto}: transitions")
    ax.set_xlabel("runs (in run-index order)")
    ax.set_ylabel("distinct, cumulative")
    ax.set_title(f"Coverage growth of the {what}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, out, plt)


def state_machine(edges: list[dict[str, Any]], out: Path, title: str) -> Path:
    """Group-state edges walked by the swarm (src, dst, steps, abstract): width by steps taken."""
    import networkx as nx

    plt = _plt()
    g = nx.DiGraph()
    for e in edges:
        g.add_edge(e["src"], e["dst"], steps=int(e["steps"]), abstract=e.get("abstract"))
    pos = {n: PLACES.get(n, (2.5, 2.5 - i * 0.5)) for i, n in enumerate(sorted(g.nodes))}
    fig, ax = plt.subplots(figsize=(9, 7), dpi=100)
    ax.set_title(title, fontsize=9.5)
    ax.axis("off")
    ax.margins(0.2)
    loops = {n: g[n][n] for n in g.nodes if g.has_edge(n, n)}
    labels = {}
    for n in g.nodes:
        text = n.replace("Rebalance", "\nRebalance")
        if n in loops:
            text += f"\nself: {loops[n]['steps']:,} steps"
            if loops[n]["abstract"] is not None:
                text += f"\n{loops[n]['abstract']:,} abstract"
        labels[n] = text
    nx.draw_networkx_nodes(g, pos, ax=ax, node_size=5600, node_color="#dde6f3", edgecolors="#3b5ba5")
    nx.draw_networkx_labels(g, pos, labels, ax=ax, font_size=7.5)
    top = max((d["steps"] for u, v, d in g.edges(data=True) if u != v), default=1)
    for u, v, d in g.edges(data=True):
        if u == v:
            continue
        nx.draw_networkx_edges(
            g, pos, edgelist=[(u, v)], ax=ax, width=1 + 4 * (d["steps"] / top) ** 0.5, edge_color="#2d7d2d",
            arrowsize=16, node_size=5600, connectionstyle="arc3,rad=0.15",
        )  # fmt: skip
    nx.draw_networkx_edge_labels(
        g,
        pos,
        {
            (u, v): f"{d['steps']:,}" + ("" if d["abstract"] is None else f" / {d['abstract']:,}")
            for u, v, d in g.edges(data=True)
            if u != v
        },
        ax=ax,
        font_size=7.5,
        label_pos=0.35,
        connectionstyle="arc3,rad=0.15",
    )
    ax.text(
        0.0,
        -0.03,
        "edge label: steps that took the edge / distinct abstract transitions behind it (when the lake has\n"
        "abstract states); an edge not drawn was never taken",
        transform=ax.transAxes,
        fontsize=7.5,
        color="#555555",
    )
    return _save(fig, out, plt)


def _save(fig: Any, path: Path, plt: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
