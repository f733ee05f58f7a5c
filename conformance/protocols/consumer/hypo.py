"""One KIP-848 model hypothesis beside a real target (the consumer oracle keeps a list of them).

Besides the model state: which epoch origin its coordinator runs (Kafka 4.0 starts a new group at
epoch 0, 4.3+ at 1: KAFKA-20268), its clock, and what it adopted from the target's answers
(`adoption`): the revealed parts of members' targets it must keep, and kafka-compat notes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from conformance.protocols.consumer.assignment import Pin
from model.consumer.state import ConsumerCoordinatorState


@dataclass
class CHypo:
    """A KIP-848 model hypothesis (module docstring)."""

    state: ConsumerCoordinatorState
    origin: int  # initial_group_epoch of the coordinator this hypothesis runs
    now: int = 0
    #: what the target revealed of members' targets since the assignment epoch ``pin_epoch``
    pins: Mapping[str, Pin] = field(default_factory=dict)
    pin_epoch: int = -1
    adoptions: int = 0
    fired: int = 0
    #: timers of one instant fire in the model's reverse tie order (`ConsumerCoordinator.reverse_ties`)
    ties_reversed: bool = False
    #: what this hypothesis adopted from the target (kafka-compat notes: legal, but not the model's choice)
    notes: tuple[str, ...] = ()

    def copy(self) -> CHypo:
        return dataclasses.replace(self, state=self.state.copy())
