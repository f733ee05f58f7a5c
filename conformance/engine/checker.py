"""Runs the registry's predicates over observations (one definition, reused everywhere: docs/invariants.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from conformance.engine.kit import ProtocolKit, resolve
from conformance.engine.reuse import Reuse
from model.deviations import explain
from model.invariants import Invariant, for_protocol, load_all
from model.observation import Observation

CHECKED_KINDS = ("safety", "transition", "liveness")


@dataclass(frozen=True)
class Violation:
    invariant: str
    message: str
    step: int


@dataclass
class Deviation:
    """A known deviation of Apache Kafka met in a run (`model.deviations`): how often, and the first
    time (step within its example, and what the invariant said)."""

    id: str
    invariant: str
    count: int = 0
    step: int = 0
    message: str = ""


@dataclass(frozen=True)
class View:
    """Invariants of another family, checked on what ``project`` makes of each observation.

    ``project`` returns None when the view has nothing to show at this step (its invariants are
    then neither run nor listed as checked); ``check(inv, projected)`` gives the messages."""

    invariants: Callable[[], list[Invariant]]
    project: Callable[[Observation[Any]], Any] = field(default=lambda obs: obs)
    check: Callable[[Invariant, Any], Iterable[str]] = field(default=lambda inv, obs: inv.check(obs))


@dataclass(frozen=True)
class CheckPlan:
    """What a protocol's checker runs besides the protocol's own invariants (from its kit)."""

    #: other families checked first, as if they were the protocol's own
    also: tuple[str, ...] = ()
    #: views checked after the protocol's own invariants, in order
    views: tuple[View, ...] = ()


@dataclass
class Checker:
    """Checks every invariant of `protocol` after each step; counts `sometimes` hits across runs.

    ``protocol`` is a kit or the name of an installed one (`conformance.engine.kit.resolve`); its
    `CheckPlan` says which other families and views come with it."""

    protocol: str | ProtocolKit
    invariants: list[Invariant] = field(default_factory=list)
    sometimes: list[Invariant] = field(default_factory=list)
    #: (view, its invariants) in the plan's order
    views: list[tuple[View, list[Invariant]]] = field(default_factory=list)
    hits: dict[str, int] = field(default_factory=dict)
    #: what the last `check` ran and which `sometimes` entries it saw (for trace step lines)
    last_checked: tuple[str, ...] = ()
    last_sometimes: tuple[str, ...] = ()
    #: known deviations met (id -> `Deviation`); ``strict``: they are violations like any other
    deviations: dict[str, Deviation] = field(default_factory=dict)
    strict: bool = False
    #: reuse an invariant's messages while the parts of the observation it reads (its ``reads``)
    #: are the same objects as when it last ran (`Reuse`); False: run every invariant every step
    incremental: bool = True
    _reuse: Reuse | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        kit = resolve(self.protocol)
        self.protocol = kit.name
        plan = kit.checks() or CheckPlan()
        load_all()
        self.invariants = [inv for p in plan.also for inv in for_protocol(p, CHECKED_KINDS)]
        self.invariants += for_protocol(kit.name, CHECKED_KINDS)
        self.sometimes = for_protocol(kit.name, ("sometimes",))
        self.views = [(view, view.invariants()) for view in plan.views]
        for inv in self.sometimes:
            self.hits.setdefault(inv.id, 0)
        if self.incremental:
            self._reuse = Reuse(self.invariants, self.sometimes)

    def check(self, obs: Observation[Any], step: int) -> list[Violation]:
        out: list[Violation] = []
        reuse = self._reuse
        if reuse is not None and not reuse.serves(self.invariants, self.sometimes):
            reuse = self._reuse = Reuse(self.invariants, self.sometimes)  # the lists were replaced
        n = len(self.invariants)
        if reuse is not None:
            messages = reuse.run(obs)
            speaking = sorted(reuse.speaking)
            checked = reuse.own_ids
        else:
            messages = [inv.check(obs) for inv in [*self.invariants, *self.sometimes]]
            speaking = [pos for pos, m in enumerate(messages) if m]
            checked = tuple(inv.id for inv in self.invariants)
        for pos in speaking:
            if pos < n:
                out.extend(self._unexplained(self.invariants[pos], obs, messages[pos], step))
        for view, invariants in self.views:
            shown = view.project(obs)
            if shown is None:
                continue
            checked += tuple(inv.id for inv in invariants)
            for inv in invariants:
                found = list(view.check(inv, shown))
                if found:
                    out.extend(self._unexplained(inv, shown, found, step))
        seen = []
        for pos in speaking:
            if pos >= n:
                inv = self.sometimes[pos - n]
                self.hits[inv.id] += 1
                seen.append(inv.id)
        self.last_checked, self.last_sometimes = checked, tuple(seen)
        return out

    def _unexplained(self, inv: Invariant, obs: Any, messages: list[str], step: int) -> list[Violation]:
        """``inv``'s violations at ``obs``, less one a known deviation explains (counted instead)."""
        found = [Violation(inv.id, msg, step) for msg in messages]
        dev = None if self.strict else explain(inv.id, obs)
        if dev is None:
            return found
        seen = self.deviations.setdefault(dev.id, Deviation(dev.id, inv.id, 0, step, found[0].message))
        seen.count += 1
        return []

    def vacuous(self) -> list[str]:
        """`sometimes` entries that never fired: a run that never did these proves little."""
        return sorted(k for k, n in self.hits.items() if n == 0)
