"""Explicit nondeterminism (docs/model.md): where Kafka's choice is arbitrary, handlers ask a Chooser.

Kafka picks generated member ids (`clientId + "-" + UUID`, CG L774; `Uuid.randomUuid()` for KIP-848
v0, GMM L1683), a new leader from hash-map order (CG L470, L502), protocol-vote ties and
preferred-assignor ties (CG L999-1060, CoG L597). The model never guesses: the chooser decides,
and an oracle chooser can adopt what a real target chose after checking it was among the options.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from typing import Protocol


class Chooser(Protocol):
    def new_uuid(self) -> str:
        """A fresh UUID string for a generated member id."""
        ...

    def pick(self, kind: str, options: Sequence[str]) -> str:
        """One of ``options`` (non-empty, in a canonical order) for the choice point ``kind``."""
        ...


class SeededChooser:
    """Deterministic choices: ids from a seeded generator, picks by a seeded draw or the first option."""

    def __init__(self, seed: int = 0, *, first: bool = True) -> None:
        self._rng = random.Random(seed)
        self._first = first

    def new_uuid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def pick(self, kind: str, options: Sequence[str]) -> str:
        if not options:
            raise ValueError(f"choice {kind} with no options")
        return options[0] if self._first else options[self._rng.randrange(len(options))]
