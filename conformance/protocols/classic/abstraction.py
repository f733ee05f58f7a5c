"""The abstract state of a classic run, for `explore` and coverage (docs/traces.md#explore-and-coverage).

Two concrete runs that differ only in what the protocol cannot observe fall together: member ids
become the index of the virtual client holding them (a superseded id keeps its client's index,
marked stale), generations become relative to the group's, deadlines and send times relative to
the clock, embedded subscription and assignment bytes their decoded partitions and claims.
Symmetry reduction: the key is the least one over every renaming of interchangeable clients
(clients with equal configuration), so "c1 stalls" and "c2 stalls" are one state.

What the abstraction forgets (absolute time and generations, the order of durable records, the
chooser's random state) cannot be told apart by the invariants, which read relative facts only;
a state is represented in `explore` by the first concrete run that reached it, so every reported
counterexample is a concrete, replayable trace.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from typing import Any

from model.classic.sim import ClassicSim
from model.embedded import (
    EmbeddedDecodeError,
    decode_assignment,
    decode_sticky_user_data,
    decode_subscription,
)


@functools.lru_cache(maxsize=65536)
def _decode_sub(data: bytes) -> Any:
    try:
        s = decode_subscription(data)
    except EmbeddedDecodeError:
        return None
    claim: Any = None
    if s.user_data:
        try:
            parts, g = decode_sticky_user_data(s.user_data)
            claim = (tuple(sorted(parts)), g)
        except (EmbeddedDecodeError, ValueError):
            claim = ("raw", s.user_data.hex())
    return (s.topics, tuple(sorted(s.owned_partitions)), s.generation_id, claim)


@functools.lru_cache(maxsize=65536)
def _decode_assignment(data: bytes) -> Any:
    try:
        return tuple(sorted(decode_assignment(data).partitions))
    except EmbeddedDecodeError:
        return ("raw", data.hex())


class _Ctx:
    def __init__(
        self, sim: ClassicSim, order: tuple[str, ...], generation: int, rank: dict[int, int]
    ) -> None:
        self.sim = sim
        self.index = {name: i for i, name in enumerate(order)}
        self.member = {c.member_id: self.index[n] for n, c in sim.clients.items() if c.member_id}
        self.generation = generation  # the group's (0 without a group)
        self.now = sim.now
        self.rank = rank

    def mid(self, member_id: str | None) -> Any:
        if not member_id:
            return None
        if member_id in self.member:
            return self.member[member_id]
        prefix = member_id.rsplit("-", 5)[0] if member_id.count("-") >= 5 else member_id
        if prefix in self.index:
            return ("stale", self.index[prefix])
        return ("other", member_id)

    def gen(self, g: int) -> Any:
        if g < 0:
            return ("none",)
        return self.rank.get(g, g - self.generation)

    def ref(self, ref: int | None) -> Any:
        if ref is None:
            return None
        owner = self.sim.owner_of_ref.get(ref)
        return self.index.get(owner, "?") if owner is not None else "?"

    def sub(self, data: bytes) -> Any:
        decoded = _decode_sub(data)
        if decoded is None:
            return ("raw", data.hex())
        topics, owned, generation, claim = decoded
        if claim is not None and claim[0] != "raw":
            claim = (claim[0], None if claim[1] is None else self.gen(claim[1]))
        return (topics, owned, self.gen(generation), claim)

    def assignment(self, data: bytes) -> Any:
        return () if not data else _decode_assignment(data)

    def timer_key(self, key: str) -> Any:
        kind, _, rest = key.partition(":")
        return (kind, self.mid(rest)) if rest else (kind,)


def _group(ctx: _Ctx, group_id: str) -> Any:
    state = ctx.sim.port.state.groups.get(group_id) if hasattr(ctx.sim.port, "state") else None
    if state is None:
        return None
    members = list(
        (
            repr(ctx.mid(m.member_id)),
            m.instance_id,
            tuple((n, ctx.sub(b)) for n, b in m.protocols),
            ctx.assignment(m.assignment),
            ctx.ref(m.awaiting_join),
            ctx.ref(m.awaiting_sync),
            m.is_new,
        )
        for m in state.members.values()
    )
    members = sorted(members, key=repr)
    timers = list(
        (
            repr(ctx.timer_key(k)),
            t.deadline - ctx.now,
            tuple(ctx.gen(a) if k == "sync" else a for a in t.args),
        )
        for k, t in state.timers.items()
    )
    timers = sorted(timers, key=repr)
    return (
        state.state.value,
        state.previous_state.value if state.previous_state else None,
        state.protocol,
        repr(ctx.mid(state.leader)),
        tuple(members),
        tuple(sorted((i, repr(ctx.mid(m))) for i, m in state.static_members.items())),
        tuple(sorted(repr(ctx.mid(m)) for m in state.pending_members)),
        tuple(sorted(repr(ctx.mid(m)) for m in state.pending_sync)),
        state.new_member_added,
        tuple(timers),
    )


def _client(ctx: _Ctx, name: str) -> Any:
    c = ctx.sim.clients[name]
    sim = ctx.sim
    awaiting = sim.awaiting.get(name)
    return (
        (c.config.instance_id, c.config.topics, c.config.assignors, c.config.assignor_options),
        repr(ctx.mid(c.member_id)),
        ctx.gen(c.generation),
        c.protocol,
        repr(ctx.mid(c.leader)),
        c.phase.value,
        tuple(sorted(c.owned)),
        tuple(sorted(c.claim)),
        ctx.gen(c.claim_generation),
        tuple(sorted((repr(ctx.mid(m)), ctx.assignment(a)) for m, a in c.pending_assignments)),
        c.inflight,
        c.needs_rejoin,
        c.fatal_error.name if c.fatal_error else None,
        None if awaiting is None else min(ctx.now - awaiting[1], sim.request_timeout_ms),
        name in sim.stalled,
        name in sim.lose_next,
        tuple(repr(d.response) for d in sim.buffered.get(name, [])),
    ) + (("stale_subscription",) if c.stale_subscription else ())  # docs/bug-catalogue.md#row-2


def _ranks(seen: set[int], generation: int) -> dict[int, int]:
    """Past generations by rank: the rules compare generations (equal, newer), never subtract."""
    past = sorted((g for g in seen if g < generation), reverse=True)
    return {g: -(i + 1) for i, g in enumerate(past)}


def _structure(ctx: _Ctx, order: tuple[str, ...], group_id: str, persisted: Any) -> Any:
    sim = ctx.sim
    delivered = tuple(
        (ctx.gen(g), tuple(sorted((ctx.index.get(n, n), tuple(sorted(p))) for n, p in row)))
        for g, row in sim.delivered
    )
    return (
        _group(ctx, group_id),
        tuple(_client(ctx, n) for n in order),
        tuple(sorted(sim.topics.items())),
        tuple(sorted(delivered, key=repr)),
        None
        if persisted is None
        else (
            ctx.gen(persisted.generation),
            tuple(sorted((repr(ctx.mid(m)), ctx.assignment(a)) for m, a in persisted.assignments)),
        ),
    )


def _generations(sim: ClassicSim, group_id: str, persisted: Any) -> set[int]:
    """Every generation `_structure` reads (through `_Ctx.gen`), without building it: the ones
    `_Ctx.ranks` ranks."""
    seen: list[int] = []
    state = sim.port.state.groups.get(group_id) if hasattr(sim.port, "state") else None
    if state is not None:
        for m in state.members.values():
            for _, data in m.protocols:
                decoded = _decode_sub(data)
                if decoded is not None:
                    seen.append(decoded[2])
                    claim = decoded[3]
                    if claim is not None and claim[0] != "raw" and claim[1] is not None:
                        seen.append(claim[1])
        for k, t in state.timers.items():
            if k == "sync":
                seen.extend(t.args)
    for c in sim.clients.values():
        seen.append(c.generation)
        seen.append(c.claim_generation)
    seen.extend(g for g, _ in sim.delivered)
    if persisted is not None:
        seen.append(persisted.generation)
    return {g for g in seen if g >= 0}


#: the entries of `_client` that name clients (member ids, the leader, pending assignments)
_NAMING = (1, 4, 9)


def _orders(ctx: _Ctx, names: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The client orders the symmetric key tries: clients sorted by their entry in the key less
    what names clients (`_NAMING`), and every order of clients whose such entries are equal. Two
    states' texts can only be equal under orders putting equal entries in equal positions, and
    reordering both alike keeps them equal: the least text over these orders tells the same states
    apart as the least over every permutation."""
    by_entry: dict[str, list[str]] = {}
    for name in names:
        entry = _client(ctx, name)
        by_entry.setdefault(repr(tuple(x for i, x in enumerate(entry) if i not in _NAMING)), []).append(name)
    tied = [itertools.permutations(by_entry[e]) for e in sorted(by_entry)]
    return [tuple(itertools.chain.from_iterable(parts)) for parts in itertools.product(*tied)]


def abstract_key(sim: ClassicSim, *, symmetry: bool = True) -> str:
    """A short stable id of the abstract state (least over client renamings when ``symmetry``)."""
    names = tuple(sorted(sim.clients))
    group_id = sim.clients[names[0]].config.group_id if names else sim.group_id
    persisted = sim.port.persisted(group_id)
    seen = _generations(sim, group_id, persisted)  # the generations to rank
    contexts: dict[str, tuple[int, dict[int, int]]] = {}  # per group id: its generation and ranks

    def ctx(order: tuple[str, ...]) -> _Ctx:
        gid = sim.clients[order[0]].config.group_id if order else ""
        if gid not in contexts:
            group = sim.port.group(gid) if order else None
            generation = group.generation if group is not None else 0
            contexts[gid] = (generation, _ranks(seen, generation))
        return _Ctx(sim, order, *contexts[gid])

    orders: Any = [names]
    if symmetry and len({c.config.group_id for c in sim.clients.values()}) == 1:
        orders = _orders(ctx(names), names)  # one group: its generation does not depend on the order
    elif symmetry:
        orders = itertools.permutations(names)
    best = min(repr(_structure(ctx(order), order, group_id, persisted)) for order in orders)
    return hashlib.blake2b(best.encode(), digest_size=10).hexdigest()


def group_state(sim: ClassicSim) -> str:
    """The projection used for the picture: the group's state in Kafka's classic state machine."""
    group = sim.port.group(sim.group_id)
    return "Empty" if group is None else group.state.value
