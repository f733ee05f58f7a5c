"""The protocols the suite knows: `KITS`, the one list of them.

Each protocol package builds a `ProtocolKit` in its ``kit.py`` (its machine, trace recorder,
replay, explorer, swarm, real-target set-up, ...); everything above the engine reaches a protocol
through `get_kit`, and the engine through the kit it is handed or the name `install` made known.
Adding a protocol is adding its package and one line here.
"""

from __future__ import annotations

from collections.abc import Iterable

from conformance.engine.kit import ProtocolKit, install
from conformance.engine.variants import parse_variants as parse_known_variants
from conformance.engine.variants import variant_keys
from conformance.errors import UsageError
from conformance.protocols.classic.kit import KIT as CLASSIC
from conformance.protocols.consumer.kit import KIT as CONSUMER
from conformance.protocols.mixed.kit import KIT as MIXED

KITS: dict[str, ProtocolKit] = install({kit.name: kit for kit in (CLASSIC, CONSUMER, MIXED)})


def get_kit(name: str) -> ProtocolKit:
    """The kit of protocol ``name``; a usage error naming the known protocols."""
    kit = KITS.get(name)
    if kit is None:
        raise UsageError(f"unknown protocol {name!r} (known: {', '.join(KITS)})")
    return kit


def parse_variants(items: Iterable[str]) -> dict[str, str]:
    """``--variant KEY=VALUE`` items against every key some protocol reads."""
    return parse_known_variants(items, variant_keys(KITS.values()))


__all__ = ["KITS", "ProtocolKit", "get_kit", "parse_variants"]
