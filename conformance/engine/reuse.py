"""Incremental checking: an invariant runs again only when a part of the observation it reads changed.

An invariant that declares ``reads`` (`model.invariant_reads`) is a pure function of those parts.
`Reuse` compares each declared part with its value at the previous check: the same object, or for
plain values (numbers, strings, None) an equal value of the same type, is unchanged. An invariant
none of whose parts changed since it last ran keeps the messages it gave then, which are the
messages it would give now. Where an invariant's ``when`` test fails it has nothing to say, and is
not run. Other invariants run on every check. The simulators keep an unchanged part of the world as
the same object (`model.classic.snapshot`, `model.consumer.world.capture_world`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from model.invariant_reads import getter
from model.invariants import Invariant

#: compared by value: equal values of these types are interchangeable for any predicate
PLAIN = frozenset({int, bool, str, float, type(None)})
_UNSEEN = object()


class Reuse:
    """The last messages of each invariant, and whether they are still valid ("stale" if not)."""

    def __init__(self, own: list[Invariant], sometimes: list[Invariant]) -> None:
        self.sizes = (len(own), len(sometimes))
        self.invariants = [*own, *sometimes]
        self.own_ids = tuple(inv.id for inv in own)
        paths = sorted({p for inv in self.invariants if inv.reads is not None for p in inv.reads})
        self.getters: list[Callable[[Any], Any]] = [getter(p) for p in paths]
        #: per path, the positions of the invariants reading it
        self.readers: list[tuple[int, ...]] = [
            tuple(i for i, inv in enumerate(self.invariants) if inv.reads is not None and p in inv.reads)
            for p in paths
        ]
        self.values: list[Any] = [_UNSEEN] * len(paths)
        self.undeclared = [inv.reads is None for inv in self.invariants]
        self.when = [inv.when for inv in self.invariants]
        self.predicates = [inv.predicate for inv in self.invariants]
        self.stale = [True] * len(self.invariants)
        self.messages: list[list[str]] = [[] for _ in self.invariants]

    def serves(self, own: list[Invariant], sometimes: list[Invariant]) -> bool:
        """Whether this memo was made for these invariants, in this order."""
        return len(own) == self.sizes[0] and self.invariants == own + sometimes

    def start(self, obs: Any) -> None:
        """Mark stale every invariant reading a part of ``obs`` that changed since the last check."""
        values, stale = self.values, self.stale
        for i, get in enumerate(self.getters):
            value = get(obs)
            old = values[i]
            if value is old or (type(value) is type(old) and type(value) in PLAIN and value == old):
                continue
            values[i] = value
            for pos in self.readers[i]:
                stale[pos] = True

    def results(self, obs: Any, lo: int, hi: int) -> list[list[str]]:
        """The messages of the invariants at positions ``lo`` to ``hi``: run again where stale."""
        stale, messages, undeclared, when = self.stale, self.messages, self.undeclared, self.when
        predicates = self.predicates
        for pos in range(lo, hi):
            if not stale[pos]:
                continue
            test = when[pos]
            if test is not None and not test(obs):
                messages[pos] = []  # it has nothing to say here; it runs again where it may
                continue
            messages[pos] = list(predicates[pos](obs))  # what `Invariant.check` returns
            stale[pos] = undeclared[pos]
        return messages[lo:hi]
