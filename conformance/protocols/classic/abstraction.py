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

import dataclasses
import functools
import hashlib
import itertools
from typing import Any

from model.classic.messages import JoinGroupResponse
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
        self,
        sim: ClassicSim,
        order: tuple[str, ...],
        generation: int,
        rank: dict[int, int],
        live: list[Any] | None = None,
    ) -> None:
        self.sim = sim
        self.live = _live_deliveries(sim, generation) if live is None else live
        self.entries: dict[str, Any] = {}  # `_client` per client name, under this order
        self.index = {name: i for i, name in enumerate(order)}
        self.member: dict[str, Any] = {
            c.member_id: self.index[n] for n, c in sim.clients.items() if c.member_id
        }
        group = sim.port.state.groups.get(sim.group_id) if hasattr(sim.port, "state") else None
        count: dict[int, int] = {}
        for member_id in group.members if group is not None else ():  # join order
            client = self.client_of(member_id)
            if member_id not in self.member and client is not None:
                # several superseded ids of one client in the group: which is the leader, which
                # expires first, tells them apart
                count[client] = count.get(client, 0) + 1
                self.member[member_id] = ("stale", client, count[client])
        self.generation = generation  # the group's (0 without a group)
        self.now = sim.now
        self.rank = rank

    def mid(self, member_id: str | None) -> Any:
        if not member_id:
            return None
        if member_id in self.member:
            return self.member[member_id]
        client = self.client_of(member_id)
        return ("other", member_id) if client is None else ("stale", client)

    def client_of(self, member_id: str) -> int | None:
        """The index of the client a member id was made for (ids are the client's name, a dash and
        a UUID)."""
        prefix = member_id.rsplit("-", 5)[0] if member_id.count("-") >= 5 else member_id
        return self.index.get(prefix)

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

    def response(self, response: Any) -> Any:
        """A buffered answer with its ids, generation and embedded bytes read like the rest of the
        key (their absolute values kept every copy of an answer distinct)."""
        if not dataclasses.is_dataclass(response):
            return repr(response)
        out: list[Any] = [type(response).__name__]
        for f in dataclasses.fields(response):
            v = getattr(response, f.name)
            if f.name in ("member_id", "leader"):
                v = repr(self.mid(v))
            elif f.name == "generation_id":
                v = self.gen(v)
            elif f.name == "assignment":
                v = self.assignment(v)
            elif f.name == "members" and isinstance(response, JoinGroupResponse):
                v = tuple(
                    sorted(
                        (repr(self.mid(m.member_id)), m.group_instance_id, self.sub(m.metadata)) for m in v
                    )
                )
            elif isinstance(v, tuple) or dataclasses.is_dataclass(v):
                v = repr(v)
            out.append(v)
        return tuple(out)

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
        tuple(ctx.response(d.response) for d in _awaited(sim, name)),
    ) + _stale(c)


def _stale(c: Any) -> tuple[Any, ...]:
    """The `stale_subscription` fault's marks (docs/bug-catalogue.md#row-2), only where set, so
    keys of runs without the fault stay as they were: `classic.no_partition_held_twice` reads
    what a consumer kept and regained through it (docs/invariants.md#stale-claims)."""
    marks: tuple[Any, ...] = ("stale_subscription",) if c.stale_subscription else ()
    if c.stale_kept:
        marks += ("stale_kept",)
    regained = c.stale_regained.intersection(c.owned)  # what a reset or a leave dropped is gone
    if regained:
        marks += (("stale_regained", tuple(sorted(regained))),)
    return marks


def _awaited(sim: ClassicSim, name: str) -> list[Any]:
    """The buffered answers a stalled client will still read: the one to its awaited request (on
    resuming, `ClassicSim._deliver` drops every other)."""
    awaiting = sim.awaiting.get(name)
    return [d for d in sim.buffered.get(name, []) if awaiting is not None and d.ref == awaiting[0]]


def _live_deliveries(sim: ClassicSim, generation: int) -> list[Any]:
    """The rows of `ClassicSim.delivered` a later delivery can still join: a delivery is recorded
    under the receiving client's generation, and the coordinator answers a SyncGroup only at its
    own; a row no client, buffered JoinGroup answer or group is still at can never meet a second owner, and its invariant
    (`classic.single_owner_consumer`) has already judged it."""
    live = {c.generation for c in sim.clients.values()} | {generation}
    for name in sim.clients:  # a generation a stalled client will adopt on resuming
        live.update(
            d.response.generation_id for d in _awaited(sim, name) if isinstance(d.response, JoinGroupResponse)
        )
    return [(g, row) for g, row in sim.delivered if g in live]


def _ranks(seen: set[int], generation: int) -> dict[int, int]:
    """Past generations by rank: the rules compare generations (equal, newer), never subtract."""
    past = sorted((g for g in seen if g < generation), reverse=True)
    return {g: -(i + 1) for i, g in enumerate(past)}


def _structure(ctx: _Ctx, order: tuple[str, ...], group_id: str, persisted: Any) -> Any:
    sim = ctx.sim
    delivered = tuple(
        (ctx.gen(g), tuple(sorted((ctx.index.get(n, n), tuple(sorted(p))) for n, p in row)))
        for g, row in ctx.live
    )
    return (
        _group(ctx, group_id),
        tuple(_entry(ctx, n) for n in order),
        tuple(sorted(sim.topics.items())),
        tuple(sorted(delivered, key=repr)),
        None
        if persisted is None
        else (
            ctx.gen(persisted.generation),
            tuple(sorted((repr(ctx.mid(m)), ctx.assignment(a)) for m, a in persisted.assignments)),
        ),
    )


def _entry(ctx: _Ctx, name: str) -> Any:
    """`_client`, computed once per context."""
    entry = ctx.entries.get(name)
    if entry is None:
        entry = ctx.entries[name] = _client(ctx, name)
    return entry


def _generation(sim: ClassicSim, group_id: str) -> int:
    """The group's generation (0 without a group), read without building a snapshot."""
    state = getattr(sim.port, "state", None)
    if state is not None:
        group = state.groups.get(group_id)
        return group.generation if group is not None else 0
    snap = sim.port.group(group_id)
    return snap.generation if snap is not None else 0


def _generations(sim: ClassicSim, group_id: str, persisted: Any, live: list[Any]) -> set[int]:
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
    for name, c in sim.clients.items():
        seen.append(c.generation)
        seen.append(c.claim_generation)
        seen.extend(
            d.response.generation_id for d in _awaited(sim, name) if isinstance(d.response, JoinGroupResponse)
        )
    seen.extend(g for g, _ in live)
    if persisted is not None:
        seen.append(persisted.generation)
    return {g for g in seen if g >= 0}


#: the entries of `_client` that name clients (member ids, the leader, pending assignments, the
#: buffered answer)
_NAMING = (1, 4, 9, 16)


def _orders(ctx: _Ctx, names: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The client orders the symmetric key tries: clients sorted by their entry in the key less
    what names clients (`_NAMING`), and every order of clients whose such entries are equal. Two
    states' texts can only be equal under orders putting equal entries in equal positions, and
    reordering both alike keeps them equal: the least text over these orders tells the same states
    apart as the least over every permutation."""
    by_entry: dict[str, list[str]] = {}
    for name in names:
        entry = _entry(ctx, name)
        by_entry.setdefault(repr(tuple(x for i, x in enumerate(entry) if i not in _NAMING)), []).append(name)
    tied = [itertools.permutations(by_entry[e]) for e in sorted(by_entry)]
    return [tuple(itertools.chain.from_iterable(parts)) for parts in itertools.product(*tied)]


def abstract_key(sim: ClassicSim, *, symmetry: bool = True) -> str:
    """A short stable id of the abstract state (least over client renamings when ``symmetry``)."""
    names = tuple(sorted(sim.clients))
    group_id = sim.clients[names[0]].config.group_id if names else sim.group_id
    persisted = sim.port.persisted(group_id)
    live = _live_deliveries(sim, _generation(sim, group_id))
    seen = _generations(sim, group_id, persisted, live)  # the generations to rank
    contexts: dict[str, tuple[int, dict[int, int]]] = {}  # per group id: its generation and ranks
    made: dict[tuple[str, ...], _Ctx] = {}

    def ctx(order: tuple[str, ...]) -> _Ctx:
        if order in made:
            return made[order]
        gid = sim.clients[order[0]].config.group_id if order else ""
        if gid not in contexts:
            generation = _generation(sim, gid) if order else 0
            contexts[gid] = (generation, _ranks(seen, generation))
        made[order] = _Ctx(sim, order, *contexts[gid], live if gid == group_id else None)
        return made[order]

    orders: Any = [names]
    if symmetry and len({c.config.group_id for c in sim.clients.values()}) == 1:
        orders = _orders(ctx(names), names)  # one group: its generation does not depend on the order
    elif symmetry:
        orders = itertools.permutations(names)
    best = min(repr(_structure(ctx(order), order, group_id, persisted)) for order in orders)
    return hashlib.blake2b(best.encode(), digest_size=10).hexdigest()


def group_state(sim: ClassicSim) -> str:
    """The projection used for the picture: the group's state in Kafka's classic state machine."""
    state = getattr(sim.port, "state", None)
    group = state.groups.get(sim.group_id) if state is not None else sim.port.group(sim.group_id)
    return "Empty" if group is None else group.state.value
