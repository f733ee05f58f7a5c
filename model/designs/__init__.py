"""The designs the source documents weighed, as runnable variants sharing the model's machinery.

Each design is an engine that takes the design-neutral workload (`model.designs.ops`) and shows a
`DesignView`, judged by the same predicates (`model.designs.invariants`). The shipped protocols run
through adapters over the model's own simulators; the others run on a small common actor world
(`model.designs.net`). `DESIGNS` names them, with the seed section each comes from and the shipped
protocol a counterexample of theirs must pass on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from model.designs.net import DesignError


@dataclass(frozen=True)
class DesignSpec:
    name: str
    title: str
    source: str
    #: (topics, options, seed) -> engine; None: a size model only
    factory: Callable[[dict[str, int], dict[str, str], int], Any] | None
    #: option name -> allowed values ("int" for a number); the first value is the default
    options: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the shipped protocol this design is compared with, and its options
    baseline: str = "shipped"
    baseline_options: dict[str, str] = field(default_factory=dict)


def _net(cls_path: str) -> Callable[[dict[str, int], dict[str, str], int], Any]:
    module, _, name = cls_path.rpartition(".")

    def make(topics: dict[str, int], options: dict[str, str], seed: int) -> Any:
        import importlib

        return getattr(importlib.import_module(module), name)(dict(topics), options=dict(options))

    return make


def _seeded(cls_path: str) -> Callable[[dict[str, int], dict[str, str], int], Any]:
    module, _, name = cls_path.rpartition(".")

    def make(topics: dict[str, int], options: dict[str, str], seed: int) -> Any:
        import importlib

        return getattr(importlib.import_module(module), name)(dict(topics), options=dict(options), seed=seed)

    return make


DESIGNS: dict[str, DesignSpec] = {
    d.name: d
    for d in (
        DesignSpec(
            "independent-hash",
            "Every member computes the whole assignment; metadata hashes must agree",
            "seed 000 'Consumer Embedded Protocol' (Subscriptions, Metadata)",
            _net("model.designs.independent.IndependentEngine"),
            {"scope": ("subscription", "cluster")},
        ),
        DesignSpec(
            "consistent-hash",
            "Consistent hashing: no metadata agreement, each partition maps to one member",
            "seed 000 'Consumer Embedded Protocol' (Metadata, last paragraph)",
            _net("model.designs.consistent_hash.ConsistentHashEngine"),
        ),
        DesignSpec(
            "hashed-subgroups",
            "Subscription hashes only; the largest matching sub-group assigns, the others idle",
            "seed 000 'Scaling Groups: Dropping Topic Lists'",
            _net("model.designs.subgroups.SubgroupsEngine"),
            {"tie": ("hash", "own")},
        ),
        DesignSpec(
            "compressed",
            "Compressed group metadata in JoinGroup (size model only)",
            "seed 000 'Scaling Groups: Compression'",
            None,
        ),
        DesignSpec(
            "sync-in-join",
            "A single client assignor, the synchronizer, chosen inside JoinGroup",
            "seed 000 'Single Client Assignor'",
            _net("model.designs.sync_join_member.SyncJoinEngine"),
            {
                "choice": ("random", "last", "newest", "max-version"),
                "sync_timeout_ms": ("int",),
                "compat": ("backward", "both"),
                "assign_ms": ("int",),
            },
        ),
        DesignSpec(
            "shipped",
            "The shipped two-phase protocol (JoinGroup + SyncGroup): the model as it is",
            "seed 000 'Protocol' (Phase 1, Phase 2); model/classic",
            _seeded("model.designs.shipped.ShippedEngine"),
            {"assignor": ("", "range", "roundrobin", "sticky"), "assign_ms": ("int",)},
        ),
        DesignSpec(
            "broker-coordinator",
            "A broker-side coordinator assigns and pushes ownership (RegisterConsumer, pings)",
            "seed 001 (sections 2, 5, 8-10)",
            _net("model.designs.broker_consumer.BrokerEngine"),
            {
                "max_ping_retries": ("int",),
                "rebalance": ("fetchers", "sockets"),
                "zk_session_ms": ("int",),
                "failover": ("crash", "zombie"),
                "zombie_ms": ("int",),
                "threads": ("int",),
                "commit_ms": ("int",),
            },
        ),
        DesignSpec(
            "kip341-local-marker",
            "Sticky assignor with a generation marker local to the assignor",
            "seed 002, KIP-341 'Rejected Alternatives'",
            _seeded("model.designs.local_marker.LocalMarkerEngine"),
            baseline_options={"assignor": "sticky"},
        ),
        DesignSpec(
            "kip1082-server-id",
            "Server-issued member id on the first heartbeat, member added on the second",
            "seed 004, KIP-1082 'Rejected Alternatives' 2",
            _seeded("model.designs.kip848.ServerIdEngine"),
            baseline="shipped-kip848",
        ),
        DesignSpec(
            "shipped-kip848",
            "The shipped KIP-848 protocol with KIP-1082 client-generated member ids",
            "KIP-848; KIP-1082; model/consumer",
            _seeded("model.designs.kip848.ConsumerEngine"),
            baseline="shipped-kip848",
        ),
    )
}
BASELINES = ("shipped", "shipped-kip848")
MAX_OPTION = 10_000_000


def check_options(design: str, options: dict[str, str]) -> dict[str, str]:
    """Options validated against the design's fixed list; a bad one raises `DesignError` naming it."""
    spec = DESIGNS.get(design)
    if spec is None:
        raise DesignError(f"unknown design {design!r} (known: {', '.join(DESIGNS)})")
    for key, value in options.items():
        allowed = spec.options.get(key)
        if allowed is None:
            known = ", ".join(spec.options) or "none"
            raise DesignError(f"design {design}: unknown option {key!r} (known: {known})")
        if allowed == ("int",):
            if not value.isdigit() or int(value) > MAX_OPTION:
                raise DesignError(f"design {design}: option {key} must be an integer 0..{MAX_OPTION}")
        elif value not in allowed:
            raise DesignError(f"design {design}: option {key} must be one of {', '.join(allowed)}")
    return dict(sorted(options.items()))


def make_engine(
    design: str, topics: dict[str, int], options: dict[str, str] | None = None, seed: int = 0
) -> Any:
    spec = DESIGNS.get(design)
    if spec is None:
        raise DesignError(f"unknown design {design!r} (known: {', '.join(DESIGNS)})")
    if spec.factory is None:
        raise DesignError(f"design {design} is a size model only: it has no engine to run")
    return spec.factory(topics, check_options(design, dict(options or {})), seed)


def parse_design(text: str) -> tuple[str, dict[str, str]]:
    """``name`` or ``name:key=value,key=value`` (the form `compare --designs` and traces use)."""
    name, _, rest = text.partition(":")
    options: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise DesignError(f"design {text!r}: expected key=value after ':'")
        options[key] = value
    return name, check_options(name, options)


__all__ = [
    "BASELINES",
    "DESIGNS",
    "DesignError",
    "DesignSpec",
    "check_options",
    "make_engine",
    "parse_design",
]
