"""Swarm exploration of the model: one seeded run per configuration, every step a lake row.

Protocols: classic here, KIP-848 consumer in `swarm_consumer`. Plain Python (no pyspark): Spark executors, a multiprocessing pool and the tests all call
`run_one`. Each run draws its own configuration from the swarm distribution (swarm testing,
Groce et al. ISSTA 2012: every run enables a random subset of fault kinds, so rare interleavings
are not drowned by always-on faults): members, topics, partitions, assignor, variants and fault
mix. The actions mirror the classic Hypothesis machine (`conformance/protocols/classic/machine.py`), drawn
from `random.Random(f"{seed}:{index}")` so the same seed and index give the same rows.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from conformance.formats import lake as codec
from conformance.protocols.build import make_classic_sim, settle_round
from model.classic.client import Phase
from model.classic.messages import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest
from model.classic.sim import ClassicSim
from model.observation import Observation

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
#: the KIP-848 server assignors (group.consumer.assignors, first = default; docs/protocol-reference.md#b11)
CONSUMER_ASSIGNORS = ("uniform", "range")
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


def draw_config(
    seed: int,
    index: int,
    protocol: str = "classic",
    pinned: Mapping[str, str] | None = None,
    steps: int = 80,
    coverage: bool = False,
    shape: tuple[int, int] | None = None,
    mix: bool = False,
) -> SwarmConfig:
    """The swarm distribution; `pinned` variants (from --variant) override the drawn ones.

    `shape` (members, partitions) pins explore's set-up (`conformance.protocols.classic.explore.classic_setup`:
    that many dynamic members subscribed to one topic `t` of that many partitions) so that the runs'
    abstract states can be found in an explore graph; faults and actions are still drawn.

    Protocol ``both`` alternates classic (even index) and consumer (odd). Consumer runs draw the
    server assignor (uniform or range, docs/protocol-reference.md#b11) unless ``assignor`` is pinned. ``mix`` also
    draws the alternative variants of the assignor in use (sticky: user data v0 or v1;
    cooperative-sticky: with or without the KIP-429 adjustment; consumer: ConsumerGroupHeartbeat v0
    or v1), so that a metrics report covers every assignor and variant; these draws come after the
    others, so a run's members, topics and faults do not depend on them."""
    pinned = dict(pinned or {})
    if protocol == "both":
        protocol = ("classic", "consumer")[index % 2]
    rng = random.Random(f"swarm:{seed}:{index}")
    members = rng.choice((2, 2, 3, 3, 3, 4, 5))
    topics = {"t": rng.randint(1, 8)}
    if rng.random() < 0.4:
        topics["u"] = rng.randint(1, 4)
    if protocol == "consumer":
        from conformance.protocols.consumer.swarm import FAULTS as CONSUMER_FAULTS
        from conformance.protocols.consumer.swarm import consumer_variants

        assignor = "uniform"  # the coordinator's default server assignor
        variants = consumer_variants(rng, pinned)
        kinds = CONSUMER_FAULTS
    else:
        assignor = rng.choice(ASSIGNORS)
        if pinned.get("assignor") and pinned["assignor"] != "mixed":
            assignor = pinned["assignor"]
        variants = dict(DEFAULT_VARIANTS)
        variants["join_version"] = rng.choice(("9", "9", "4", "3"))
        variants.update({k: v for k, v in pinned.items() if k != "assignor"})
        variants["assignor"] = assignor
        kinds = FAULTS
    static = tuple(rng.random() < 0.3 for _ in range(members))
    faults = tuple(f for f in kinds if rng.random() < 0.5)
    subscriptions = tuple(
        tuple(sorted(topics)) if ("u" in topics and rng.random() < 0.5) else ("t",) for _ in range(members)
    )
    if protocol == "consumer":
        assignor = rng.choice(CONSUMER_ASSIGNORS)
        if pinned.get("assignor") in CONSUMER_ASSIGNORS:
            assignor = pinned["assignor"]
        if mix and "heartbeat_version" not in pinned:
            variants["heartbeat_version"] = rng.choice(("1", "1", "0"))
    elif mix:
        if assignor == "sticky" and "sticky" not in pinned:
            variants["sticky"] = rng.choice(("v1", "v0"))
        if assignor == "cooperative-sticky" and "cooperative_adjust" not in pinned:
            variants["cooperative_adjust"] = rng.choice(("true", "false"))
    if shape is not None:
        members, topics = shape[0], {"t": shape[1]}
        if protocol == "consumer" and "assignor" not in pinned:
            assignor = "uniform"  # explore's clients name no server assignor: the default, uniform
        static, subscriptions = (False,) * members, (("t",),) * members
        if protocol == "classic":  # explore's variants: only the pinned ones (they shape the client config)
            variants = {**{k: v for k, v in pinned.items() if k != "assignor"}, "assignor": assignor}
    return SwarmConfig(
        seed, index, protocol, members, topics, assignor, variants, static, faults, steps,
        subscriptions=subscriptions, coverage=coverage,
    )  # fmt: skip


def client_specs(cfg: SwarmConfig) -> list[dict[str, Any]]:
    """The run's clients as `conformance.protocols.build` specs (also the trace header's `setup.clients`)."""
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


def sim_seed(cfg: SwarmConfig) -> int:
    """The simulator's chooser seed for this run (the trace header's `seed`)."""
    return cfg.seed * 1_000_003 + cfg.index


def trace_setup(cfg: SwarmConfig) -> dict[str, Any]:
    """What `groupcheck replay` rebuilds the run's simulator from (a project trace's header)."""
    if cfg.protocol == "consumer":
        from conformance.protocols.consumer.swarm import consumer_client_specs

        clients = consumer_client_specs(cfg)
    else:
        clients = client_specs(cfg)
    return {"topics": dict(cfg.topics), "clients": clients, "config": {}}


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
                self.keys.append(state_key(self.cfg, self.sim))

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


def state_key(cfg: SwarmConfig, sim: Any) -> str:
    """The abstract state of `groupcheck explore` (`conformance.protocols.classic.abstraction.abstract_key`, the
    consumer's `consumer_explore.consumer_key`). Symmetry reduction (least key over client renamings)
    up to 3 members, as explore's graphs; above, renamings would cost more than the run (120 at 5)."""
    symmetry = cfg.members <= 3
    if cfg.protocol == "consumer":
        from conformance.protocols.consumer.explore import consumer_key

        return consumer_key(sim, symmetry=symmetry)
    from conformance.protocols.classic.abstraction import abstract_key

    return abstract_key(sim, symmetry=symmetry)


def observations(cfg: SwarmConfig) -> tuple[Any, list[tuple[Observation[Any], str]]]:
    """The initial world and the run's observations with the action that produced each (deterministic)."""
    initial, observed, _ops = recorded_run(cfg)
    return initial, observed


def recorded_run(
    cfg: SwarmConfig,
) -> tuple[Any, list[tuple[Observation[Any], str]], list[list[dict[str, Any]]]]:
    """`observations` plus, per observation, the trace ops that led to it (`ops_per_observation`)."""
    initial, observed, ops, _keys = recorded_run_with_keys(cfg)
    return initial, observed, ops


def recorded_run_with_keys(
    cfg: SwarmConfig,
) -> tuple[Any, list[tuple[Observation[Any], str]], list[list[dict[str, Any]]], list[str]]:
    """`recorded_run` plus each step's abstract state (empty unless `cfg.coverage`)."""
    driver: Any
    if cfg.protocol == "consumer":
        from conformance.protocols.consumer.swarm import ConsumerDriver

        driver = ConsumerDriver(cfg)
    else:
        driver = _Driver(cfg)
    observed = driver.run()
    ops = ops_per_observation(driver.sim.log, [o for o, _ in observed])
    return driver.initial, observed, ops, driver.keys[: len(observed)]


def ops_per_observation(log: list[Any], observed: list[Any]) -> list[list[dict[str, Any]]]:
    """Group a traced simulator's log (`conformance.protocols.classic.trace.TracedClassicSim.log` or the
    consumer twin) by observation: the ops that changed only a client (restart, rejoin, a consumer
    action that observed nothing) go with the next observation's own op. These are the project
    trace's step actions, so a lake row keeps enough to rebuild a replayable trace."""
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


def run_one(cfg: SwarmConfig) -> Iterator[dict[str, Any]]:
    config_json = cfg.to_json()
    initial, observed, ops, keys = recorded_run_with_keys(cfg)
    make_row = observation_row
    if cfg.protocol == "consumer":
        from conformance.protocols.consumer.swarm import consumer_row as make_row
    for step, ((obs, action), step_ops) in enumerate(zip(observed, ops, strict=True), 1):
        row = make_row(cfg, config_json, step, obs, action)
        row["before"] = codec.dumps(initial) if step == 1 else None
        row["ops"] = json.dumps(step_ops, sort_keys=True, separators=(",", ":"))
        row["abstract_state"] = keys[step - 1] if keys else None
        yield row


def config_from_json(text: str) -> SwarmConfig:
    data = json.loads(text)
    data["static"] = tuple(data["static"])
    data["faults"] = tuple(data["faults"])
    data["subscriptions"] = tuple(tuple(s) for s in data["subscriptions"])
    return replace(SwarmConfig(**data))
