"""What the served coordinator runs with: group settings by their Kafka names, and optionally a mutant.

Settings come through a fixed registry (`conformance.targets.settings.MODEL_FIELDS`: Kafka broker
setting -> model config field), so ``groupcheck serve --config KEY=VALUE`` takes exactly the settings
the oracle learns of a target (`conformance.targets.settings.KAFKA_DEFAULTS`). A mutant
(conformance/mutants) replaces the rule it breaks in the served coordinator, so the oracle can be
pointed at a coordinator with a known bug over the wire (the ``served-model:NAME`` target,
docs/real-targets.md#served-model).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from conformance.errors import UsageError
from conformance.targets.settings import MODEL_FIELDS
from model.classic.coordinator import ClassicCoordinator
from model.classic.state import ClassicConfig
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.txn import ConsumerCoordinatorConfig
from model.mixed.classic_requests import MixedConsumerCoordinator
from model.mixed.consumer_group import MixedConfig
from model.mixed.coordinator import MixedCoordinator
from model.mixed.state import MigrationPolicy

#: every setting's value but the policy is a count (ms or members), at most this
MAX_SETTING = 2**31 - 1


def parse_settings(items: Iterable[str]) -> dict[str, int | str]:
    """``KEY=VALUE`` items; an unknown key or a bad value is a usage error naming the item."""
    out: dict[str, int | str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in MODEL_FIELDS:
            raise UsageError(
                f"--config: {item[:100]!r} is not KEY=VALUE with KEY one of {', '.join(MODEL_FIELDS)}"
            )
        value = value.strip()
        if MODEL_FIELDS[key][0] == "mixed":
            if value not in {p.value for p in MigrationPolicy}:
                raise UsageError(f"--config: {key}={value[:40]!r} is not a migration policy")
            out[key] = value
        elif value.isdigit() and 0 <= int(value) <= MAX_SETTING:
            out[key] = int(value)
        else:
            raise UsageError(f"--config: {key}={value[:40]!r} is not a count in 0..{MAX_SETTING}")
    return out


def mixed_config(settings: Mapping[str, int | str]) -> MixedConfig:
    """The model's settings with the given Kafka settings applied (the rest: Kafka's defaults)."""
    parts: dict[str, dict[str, int | str]] = {"classic": {}, "consumer": {}, "mixed": {}}
    for key, value in settings.items():
        where, name = MODEL_FIELDS[key]
        parts[where][name] = value
    config = MixedConfig(
        classic=replace(ClassicConfig(), **parts["classic"]),  # type: ignore[arg-type]
        consumer=replace(ConsumerCoordinatorConfig(), **parts["consumer"]),  # type: ignore[arg-type]
    )
    if "policy" in parts["mixed"]:
        config = replace(config, policy=MigrationPolicy(parts["mixed"]["policy"]))
    return config


def coordinator_class(mutant_name: str | None) -> type[MixedCoordinator]:
    """The served coordinator: the reference one, or the one with ``mutant_name``'s fault in it."""
    if not mutant_name:
        return MixedCoordinator
    from conformance.mutants import get_mutant

    mutant = get_mutant(mutant_name)
    cls = mutant.coordinator
    if cls is None:
        what = "a client" if mutant.client is not None else "not a coordinator"
        raise UsageError(f"--mutant {mutant_name}: {what} mutant; only a coordinator's fault can be served")
    if issubclass(cls, MixedCoordinator):
        return cls
    if issubclass(cls, ClassicCoordinator):
        return type(f"Served{cls.__name__}", (MixedCoordinator,), {"classic_class": cls})
    if issubclass(cls, ConsumerCoordinator):
        engine = (
            cls
            if issubclass(cls, MixedConsumerCoordinator)
            else type(f"Mixed{cls.__name__}", (cls, MixedConsumerCoordinator), {})
        )
        return type(f"Served{cls.__name__}", (MixedCoordinator,), {"consumer_class": engine})
    raise UsageError(f"--mutant {mutant_name}: its coordinator {cls.__name__} cannot be served")
