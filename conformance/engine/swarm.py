"""What a swarm run is, for the pipeline that draws and runs it and the kits that drive it.

A run's configuration (`SwarmConfig`, the lake's `config` column), what a protocol's kit gives the
swarm (`SwarmHooks`, ``ProtocolKit.swarm``) and the helpers both sides share. The runs themselves
are drawn and turned into lake rows by `conformance.pipeline.swarm`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class SwarmConfig:
    """One run's configuration (stored as JSON in the lake's `config` column)."""

    seed: int
    index: int
    protocol: str
    members: int
    topics: dict[str, int]
    assignor: str
    variants: dict[str, str]
    static: tuple[bool, ...]
    faults: tuple[str, ...]
    steps: int
    session_timeout_ms: int = 6000
    rebalance_timeout_ms: int = 10_000
    subscriptions: tuple[tuple[str, ...], ...] = field(default=())
    #: record each step's abstract state (`abstract_state` column) for coverage of the explore graph
    coverage: bool = False

    @property
    def trace_id(self) -> str:
        return f"{self.protocol}-{self.seed}-{self.index:07d}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class SwarmHooks:
    """What a protocol's kit gives the swarm (``ProtocolKit.swarm()``), in the order a run draws."""

    #: the fault kinds a run enables a random subset of
    faults: tuple[str, ...]
    #: ``draw(rng, pinned) -> (assignor, variants)``: drawn right after members and topics
    draw: Callable[[random.Random, dict[str, str]], tuple[str, dict[str, str]]]
    #: ``draw_late(rng, pinned, assignor, variants, mix) -> assignor``: drawn after the faults and
    #: subscriptions (may change ``variants``; ``mix`` draws each assignor's alternative variants)
    draw_late: Callable[[random.Random, dict[str, str], str, dict[str, str], bool], str]
    #: ``shaped(pinned, assignor, variants) -> (assignor, variants)`` under explore's set-up
    shaped: Callable[[dict[str, str], str, dict[str, str]], tuple[str, dict[str, str]]]
    #: ``client_specs(cfg)``: the run's clients as the simulator builder's specs
    client_specs: Callable[[SwarmConfig], list[dict[str, Any]]]
    #: ``driver(cfg)``: ``.initial``, ``.sim`` (a traced simulator), ``.keys``, ``.run() -> [(obs, action)]``
    driver: Callable[[SwarmConfig], Any]
    #: ``row(origin, config_json, step, obs, action)``: one lake row (`conformance.pipeline.schema`)
    row: Callable[..., dict[str, Any]]
    #: ``state_summary(world)``: the state a rebuilt trace step shows
    state_summary: Callable[[Any], dict[str, Any] | None]
    #: the class name of the lake's worlds of this protocol (the audit's sanity check)
    world_type: str


def sim_seed(cfg: SwarmConfig) -> int:
    """The simulator's chooser seed for this run (the trace header's `seed`)."""
    return cfg.seed * 1_000_003 + cfg.index


def symmetric(cfg: SwarmConfig) -> bool:
    """Whether a run's abstract states (explore's key) use symmetry reduction (least key over
    client renamings): up to 3 members, as explore's graphs; above, renamings would cost more
    than the run (120 at 5)."""
    return cfg.members <= 3


def ops_per_observation(log: list[Any], observed: list[Any]) -> list[list[dict[str, Any]]]:
    """Group a traced simulator's log by observation: the ops that changed only a client
    (restart, rejoin, a consumer action that observed nothing) go with the next observation's own
    op. These are the project trace's step actions, so a lake row keeps enough to rebuild a
    replayable trace."""
    out: list[list[dict[str, Any]]] = []
    pending: list[dict[str, Any]] = []
    for entry in log:
        if len(out) == len(observed):
            break
        pending.append(entry.op)
        if entry.obs is not None:
            if entry.obs is not observed[len(out)]:
                raise RuntimeError(f"observation {len(out) + 1}: the simulator's log and the driver disagree")
            out.append(pending)
            pending = []
    if len(out) != len(observed):
        raise RuntimeError(f"the simulator logged {len(out)} observations, the driver kept {len(observed)}")
    return out


def config_from_json(text: str) -> SwarmConfig:
    data = json.loads(text)
    data["static"] = tuple(data["static"])
    data["faults"] = tuple(data["faults"])
    data["subscriptions"] = tuple(tuple(s) for s in data["subscriptions"])
    return replace(SwarmConfig(**data))
