"""Swarm exploration of the model: one seeded run per configuration, every step a lake row.

Plain Python (no pyspark): Spark executors, a multiprocessing pool and the tests all call
`run_one`. Each run draws its own configuration from the swarm distribution (swarm testing,
Groce et al. ISSTA 2012: every run enables a random subset of fault kinds, so rare interleavings
are not drowned by always-on faults): members, topics, partitions, assignor, variants and fault
mix. What is protocol-specific (its draws, clients, driver and lake row) comes from the kit of the
run's protocol (`ProtocolKit.swarm`, `conformance.engine.swarm.SwarmHooks`); the driver's actions
mirror the protocol's Hypothesis machine, drawn from `random.Random(f"actions:{seed}:{index}")`,
so the same seed and index give the same rows.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping
from typing import Any

from conformance.engine.kit import ProtocolKit
from conformance.engine.swarm import SwarmConfig, SwarmHooks, ops_per_observation
from conformance.formats import lake as codec
from conformance.protocols import KITS, get_kit
from model.observation import Observation


def swarm_kits() -> list[ProtocolKit]:
    """The kits that offer swarm runs, in the registry's order."""
    return [kit for kit in KITS.values() if kit.swarm is not None]


def hooks(protocol: str) -> SwarmHooks:
    """The swarm hooks of the named protocol's kit (a usage error if it has none)."""
    return get_kit(protocol).require("swarm")()  # type: ignore[no-any-return]


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

    `shape` (members, partitions) pins explore's set-up (that many dynamic members subscribed to
    one topic `t` of that many partitions) so that the runs' abstract states can be found in an
    explore graph; faults and actions are still drawn.

    Protocol ``both`` alternates over the kits that offer swarm runs (classic on even indexes,
    consumer on odd). ``mix`` also draws the alternative variants of the assignor in use (the
    kit's ``draw_late``), so that a metrics report covers every assignor and variant; these draws
    come after the others, so a run's members, topics and faults do not depend on them."""
    pinned = dict(pinned or {})
    if protocol == "both":
        kits = swarm_kits()
        protocol = kits[index % len(kits)].name
    kit = hooks(protocol)
    rng = random.Random(f"swarm:{seed}:{index}")
    members = rng.choice((2, 2, 3, 3, 3, 4, 5))
    topics = {"t": rng.randint(1, 8)}
    if rng.random() < 0.4:
        topics["u"] = rng.randint(1, 4)
    assignor, variants = kit.draw(rng, pinned)
    static = tuple(rng.random() < 0.3 for _ in range(members))
    faults = tuple(f for f in kit.faults if rng.random() < 0.5)
    subscriptions = tuple(
        tuple(sorted(topics)) if ("u" in topics and rng.random() < 0.5) else ("t",) for _ in range(members)
    )
    assignor = kit.draw_late(rng, pinned, assignor, variants, mix)
    if shape is not None:
        members, topics = shape[0], {"t": shape[1]}
        static, subscriptions = (False,) * members, (("t",),) * members
        assignor, variants = kit.shaped(pinned, assignor, variants)
    return SwarmConfig(
        seed, index, protocol, members, topics, assignor, variants, static, faults, steps,
        subscriptions=subscriptions, coverage=coverage,
    )  # fmt: skip


def trace_setup(cfg: SwarmConfig) -> dict[str, Any]:
    """What `groupcheck replay` rebuilds the run's simulator from (a project trace's header)."""
    return {"topics": dict(cfg.topics), "clients": hooks(cfg.protocol).client_specs(cfg), "config": {}}


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
    driver = hooks(cfg.protocol).driver(cfg)
    observed = driver.run()
    ops = ops_per_observation(driver.sim.log, [o for o, _ in observed])
    return driver.initial, observed, ops, driver.keys[: len(observed)]


def run_one(cfg: SwarmConfig) -> Iterator[dict[str, Any]]:
    config_json = cfg.to_json()
    initial, observed, ops, keys = recorded_run_with_keys(cfg)
    make_row = hooks(cfg.protocol).row
    for step, ((obs, action), step_ops) in enumerate(zip(observed, ops, strict=True), 1):
        row = make_row(cfg, config_json, step, obs, action)
        row["before"] = codec.dumps(initial) if step == 1 else None
        row["ops"] = json.dumps(step_ops, sort_keys=True, separators=(",", ":"))
        row["abstract_state"] = keys[step - 1] if keys else None
        yield row
