"""Build a classic simulation from plain settings plus `--variant`s (shared by scenarios, machines, CLI)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from conformance.errors import SpecError
from conformance.mutants import named_mutant, with_mutant_variants
from conformance.mutants.infection import probed
from conformance.protocols.classic.settle import quiet_gap as quiet_gap
from conformance.protocols.classic.settle import settle_round as settle_round
from conformance.protocols.classic.trace import TracedClassicSim
from model.choice import SeededChooser
from model.classic.client import ClassicClient, ClientConfig
from model.classic.coordinator import ClassicCoordinator
from model.classic.port import ClassicPort, ModelPort
from model.classic.state import ClassicConfig

#: Test-friendly broker settings, as the real targets are configured (initial delay 0, low minimums).
TEST_CONFIG = {"initial_rebalance_delay_ms": 0, "min_session_timeout_ms": 500}

PortFactory = Callable[[ClassicCoordinator], ClassicPort]


def classic_config(overrides: Mapping[str, Any], where: str) -> ClassicConfig:
    names = {f.name for f in fields(ClassicConfig)}
    settings = dict(TEST_CONFIG)
    for key, value in overrides.items():
        if key not in names:
            raise SpecError(f"{where}: unknown config key {key!r} (known: {', '.join(sorted(names))})")
        settings[key] = int(value)
    return ClassicConfig(**settings)


def client_config(spec: Mapping[str, Any], variants: Mapping[str, str], where: str) -> ClientConfig:
    known = {f.name for f in fields(ClientConfig)} | {"name"}
    unknown = set(spec) - known
    if unknown:
        raise SpecError(f"{where}: client {spec.get('name', '?')!r} has unknown field(s) {sorted(unknown)}")
    assignors = tuple(spec.get("assignors", ("range",)))
    if variants.get("assignor") and variants["assignor"] != "mixed":
        assignors = (variants["assignor"],)
    options: list[tuple[str, str, object]] = []
    if "sticky" in variants:
        options.append(("sticky", "user_data_version", 0 if variants["sticky"] == "v0" else 1))
    if "cooperative_adjust" in variants:
        options.append(("cooperative-sticky", "adjust", variants["cooperative_adjust"] == "true"))
    join_version = int(variants.get("join_version", spec.get("join_version", 9)))
    return ClientConfig(
        group_id=str(spec.get("group_id", "g")),
        client_id=str(spec.get("client_id", spec.get("name", "consumer"))),
        instance_id=spec.get("instance_id"),
        topics=tuple(spec.get("topics", ("t",))),
        assignors=assignors,
        assignor_options=tuple(options),
        join_version=join_version,
        session_timeout_ms=int(spec.get("session_timeout_ms", 10_000)),
        rebalance_timeout_ms=int(spec.get("rebalance_timeout_ms", 30_000)),
        sync_version=int(spec.get("sync_version", 5)),
        heartbeat_version=int(spec.get("heartbeat_version", 4)),
        leave_version=int(spec.get("leave_version", 5)),
        commit_version=int(spec.get("commit_version", 8)),
        commit_joined_generation=_flag(spec, "commit_joined_generation", where),
    )


def _flag(spec: Mapping[str, Any], key: str, where: str) -> bool:
    value = spec.get(key, False)
    if not isinstance(value, bool):
        raise SpecError(f"{where}: client {spec.get('name', '?')!r} field {key!r} must be true or false")
    return value


def make_classic_sim(
    topics: Mapping[str, int],
    clients: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any],
    variants: Mapping[str, str],
    *,
    seed: int = 0,
    where: str = "settings",
    port_factory: PortFactory | None = None,
    coordinator: ClassicCoordinator | None = None,
    sim_class: type[TracedClassicSim] = TracedClassicSim,
    request_timeout_ms: int | None = None,
) -> TracedClassicSim:
    cfg = classic_config(config, where)
    mutant = named_mutant(variants, "classic")
    if mutant is not None:  # the model variants the mutant is made of (e.g. kafka-7026: sticky v0)
        variants = with_mutant_variants(variants)
    coord_cls = probed(mutant.coordinator) if mutant and mutant.coordinator else ClassicCoordinator
    coord = coordinator or coord_cls(cfg, SeededChooser(seed))
    port_cls = mutant.port if mutant and mutant.port else ModelPort
    port = port_factory(coord) if port_factory else port_cls(coord)
    client_cls = mutant.client if mutant and mutant.client else ClassicClient
    made = {}
    for spec in clients:
        if "name" not in spec:
            raise SpecError(f"{where}: every client needs a 'name'")
        made[str(spec["name"])] = client_cls(str(spec["name"]), client_config(spec, variants, where))
    sim = sim_class(port, made, topics=dict(topics))
    if request_timeout_ms is not None:
        sim.request_timeout_ms = request_timeout_ms
    sim.setup = {
        "topics": dict(sorted(topics.items())),
        "clients": [dict(spec) for spec in clients],
        "config": dict(config),
    }
    sim.variants, sim.seed = dict(variants), seed
    return sim
