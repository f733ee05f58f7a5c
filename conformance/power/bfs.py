"""The BFS-minimal length of a mutant's counterexample: `groupcheck explore` against the mutant (docs/mutants.md#shrinking).

Breadth-first exploration (the mutant's kit's ``explore``: `groupcheck explore`) finds,
within its bound and op alphabet, a shortest op sequence violating each invariant. For the kill
matrix that is the yardstick for the suite's shrunk counterexample: the ratio shrunk / BFS-minimal
says how far shrinking is from optimal (goal <= 1.25).

The explorer's alphabet is smaller than the stateful machine's: dynamic members with one
configuration, client steps, time, stalls (and, when asked, lost responses, leaves, restarts); no
static members, zombie requests, duplicated joins, failovers or append failures. A mutant whose
fault needs one of those has no BFS-minimal length; `BOUNDS` says which, and why.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.mutants import get_mutant, with_mutant_variants
from conformance.protocols import get_kit


@dataclass(frozen=True)
class Bound:
    """The explore bound for one mutant: members, partitions, depth (ops), op alphabet (None: the
    explorer's default alphabet)."""

    members: int = 2
    partitions: int = 2
    depth: int = 16
    ops: tuple[str, ...] | None = None


OUTSIDE = "outside the explore alphabet"

#: Mutants whose fault the explorer's alphabet cannot reach, and why; every other mutant is explored
#: within `DEFAULT_BOUND` (2 members x 2 partitions, 16 ops: kafka-7026's double assignment needs 15).
BOUNDS: dict[str, Bound | str] = {
    "kafka-12984": Bound(2, 2, 16, ops=("step", "advance", "stall", "resume", "stale_subscription")),
    "kafka-8500": f"{OUTSIDE}: static members (group.instance.id) and a process restart mid-rebalance",
    "kafka-9801": f"{OUTSIDE}: static members (group.instance.id) and a process restart mid-rebalance",
    "kafka-10284": f"{OUTSIDE}: static members and coordinator failover",
    "kafka-8225": f"{OUTSIDE}: static members and requests from a replaced process",
    "forget-persisted-field": f"{OUTSIDE}: coordinator failover",
    "forget-pending-revocation": f"{OUTSIDE}: coordinator failover",  # the consumer failover fault
    "kafka-20983": f"{OUTSIDE}: static members (group.instance.id) and an unsubscribe",
}
DEFAULT_BOUND = Bound()


def bfs_minimal(name: str, *, budget_s: float = 30.0) -> tuple[int | None, str]:
    """(BFS-minimal length in ops of a violation of one of the mutant's expected invariants, note)."""
    mutant = get_mutant(name)
    bound = BOUNDS.get(name, DEFAULT_BOUND)
    if isinstance(bound, str):
        return None, bound
    variants = with_mutant_variants({"mutant": name})
    if variants.get("assignor", "mixed") == "mixed":
        variants["assignor"] = "range"
    result = get_kit(mutant.protocol).require("explore")(
        bound.members,
        bound.partitions,
        depth=bound.depth,
        variants=variants,
        budget_s=budget_s,
        ops=bound.ops,
        cpu_clock=True,
    )
    lengths = [len(f.path) for inv, f in result.found.items() if inv in mutant.expect]
    where = f"{bound.members} members x {bound.partitions} partitions, depth {result.levels_done}"
    if not lengths:
        return None, f"none within {where}" + (" (budget hit)" if result.budget_hit else "")
    return min(lengths), where
