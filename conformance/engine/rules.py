"""Time and fault rules the classic and KIP-848 consumer machines share, as mixins.

A host machine has a simulator ``sim`` (None before set-up; ``ready`` once it exists) that offers
``advance(ms)``, ``stall(name, stalled)``, ``lose_response(name)``, ``failover()`` and, for the
wire faults, ``cut_connection``, ``duplicate_request``, ``delay_request``, ``release`` and the
names ``held`` on the wire; and the methods ``client(i)`` (member i, round robin),
``observe(obs, what)`` and ``note(text)``. How a step reads in the steps list is the host's
`Wording`. The wire-fault rules run only under the `faults` profile (`bind` adds the mixin), so
that the other profiles keep their rule sets and each seed its draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from conformance.engine.machine import per_run

#: member indexes a rule draws (taken modulo the group's size)
MEMBER = st.integers(0, 7)


@dataclass(frozen=True)
class Wording:
    """How the shared rules' steps read (``{name}``: the member; ``{ms}``: the time step)."""

    advance: str
    lost: str
    cut: str
    duplicated: str
    delayed: str
    released: str


def _ready(machine: Any) -> bool:
    return bool(machine.ready)


class FaultHost:
    """What the shared rules need of their machine (module docstring); the defaults suit a
    simulator whose faults each return one observation (the classic one)."""

    sim: Any
    wording: Wording
    client: Callable[[int], str]
    observe: Callable[..., None]

    @property
    def ready(self) -> bool:
        return self.sim is not None

    def record_fault(self, result: Any, what: str) -> None:
        """What a lost response, cut connection or duplicated request returned, observed."""
        self.observe(result, what)

    def before_failover(self) -> bool:
        """Whatever must happen before a coordinator failover; False skips it."""
        return True


class TimeRules(FaultHost):
    """Time passes (steps from the run's timing: a real clock takes shorter ones); a member stalls
    (its process pauses: no heartbeats, no requests) or resumes."""

    @per_run(lambda settings, timing: {"ms": st.sampled_from(timing.advances)}, precondition=_ready)
    def advance(self, ms: int) -> None:
        assert self.sim is not None
        self.observe(self.sim.advance(ms), self.wording.advance.format(ms=ms))

    @precondition(_ready)
    @rule(i=MEMBER, stalled=st.booleans())
    def stall(self, i: int, stalled: bool) -> None:
        assert self.sim is not None
        name = self.client(i)
        self.observe(self.sim.stall(name, stalled), f"{name} {'stalls' if stalled else 'resumes'}")


class FaultRules(FaultHost):
    """A member's next response is lost after the coordinator applied its request; the coordinator
    fails over (when the target can restart it)."""

    @precondition(_ready)
    @rule(i=MEMBER)
    def lose_response(self, i: int) -> None:
        assert self.sim is not None
        name = self.client(i)
        self.record_fault(self.sim.lose_response(name), self.wording.lost.format(name=name))

    @precondition(lambda self: self.ready and getattr(self.sim.port, "supports_failover", True))
    @rule()
    def failover(self) -> None:
        assert self.sim is not None
        if self.before_failover():
            self.observe(self.sim.failover(), "coordinator failover")


class WireFaultRules(FaultHost):
    """Profile `faults`: a member's connection is cut under its request, its next request is sent
    twice or held on the wire, and a held request arrives later (model/classic/sim.py,
    model/consumer/sim.py; on a real target the fault proxy, conformance/wire/proxy.py)."""

    @precondition(_ready)
    @rule(i=MEMBER)
    def cut_connection(self, i: int) -> None:
        assert self.sim is not None
        name = self.client(i)
        self.record_fault(self.sim.cut_connection(name), self.wording.cut.format(name=name))

    @precondition(_ready)
    @rule(i=MEMBER)
    def duplicate_request(self, i: int) -> None:
        assert self.sim is not None
        name = self.client(i)
        self.record_fault(self.sim.duplicate_request(name), self.wording.duplicated.format(name=name))

    @precondition(_ready)
    @rule(i=MEMBER)
    def delay_request(self, i: int) -> None:
        assert self.sim is not None
        name = self.client(i)
        self.observe(self.sim.delay_request(name), self.wording.delayed.format(name=name))

    @precondition(lambda self: self.ready and bool(self.sim.held))
    @rule(i=MEMBER)
    def release(self, i: int) -> None:
        """The held request arrives, after what others sent and the time that passed meanwhile."""
        assert self.sim is not None
        held = sorted(self.sim.held)
        name = held[i % len(held)]
        self.observe(self.sim.release(name), self.wording.released.format(name=name))
