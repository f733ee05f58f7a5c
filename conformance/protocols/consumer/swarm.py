"""Swarm runs of the KIP-848 consumer protocol: `ConsumerSim` driven like the classic swarm
(`swarm_hooks`, the kit's ``swarm``; `conformance.engine.swarm` draws and writes the rows).

Each run draws members (2-5, some static), their subscriptions, the ConsumerGroupHeartbeat version
(KIP-1082 v1 unless pinned) and, swarm-testing style, a subset of the fault kinds (stall, lost response,
slow revocation callbacks, coordinator failover, restarts, leaves, duplicated and stale heartbeats,
topic growth). Actions follow the consumer twin of the model-throughput walk. Pinned `--variant`s
(e.g. `mutant=kafka-16147`) apply to every run. Rows use the lake schema with the consumer meanings:
`generation` is the group epoch, `holdings` carry each client's member epoch, a client that is
active and at the group epoch counts as `stable` for the window checks, and `persisted_generation`
is the group epoch (KIP-848 persists every epoch change).
"""

from __future__ import annotations

import random
from typing import Any

from conformance.engine.swarm import SwarmHooks, sim_seed, symmetric
from conformance.formats import lake as codec
from conformance.protocols.consumer.build import make_consumer_sim
from conformance.protocols.consumer.explore import consumer_key
from conformance.protocols.consumer.trace import state_summary
from model.observation import Observation

#: the KIP-848 server assignors (group.consumer.assignors, first = default; docs/protocol-reference.md#b11)
CONSUMER_ASSIGNORS = ("uniform", "range")
#: the group id of the swarm's consumer groups (`conformance.protocols.consumer.build` default)
GROUP_ID = "g"

FAULTS = (
    "stall",
    "lose_response",
    "slow",
    "failover",
    "restart",
    "leave",
    "duplicate",
    "stale",
    "grow_topic",
)


def consumer_variants(rng: random.Random, pinned: dict[str, str]) -> dict[str, str]:
    # v1 (KIP-1082 client-generated ids) by default: v0 has the known ghost-member defect
    # (`consumer.no_ghost_member`) and is a broken variant to pin with --variant heartbeat_version=0
    variants = {"heartbeat_version": "1"}
    variants.update(
        {k: v for k, v in pinned.items() if k in ("heartbeat_version", "mutant", "member_id_validation")}
    )
    return variants


def draw(rng: random.Random, pinned: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The coordinator's default server assignor for now (`draw_late` draws the run's) and the
    variants; nothing is drawn yet."""
    return "uniform", consumer_variants(rng, pinned)


def draw_late(
    rng: random.Random, pinned: dict[str, str], assignor: str, variants: dict[str, str], mix: bool
) -> str:
    """The server assignor (uniform or range, docs/protocol-reference.md#b11) unless pinned; with ``mix`` also
    the ConsumerGroupHeartbeat version (v0 or v1) unless pinned."""
    assignor = rng.choice(CONSUMER_ASSIGNORS)
    if pinned.get("assignor") in CONSUMER_ASSIGNORS:
        assignor = pinned["assignor"]
    if mix and "heartbeat_version" not in pinned:
        variants["heartbeat_version"] = rng.choice(("1", "1", "0"))
    return assignor


def shaped(pinned: dict[str, str], assignor: str, variants: dict[str, str]) -> tuple[str, dict[str, str]]:
    """Explore's set-up: its clients name no server assignor, so the default, uniform."""
    return (assignor if "assignor" in pinned else "uniform"), variants


def consumer_client_specs(cfg: Any) -> list[dict[str, Any]]:
    clients = []
    for i in range(cfg.members):
        spec: dict[str, Any] = {"name": f"c{i + 1}", "topics": list(cfg.subscriptions[i])}
        if cfg.assignor != "uniform":  # uniform is the coordinator's default: explore's set-up names none
            spec["server_assignor"] = cfg.assignor
        if cfg.static[i]:
            spec["instance_id"] = f"i{i + 1}"
        clients.append(spec)
    return clients


def build_consumer_sim(cfg: Any) -> tuple[Any, list[str]]:
    clients = consumer_client_specs(cfg)
    sim = make_consumer_sim(cfg.topics, clients, {}, cfg.variants, seed=sim_seed(cfg))
    return sim, [c["name"] for c in clients]


class ConsumerDriver:
    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg
        self.rng = random.Random(f"actions:{cfg.seed}:{cfg.index}")
        self.sim, self.names = build_consumer_sim(cfg)
        self.initial = self.sim.world
        self.out: list[tuple[Observation[Any], str]] = []
        self.keys: list[str] = []
        actions = [("step", 60), ("advance", 12), ("commit", 3)]
        weights = {"stall": 4, "lose_response": 3, "slow": 3, "failover": 2, "restart": 1, "leave": 1,
                   "duplicate": 2, "stale": 2, "grow_topic": 1}  # fmt: skip
        actions += [(f, weights[f]) for f in cfg.faults if f in weights]
        self.actions = [a for a, _ in actions]
        self.weights = [w for _, w in actions]

    def note(self, obs: Any, label: str) -> None:
        if obs is not None:
            self.out.append((obs, label))
            if self.cfg.coverage:
                self.keys.append(consumer_key(self.sim, symmetry=symmetric(self.cfg)))

    def run(self) -> list[tuple[Observation[Any], str]]:
        guard = 0
        while len(self.out) < self.cfg.steps and guard < 50 * self.cfg.steps:
            guard += 1
            action = self.rng.choices(self.actions, self.weights)[0]
            name = self.rng.choice(self.names)
            sim = self.sim
            if action == "step":
                self.note(sim.client_step(name), "step")
            elif action == "advance":
                self.note(sim.advance(self.rng.choice((100, 500, 1000, 3100))), "advance")
            elif action == "commit":
                self.note(sim.commit(name, len(self.out)), "commit")
            elif action == "stall":
                self.note(sim.stall(name, not sim.clients[name].crashed), "stall")
            elif action == "lose_response":
                sim.lose_response(name)
                self.note(sim.client_step(name), "lose_response")
            elif action == "slow":
                slow = self.rng.random() < 0.5
                sim.set_slow(name, slow)
                self.note(sim.reconcile(name), "slow" if slow else "reconcile")
            elif action == "failover":
                self.note(sim.failover(), "failover")
            elif action == "restart":
                self.note(sim.restart(name), "restart")
            elif action == "leave":
                self.note(sim.leave(name), "leave")
            elif action == "duplicate":
                self.note(sim.duplicate(name), "duplicate")
            elif action == "stale":
                self.note(sim.stale_heartbeat(name, self.rng.choice((-1, 1))), "stale")
            elif action == "grow_topic":
                n = sim.world.topics.get("t", 0) + self.rng.randint(1, 2) if sim.world else 1
                self.note(sim.topic("add_partitions", "t", n), "grow_topic")
        return self.out[: self.cfg.steps]


def consumer_row(cfg: Any, config_json: str, step: int, obs: Observation[Any], action: str) -> dict[str, Any]:
    w = obs.after
    g = w.groups.get(GROUP_ID)
    epoch = g.group_epoch if g else None
    holdings = []
    for c in w.clients:
        for topic, partition in sorted(c.owned):
            phase = (
                "stable" if c.active and c.member_epoch == epoch else ("active" if c.active else "inactive")
            )
            holdings.append(
                {"client": c.name, "member_id": c.member_id, "generation": c.member_epoch, "phase": phase,
                 "topic": topic, "partition": partition}
            )  # fmt: skip
    members = dict(g.members) if g else {}
    subscribed = sorted({t for m in members.values() for t in m.subscribed_topic_names})
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
        "generation": epoch,
        "leader": None,
        "member_count": len(members),
        "failover": type(obs.event).__name__ == "FailoverEvent",
        "persisted_generation": epoch,
        "holdings": holdings,
        "subscribed": subscribed,
        "topic_partitions": [{"topic": t, "partitions": n} for t, n in sorted(w.topics.items())],
    }


def swarm_hooks() -> SwarmHooks:
    """The consumer kit's ``swarm``."""
    return SwarmHooks(
        FAULTS,
        draw,
        draw_late,
        shaped,
        consumer_client_specs,
        ConsumerDriver,
        consumer_row,
        lambda world: state_summary(world, GROUP_ID),
        "ConsumerWorld",
    )
