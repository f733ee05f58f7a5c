"""Incremental checking: an invariant runs again only when a part of the observation it reads changed.

An invariant that declares ``reads`` (`model.invariant_reads`) is a pure function of those parts.
`Reuse` compares each declared part with its value at the previous check: the same object, or for
plain values (numbers, strings, None) an equal value of the same type, is unchanged. An invariant
none of whose parts changed since it last ran keeps the messages it gave then, which are the
messages it would give now. Where an invariant's ``when`` test fails it has nothing to say, and is
not run; a test that is a gate (`model.invariant_gates`) is decided once per kind of step. Other
invariants run on every check. The simulators keep an unchanged part of the world as the same
object (`model.classic.snapshot`, `model.consumer.world.capture_world`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from model.invariant_gates import Gate, Signature, signature
from model.invariant_reads import getter
from model.invariants import Invariant

#: compared by value: equal values of these types are interchangeable for any predicate
PLAIN = frozenset({int, bool, str, float, type(None)})
_UNSEEN = object()
#: at most this many kinds of step keep their gate verdicts (a bound on memory, not on correctness)
GATE_MEMO = 4096


class Reuse:
    """The last messages of each invariant, and which are no longer valid ("pending" a rerun)."""

    def __init__(self, own: list[Invariant], sometimes: list[Invariant]) -> None:
        self.lists = (own, sometimes)  # the very lists served: a checker given new ones gets a new memo
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
        #: the invariants that declare no reads: pending on every check
        self.always = frozenset(i for i, inv in enumerate(self.invariants) if inv.reads is None)
        self.when = [inv.when for inv in self.invariants]
        #: the ``when`` tests that are gates (`model.invariant_gates`), decided once per step kind
        self.gates: list[Gate | None] = [getattr(w, "gate", None) for w in self.when]
        self.gated = any(g is not None for g in self.gates)
        self.verdicts: dict[Signature, list[bool | None]] = {}
        self.predicates = [inv.predicate for inv in self.invariants]
        self.pending = set(range(len(self.invariants)))
        self.messages: list[list[str]] = [[] for _ in self.invariants]
        #: the positions whose last messages are not empty
        self.speaking: set[int] = set()

    def serves(self, own: list[Invariant], sometimes: list[Invariant]) -> bool:
        """Whether this memo was made for these invariant lists (the same objects, the same sizes)."""
        return (
            self.lists[0] is own and self.lists[1] is sometimes and self.sizes == (len(own), len(sometimes))
        )

    def run(self, obs: Any) -> list[list[str]]:
        """Every invariant's messages at ``obs``, by position: rerun where a part it reads changed
        since it last ran (or where it declares none), reused elsewhere."""
        values, pending = self.values, self.pending
        for i, get in enumerate(self.getters):
            value = get(obs)
            old = values[i]
            if value is old or (type(value) is type(old) and type(value) in PLAIN and value == old):
                continue
            values[i] = value
            pending.update(self.readers[i])
        verdicts = self._verdicts(obs) if self.gated else None
        messages, when, predicates = self.messages, self.when, self.predicates
        speaking, always = self.speaking, self.always
        for pos in tuple(pending):
            gate = None if verdicts is None else verdicts[pos]
            if gate is None:
                test = when[pos]
                gate = test is None or test(obs)
            if not gate:  # it has nothing to say here; it stays pending and runs again where it may
                if messages[pos]:
                    messages[pos] = []
                    speaking.discard(pos)
                continue
            out = list(predicates[pos](obs))  # what `Invariant.check` returns
            if out:
                speaking.add(pos)
            elif messages[pos]:
                speaking.discard(pos)
            messages[pos] = out
            if pos not in always:
                pending.discard(pos)
        return messages

    def _verdicts(self, obs: Any) -> list[bool | None]:
        """Each gate's verdict on ``obs`` (None where the ``when`` test is not a gate), kept per
        kind of step."""
        sig = signature(obs)
        verdicts = self.verdicts.get(sig)
        if verdicts is None:
            if len(self.verdicts) >= GATE_MEMO:
                self.verdicts.clear()
            verdicts = self.verdicts[sig] = [None if g is None else g.passes(sig) for g in self.gates]
        return verdicts
