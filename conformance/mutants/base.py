"""What a mutant is: one named fault of the model, and how the suite builds and expects to catch it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Mutant:
    """One named fault. ``expect`` names the invariants the kill matrix expects to catch it."""

    name: str
    protocol: str  # classic | consumer
    family: str  # catalogue | generic
    fault: str  # one sentence: what is wrong
    source: str  # catalogue row / Kafka issue, or the reference section of the rule it breaks
    expect: tuple[str, ...]
    row: int | None = None  # bug-catalogue row
    coordinator: type | None = None  # subclass of the protocol's coordinator
    client: type | None = None  # subclass of the protocol's virtual client
    port: Callable[[Any], Any] | None = None  # port class taking the coordinator (ModelPort subclass)
    variants: tuple[tuple[str, str], ...] = field(default=())  # model variants the fault is made of
