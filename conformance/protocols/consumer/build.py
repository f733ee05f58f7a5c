"""Build a KIP-848 consumer simulation from plain settings plus `--variant`s (scenarios, machines, CLI)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from conformance.errors import SpecError
from conformance.mutants import named_mutant, with_mutant_variants
from conformance.mutants.infection import probed
from conformance.mutants.sim import mutant_client_sim
from conformance.protocols.consumer.trace import TracedConsumerSim
from model.choice import SeededChooser
from model.consumer.regex_rules import RegexRules

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
    if "offset_commit_epochs" in variants:
        settings["offset_commit_epochs"] = variants["offset_commit_epochs"]
    if "regex_resolution" in variants:
        settings["regex_resolution"] = variants["regex_resolution"]
    if "assignment_interval" in variants:
        settings["assignment_interval_ms"] = int(variants["assignment_interval"])
    return ConsumerCoordinatorConfig(**settings)


def consumer_client_spec(spec: Mapping[str, Any], variants: Mapping[str, str], where: str) -> Any:
    from model.consumer.sim_specs import ClientSpec

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

    mutant = named_mutant(variants, "consumer")
    if mutant is not None:  # the model variants the mutant is made of (e.g. a batching coordinator)
        variants = with_mutant_variants(variants)
    cfg = consumer_config(config, variants, where)
    cls = probed(mutant.coordinator) if mutant and mutant.coordinator else ConsumerCoordinator
    coord = cls(cfg, SeededChooser(seed))
    port_cls = mutant.port if mutant and mutant.port else ModelConsumerPort
    port = port_factory(coord) if port_factory else port_cls(coord)
    specs = {}
    for spec in clients:
        made = consumer_client_spec(spec, variants, where)
        specs[made.name] = made
    if mutant and mutant.client:
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
    members that never revoke are fenced (rebalance timeout), and everyone reconciles. With a regex
    subscribed and resolved asynchronously, a new regex may wait for the batch interval after the
    last resolution (GMM REGEX_BATCH_REFRESH_MIN_INTERVAL_MS, `RegexRules.regex_min_interval_ms`)
    until a heartbeat starts its resolution, whose result bumps the epoch: one more reconciliation
    (the thorough consumer profile on the model, seed 1, judged a group Assigning at that bump)."""
    rebalance = max((s.rebalance_timeout_ms for s in sim.specs.values()), default=0)
    config = sim.port.config
    bound = config.session_timeout_ms + rebalance + 4 * config.heartbeat_interval_ms
    if config.regex_resolution == "async" and any(c.regex for c in sim.clients.values()):
        bound += RegexRules.regex_min_interval_ms + config.heartbeat_interval_ms + rebalance
    return int(bound)
