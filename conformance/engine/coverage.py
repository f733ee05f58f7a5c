"""Coverage of the explored state graph by a run (`check --coverage`, `replay --coverage`).

A run is mapped onto the graph `groupcheck explore --graph FILE` wrote: after every op the
simulator's abstract state (the ``state_key`` of the kit of the protocol the graph names) is a
node, consecutive states an edge. Reported: the share of the graph's states and transitions the run reached, plus how many it
reached outside the graph (beyond the explored depth, or with ops explore did not use). The
picture projects the graph onto the group's states (the kit's ``coverage_places``: Kafka's classic
group state machine, ClassicGroupState.java, or ConsumerGroup.ConsumerGroupState for KIP-848) with
every edge labelled covered/total abstract transitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from conformance.engine.explore import load_graph
from conformance.engine.kit import ProtocolKit, resolve
from conformance.errors import UsageError


@dataclass
class Coverage:
    graph: Any
    meta: dict[str, Any]
    nodes: set[str] = field(default_factory=set)
    edges: set[tuple[str, str]] = field(default_factory=set)
    _last: str | None = None

    @property
    def protocol(self) -> str:
        return str(self.meta.get("protocol", "classic"))

    @property
    def kit(self) -> ProtocolKit:
        return resolve(self.protocol)

    def key(self, sim: Any) -> str:
        return str(self.kit.require("state_key")(sim))

    def require(self, protocol: str) -> None:
        """A run of ``protocol`` can only be mapped onto a graph explored for the same protocol."""
        if protocol != self.protocol:
            raise UsageError(f"the coverage graph was explored for {self.protocol} groups, not {protocol}")

    def setup_of(self) -> tuple[dict[str, int], list[dict[str, Any]]]:
        """The explored graph's topics and clients: a covered run uses them, so that its abstract
        states can be the graph's (a run with other members or partitions never could be)."""
        setup = self.meta.get("setup") or {}
        return {str(t): int(n) for t, n in setup.get("topics", {}).items()}, [
            dict(c) for c in setup.get("clients", [])
        ]

    def start(self, sim: Any) -> None:
        """A new run begins at ``sim``'s initial state."""
        self._last = self.key(sim)
        self.nodes.add(self._last)

    def visit(self, sim: Any) -> None:
        key = self.key(sim)
        if self._last is not None and self._last != key:
            self.edges.add((self._last, key))
        self.nodes.add(key)
        self._last = key

    # ------------------------------------------------------------ figures
    def covered_nodes(self) -> int:
        return sum(1 for n in self.nodes if n in self.graph)

    def covered_edges(self) -> int:
        return sum(1 for e in self.edges if self.graph.has_edge(*e))

    def summary(self) -> str:
        gn, ge = self.graph.number_of_nodes(), self.graph.number_of_edges()
        cn, ce = self.covered_nodes(), self.covered_edges()
        outside = len(self.nodes) - cn
        return (
            f"coverage of the explored graph ({self.meta.get('members')} members x "
            f"{self.meta.get('partitions')} partitions, depth {self.meta.get('levels_done')}): "
            f"states {cn}/{gn} ({100 * cn / max(gn, 1):.1f}%), transitions {ce}/{ge} "
            f"({100 * ce / max(ge, 1):.1f}%); {outside} states reached outside the graph"
        )

    def projection(self) -> Any:
        """The group-state machine: edge attributes total and covered abstract transitions."""
        proj = nx.DiGraph()
        for _n, attrs in self.graph.nodes(data=True):
            proj.add_node(attrs.get("group", "?"))
        for u, v in self.graph.edges():
            a, b = self.graph.nodes[u].get("group", "?"), self.graph.nodes[v].get("group", "?")
            if not proj.has_edge(a, b):
                proj.add_edge(a, b, total=0, covered=0)
            proj[a][b]["total"] += 1
            if (u, v) in self.edges:
                proj[a][b]["covered"] += 1
        return proj

    def picture(self, path: Path) -> Path:
        import matplotlib

        matplotlib.use("Agg")
        matplotlib.rcParams["svg.hashsalt"] = "groupcheck"
        import matplotlib.pyplot as plt

        proj = self.projection()
        if self.kit.coverage_places is None:
            raise UsageError(f"protocol {self.protocol!r} does not offer coverage places")
        order, places = self.kit.coverage_places
        pos = {
            n: places.get(n, (2, 2 - i))
            for i, n in enumerate(sorted(proj.nodes, key=lambda n: (n not in order, n)))
        }
        fig, ax = plt.subplots(figsize=(9, 7.5), dpi=110)
        ax.set_title(self.summary(), fontsize=8.5, wrap=True)
        ax.axis("off")
        ax.margins(0.18)
        loops = {n: proj[n][n] for n in proj.nodes if proj.has_edge(n, n)}
        labels = {}
        for n in proj.nodes:
            text = n.replace("Rebalance", "\nRebalance")
            if n in loops:
                text += f"\nself {loops[n]['covered']}/{loops[n]['total']}"
            labels[n] = text
        nx.draw_networkx_nodes(proj, pos, ax=ax, node_size=5200, node_color="#dde6f3", edgecolors="#3b5ba5")
        nx.draw_networkx_labels(proj, pos, labels, ax=ax, font_size=8)
        for u, v, d in proj.edges(data=True):
            if u == v:
                continue
            share = d["covered"] / d["total"] if d["total"] else 0.0
            color = "#2d7d2d" if share == 1 else ("#d08a00" if share > 0 else "#aaaaaa")
            nx.draw_networkx_edges(
                proj,
                pos,
                edgelist=[(u, v)],
                ax=ax,
                width=1 + 3 * share,
                edge_color=color,
                arrowsize=18,
                node_size=5200,
                connectionstyle="arc3,rad=0.15",
                style="solid" if share > 0 else "dashed",
            )
        nx.draw_networkx_edge_labels(
            proj,
            pos,
            {(u, v): f"{d['covered']}/{d['total']}" for u, v, d in proj.edges(data=True) if u != v},
            ax=ax,
            font_size=8,
            label_pos=0.35,
            connectionstyle="arc3,rad=0.15",
        )
        ax.text(
            0.0,
            -0.02,
            "edge label: abstract transitions covered/total (one op can pass several group states)\n"
            "green: all covered, orange: some, grey dashed: none",
            transform=ax.transAxes,
            fontsize=7.5,
            color="#555555",
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, metadata={"Date": None} if path.suffix == ".svg" else {})
        plt.close(fig)
        return path


__all__ = ["Coverage", "load_graph"]
