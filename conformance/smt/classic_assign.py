"""Classic assignment path as z3 formulas: what the coordinator stores and what consumers are told.

Extends the group abstraction of `conformance.smt.classic` (generations, join completion, sync,
leave, failover) with M x P bit-vectors of partitions, one topic of P partitions:

* ``asg[i]``: the assignment the coordinator stores for member slot i (the model's
  ``ClassicGroupMember.assignment``). The leader's SyncGroup in CompletingRebalance installs a map
  for every member: members missing from it get an empty assignment, entries for non-members are
  ignored (docs/protocol-reference.md#a4: GMM `classicGroupSyncToClassicGroup` L5684 at Kafka
  4.0.0, commit 985bc99521dd22bbf620591b8db8613c54f596b2; `model.classic.coordinator.install_assignment`).
  The map itself is any map that gives each partition to at most one member: the assignor's contract
  (`client.assignment_single_owner`, docs/protocol-reference.md#c4), assumed here, not proved.
  A rebalance started from CompletingRebalance clears every stored assignment (GMM
  `resetAndPropagateAssignmentWithError` L5317, docs/protocol-reference.md#a1); a new member starts
  with none; a member removed loses its own.
* ``pasg[i]``: the assignment in the last persisted GroupMetadata, written with the install; a
  failover loads it ("Handling Coordinator Failures", docs/protocol-reference.md#client-side-assignment;
  GMM L4343 replay).
* ``dgen[i]``, ``dasg[i]``: the last SyncGroup answer slot i received (its generation, -1 for
  none, and its partitions). A consumer's SyncGroup carries the generation of its last JoinGroup
  answer, and the registry's `classic.single_owner_consumer` groups deliveries by that generation
  (`model.classic.snapshot.with_delivery`). The coordinator answers with the stored assignment when the
  leader's sync installs it or when the group is Stable (docs/protocol-reference.md#a4); a follower
  parked in CompletingRebalance is answered at the install, which is modelled as its sync right
  after the install (the same answer and generation). Only the last answer per slot is kept:
  answers happen in non-decreasing generation order while the generation check holds (a failover
  falls back to the persisted generation, which every answer's install persisted), so the older
  rows of the model's table never change again (lemma ``classic.deliveries_persisted``).

KIP-429 (docs/protocol-reference.md#c5) does not enter either invariant: both are about one
generation, and a cooperative assignment is still a single-owner map; moving a partition across
generations is `client.cooperative_no_direct_transfer` (`conformance.smt.claims`).

Variants: ``install_missing=keep`` (a member left out of the leader's map keeps its old assignment)
and ``sync_generation_check=false`` (a SyncGroup of another generation is accepted and answered).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import z3

from conformance.smt import classic as C

NONE_GEN = -1


@dataclass(frozen=True)
class AGroup:
    g: C.Group
    asg: tuple[Any, ...]
    pasg: tuple[Any, ...]
    dgen: tuple[Any, ...]
    dasg: tuple[Any, ...]

    @property
    def size(self) -> int:
        return self.g.size


@dataclass
class AStep:
    guard: Any
    post: AGroup
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)


def fresh(tag: str, members: int, partitions: int) -> AGroup:
    def bvs(name: str) -> tuple[Any, ...]:
        return tuple(z3.BitVec(f"{tag}_{name}{i}", partitions) for i in range(members))

    return AGroup(
        C.fresh_group(tag, members),
        bvs("asg"),
        bvs("pasg"),
        tuple(z3.Int(f"{tag}_dgen{i}") for i in range(members)),
        bvs("dasg"),
    )


def _zero(a: AGroup) -> Any:
    return z3.BitVecVal(0, a.asg[0].size())


def agroup_eq(a: AGroup, b: AGroup) -> Any:
    pairs = list(zip(a.asg + a.pasg + a.dgen + a.dasg, b.asg + b.pasg + b.dgen + b.dasg, strict=True))
    return z3.And(C.group_eq(a.g, b.g), *[x == y for x, y in pairs])


def initial(a: AGroup) -> Any:
    z = _zero(a)
    out = [C.initial(a.g)]
    out += [x == z for x in a.asg + a.pasg + a.dasg] + [d == NONE_GEN for d in a.dgen]
    return z3.And(out)


def _disjoint(sets: tuple[Any, ...], live: tuple[Any, ...]) -> Any:
    n = len(sets)
    out = [
        z3.Implies(z3.And(live[i], live[j]), sets[i] & sets[j] == 0)
        for i in range(n)
        for j in range(i + 1, n)
    ]
    return z3.And(out) if out else z3.BoolVal(True)


def _carry(pre: AGroup, post: C.Group) -> tuple[Any, ...]:
    """Stored assignments after a join, leave or timer: kept for members that stay, none for new or
    removed ones, all cleared when the rebalance starts from CompletingRebalance (GMM L5317)."""
    g, z = pre.g, _zero(pre)
    reset = z3.And(g.state == C.COMPLETING, z3.Or(post.state != C.COMPLETING, post.gen != g.gen))
    return tuple(
        z3.If(z3.And(post.present[i], g.present[i], z3.Not(reset)), pre.asg[i], z) for i in range(pre.size)
    )


def _group_step(pre: AGroup, st: C.Step) -> AStep:
    """Lift a classic join, leave or timer step: persistence happens only when the join phase ends
    in Empty (a GroupMetadata without members, GMM L4887)."""
    to_empty = z3.And(st.post.state == C.EMPTY, st.post.gen != pre.g.gen)
    z = _zero(pre)
    pasg = tuple(z3.If(to_empty, z, p) for p in pre.pasg)
    post = AGroup(st.post, _carry(pre, st.post), pasg, pre.dgen, pre.dasg)
    return AStep(st.guard, post, dict(st.inputs), dict(st.outputs))


def step_sync(pre: AGroup, i: int, tag: str, variant: dict[str, str]) -> AStep:
    """SyncGroup from slot i with generation ``r``: the leader's install (a map ``m`` with
    ``covered`` entries), then an answer to slot i if the group is (now) Stable."""
    check = variant.get("sync_generation_check", "true") == "true"
    keep = variant.get("install_missing", "empty") == "keep"
    st = C.step_sync(pre.g, i, tag, check)
    r = st.inputs["generation"]
    installs = st.outputs["installs"]
    n, g, z = pre.size, pre.g, _zero(pre)
    width = pre.asg[0].size()
    m = tuple(z3.BitVec(f"{tag}_map{k}", width) for k in range(n))
    covered = tuple(z3.Bool(f"{tag}_covered{k}") for k in range(n))
    missing = pre.asg if keep else tuple(z for _ in range(n))
    installed = tuple(z3.If(g.present[k], z3.If(covered[k], m[k], missing[k]), pre.asg[k]) for k in range(n))
    asg = tuple(z3.If(installs, x, y) for x, y in zip(installed, pre.asg, strict=True))
    pasg = tuple(z3.If(installs, x, y) for x, y in zip(asg, pre.pasg, strict=True))
    valid = z3.And(g.present[i], g.state != C.EMPTY)
    if check:
        valid = z3.And(valid, r == g.gen)
    answers = z3.And(valid, z3.Or(g.state == C.STABLE, installs))
    dgen = tuple(z3.If(answers, r, d) if k == i else d for k, d in enumerate(pre.dgen))
    dasg = tuple(z3.If(answers, asg[k], d) if k == i else d for k, d in enumerate(pre.dasg))
    contract = _disjoint(m, tuple(z3.BoolVal(True) for _ in m))  # the assignor's single-owner map
    inputs = dict(st.inputs)
    inputs.update({f"map{k}": x for k, x in enumerate(m)})
    inputs.update({f"covered{k}": x for k, x in enumerate(covered)})
    outputs = dict(st.outputs)
    outputs["answers"] = answers
    return AStep(z3.And(st.guard, contract), AGroup(st.post, asg, pasg, dgen, dasg), inputs, outputs)


def step_failover(pre: AGroup, tag: str) -> AStep:
    """A new coordinator loads the last GroupMetadata, with its members' assignments."""
    st = C.step_failover(pre.g, tag)
    z = _zero(pre)
    asg = tuple(z3.If(z3.And(pre.g.pexists, p), x, z) for p, x in zip(pre.g.pmembers, pre.pasg, strict=True))
    return AStep(st.guard, AGroup(st.post, asg, pre.pasg, pre.dgen, pre.dasg), {}, dict(st.outputs))


ATransitionFn = Callable[[AGroup, int, str, dict[str, str]], AStep]

TRANSITIONS: dict[str, ATransitionFn] = {
    "join": lambda a, i, tag, v: _group_step(a, C.step_join(a.g, i, tag)),
    "timer": lambda a, i, tag, v: _group_step(a, C.step_timer(a.g, tag)),
    "sync": step_sync,
    "leave": lambda a, i, tag, v: _group_step(a, C.step_leave(a.g, i, tag)),
    "failover": lambda a, i, tag, v: step_failover(a, tag),
}


# ----------------------------------------------------------------------------- invariants and lemmas


def single_owner_coordinator(a: AGroup) -> Any:
    """classic.single_owner_coordinator, in every state (the registry's predicate looks only at
    Stable and CompletingRebalance groups): no partition is stored for two members."""
    return _disjoint(a.asg, a.g.present)


def single_owner_consumer(a: AGroup) -> Any:
    """classic.single_owner_consumer over the last answer per slot: two slots told the same
    generation were told disjoint partitions."""
    n = a.size
    out = [
        z3.Implies(a.dgen[i] == a.dgen[j], a.dasg[i] & a.dasg[j] == 0)
        for i in range(n)
        for j in range(i + 1, n)
    ]
    return z3.And(out) if out else z3.BoolVal(True)


def persisted_disjoint(a: AGroup) -> Any:
    """The persisted GroupMetadata gives no partition to two of its members."""
    return _disjoint(a.pasg, a.g.pmembers)


def deliveries_persisted(a: AGroup) -> Any:
    """Every answer's generation is at most the persisted one, and an answer of the persisted
    generation is that slot's persisted assignment (answers follow the install that persisted it)."""
    g = a.g
    out = []
    for d, x, p, pm in zip(a.dgen, a.dasg, a.pasg, g.pmembers, strict=True):
        out.append(z3.And(d >= NONE_GEN, d <= g.pgen))
        out.append(z3.Implies(z3.And(d >= 0, d == g.pgen), z3.And(g.pexists, pm, x == p)))
    return z3.And(out)


def stable_is_persisted(a: AGroup) -> Any:
    """A Stable group is its last GroupMetadata: same generation, members and assignments."""
    g = a.g
    same = [
        z3.And(p == pm, z3.Implies(p, x == y))
        for p, pm, x, y in zip(g.present, g.pmembers, a.asg, a.pasg, strict=True)
    ]
    return z3.Implies(g.state == C.STABLE, z3.And(g.pexists, g.pgen == g.gen, *same))


def completing_ahead(a: AGroup) -> Any:
    """A CompletingRebalance generation has not been persisted yet (join completion bumped it)."""
    return z3.Implies(a.g.state == C.COMPLETING, a.g.pgen < a.g.gen)


INVARIANT_PREDICATES: dict[str, Callable[[AGroup], Any]] = {
    "classic.single_owner_coordinator": single_owner_coordinator,
    "classic.single_owner_consumer": single_owner_consumer,
}

LEMMAS: dict[str, Callable[[AGroup], Any]] = {
    "classic.persisted_behind": lambda a: C.persisted_behind(a.g),
    "classic.persisted_single_owner": persisted_disjoint,
    "classic.deliveries_persisted": deliveries_persisted,
    "classic.stable_is_persisted": stable_is_persisted,
    "classic.completing_ahead": completing_ahead,
}
"""Strengthening lemmas of this encoding; ``classic.persisted_behind`` is the group encoding's."""
