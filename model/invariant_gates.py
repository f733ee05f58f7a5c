"""``when`` tests decided by the types a step carries, so a checker can decide them once per kind of
step instead of once per invariant (`conformance.engine.reuse`).

A gate asks of a step its event's type, the type of the request the event carries (if any) and the
types of the responses it delivered (`signature`). Every test made here is ``gate.passes`` of the
step's signature, so the checker's shortcut (the verdict per signature, kept) and the test itself
cannot disagree. Tests that look at values, not types, stay plain functions
(`model.invariant_reads.changed`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Signature = tuple[type, type, frozenset[type]]


def signature(obs: Any) -> Signature:
    """The types a gate reads: the event's, its request's (NoneType without one) and the responses'."""
    ev = obs.event
    return (
        type(ev),
        type(getattr(ev, "request", None)),
        frozenset([type(d.response) for d in obs.deliveries]),
    )


@dataclass(frozen=True)
class Gate:
    """The step's event is one of ``events`` and none of ``unless``; it carries one of ``requests``
    (None: any); it delivered one of ``responses`` (None: whatever it delivered, nothing included)."""

    events: tuple[type, ...] = (object,)
    requests: tuple[type, ...] | None = None
    responses: tuple[type, ...] | None = None
    unless: tuple[type, ...] = ()

    def passes(self, sig: Signature) -> bool:
        event, request, responses = sig
        if not issubclass(event, self.events) or (self.unless and issubclass(event, self.unless)):
            return False
        if self.requests is not None and not issubclass(request, self.requests):
            return False
        return self.responses is None or any(issubclass(t, self.responses) for t in responses)

    def test(self, name: str) -> Callable[[Any], bool]:
        """The ``when`` test of this gate, carrying it as ``test.gate``."""

        def test(obs: Any) -> bool:
            return self.passes(signature(obs))

        test.__qualname__ = test.__name__ = name
        test.gate = self  # type: ignore[attr-defined]
        return test


def _names(types: tuple[type, ...]) -> str:
    return ", ".join(t.__name__ for t in types)


def on(*events: type) -> Callable[[Any], bool]:
    """The step's event is one of ``events`` (the predicate returns at once otherwise)."""
    return Gate(events=events).test(f"on({_names(events)})")


def sent(event: type, *requests: type) -> Callable[[Any], bool]:
    """The step's event is an ``event`` carrying one of ``requests`` (for predicates that judge the
    answer to one kind of request)."""
    return Gate(events=(event,), requests=requests).test(f"sent({_names(requests)})")


def answered(*responses: type, unless: tuple[type, ...] = ()) -> Callable[[Any], bool]:
    """The step delivered one of ``responses`` and its event is none of ``unless`` (for predicates
    that judge only answers of those kinds)."""
    return Gate(responses=responses, unless=unless).test(f"answered({_names(responses)})")


#: the step delivered a response (the predicate reads only the deliveries)
delivered = Gate(responses=(object,)).test("delivered")
