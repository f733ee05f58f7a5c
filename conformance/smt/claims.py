"""Client-side assignor rules as z3 formulas: KIP-341 claim resolution and the KIP-429 adjustment.

M members subscribe to one topic with P partitions; partition sets are bit-vectors of width P.

* Claim resolution (docs/protocol-reference.md#c3; ASA `allSubscriptionsEqual` L132-215; model
  `model.assignors.sticky.resolve_claims`): a claimed partition is owned by its unique claimant of the
  highest generation; a tie at the top voids it (PR #10985). Variant ``sticky=v0`` is the
  pre-KIP-341 leader, which takes every claim as current ownership (`sticky_core(resolve=False)`).
* Adjustment (docs/protocol-reference.md#c5; CSA `adjustAssignment` L123, `computePartitionsTransferringOwnership`
  L130; model `model.assignors.cooperative_sticky.held_back`): from each member's new assignment the
  leader removes every partition it did not own that another member still reports as owned. The
  sticky core before it is abstracted as *any* assignment that gives every partition to exactly one
  member. Variant ``cooperative_adjust=false`` skips the adjustment (KAFKA-14639).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import z3

from conformance.smt.kip848_state import bit, full, union, zero


def popcount(s: Any, width: int) -> Any:
    return z3.Sum([z3.If(bit(s, p), 1, 0) for p in range(width)])


# ----------------------------------------------------------------------------- KIP-341


@dataclass(frozen=True)
class Claims:
    claims: tuple[Any, ...]  # bit-vectors
    generations: tuple[Any, ...]  # ints

    @property
    def width(self) -> int:
        return int(self.claims[0].size())


def fresh_claims(members: int, partitions: int) -> Claims:
    return Claims(
        tuple(z3.BitVec(f"claim{i}", partitions) for i in range(members)),
        tuple(z3.Int(f"generation{i}") for i in range(members)),
    )


def claims_domain(c: Claims) -> Any:
    """Generations are -1 (none) or a real generation (KIP-341: DEFAULT_GENERATION = -1)."""
    return z3.And([g >= -1 for g in c.generations])


def resolved_owners(c: Claims, sticky: str) -> tuple[Any, ...]:
    """Per member, the claimed partitions the leader treats as its current ownership."""
    if sticky == "v0":
        return c.claims
    owners = []
    for i, (mine, gen) in enumerate(zip(c.claims, c.generations, strict=True)):
        beaten = union(
            [
                z3.If(other >= gen, c.claims[j], zero(c.width))
                for j, other in enumerate(c.generations)
                if j != i
            ],
            c.width,
        )
        owners.append(mine & ~beaten)
    return tuple(owners)


def sticky_stale_claim_loses(c: Claims, owners: Sequence[Any]) -> Any:
    """client.sticky_stale_claim_loses, at claim resolution: a claim on a partition that another
    member claims with a strictly higher generation never becomes ownership (docs/protocol-reference.md#c3, #e30)."""
    out = []
    for j, o in enumerate(owners):
        for i in range(len(owners)):
            if i != j:
                out.append(z3.Implies(c.generations[j] < c.generations[i], o & c.claims[i] == 0))
    return z3.And(out)


def survives_balancing(c: Claims) -> Any:
    """Witness shaping for refutations: every partition claimed and claim sizes within one of each
    other, so the sticky core's fill and balance passes move nothing and a double ownership from
    resolution reaches the final assignment (`model.assignors.sticky._Core`); distinct generations,
    so no top claim is voided by a tie."""
    w = c.width
    sizes = [popcount(x, w) for x in c.claims]
    out = [union(list(c.claims), w) == full(w), z3.Distinct(*c.generations)]
    out += [z3.And(a - b <= 1, b - a <= 1) for a in sizes for b in sizes]
    return z3.And(out)


def survives_balancing_with_fresh_leader(c: Claims) -> Any:
    """As `survives_balancing`, with member 0 a fresh leader that claims nothing (the witness is
    played as a classic run, `conformance.smt.claims_trace`): the others' claims cover every
    partition within one of each other, the balance pass hands the leader some of them."""
    w = c.width
    sizes = [popcount(x, w) for x in c.claims[1:]]
    out = [c.claims[0] == 0, union(list(c.claims), w) == full(w), z3.Distinct(*c.generations)]
    out += [z3.And(a - b <= 1, b - a <= 1) for a in sizes for b in sizes]
    return z3.And(out)


# ----------------------------------------------------------------------------- KIP-429


@dataclass(frozen=True)
class Cooperative:
    owned: tuple[Any, ...]
    core: tuple[Any, ...]


def fresh_cooperative(members: int, partitions: int) -> Cooperative:
    return Cooperative(
        tuple(z3.BitVec(f"owned{i}", partitions) for i in range(members)),
        tuple(z3.BitVec(f"core{i}", partitions) for i in range(members)),
    )


def core_is_assignment(c: Cooperative) -> Any:
    """The sticky core's result: each partition to exactly one member."""
    w = c.core[0].size()
    out = [union(list(c.core), w) == full(w)]
    out += [c.core[i] & c.core[j] == 0 for i in range(len(c.core)) for j in range(i + 1, len(c.core))]
    return z3.And(out)


def adjusted(c: Cooperative, adjust: bool) -> tuple[Any, ...]:
    if not adjust:
        return c.core
    w = c.core[0].size()
    out = []
    for i, mine in enumerate(c.core):
        others = union([o for j, o in enumerate(c.owned) if j != i], w)
        out.append(mine & ~(~c.owned[i] & others))
    return tuple(out)


def cooperative_no_direct_transfer(c: Cooperative, final: Sequence[Any]) -> Any:
    """client.cooperative_no_direct_transfer: no partition is added to one member while another
    member that reported owning it loses it (CC `validateCooperativeAssignment` L683-708)."""
    out = []
    for i, f in enumerate(final):
        added = f & ~c.owned[i]
        for j, g in enumerate(final):
            if j != i:
                out.append(added & (c.owned[j] & ~g) == 0)
    return z3.And(out)


def forces_a_move(c: Cooperative) -> Any:
    """Witness shaping for refutations: owned sets partition the topic and two differ in size by at
    least two, so any balanced assignment (as the model's sticky core returns for equal
    subscriptions) must move a partition away from a member that reported it."""
    w = c.core[0].size()
    n = len(c.owned)
    sizes = [popcount(x, w) for x in c.owned]
    core_sizes = [popcount(x, w) for x in c.core]
    out = [union(list(c.owned), w) == full(w)]
    out += [c.owned[i] & c.owned[j] == 0 for i in range(n) for j in range(i + 1, n)]
    out.append(z3.Or([sizes[i] - sizes[j] >= 2 for i in range(n) for j in range(n) if i != j]))
    out += [z3.And(a - b <= 1, b - a <= 1) for a in core_sizes for b in core_sizes]
    return z3.And(out)
