"""Why a mutant survived: its fault never ran, ran and changed no answer, or changed answers that
no invariant judged (the reach-infect-propagate model of mutation analysis: Ammann and Offutt,
*Introduction to Software Testing*, ch. 2). docs/mutants.md#infection.

`probed` wraps a mutant coordinator class. Each outermost call the harness makes on it (every public
method whose first parameter is ``state``) is also made on the reference coordinator on deep copies
of the state and chooser: a different `Result` or state is an *infected* call. A *shadow* reference
also runs the whole example beside the mutant; the first delivery that differs from the shadow's
marks the example *diverged* (different, not necessarily illegal: the oracle judges legality). The
reference only ever sees copies, so the mutant's run and verdict are those of an unprobed run.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

#: characters of an answer kept in the log, each side
SHOWN = 300
#: shadows kept at once (one per coordinator, i.e. per example or shrink attempt; older ones end)
SHADOWS = 4


@dataclass
class Shadow:
    """A reference coordinator running one example beside the mutant, on its own state."""

    coordinator: Any  # the mutant's, kept alive so that its id is not reused
    reference: Any
    state: Any
    state_id: int  # the mutant's state object: another one means the harness replaced it
    in_step: bool = True


@dataclass
class InfectionLog:
    """What one probed run saw: outermost calls, the infected ones, the first in full."""

    calls: int = 0
    infected: int = 0
    #: infected calls whose answers (the deliveries a client would read) differ, not only records
    in_answers: int = 0
    by_entry: dict[str, int] = field(default_factory=dict)
    first: dict[str, str] | None = None
    #: examples (coordinators) probed, and those whose answers diverged from the shadow's
    examples: int = 0
    diverged: int = 0
    first_divergence: dict[str, str] | None = None
    depth: int = 0
    shadows: dict[int, Shadow] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "infected": self.infected,
            "in_answers": self.in_answers,
            "by_entry": dict(sorted(self.by_entry.items())),
            "first": self.first,
            "examples": self.examples,
            "diverged": self.diverged,
            "first_divergence": self.first_divergence,
        }

    def shadow(self, coordinator: Any, state: Any) -> Shadow:
        """``coordinator``'s shadow, started on a copy of ``state`` at its first call. It stops,
        without counting a divergence, once the harness hands the coordinator another state object
        (a failover rebuilds it from the durable records)."""
        key = id(coordinator)
        if key not in self.shadows:
            while len(self.shadows) >= SHADOWS:
                del self.shadows[next(iter(self.shadows))]
            self.shadows[key] = Shadow(coordinator, _reference(coordinator), copy.deepcopy(state), id(state))
            self.examples += 1
        shadow = self.shadows[key]
        if shadow.state_id != id(state):
            shadow.in_step = False
        return shadow

    def compare_shadow(
        self,
        coordinator: Any,
        entry: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        got: Any,
        chooser_before: dict[str, Any] | None,
    ) -> None:
        """Run the shadow on the same call; the first differing answer marks the example diverged."""
        shadow = self.shadows[id(coordinator)]
        if not shadow.in_step or not hasattr(got, "deliveries"):
            return
        if chooser_before is not None:
            shadow.reference.chooser.__dict__ = chooser_before
        try:
            answers: Any = getattr(shadow.reference, entry)(shadow.state, *args, **kwargs).deliveries
        except Exception as exc:  # noqa: BLE001 - the shadow's failure is a divergence too
            answers = f"raised {type(exc).__name__}: {exc}"
        if answers != got.deliveries:
            shadow.in_step = False
            self.diverged += 1
            self.first_divergence = self.first_divergence or _shown(entry, args, answers, got.deliveries)

    def note(self, entry: str, args: tuple[Any, ...], expected: Any, got: Any) -> None:
        self.infected += 1
        self.by_entry[entry] = self.by_entry.get(entry, 0) + 1
        if getattr(expected, "deliveries", None) != getattr(got, "deliveries", None):
            self.in_answers += 1
        self.first = self.first or _shown(entry, args, expected, got)


_ACTIVE: list[InfectionLog] = []


@contextmanager
def probing(log: InfectionLog) -> Iterator[InfectionLog]:
    """While inside, `probed` wraps mutant coordinators and reports to ``log``."""
    _ACTIVE.append(log)
    try:
        yield log
    finally:
        _ACTIVE.remove(log)


def reference_class(cls: type) -> type:
    """The model class a mutant class derives from: the first of its bases defined in ``model``."""
    for base in cls.__mro__:
        if base.__module__.split(".")[0] == "model":
            return base
    return cls


def probed(cls: type) -> type:
    """``cls`` itself when nothing probes or it is a model class; else a subclass that compares each
    outermost call with the reference coordinator's (module docstring)."""
    if not _ACTIVE or reference_class(cls) is cls:
        return cls
    log = _ACTIVE[-1]
    entries = {
        name: _wrap(name, getattr(cls, name), log)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and _takes_state(member)
    }
    return type(f"Probed{cls.__name__}", (cls,), entries)


def _takes_state(function: Callable[..., Any]) -> bool:
    params = list(inspect.signature(function).parameters)
    return len(params) >= 2 and params[1] == "state"


def _reference(coordinator: Any) -> Any:
    """A deep copy of ``coordinator`` (its chooser included) with every mutant part, the
    coordinator and the coordinators it holds, turned back into its model class."""
    ref = copy.deepcopy(coordinator)
    for obj in (ref, *vars(ref).values()):
        if hasattr(obj, "__dict__") and not isinstance(obj, type):
            model_cls = reference_class(type(obj))
            if model_cls is not type(obj):
                obj.__class__ = model_cls
    return ref


def _chooser_state(coordinator: Any) -> dict[str, Any] | None:
    """A copy of what the coordinator's chooser holds now. The shadow draws what the mutant's
    chooser would draw at this call: the harness draws from the same chooser between coordinator
    calls (the mixed world does), so the shadow's is set to it before each call, in place, so that
    the coordinators the shadow holds keep sharing it."""
    chooser = getattr(coordinator, "chooser", None)
    return copy.deepcopy(vars(chooser)) if chooser is not None and hasattr(chooser, "__dict__") else None


def _wrap(entry: str, impl: Callable[..., Any], log: InfectionLog) -> Callable[..., Any]:
    def probe(self: Any, state: Any, *args: Any, **kwargs: Any) -> Any:
        if log.depth:  # a rule called by another rule: judged with its caller
            return impl(self, state, *args, **kwargs)
        log.shadow(self, state)
        chooser_before = _chooser_state(self)
        ref, ref_state = _reference(self), copy.deepcopy(state)
        log.depth += 1
        try:
            try:
                expected: Any = getattr(ref, entry)(ref_state, *args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the reference's failure is a difference too
                expected = f"raised {type(exc).__name__}: {exc}"
            got = impl(self, state, *args, **kwargs)
            log.compare_shadow(self, entry, args, kwargs, got, chooser_before)
        finally:
            log.depth -= 1
        log.calls += 1
        if expected != got or ref_state != state:
            log.note(entry, args, expected, got if expected != got else f"state differs after {got!r}")
        return got

    probe.__name__ = entry
    return probe


def _shown(entry: str, args: tuple[Any, ...], reference: Any, mutant: Any) -> dict[str, str]:
    return {
        "entry": entry,
        "input": _short(args[0] if args else None),
        "reference": _short(reference),
        "mutant": _short(mutant),
    }


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 2 * SHOWN else f"{text[:SHOWN]} ... {text[-SHOWN:]}"


__all__ = ["InfectionLog", "probed", "probing", "reference_class"]
