"""Classic convergence: the liveness promise of the two-phase protocol (docs/invariants.md).

Seed 000 ("Client-side Assignment Proposal", docs/protocol-reference.md#client-side-assignment)
promises that once membership stops changing the group settles into one generation in which every
member holds its share of the subscribed partitions; Vanlightly's TLA+ EventuallyConverges states
the same for KIP-848 (`consumer.eventual_convergence`). Bounded on the virtual clock: the simulator
says when perturbations stopped and the bound (`ClassicSim.quiet`).
"""

from __future__ import annotations

from model.classic.state import GroupState
from model.classic.world import ClassicWorld, ClientSnap
from model.embedded import TopicPartition
from model.invariants import invariant
from model.observation import Observation

Obs = Observation[ClassicWorld]
SETTLED = ("stable",)
GONE = ("fatal", "left")


def _active(world: ClassicWorld) -> list[ClientSnap]:
    return [c for c in world.clients if c.phase not in GONE and c.subscribed]


@invariant(
    "classic.eventual_convergence",
    "liveness",
    "classic",
    reads=(
        "after.clients",
        "after.convergence_bound_ms",
        "after.group",
        "after.quiet_since",
        "after.topics",
        "now",
    ),
)
def eventual_convergence(obs: Obs) -> list[str]:
    """Once perturbations stop for the convergence bound, the group is Stable with exactly the active clients as members, each at the group's generation, and every partition of a subscribed topic is owned by exactly one of them.

    Seed 000 'Phase 2' and 'Handling Coordinator Failures' (docs/protocol-reference.md#client-side-assignment);
    Vanlightly kafka-tlaplus EventuallyConverges (docs/bug-catalogue.md#prior-art). A cooperative
    group needs its second rebalance (KIP-429) inside the bound, which allows for two.
    """
    world = obs.after
    if world.quiet_since is None or world.convergence_bound_ms is None:
        return []
    if obs.now - world.quiet_since < world.convergence_bound_ms:
        return []
    active = _active(world)
    if not active:
        return []
    g = world.group
    if g is None:
        return ["active clients but no group"]
    out: list[str] = []
    if g.state != GroupState.STABLE:
        out.append(f"group {g.state.value} at generation {g.generation} after the bound")
    members = {m.member_id for m in g.members}
    ids = {c.member_id for c in active}
    if members != ids:
        out.append(f"members {sorted(members)} != active clients {sorted(ids)}")
    for c in sorted(active, key=lambda c: c.name):
        if c.phase not in SETTLED or c.generation != g.generation:
            out.append(f"client {c.name} is {c.phase} at generation {c.generation}, group at {g.generation}")
    owners: dict[TopicPartition, list[str]] = {}
    for c in active:
        for tp in c.owned:
            owners.setdefault(tp, []).append(c.name)
    subscribed = {t for c in active for t in c.subscribed}
    for topic, n in world.topics:
        if topic not in subscribed:
            continue
        for p in range(n):
            held = sorted(owners.get((topic, p), []))
            if len(held) != 1:
                out.append(f"{topic}-{p} owned by {held or 'nobody'}")
    return out
