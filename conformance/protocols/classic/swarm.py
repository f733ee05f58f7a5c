"""The classic protocol's swarm runs: its draws, virtual clients, driver and lake row.

`conformance.engine.swarm` draws each run's configuration and turns its observations into lake
rows; this module is the classic part (`swarm_hooks`, the kit's ``swarm``). The driver's actions
mirror the classic Hypothesis machine (`conformance/protocols/classic/machine.py`), drawn from
`random.Random(f"actions:{seed}:{index}")` so the same seed and index give the same rows.
"""

from __future__ import annotations

import random
from typing import Any

from conformance.engine.swarm import SwarmConfig, SwarmHooks, sim_seed, symmetric
from conformance.formats import lake as codec
from conformance.protocols.classic.abstraction import abstract_key
from conformance.protocols.classic.build import make_classic_sim, settle_round
from conformance.protocols.classic.trace import state_summary
from model.classic.client import Phase
from model.classic.messages import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest
from model.classic.sim import ClassicSim
from model.observation import Observation

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
FAULTS = (
    "stall",
    "lose_response",
    "failover",
    "append_failure",
    "zombie",
    "duplicate_join",
    "restart",
    "grow_topic",
)
#: Variants drawn per run unless pinned with --variant (the correct settings of each key).
DEFAULT_VARIANTS = {"sticky": "v1", "cooperative_adjust": "true"}


def draw(rng: random.Random, pinned: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The client assignor and the variants (sticky v1, KIP-429 adjustment, a JoinGroup version)."""
    assignor = rng.choice(ASSIGNORS)
    if pinned.get("assignor") and pinned["assignor"] != "mixed":
        assignor = pinned["assignor"]
    variants = dict(DEFAULT_VARIANTS)
    variants["join_version"] = rng.choice(("9", "9", "4", "3"))
    variants.update({k: v for k, v in pinned.items() if k != "assignor"})
    variants["assignor"] = assignor
    return assignor, variants


def draw_late(
    rng: random.Random, pinned: dict[str, str], assignor: str, variants: dict[str, str], mix: bool
) -> str:
    """With ``mix``, the assignor's alternative variants (sticky: user data v0 or v1;
    cooperative-sticky: with or without the KIP-429 adjustment)."""
    if mix:
        if assignor == "sticky" and "sticky" not in pinned:
            variants["sticky"] = rng.choice(("v1", "v0"))
        if assignor == "cooperative-sticky" and "cooperative_adjust" not in pinned:
            variants["cooperative_adjust"] = rng.choice(("true", "false"))
    return assignor


def shaped(pinned: dict[str, str], assignor: str, variants: dict[str, str]) -> tuple[str, dict[str, str]]:
    """Explore's set-up (`conformance.protocols.classic.explore.classic_setup`): only the pinned
    variants, since they shape the client config."""
    return assignor, {**{k: v for k, v in pinned.items() if k != "assignor"}, "assignor": assignor}


def client_specs(cfg: SwarmConfig) -> list[dict[str, Any]]:
    """The run's clients as `conformance.protocols.classic.build` specs (also the trace header's `setup.clients`)."""
    clients = []
    for i in range(cfg.members):
        spec: dict[str, Any] = {
            "name": f"c{i + 1}",
            "assignors": [cfg.assignor],
            "topics": list(cfg.subscriptions[i]) if cfg.subscriptions else ["t"],
            "session_timeout_ms": cfg.session_timeout_ms,
            "rebalance_timeout_ms": cfg.rebalance_timeout_ms,
        }
        if cfg.static[i]:
            spec["instance_id"] = f"i{i + 1}"
        clients.append(spec)
    return clients


def build_sim(cfg: SwarmConfig) -> tuple[ClassicSim, list[str]]:
    clients = client_specs(cfg)
    variants = {k: v for k, v in cfg.variants.items()}
    sim = make_classic_sim(cfg.topics, clients, {}, variants, seed=sim_seed(cfg))
    return sim, [c["name"] for c in clients]


class _Driver:
    """Draws one action at a time, like the classic machine's rules (minus Hypothesis)."""

    def __init__(self, cfg: SwarmConfig) -> None:
        self.cfg = cfg
        self.rng = random.Random(f"actions:{cfg.seed}:{cfg.index}")
        self.sim, self.names = build_sim(cfg)
        self.initial = self.sim.world
        self.out: list[tuple[Observation[Any], str]] = []
        self.keys: list[str] = []
        actions: list[tuple[str, int]] = [
            ("step", 30),
            ("settle", 12),
            ("commit", 4),
            ("leave", 1),
            ("advance", 6),
        ]
        weights = {"stall": 4, "lose_response": 2, "failover": 1, "append_failure": 1, "zombie": 2,
                   "duplicate_join": 2, "restart": 1, "grow_topic": 1}  # fmt: skip
        actions += [(f, weights[f]) for f in cfg.faults]
        self.actions = [a for a, _ in actions]
        self.weights = [w for _, w in actions]

    def note(self, obs: Observation[Any] | None, label: str) -> None:
        if obs is not None:
            self.out.append((obs, label))
            if self.cfg.coverage:
                self.keys.append(abstract_key(self.sim, symmetry=symmetric(self.cfg)))

    def run(self) -> list[tuple[Observation[Any], str]]:
        while len(self.out) < self.cfg.steps:
            action = self.rng.choices(self.actions, self.weights)[0]
            getattr(self, f"do_{action}")(self.rng.choice(self.names))
        return self.out[: self.cfg.steps]

    def do_step(self, name: str) -> None:
        self.note(self.sim.client_step(name), "step")

    def do_settle(self, name: str) -> None:
        for _ in range(self.rng.randint(1, 10)):
            settle_round(self.sim, self.names, lambda obs: self.note(obs, "settle"))

    def do_commit(self, name: str) -> None:
        self.note(self.sim.commit(name, len(self.out)), "commit")

    def do_leave(self, name: str) -> None:
        self.note(self.sim.leave(name), "leave")

    def do_advance(self, name: str) -> None:
        self.note(self.sim.advance(self.rng.choice((100, 1000, 3000, 6500, 10_500, 31_000))), "advance")

    def do_stall(self, name: str) -> None:
        stalled = name not in self.sim.stalled
        self.note(self.sim.stall(name, stalled), "stall" if stalled else "resume")

    def do_lose_response(self, name: str) -> None:
        self.note(self.sim.lose_response(name), "lose_response")

    def do_failover(self, name: str) -> None:
        self.note(self.sim.failover(), "failover")

    def do_append_failure(self, name: str) -> None:
        self.note(self.sim.append_failure(), "append_failure")

    def do_restart(self, name: str) -> None:
        self.sim.restart(name)  # a fresh consumer with the same config, recorded as the trace op `restart`
        self.do_step(name)

    def do_grow_topic(self, name: str) -> None:
        n = self.sim.topics["t"] + self.rng.randint(1, 2)
        self.note(self.sim.create_topic("t", n), "grow_topic")
        for cname, c in sorted(self.sim.clients.items()):
            if c.member_id and c.member_id == c.leader:
                self.sim.rejoin(cname)  # the leader's metadata refresh notices the new partitions

    def do_zombie(self, name: str) -> None:
        c = self.sim.clients[name]
        group = self.sim.world.group if self.sim.world else None
        gen = (group.generation if group else 0) + self.rng.choice((-1, 1))
        req: Any
        if self.rng.random() < 0.5:
            req = HeartbeatRequest(c.config.group_id, gen, c.member_id, c.config.instance_id)
        else:
            req = SyncGroupRequest(c.config.group_id, gen, c.member_id, (), c.config.instance_id)
        self.note(self.sim.send_raw(name, req), "zombie")

    def do_duplicate_join(self, name: str) -> None:
        c = self.sim.clients[name]
        if not c.member_id or c.phase in (Phase.FATAL, Phase.LEFT):
            return
        cfg = c.config
        req = JoinGroupRequest(
            cfg.group_id, c.member_id, "consumer", tuple((a, b"") for a in cfg.assignors),
            cfg.session_timeout_ms, cfg.rebalance_timeout_ms, cfg.instance_id, None, cfg.client_id,
            cfg.join_version,
        )  # fmt: skip
        self.note(self.sim.send_raw(name, req), "duplicate_join")


def observation_row(
    cfg: SwarmConfig, config_json: str, step: int, obs: Observation[Any], action: str
) -> dict[str, Any]:
    """One lake row (schema in `conformance.pipeline.schema.LAKE_FIELDS`)."""
    w = obs.after
    g = w.group
    holdings = []
    for c in w.clients:
        for topic, partition in sorted(c.owned):
            holdings.append(
                {"client": c.name, "member_id": c.member_id, "generation": c.generation, "phase": c.phase,
                 "topic": topic, "partition": partition}
            )  # fmt: skip
    members = {m.member_id for m in g.members} if g else set()
    subscribed = sorted({t for c in w.clients if c.member_id in members for t in c.subscribed})
    return {
        "trace_id": cfg.trace_id,
        "protocol": cfg.protocol,
        "seed": cfg.seed,
        "run_index": cfg.index,
        "config": config_json,
        "step": step,
        "now": obs.now,
        "action": action,
        "event_kind": type(obs.event).__name__,
        "event": codec.dumps(obs.event),
        "deliveries": codec.dumps(obs.deliveries),
        "world": codec.dumps(w),
        "group_state": g.state.value if g else None,
        "generation": g.generation if g else None,
        "leader": g.leader if g else None,
        "member_count": len(members),
        "failover": bool(w.failover),
        "persisted_generation": w.persisted.generation if w.persisted else None,
        "holdings": holdings,
        "subscribed": subscribed,
        "topic_partitions": [{"topic": t, "partitions": n} for t, n in w.topics],
    }


def swarm_hooks() -> SwarmHooks:
    """The classic kit's ``swarm``."""
    return SwarmHooks(
        FAULTS, draw, draw_late, shaped, client_specs, _Driver, observation_row, state_summary, "ClassicWorld"
    )
