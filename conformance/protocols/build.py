"""Build a classic simulation from plain settings plus `--variant`s (shared by scenarios, machines, CLI)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from conformance.errors import SpecError
from conformance.protocols.classic.trace import TracedClassicSim
from model.choice import SeededChooser
from model.classic.client import ClassicClient, ClientConfig
from model.classic.coordinator import ClassicCoordinator
from model.classic.port import ClassicPort, ModelPort
from model.classic.sim import ClassicSim
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
    )


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
    mutant = _mutant(variants, "classic")
    if mutant is not None:  # the model variants the mutant is made of (e.g. kafka-7026: sticky v0)
        from conformance.mutants import with_mutant_variants

        variants = with_mutant_variants(variants)
    coord_cls = mutant.coordinator if mutant and mutant.coordinator else ClassicCoordinator
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


def _mutant(variants: Mapping[str, str], protocol: str) -> Any:
    """The mutant named by ``variants['mutant']`` (conformance/mutants), or None."""
    if not variants.get("mutant"):
        return None
    from conformance.mutants import get_mutant

    return get_mutant(variants["mutant"], protocol)


def quiet_gap(sim: ClassicSim, tick_ms: int = 100) -> int:
    """How far virtual time may run when no member has protocol work to do.

    Up to the next coordinator timer or request timeout, but never longer than a third of a running
    member's session timeout (the Java consumer's default heartbeat cadence), so idle time never
    expires a member that would have heartbeated.
    """
    world, now = sim.world, sim.now
    gaps: list[int] = []
    if world is not None and world.group is not None:
        gaps += [d - now for _, d in world.group.timers]
    gaps += [sent + sim.request_timeout_ms - now for _, sent in sim.awaiting.values()]
    running = [c for n, c in sim.clients.items() if n not in sim.stalled and c.member_id]
    gaps += [c.config.session_timeout_ms // 3 for c in running]
    return max(0, min(gaps)) if gaps else tick_ms


def settle_round(sim: ClassicSim, names: list[str], observe: Callable[[Any], None]) -> None:
    """Every named member acts once; if none had protocol work beyond a heartbeat, time runs on."""
    from model.classic.messages import HeartbeatRequest

    busy = False
    for name in names:
        obs = sim.client_step(name)
        if obs is not None:
            observe(obs)
            request = getattr(obs.event, "request", None)  # None: the request was held (DelayRequest)
            busy = busy or not isinstance(request, HeartbeatRequest)
    if not busy:
        observe(sim.advance(quiet_gap(sim)))


# ---------------------------------------------------------------------- KIP-848 consumer protocol

#: Test-friendly consumer-group settings (short timeouts on the virtual clock, as on real targets).
CONSUMER_TEST_CONFIG = {"session_timeout_ms": 3000, "heartbeat_interval_ms": 500}


def consumer_config(overrides: Mapping[str, Any], variants: Mapping[str, str], where: str) -> Any:
    from model.consumer.txn import ConsumerCoordinatorConfig

    names = {f.name for f in fields(ConsumerCoordinatorConfig)}
    settings: dict[str, Any] = dict(CONSUMER_TEST_CONFIG)
    for key, value in overrides.items():
        if key not in names:
            raise SpecError(f"{where}: unknown config key {key!r} (known: {', '.join(sorted(names))})")
        settings[key] = value
    if "heartbeat_version" in variants:
        settings["heartbeat_version"] = int(variants["heartbeat_version"])
    if "member_id_validation" in variants:
        settings["member_id_validation"] = variants["member_id_validation"]
    return ConsumerCoordinatorConfig(**settings)


def consumer_client_spec(spec: Mapping[str, Any], variants: Mapping[str, str], where: str) -> Any:
    from model.consumer.sim import ClientSpec

    known = {f.name for f in fields(ClientSpec)}
    unknown = set(spec) - known
    if "name" not in spec:
        raise SpecError(f"{where}: every client needs a 'name'")
    if unknown:
        raise SpecError(f"{where}: client {spec['name']!r} has unknown field(s) {sorted(unknown)}")
    values = dict(spec)
    values["topics"] = tuple(values.get("topics", ("t",)))
    if "heartbeat_version" in variants:
        values["version"] = int(variants["heartbeat_version"])
    return ClientSpec(**values)


def make_consumer_sim(
    topics: Mapping[str, int],
    clients: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any],
    variants: Mapping[str, str],
    *,
    seed: int = 0,
    where: str = "settings",
    port_factory: Callable[[Any], Any] | None = None,
    sim_class: Any = None,
) -> Any:
    """A `ConsumerSim` against the model (or a mutant, ``variants['mutant']``) or a port factory;
    ``sim_class`` replaces the traced simulator (real-time runs against a real target)."""
    from model.consumer.coordinator import ConsumerCoordinator
    from model.consumer.port import ModelConsumerPort

    cfg = consumer_config(config, variants, where)
    mutant = _mutant(variants, "consumer")
    cls = mutant.coordinator if mutant and mutant.coordinator else ConsumerCoordinator
    coord = cls(cfg, SeededChooser(seed))
    port_cls = mutant.port if mutant and mutant.port else ModelConsumerPort
    port = port_factory(coord) if port_factory else port_cls(coord)
    specs = {}
    for spec in clients:
        made = consumer_client_spec(spec, variants, where)
        specs[made.name] = made
    from conformance.protocols.consumer.trace import TracedConsumerSim

    if mutant and mutant.client:
        from conformance.mutants.sim import mutant_client_sim

        # recorded too: the trace layer's log on top of the mutant client's processes
        base = sim_class or TracedConsumerSim  # a real-time simulator keeps its clock
        cls = type("TracedMutantClientSim", (base, mutant_client_sim(mutant.client)), {})
        sim = cls(port, specs, SeededChooser(seed + 1000))
    else:
        sim = (sim_class or TracedConsumerSim)(port, specs, SeededChooser(seed + 1000))
    for topic, n in sorted(topics.items()):
        sim.topic("create", topic, n)
    sim.actions.clear()  # the set-up is in the header, not in the steps
    sim.log.clear()
    sim.setup = {
        "topics": dict(sorted(topics.items())),
        "clients": [dict(spec) for spec in clients],
        "config": dict(config),
    }
    sim.variants, sim.seed = dict(variants), seed
    return sim


def consumer_settle_bound(sim: Any) -> int:
    """Long enough for every perturbation to wash out: silent members expire (session timeout),
    members that never revoke are fenced (rebalance timeout), and everyone reconciles."""
    rebalance = max((s.rebalance_timeout_ms for s in sim.specs.values()), default=0)
    config = sim.port.config
    return int(config.session_timeout_ms + rebalance + 4 * config.heartbeat_interval_ms)
