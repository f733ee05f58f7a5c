"""What every protocol's breadth-first explorer shares: its result, found paths, the saved graph.

A kit's ``explore`` walks its model's abstract states (`conformance.protocols.classic.explore`,
`conformance.protocols.consumer.explore`); the graph it saves (node-link JSON with its settings)
is the input of coverage (`conformance.engine.coverage`) and of the pipeline's metrics.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
from networkx.readwrite import json_graph

from conformance import strict
from conformance.errors import UsageError


@dataclass
class Found:
    invariant: str
    message: str
    path: tuple[dict[str, Any], ...]


@dataclass
class ExploreResult:
    protocol: str
    members: int
    partitions: int
    variants: dict[str, str]
    depth: int
    ops: tuple[str, ...]
    graph: Any = field(default_factory=nx.DiGraph)
    levels_done: int = 0
    complete: bool = False  # the frontier emptied: every reachable abstract state was seen
    seconds: float = 0.0
    budget_hit: bool = False
    found: dict[str, Found] = field(default_factory=dict)
    setup: dict[str, Any] = field(default_factory=dict)
    prefix: tuple[dict[str, Any], ...] = ()
    #: the most perturbing ops on any path (None: no bound), as the kit counts them
    perturbations: int | None = None
    #: how many members are static (KIP-345 / KIP-848 group.instance.id), the first ones
    static: int = 0
    #: the processes that expanded the frontier (`conformance.engine.frontier`)
    workers: int = 1

    @property
    def states(self) -> int:
        return int(self.graph.number_of_nodes())

    @property
    def transitions(self) -> int:
        return int(self.graph.number_of_edges())


def perturbed_key(key: str, used: int, budget: int | None) -> str:
    """An abstract state key with the perturbations spent so far, when they are bounded: the same
    state with budget left can reach more (TLC keeps the count as a state variable)."""
    return key if budget is None else f"{key}/{used}"


def path_to(parent: dict[str, tuple[str, dict[str, Any]] | None], key: str) -> tuple[dict[str, Any], ...]:
    """The ops from the root to ``key`` along the BFS tree (``parent``: key -> (parent key, op))."""
    ops: list[dict[str, Any]] = []
    link = parent[key]
    while link is not None:
        key, op = link
        ops.append(op)
        link = parent[key]
    return tuple(reversed(ops))


def save_graph(result: ExploreResult, path: Path) -> Path:
    """The explored graph as node-link JSON with its settings (input of coverage)."""
    data = {
        "protocol": result.protocol,
        "members": result.members,
        "partitions": result.partitions,
        "variants": result.variants,
        "ops": list(result.ops),
        "levels_done": result.levels_done,
        "complete": result.complete,
        "setup": result.setup,
        "graph": json_graph.node_link_data(result.graph, edges="edges"),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
    return path


def clone_chooser(chooser: Any) -> Any:
    """A seeded chooser's `fork` (its generator's state shared until a copy draws; deepcopy walks
    625 ints per copy); any other chooser deep-copied."""
    fork = getattr(chooser, "fork", None)
    if fork is None:
        return copy.deepcopy(chooser)
    return fork()


_PLAIN: dict[type, bool] = {}
_COPY_HOOKS = ("__slots__", "__copy__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__")


def shallow_copy(x: Any) -> Any:
    """`copy.copy`, without going through the reduce protocol for a plain object (a ``__dict__``,
    no slots and no copy hooks, as the simulators, clients and ports of `model` are)."""
    t = type(x)
    plain = _PLAIN.get(t)
    if plain is None:
        plain = _PLAIN[t] = hasattr(x, "__dict__") and not any(
            hook in vars(k) for k in t.__mro__[:-1] for hook in _COPY_HOOKS
        )
    if not plain:
        return copy.copy(x)
    new = object.__new__(t)
    new.__dict__.update(x.__dict__)
    return new


MAX_GRAPH_BYTES = 512 * 1024 * 1024  # an explore graph of a few million states


def load_graph(path: Path) -> tuple[dict[str, Any], Any]:
    """(settings, graph) of a graph `save_graph` wrote; a usage error naming the file otherwise."""
    text = strict.utf8(strict.read_bytes(path, MAX_GRAPH_BYTES, UsageError), path, UsageError)
    try:
        data = strict.json_value(text)  # bounded nesting and integers (docs/hostile-input.md)
        graph = json_graph.node_link_graph(data["graph"], directed=True, edges="edges")
    except strict.Malformed as exc:
        raise UsageError(exc.at(f"{path}:1")) from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{path}: not an explore graph ({type(exc).__name__}: {str(exc)[:100]})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not an explore graph (not a JSON object)")
    meta = {k: v for k, v in data.items() if k != "graph"}
    return meta, graph
