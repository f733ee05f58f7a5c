"""What an invariant sees: one step of a run (docs/invariants.md).

`before` is None for the first step. `world` types are defined per protocol package; they hold both
the coordinator view (the model's state, or the oracle's copy that adopted a real target's choices)
and the consumer view (what each virtual member was told in responses).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from model.result import Delivery

W = TypeVar("W")


@dataclass(frozen=True)
class Observation(Generic[W]):
    before: W | None
    event: Any
    deliveries: tuple[Delivery, ...]
    after: W
    now: int
