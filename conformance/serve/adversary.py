"""Seeded adversary of the served coordinator (docs/serve.md): which group request meets which fault.

Decisions depend only on the seed and on the order of the group requests served (JoinGroup,
SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, ConsumerGroupHeartbeat), never on the clock, so the
same client behaviour meets the same faults. After every ``gap`` group requests (drawn in
[``every_min``, ``every_max``]) one enabled fault is drawn:

* ``lose``: the request is applied, its answer never sent, the connection closed (what a client
  sees when a coordinator applies a request and the link fails before the answer);
* ``delay``: the answer is held for a drawn 100-1500 ms;
* ``fence``: a member of the request's group is removed (LeaveGroup for a classic member, a leave
  heartbeat, epoch -1, for a KIP-848 member) and must rejoin;
* ``rebalance``: a rebalance is forced (the classic leader's rejoin, which rebalances a Stable group;
  for a KIP-848 group a server-made member joins, which bumps the group epoch, and leaves later);
* ``bump``: epochs move on with no change of assignment: a KIP-848 group's server-made member joins
  and leaves at once (two group-epoch bumps, members move to the new epoch keeping their
  partitions); a classic group gets a ``rebalance`` (a new generation);
* ``failover``: the coordinator reloads from its durable records and every connection is closed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

KINDS = ("lose", "delay", "fence", "rebalance", "bump", "failover")


def parse_kinds(value: str) -> tuple[str, ...]:
    if value == "none":
        return ()
    if value == "all":
        return KINDS
    kinds = tuple(k for k in value.split(",") if k)
    for k in kinds:
        if k not in KINDS:
            raise ValueError(f"--adversary: unknown fault {k!r} (none, all, {', '.join(KINDS)})")
    return kinds


@dataclass(frozen=True)
class Fault:
    kind: str
    delay_ms: int = 0


@dataclass
class Adversary:
    seed: int = 0
    kinds: tuple[str, ...] = ()
    every_min: int = 8
    every_max: int = 20
    rng: random.Random = field(init=False)
    served: int = 0
    next_at: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.every_min <= self.every_max:
            raise ValueError("adversary: need 1 <= every_min <= every_max")
        self.rng = random.Random(self.seed)
        self.next_at = self.rng.randint(self.every_min, self.every_max)

    def on_group_request(self) -> Fault | None:
        """Called once per group request served, in order; the fault for this one, if any."""
        self.served += 1
        if not self.kinds or self.served < self.next_at:
            return None
        self.next_at = self.served + self.rng.randint(self.every_min, self.every_max)
        kind = self.kinds[self.rng.randrange(len(self.kinds))]
        delay = self.rng.randint(100, 1500) if kind == "delay" else 0
        return Fault(kind, delay)
