"""Classic-protocol group rules as z3 formulas: generations, join completion, sync and failover.

An abstraction of `model.classic.coordinator.ClassicCoordinator` for one group of M dynamic member
slots (JoinGroup v3, so no KIP-394 round trip): group state (docs/protocol-reference.md#a1), generation, leader, which members
are parked in JoinGroup, the initial-rebalance flags, and the last persisted GroupMetadata
(generation, members, leader). Assignment contents are not tracked; a sync says whether it
*installed* assignments. Each rule below is one request or event of the model:

* ``join``: JoinGroup, new member (empty member id) or rejoin (docs/protocol-reference.md#a3; GMM L4410-4528, L5138, L5208);
* ``timer``: the join-phase timer fires, initial delay (GMM L5277) or rebalance timeout (L5250);
  join completion (L4887, CG `initNextGeneration` L1283) removes members that did not rejoin;
* ``sync``: SyncGroup with any generation (docs/protocol-reference.md#a4; L5684, `validateSyncGroup` L5859): only the
  leader's, for the current generation, in CompletingRebalance installs (and persists);
* ``leave``: LeaveGroup (docs/protocol-reference.md#a6; L6200), then rebalance or join completion;
* ``failover``: a new coordinator loads the last persisted GroupMetadata (GMM L4343 replay): the
  persisted generation, members and leader, Stable (or Empty).

Where Kafka chooses arbitrarily (a new leader when the leader leaves or did not rejoin, CG L470,
L502) the encoding allows any eligible member. The differential test
(`tests/test_smt_classic.py`) checks the abstraction of every step of random model runs against
these rules. Variant ``sync_generation_check=false``: SyncGroup's generation check is skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import z3

EMPTY, PREPARING, COMPLETING, STABLE = 0, 1, 2, 3
STATE_NAMES = {
    EMPTY: "Empty",
    PREPARING: "PreparingRebalance",
    COMPLETING: "CompletingRebalance",
    STABLE: "Stable",
}
NO_LEADER = -1


@dataclass(frozen=True)
class Group:
    gen: Any
    state: Any
    initial: Any  # PreparingRebalance entered from Empty (the initial rebalance)
    added: Any  # a member joined during the current initial-delay wait
    leader: Any
    present: tuple[Any, ...]
    joined: tuple[Any, ...]
    pexists: Any  # some GroupMetadata was persisted
    pgen: Any
    pmembers: tuple[Any, ...]
    pleader: Any

    @property
    def size(self) -> int:
        return len(self.present)


def fresh_group(tag: str, members: int) -> Group:
    return Group(
        z3.Int(f"{tag}_gen"),
        z3.Int(f"{tag}_state"),
        z3.Bool(f"{tag}_initial"),
        z3.Bool(f"{tag}_added"),
        z3.Int(f"{tag}_leader"),
        tuple(z3.Bool(f"{tag}_present{i}") for i in range(members)),
        tuple(z3.Bool(f"{tag}_joined{i}") for i in range(members)),
        z3.Bool(f"{tag}_pexists"),
        z3.Int(f"{tag}_pgen"),
        tuple(z3.Bool(f"{tag}_pmember{i}") for i in range(members)),
        z3.Int(f"{tag}_pleader"),
    )


def _fields(g: Group) -> list[Any]:
    return [
        g.gen,
        g.state,
        g.initial,
        g.added,
        g.leader,
        *g.present,
        *g.joined,
        g.pexists,
        g.pgen,
        *g.pmembers,
        g.pleader,
    ]


def group_eq(a: Group, b: Group) -> Any:
    return z3.And([x == y for x, y in zip(_fields(a), _fields(b), strict=True)])


def ite(c: Any, a: Group, b: Group) -> Group:
    n = a.size
    xs = [z3.If(c, x, y) for x, y in zip(_fields(a), _fields(b), strict=True)]
    return Group(
        xs[0],
        xs[1],
        xs[2],
        xs[3],
        xs[4],
        tuple(xs[5 : 5 + n]),
        tuple(xs[5 + n : 5 + 2 * n]),
        xs[5 + 2 * n],
        xs[6 + 2 * n],
        tuple(xs[7 + 2 * n : 7 + 3 * n]),
        xs[7 + 3 * n],
    )


def initial(g: Group) -> Any:
    """No group yet (equivalently an Empty group at generation 0), nothing persisted."""
    out = [g.gen == 0, g.state == EMPTY, z3.Not(g.initial), z3.Not(g.added), g.leader == NO_LEADER]
    out += [z3.Not(p) for p in g.present] + [z3.Not(j) for j in g.joined] + [z3.Not(p) for p in g.pmembers]
    out += [z3.Not(g.pexists), g.pgen == 0, g.pleader == NO_LEADER]
    return z3.And(out)


def _some(xs: tuple[Any, ...] | list[Any]) -> Any:
    return z3.Or(list(xs)) if xs else z3.BoolVal(False)


def _is_member(g: Group, x: Any) -> Any:
    return z3.Or([z3.And(x == i, p) for i, p in enumerate(g.present)])


def pick(flags: tuple[Any, ...], choice: Any) -> Any:
    """The first flagged slot at or after slot ``choice`` (cyclically): as ``choice`` ranges over the
    slots this reaches every flagged slot, which models Kafka's arbitrary pick (hash-map order)."""
    n = len(flags)
    out: Any = z3.IntVal(NO_LEADER)
    for c in reversed(range(n)):
        first: Any = z3.IntVal(NO_LEADER)
        for k in reversed(range(n)):
            slot = (c + k) % n
            first = z3.If(flags[slot], z3.IntVal(slot), first)
        out = z3.If(choice == c, first, out)
    return out


def _all_joined(g: Group) -> Any:
    return z3.And([z3.Implies(p, j) for p, j in zip(g.present, g.joined, strict=True)])


@dataclass
class Step:
    guard: Any
    post: Group
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)


def persisted(g: Group) -> Group:
    """GroupMetadata appended: what a failover would load (the append always succeeds here)."""
    return replace(g, pexists=z3.BoolVal(True), pgen=g.gen, pmembers=g.present, pleader=g.leader)


def complete_join(g: Group, choice: Any) -> Group:
    """`completeClassicGroupJoin` (GMM L4887): drop (dynamic) members that did not rejoin, keep a
    joined leader or elect any joined member (``choice``, CG L502), generation + 1; then Empty (and
    persisted) without members, else CompletingRebalance."""
    present = tuple(z3.And(p, j) for p, j in zip(g.present, g.joined, strict=True))
    remaining = _some(present)
    leader_joined = z3.Or([z3.And(g.leader == i, p) for i, p in enumerate(present)])
    leader = z3.If(leader_joined, g.leader, pick(present, choice))
    f = z3.BoolVal(False)
    to_empty = replace(
        g,
        gen=g.gen + 1,
        state=z3.IntVal(EMPTY),
        initial=f,
        added=f,
        leader=z3.IntVal(NO_LEADER),
        present=tuple(f for _ in present),
        joined=tuple(f for _ in present),
    )
    to_empty = persisted(to_empty)
    to_completing = replace(
        g,
        gen=g.gen + 1,
        state=z3.IntVal(COMPLETING),
        initial=f,
        added=f,
        leader=leader,
        present=present,
        joined=tuple(f for _ in present),
    )
    return ite(remaining, to_completing, to_empty)


def prepare(g: Group, choice: Any) -> Group:
    """`prepareRebalance` (GMM L5208) from Empty (initial: wait for the delay), Stable or Completing
    (complete at once if everyone is already parked, else arm the join timer)."""
    t, f = z3.BoolVal(True), z3.BoolVal(False)
    from_empty = replace(g, state=z3.IntVal(PREPARING), initial=t, added=f)
    preparing = replace(g, state=z3.IntVal(PREPARING), initial=f, added=f)
    return ite(g.state == EMPTY, from_empty, ite(_all_joined(g), complete_join(preparing, choice), preparing))


def maybe_complete(g: Group, choice: Any) -> Group:
    """GMM L4528: in a non-initial PreparingRebalance, complete once every member is parked."""
    return ite(z3.And(g.state == PREPARING, _all_joined(g), z3.Not(g.initial)), complete_join(g, choice), g)


def step_join(g: Group, i: int, tag: str) -> Step:
    choice = z3.Int(f"{tag}_choice")
    t = z3.BoolVal(True)
    new = z3.Not(g.present[i])
    # new member (addMemberThenRebalanceOrCompleteJoin, GMM L5138)
    added = replace(
        g,
        present=tuple(t if k == i else p for k, p in enumerate(g.present)),
        joined=tuple(t if k == i else j for k, j in enumerate(g.joined)),
        leader=z3.If(g.leader == NO_LEADER, z3.IntVal(i), g.leader),
        added=z3.Or(g.added, z3.And(g.state == PREPARING, g.initial)),
    )
    after_new = ite(g.state == PREPARING, maybe_complete(added, choice), prepare(added, choice))
    # existing member
    parked = replace(g, joined=tuple(t if k == i else j for k, j in enumerate(g.joined)))
    after_existing = ite(
        g.state == PREPARING,
        maybe_complete(parked, choice),
        ite(z3.And(g.state == STABLE, g.leader == i), prepare(parked, choice), g),
    )
    post = ite(new, after_new, after_existing)
    return Step(z3.BoolVal(True), post, {"choice": choice}, {"new": new})


def step_timer(g: Group, tag: str) -> Step:
    """The join-phase timer of a PreparingRebalance group fires."""
    choice = z3.Int(f"{tag}_choice")
    rewait = z3.And(g.initial, g.added)
    post = ite(rewait, replace(g, added=z3.BoolVal(False)), complete_join(g, choice))
    return Step(g.state == PREPARING, post, {"choice": choice})


def step_sync(g: Group, i: int, tag: str, generation_check: bool = True) -> Step:
    r = z3.Int(f"{tag}_generation")
    valid = z3.And(g.present[i], g.state != EMPTY)
    if generation_check:
        valid = z3.And(valid, r == g.gen)
    installs = z3.And(valid, g.state == COMPLETING, g.leader == i)
    post = ite(installs, persisted(replace(g, state=z3.IntVal(STABLE))), g)
    return Step(r >= 0, post, {"generation": r}, {"installs": installs})


def step_leave(g: Group, i: int, tag: str) -> Step:
    choice = z3.Int(f"{tag}_choice")
    leader_choice = z3.Int(f"{tag}_leader_choice")
    f = z3.BoolVal(False)
    removed = replace(
        g,
        present=tuple(f if k == i else p for k, p in enumerate(g.present)),
        joined=tuple(f if k == i else j for k, j in enumerate(g.joined)),
    )
    removed = replace(
        removed,
        leader=z3.If(g.leader == i, pick(removed.present, leader_choice), g.leader),
    )
    after = ite(
        z3.Or(g.state == STABLE, g.state == COMPLETING),
        prepare(removed, choice),
        ite(z3.And(g.state == PREPARING, _all_joined(removed)), complete_join(removed, choice), removed),
    )
    return Step(g.present[i], after, {"choice": choice, "leader_choice": leader_choice})


def step_failover(g: Group, tag: str) -> Step:
    """Load the last GroupMetadata: Stable with its members, or Empty; no group if none persisted."""
    f = z3.BoolVal(False)
    loaded = replace(
        g,
        gen=z3.If(g.pexists, g.pgen, z3.IntVal(0)),
        state=z3.If(z3.And(g.pexists, _some(g.pmembers)), z3.IntVal(STABLE), z3.IntVal(EMPTY)),
        initial=f,
        added=f,
        leader=z3.If(g.pexists, g.pleader, z3.IntVal(NO_LEADER)),
        present=tuple(z3.And(g.pexists, p) for p in g.pmembers),
        joined=tuple(f for _ in g.pmembers),
    )
    return Step(z3.BoolVal(True), loaded, {}, {"failover": z3.BoolVal(True)})


TransitionFn = Callable[[Group, int, str, dict[str, Any]], Step]

TRANSITIONS: dict[str, TransitionFn] = {
    "join": lambda g, i, tag, v: step_join(g, i, tag),
    "timer": lambda g, i, tag, v: step_timer(g, tag),
    "sync": lambda g, i, tag, v: step_sync(g, i, tag, v.get("sync_generation_check", "true") == "true"),
    "leave": lambda g, i, tag, v: step_leave(g, i, tag),
    "failover": lambda g, i, tag, v: step_failover(g, tag),
}
PER_MEMBER = {"join", "sync", "leave"}


# ----------------------------------------------------------------------------- invariants and lemmas


def wellformed(g: Group) -> Any:
    """Group states of docs/protocol-reference.md#a1; a member-less group is Empty or Preparing; the leader is a member of a
    non-empty group and absent from an empty one; joined members are members; the persisted leader
    is a persisted member."""
    n = g.size
    out = [z3.Or([g.state == s for s in (EMPTY, PREPARING, COMPLETING, STABLE)])]
    out += [z3.Implies(j, p) for p, j in zip(g.present, g.joined, strict=True)]
    out.append(z3.If(_some(g.present), _is_member(g, g.leader), g.leader == NO_LEADER))
    out.append(z3.Implies(g.state == EMPTY, z3.Not(_some(g.present))))
    out.append(z3.Implies(z3.Or(g.state == COMPLETING, g.state == STABLE), _some(g.present)))
    out.append(
        z3.If(
            _some(g.pmembers),
            z3.Or([z3.And(g.pleader == i, p) for i, p in enumerate(g.pmembers)]),
            g.pleader == NO_LEADER,
        )
    )
    out.append(z3.Implies(z3.Not(g.pexists), z3.Not(_some(g.pmembers))))
    out.append(z3.And(g.leader >= NO_LEADER, g.leader < n))
    return z3.And(out)


def persisted_behind(g: Group) -> Any:
    """The persisted generation is never ahead of the live one, and 0 while nothing is persisted."""
    return z3.And(g.pgen >= 0, g.pgen <= g.gen, z3.Implies(z3.Not(g.pexists), g.pgen == 0))


def generation_monotonic_step(pre: Group, i: int, step: Step) -> Any:
    """classic.generation_monotonic: the generation never goes back except on failover, which falls
    back no further than the persisted generation; the persisted generation never goes back."""
    post = step.post
    if "failover" in step.outputs:
        live = post.gen >= z3.If(pre.pexists, pre.pgen, z3.IntVal(0))
    else:
        live = post.gen >= pre.gen
    return z3.And(live, z3.Implies(pre.pexists, post.pgen >= pre.pgen))


def leader_sync_installs_step(pre: Group, i: int, step: Step) -> Any:
    """classic.leader_sync_installs: a sync installs assignments only when it is the current leader's,
    for the current generation, while the group is CompletingRebalance."""
    installs = step.outputs.get("installs")
    if installs is None:
        return z3.BoolVal(True)
    r = step.inputs["generation"]
    return z3.Implies(
        installs, z3.And(pre.state == COMPLETING, pre.leader == i, r == pre.gen, pre.present[i])
    )


@dataclass(frozen=True)
class Encoder:
    invariant_id: str
    step: Callable[[Group, int, Step], Any]
    transitions: tuple[str, ...]


ENCODERS: dict[str, Encoder] = {
    e.invariant_id: e
    for e in (
        Encoder("classic.generation_monotonic", generation_monotonic_step, tuple(TRANSITIONS)),
        Encoder("classic.leader_sync_installs", leader_sync_installs_step, tuple(TRANSITIONS)),
    )
}

LEMMAS: dict[str, Callable[[Group], Any]] = {
    "classic.persisted_behind": persisted_behind,
}
"""`wellformed` is not needed by either proof; the differential test checks the model satisfies it."""


# ----------------------------------------------------------------------------- concrete values


@dataclass(frozen=True)
class ConcreteGroup:
    gen: int
    state: int
    initial: bool
    added: bool
    leader: int
    present: tuple[bool, ...]
    joined: tuple[bool, ...]
    pexists: bool
    pgen: int
    pmembers: tuple[bool, ...]
    pleader: int


def evaluate(model: z3.ModelRef, g: Group) -> ConcreteGroup:
    def num(x: Any) -> int:
        return int(model.eval(x, model_completion=True).as_long())

    def yes(x: Any) -> bool:
        return bool(z3.is_true(model.eval(x, model_completion=True)))

    return ConcreteGroup(
        num(g.gen),
        num(g.state),
        yes(g.initial),
        yes(g.added),
        num(g.leader),
        tuple(yes(p) for p in g.present),
        tuple(yes(j) for j in g.joined),
        yes(g.pexists),
        num(g.pgen),
        tuple(yes(p) for p in g.pmembers),
        num(g.pleader),
    )


def equals_concrete(g: Group, c: ConcreteGroup) -> Any:
    vals = [
        c.gen,
        c.state,
        c.initial,
        c.added,
        c.leader,
        *c.present,
        *c.joined,
        c.pexists,
        c.pgen,
        *c.pmembers,
        c.pleader,
    ]
    return z3.And(
        [x == (z3.BoolVal(v) if isinstance(v, bool) else v) for x, v in zip(_fields(g), vals, strict=True)]
    )
