"""The invariant registry: every invariant is one pure predicate, registered once (docs/invariants.md).

A predicate takes an *observation* of one step (what the protocol package defines: the world before,
the event, the deliveries, the world after) and returns the list of violation messages (empty =
holds). Kinds:

* ``safety``: a property of the world after the step;
* ``transition``: a property of (before, event, after);
* ``liveness``: bounded liveness on the virtual clock (a deadline that has passed without the
  protocol acting is a violation), so it is still a predicate over one observation;
* ``sometimes``: not a violation check; returns a non-empty list when the interesting thing
  happened at this step. A run in which a ``sometimes`` entry never fires is vacuous.

`specs/invariants.yaml` declares the same ids with statement, source and checkers; the loader in
`conformance.specs` fails when the YAML and this registry disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from model.invariant_reads import check_paths

Kind = Literal["safety", "transition", "liveness", "sometimes"]
KINDS: tuple[str, ...] = ("safety", "transition", "liveness", "sometimes")
Predicate = Callable[[Any], Iterable[str]]


@dataclass(frozen=True)
class Invariant:
    id: str
    kind: Kind
    protocol: str
    predicate: Predicate
    summary: str
    #: the observation paths the predicate reads (`model.invariant_reads`); None: not declared,
    #: checked on every step
    reads: tuple[str, ...] | None = None
    #: a cheap test the observation passes whenever the predicate has something to say: where it
    #: fails, the predicate yields nothing (`model.invariant_gates`); None: no such test
    when: Callable[[Any], bool] | None = None

    def check(self, observation: Any) -> list[str]:
        return list(self.predicate(observation))


REGISTRY: dict[str, Invariant] = {}


def invariant(
    inv_id: str,
    kind: Kind,
    protocol: str,
    reads: Iterable[str] | None = None,
    when: Callable[[Any], bool] | None = None,
) -> Callable[[Predicate], Predicate]:
    """Register ``fn`` as the one implementation of ``inv_id``. ``reads`` (the observation paths it
    reads) and ``when`` (a test it needs to pass to yield anything) let a checker skip it where it
    cannot have changed its mind or cannot say anything (`model.invariant_reads`)."""
    paths = None if reads is None else check_paths(reads)

    def register(fn: Predicate) -> Predicate:
        if inv_id in REGISTRY:
            raise ValueError(f"invariant {inv_id} registered twice")
        if kind not in KINDS:
            raise ValueError(f"invariant {inv_id}: unknown kind {kind}")
        summary = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        REGISTRY[inv_id] = Invariant(inv_id, kind, protocol, fn, summary, paths, when)
        return fn

    return register


def for_protocol(protocol: str, kinds: Iterable[str] = KINDS) -> list[Invariant]:
    """Invariants of one protocol, in id order (a stable order keeps traces byte-identical)."""
    wanted = set(kinds)
    return sorted(
        (inv for inv in REGISTRY.values() if inv.protocol == protocol and inv.kind in wanted),
        key=lambda inv: inv.id,
    )


def load_all() -> dict[str, Invariant]:
    """Import every module that registers invariants and return the registry."""
    import importlib

    for name in (
        "model.classic.invariants",
        "model.classic.progress_invariants",
        "model.consumer.invariants",
        "model.consumer.progress_invariants",
        "model.assignors.invariants",
        "model.mixed.invariants",
        "model.mixed.promise_invariants",
        "model.classic.response_invariants",  # added by the kill matrix (docs/mutants.md)
        "model.classic.promise_invariants",
        "model.classic.timer_invariants",
        "model.classic.stray_invariants",
        "model.consumer.client_invariants",  # added by the kill matrix
        "model.consumer.promise_invariants",
        "model.consumer.subscription_invariants",
        "model.consumer.wire_promises",
    ):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a protocol package not built yet
            if exc.name is None or not name.startswith(exc.name):
                raise
    return REGISTRY
