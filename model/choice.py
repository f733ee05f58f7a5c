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
from typing import Any, Protocol


class Chooser(Protocol):
    def new_uuid(self) -> str:
        """A fresh UUID string for a generated member id."""
        ...

    def pick(self, kind: str, options: Sequence[str]) -> str:
        """One of ``options`` (non-empty, in a canonical order) for the choice point ``kind``."""
        ...


class SeededChooser:
    """Deterministic choices: ids from a seeded generator, picks by a seeded draw or the first option.

    `fork` makes a copy with the same future choices for the explorers, which copy a state for
    every op they try: the generator's state is taken once and shared, read-only, by the copies
    (and by this chooser) until one of them draws, which rebuilds its own generator from it.
    """

    def __init__(self, seed: int = 0, *, first: bool = True) -> None:
        self._rng: random.Random | None = random.Random(seed)
        self._first = first
        #: the generator's state while ``_rng`` is not built (shared with copies; never changed)
        self._frozen: tuple[Any, ...] | None = None

    def _random(self) -> random.Random:
        rng = self._rng
        if rng is None:
            assert self._frozen is not None  # one of the two is always set
            rng = self._rng = random.Random.__new__(random.Random)  # not seeded: the state follows
            rng.setstate(self._frozen)
            self._frozen = None
        return rng

    def fork(self) -> SeededChooser:
        """A chooser that makes the same choices from now on as this one would."""
        if self._rng is not None:
            self._frozen, self._rng = self._rng.getstate(), None
        new = object.__new__(SeededChooser)
        new._rng, new._first, new._frozen = None, self._first, self._frozen
        return new

    def state(self) -> tuple[Any, ...]:
        """The generator's state (equal states: equal choices from now on)."""
        if self._rng is None:
            assert self._frozen is not None
            return self._frozen
        return self._rng.getstate()

    def new_uuid(self) -> str:
        return str(uuid.UUID(int=self._random().getrandbits(128), version=4))

    def pick(self, kind: str, options: Sequence[str]) -> str:
        if not options:
            raise ValueError(f"choice {kind} with no options")
        return options[0] if self._first else options[self._random().randrange(len(options))]
