"""The KIP-848 consumer group protocol (ConsumerGroupHeartbeat; Kafka's ConsumerGroup) as the engine sees it.

Every capability imports its module when called, so listing the kits stays cheap.
"""

from __future__ import annotations

from typing import Any

from conformance.engine.kit import ProtocolKit
from conformance.engine.variants import VariantKey


def make_machine(settings: Any) -> type:
    from conformance.protocols.consumer.machine import make_machine as make

    return make(settings)


def to_trace(sim: Any, **kw: Any) -> Any:
    from conformance.protocols.consumer.trace import to_trace as record

    return record(sim, **kw)


def replay(*args: Any, **kw: Any) -> Any:
    from conformance.protocols.consumer.replay import replay_consumer

    return replay_consumer(*args, **kw)


def replay_on_target(*args: Any, **kw: Any) -> Any:
    from conformance.protocols.consumer.replay import replay_consumer_on_target

    return replay_consumer_on_target(*args, **kw)


def minimise_view(trace: Any) -> Any:
    from conformance.protocols.consumer.trace import flatten_consumer

    return flatten_consumer(trace)


def polish_space(trace: Any) -> Any:
    from conformance.protocols.consumer.explore import polish_space as space

    return space(trace)


def state_key(sim: Any, symmetry: bool = True) -> str:
    from conformance.protocols.consumer.explore import consumer_key

    return consumer_key(sim, symmetry=symmetry)


def explore(*args: Any, **kw: Any) -> Any:
    from conformance.protocols.consumer.explore import explore as run

    return run(*args, **kw)


def explore_trace(*args: Any) -> Any:
    from conformance.protocols.consumer.explore import consumer_found_trace

    return consumer_found_trace(*args)


def run_scenario(scenario: Any, variants: dict[str, str], **kw: Any) -> Any:
    from conformance.protocols.consumer.scenarios import ConsumerScenarioRunner

    return ConsumerScenarioRunner(scenario, variants, **kw).run()


def swarm() -> Any:
    from conformance.protocols.consumer.swarm import swarm_hooks

    return swarm_hooks()


def real_setup(handle: Any, profile: Any) -> Any:
    from conformance.protocols.consumer.setup import consumer_setup

    return consumer_setup(handle, profile)


def not_run_reason(handle: Any) -> str | None:
    from conformance.protocols.consumer.setup import not_run_reason as why

    return why(handle)


def model_port(coordinator: Any) -> Any:
    from model.consumer.port import ModelConsumerPort

    return ModelConsumerPort(coordinator)


def mutants() -> dict[str, Any]:
    from conformance.mutants import MUTANTS

    return {name: m for name, m in MUTANTS.items() if m.protocol == KIT.name}


KIT = ProtocolKit(
    name="consumer",
    summary="the KIP-848 consumer group protocol: ConsumerGroupHeartbeat, server-side assignors",
    make_machine=make_machine,
    to_trace=to_trace,
    variants=(
        VariantKey(
            "heartbeat_version",
            ("0", "1"),
            "ConsumerGroupHeartbeat version (KIP-1082: v1 = client-generated member ids)",
        ),
        VariantKey(
            "member_id_validation",
            ("kafka", "kip"),
            "KIP-1082 member id check: kafka = used verbatim, kip = must be a UUID (as KIP-1082 proposes)",
        ),
        VariantKey(
            "assignment_interval",
            ("0", "1000"),
            "group.consumer.assignment.interval.ms: 0 = a target per epoch bump (Kafka 4.0/4.1), "
            "1000 = targets batched (the Kafka 4.2+ default)",
        ),
        VariantKey(
            "regex_resolution",
            ("async", "sync"),
            "SubscribedTopicRegex: async = resolved off the heartbeat path, then a bump (Kafka 4.0+), "
            "sync = resolved and bumped in the heartbeat that brings it (the model's earlier shortcut)",
        ),
        VariantKey(
            "offset_commit_epochs",
            ("exact", "assignment"),
            "OffsetCommit member epochs: exact = the current epoch only (Kafka 4.0-4.2), "
            "assignment = also an older epoch not below the partition's assignment epoch (KIP-1251, 4.3+)",
        ),
    ),
    oracle_rules=("ConsumerGroupHeartbeat", "OffsetCommit"),
    replay=replay,
    replay_on_target=replay_on_target,
    minimise_view=minimise_view,
    polish_space=polish_space,
    state_key=state_key,
    coverage_places=(
        ("Empty", "Assigning", "Reconciling", "Stable"),
        {"Empty": (0, 1), "Assigning": (1, 2), "Reconciling": (2, 1), "Stable": (1, 0)},
    ),
    explore=explore,
    explore_trace=explore_trace,
    run_scenario=run_scenario,
    swarm=swarm,
    real_setup=real_setup,
    not_run_reason=not_run_reason,
    model_port=model_port,
    mutants=mutants,
)
