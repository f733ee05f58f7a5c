"""Known deviations: Apache Kafka behaviours the model keeps although they break a protocol promise.

The model is faithful to Apache Kafka (kafka-compat), so where Kafka breaks a promise the model
breaks it too, and the promise's invariant fires on the model itself. Such a violation is not a
finding against the target under test when it is *explained*: the step that broke the promise was
tagged by the model when it happened (a world's ``deviations``: pairs of deviation id and subject),
and the deviation's pure ``explains`` predicate shows that the violation is nothing but that
step's consequence. Anything else the invariant reports still fails the run.

Each entry names the promise, the Kafka behaviour and its public record (JIRA, pull request or the
project's own finding with a replayable trace); docs/known-deviations.md lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Explains = Callable[[Any], bool]


@dataclass(frozen=True)
class KnownDeviation:
    id: str
    #: the promise it breaks (an invariant id of `model.invariants`)
    invariant: str
    title: str
    #: public sources (JIRA, pull request, KIP) and the project's finding report
    sources: tuple[str, ...]
    finding: str
    explains: Explains
    #: further promises the same behaviour breaks (``explains`` judges each of them)
    also: tuple[str, ...] = ()

    def breaks(self, invariant_id: str) -> bool:
        return invariant_id == self.invariant or invariant_id in self.also


REGISTRY: dict[str, KnownDeviation] = {}


def known_deviation(
    dev_id: str,
    invariant: str,
    title: str,
    sources: tuple[str, ...],
    finding: str,
    also: tuple[str, ...] = (),
) -> Callable[[Explains], Explains]:
    """Register ``fn(observation) -> bool`` as the test that ``invariant``'s violation at this
    observation is explained by deviation ``dev_id`` alone."""

    def register(fn: Explains) -> Explains:
        if dev_id in REGISTRY:
            raise ValueError(f"known deviation {dev_id} registered twice")
        REGISTRY[dev_id] = KnownDeviation(dev_id, invariant, title, sources, finding, fn, also)
        return fn

    return register


def tagged(world: Any, dev_id: str) -> frozenset[str]:
    """The subjects ``world`` carries a ``dev_id`` tag for."""
    return frozenset(s for d, s in getattr(world, "deviations", ()) if d == dev_id)


def explain(invariant_id: str, observation: Any) -> KnownDeviation | None:
    """The known deviation that explains ``invariant_id``'s violation at ``observation``, if any."""
    load_all()
    world = getattr(observation, "after", None)
    if not getattr(world, "deviations", ()):
        return None
    for dev in REGISTRY.values():
        if dev.breaks(invariant_id) and tagged(world, dev.id) and dev.explains(observation):
            return dev
    return None


def load_all() -> dict[str, KnownDeviation]:
    """Import every module that registers known deviations."""
    import importlib

    for name in ("model.classic.deviations", "model.consumer.deviations"):
        importlib.import_module(name)
    return REGISTRY
