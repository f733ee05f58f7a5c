"""What a classic step's coordinator produced, for the invariants that judge answers.

A resumed client is handed the answers buffered while it stalled (a `Stall` event): they were judged
when produced, against the group as it was then, and are not judged again.
"""

from __future__ import annotations

from collections.abc import Callable

from model.classic.sim import Stall
from model.classic.world import ClassicWorld
from model.invariant_gates import answered
from model.observation import Observation
from model.result import Delivery


def produced(obs: Observation[ClassicWorld]) -> tuple[Delivery, ...]:
    """The responses the coordinator produced at this step (none of those replayed on a resume)."""
    return () if isinstance(obs.event, Stall) else tuple(obs.deliveries)


def responded_with(*responses: type) -> Callable[[Observation[ClassicWorld]], bool]:
    """The ``when`` of the invariants that judge only these kinds of the responses in `produced`."""
    return answered(*responses, unless=(Stall,))


#: whether `produced` is not empty: the ``when`` of the invariants that judge only responses
responded = responded_with(object)
