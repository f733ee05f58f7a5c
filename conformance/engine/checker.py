"""Runs the registry's predicates over observations (one definition, reused everywhere: docs/invariants.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from model.invariants import Invariant, for_protocol, load_all
from model.observation import Observation

CHECKED_KINDS = ("safety", "transition", "liveness")


@dataclass(frozen=True)
class Violation:
    invariant: str
    message: str
    step: int


@dataclass
class Checker:
    """Checks every invariant of `protocol` after each step; counts `sometimes` hits across runs."""

    protocol: str
    invariants: list[Invariant] = field(default_factory=list)
    sometimes: list[Invariant] = field(default_factory=list)
    client_invariants: list[Invariant] = field(default_factory=list)
    #: mixed groups (docs/protocol-reference.md#b13): classic invariants that read only the group, run on each classic group's view
    classic_views: list[Invariant] = field(default_factory=list)
    hits: dict[str, int] = field(default_factory=dict)
    #: what the last `check` ran and which `sometimes` entries it saw (for trace step lines)
    last_checked: tuple[str, ...] = ()
    last_sometimes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        load_all()
        self.invariants = for_protocol(self.protocol, CHECKED_KINDS)
        self.sometimes = for_protocol(self.protocol, ("sometimes",))
        if self.protocol == "classic":
            self.client_invariants = for_protocol("client", CHECKED_KINDS)
        if self.protocol == "mixed":  # consumer members are checked as in consumer groups
            from model.invariants import REGISTRY
            from model.mixed.world import CLASSIC_STATE_INVARIANTS

            self.invariants = for_protocol("consumer", CHECKED_KINDS) + self.invariants
            self.classic_views = [REGISTRY[i] for i in CLASSIC_STATE_INVARIANTS]
        for inv in self.sometimes:
            self.hits.setdefault(inv.id, 0)

    def check(self, obs: Observation[Any], step: int) -> list[Violation]:
        out: list[Violation] = []
        checked = [inv.id for inv in self.invariants]
        seen = []
        for inv in self.invariants:
            out.extend(Violation(inv.id, msg, step) for msg in inv.check(obs))
        if self.classic_views:
            from model.mixed.world import check_invariant

            for inv in self.classic_views:
                checked.append(inv.id)
                out.extend(Violation(inv.id, msg, step) for msg in check_invariant(inv, obs))
        for inv in self.sometimes:
            if any(True for _ in inv.check(obs)):
                self.hits[inv.id] += 1
                seen.append(inv.id)
        if self.client_invariants:
            assignment_obs = client_observation(obs)
            if assignment_obs is not None:
                for inv in self.client_invariants:
                    checked.append(inv.id)
                    out.extend(Violation(inv.id, msg, step) for msg in inv.check(assignment_obs))
        self.last_checked, self.last_sometimes = tuple(checked), tuple(seen)
        return out

    def vacuous(self) -> list[str]:
        """`sometimes` entries that never fired: a run that never did these proves little."""
        return sorted(k for k, n in self.hits.items() if n == 0)


def client_observation(obs: Observation[Any]) -> Any:
    """The leader's assignor run at this step as an AssignmentObservation, if there was one."""
    la = getattr(obs.after, "leader_assignment", None)
    if la is None:
        return None
    from model.assignors import get_assignor
    from model.assignors.invariants import AssignmentObservation
    from model.embedded import Assignment

    rebalance_protocol = get_assignor(la.protocol).rebalance_protocols[0] if la.protocol else "EAGER"

    return AssignmentObservation(
        dict(la.partitions_per_topic),
        dict(la.subscriptions),
        {mid: Assignment(parts) for mid, parts in la.assignments},
        rebalance_protocol,
        la.protocol or "",  # the assignor's name: how its leader reads sticky claims
    )
