"""The design review's figures (matplotlib, Agg backend, fixed sizes: same data, same PNG)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from model.designs.cost import Cost


def _plt():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from cycler import cycler

    colors = [matplotlib.colormaps["tab20"](i) for i in range(20)]
    plt.rcParams.update(
        {"svg.hashsalt": "groupcheck", "font.size": 9, "axes.prop_cycle": cycler(color=colors)}
    )
    return plt


def _save(fig, path: Path) -> Path:  # type: ignore[no-untyped-def]
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.13, top=0.91)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    return path


def scaling(costs: Mapping[str, Sequence[Cost]], path: Path, what: str = "bytes") -> Path:
    """Bytes (or messages) of one rebalance against group size, log-log, one line per design."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for design, rows in sorted(costs.items()):
        xs = [c.members for c in rows]
        ys = [getattr(c, what) for c in rows]
        ax.plot(xs, ys, marker="o", label=design)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("members in the group")
    ax.set_ylabel(f"{what} per rebalance")
    ax.set_title(f"{what.capitalize()} sent for one rebalance (one member joins)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    out = _save(fig, path)
    plt.close(fig)
    return out


def topic_sweep(costs: Mapping[str, Sequence[Cost]], path: Path) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for design, rows in sorted(costs.items()):
        ax.plot([c.topics for c in rows], [c.bytes for c in rows], marker="o", label=design)
    members = next(iter(costs.values()))[0].members if costs else 0
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("subscribed topics (every member subscribes to all)")
    ax.set_ylabel("bytes per rebalance")
    ax.set_title(f"Bytes for one rebalance against subscription size ({members} members)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    out = _save(fig, path)
    plt.close(fig)
    return out


def bars(values: Mapping[str, Mapping[str, float]], path: Path, ylabel: str, title: str) -> Path:
    """Grouped bars: one group per workload, one bar per design."""
    plt = _plt()
    workloads = sorted({w for row in values.values() for w in row})
    designs = sorted(values)
    fig, ax = plt.subplots(figsize=(8, 4.2))
    width = 0.8 / max(1, len(designs))
    for i, design in enumerate(designs):
        xs = [k + i * width for k in range(len(workloads))]
        ax.bar(xs, [values[design].get(w, 0.0) for w in workloads], width, label=design)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(workloads))])
    ax.set_xticklabels(workloads, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    out = _save(fig, path)
    plt.close(fig)
    return out
