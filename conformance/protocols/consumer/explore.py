"""`groupcheck explore --protocol consumer`: BFS over abstract KIP-848 states (the consumer twin of
`conformance.protocols.classic.explore` and `conformance.protocols.classic.abstraction`).

The abstract state is the coordinator's group and every virtual consumer with member ids replaced
by the index of the client holding them, epochs made relative to the group epoch (0, -1 and -2
keep their KIP-848 meanings: join, leave, static leave), and deadlines and send times relative to
the clock; the least key over renamings of identically configured clients is taken (symmetry).
Ops: a member's next heartbeat, finishing a revocation (reconcile), a member stalling or resuming,
time running by the heartbeat interval. Every path is a list of `ConsumerSim` actions, replayed
into an ordinary consumer trace.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
from enum import Enum
from typing import Any

from conformance.engine.checker import Checker
from conformance.engine.explore import ExploreResult, Found, perturbed_key
from conformance.engine.frontier import Step, search
from conformance.engine.polish import PolishSpace
from conformance.engine.replay import sim_from_trace
from conformance.errors import UsageError
from conformance.formats.trace_file import Trace, groupcheck_version
from conformance.protocols.consumer.build import make_consumer_sim
from conformance.protocols.consumer.clone import clone, deep_clone
from conformance.protocols.consumer.trace import TracedConsumerSim, action_of, to_trace
from model.consumer.client import ClientState

CONSUMER_OPS = ("client_step", "reconcile", "advance", "stall", "resume")
#: the perturbations of Vanlightly's KIP-848 specification a run may add with ``--ops``: a member
#: leaves, its process restarts (a crash; with ``stall`` and ``advance``, a live member's session
#: expiring), it changes its subscription (t <-> t,u: topic u of one partition joins the set-up),
#: its next answer is lost on the old connection
PERTURBATIONS = ("leave", "restart", "subscribe", "lose_response")
ALL_CONSUMER_OPS = (*CONSUMER_OPS, *PERTURBATIONS)
TICK_MS = 500
#: client states from which the next heartbeat, if any, is a full join: the record is not read again
_RECORD_UNREAD = (ClientState.UNSUBSCRIBED, ClientState.FATAL)


#: how `_Norm.value` encodes a value, by its type (the order of the tests decides, as in `_kind`)
_ATOM, _ENUM, _INT, _STR, _BYTES, _DATACLASS, _DICT, _SET, _SEQUENCE, _OTHER = range(10)
_KINDS: dict[type, int] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}
#: a field name's reading of an int: (an epoch, a time)
_INT_NAMES: dict[str, tuple[bool, bool]] = {}
#: frozen dataclass types, whose encoding under one renaming, epoch and clock `_MEMO` keeps
_FROZEN: set[type] = set()
#: (id of a frozen value, field name, context) -> (the value, its encoding); the value is kept so
#: that its id is not reused while the entry lives
_MEMO: dict[tuple[int, str, int], tuple[Any, Any]] = {}
#: a context (member ids by index, group epoch, clock) -> a small number naming it in `_MEMO`
_CONTEXTS: dict[Any, int] = {}
_MEMO_LIMIT = 1 << 18


def _kind(t: type) -> int:
    """The encoding of values of type ``t`` (computed once per type)."""
    kind = _KINDS.get(t)
    if kind is None:
        if issubclass(t, bool) or t is type(None):
            kind = _ATOM
        elif issubclass(t, Enum):
            kind = _ENUM
        elif issubclass(t, int):
            kind = _INT
        elif issubclass(t, str):
            kind = _STR
        elif issubclass(t, bytes):
            kind = _BYTES
        elif dataclasses.is_dataclass(t) and not issubclass(t, type):
            kind = _DATACLASS
            _FIELDS[t] = tuple(f.name for f in dataclasses.fields(t))
            if getattr(getattr(t, "__dataclass_params__", None), "frozen", False):
                _FROZEN.add(t)
        elif issubclass(t, dict):
            kind = _DICT
        elif issubclass(t, frozenset | set):
            kind = _SET
        elif issubclass(t, tuple | list):
            kind = _SEQUENCE
        else:
            kind = _OTHER
        _KINDS[t] = kind
    return kind


def _int_name(name: str) -> tuple[bool, bool]:
    reading = _INT_NAMES.get(name)
    if reading is None:
        reading = _INT_NAMES[name] = ("epoch" in name, name.endswith("_at") or name == "deadline")
    return reading


class _Norm:
    def __init__(self, sim: Any, order: tuple[str, ...], group: Any = None, past: Any = None) -> None:
        self.index = {name: i for i, name in enumerate(order)}
        self.member = {c.member_id: ("m", self.index[n]) for n, c in sim.clients.items() if c.member_id}
        # members no client holds (a restarted process's old member, kept until its session ends):
        # named by rank, since no rule reads their random ids but to compare and sort them
        ghosts = sorted(m for m in (group.members if group is not None else ()) if m not in self.member)
        self.member.update((m, ("g", k)) for k, m in enumerate(ghosts))
        self.epoch = group.group_epoch if group is not None else 0
        self.now = sim.now
        self.past: dict[int, int] = past or {}  # epochs behind every live one, by rank (`_past_ranks`)
        if len(_MEMO) > _MEMO_LIMIT:
            _MEMO.clear()
            _CONTEXTS.clear()
        context = (tuple(sorted(self.member.items())), self.epoch, self.now, tuple(sorted(self.past.items())))
        self.context = _CONTEXTS.setdefault(context, len(_CONTEXTS))

    def value(self, v: Any, name: str = "") -> Any:
        """``v`` with member ids, epochs and times made relative; sets and maps in ``repr`` order."""
        t = type(v)
        kind = _KINDS.get(t)
        if kind is None:
            kind = _kind(t)
        if kind == _ATOM:
            return v
        if kind == _ENUM:
            return v.name
        if kind == _INT:
            epoch, at = _int_name(name)
            if epoch and v > 0:
                rank = self.past.get(v)
                return ("e", v - self.epoch) if rank is None else ("p", rank)
            if at:
                return ("t", v - self.now)
            return v
        if kind == _STR:
            return self.member.get(v, v)
        if kind == _DATACLASS:
            if t in _FROZEN:  # a pure function of the value, its name and the context: kept
                memo = (id(v), name, self.context)
                hit = _MEMO.get(memo)
                if hit is not None and hit[0] is v:
                    return hit[1]
            value = self.value
            out = (t.__name__, tuple([value(getattr(v, f), f) for f in _FIELDS[t]]))
            if t in _FROZEN:
                _MEMO[memo] = (v, out)
            return out
        if kind == _DICT:
            value = self.value
            inner = "epoch" if "epoch" in name else name
            pairs = [(repr(value(k)), value(x, inner)) for k, x in v.items()]
            if len(pairs) > 1:
                pairs.sort(key=repr)
            return tuple(pairs)
        if kind == _SET:
            value = self.value
            items = [value(x, name) for x in v]
            if len(items) > 1:
                items.sort(key=repr)
            return tuple(items)
        if kind == _SEQUENCE:
            value = self.value
            if name == "assignment_epochs":  # (partition, epoch) pairs: only the epoch is one
                return tuple([(value(tp), value(e, name)) for tp, e in v])
            return tuple([value(x, name) for x in v])
        if kind == _BYTES:
            return v.hex()
        return repr(v)


#: not state: the name, the shared chooser, the group, and the cache of the client's last snapshot view
_CLIENT_SKIP = frozenset({"name", "chooser", "group_id", "_last_view"})


def _client(norm: _Norm, c: Any, horizon: int) -> Any:
    fields = vars(c)
    value = norm.value
    out = []
    for k in sorted(fields):
        if k in _CLIENT_SKIP:
            continue
        v = fields[k]
        if k == "next_heartbeat_at" or k == "_sent_at":
            out.append((k, _client_field(norm, c, k, v, horizon)))
        else:
            out.append((k, value(v, k)))
    return tuple(out)


def _past_ranks(sim: Any, group: Any) -> dict[int, int]:
    """Epochs behind every live one, by rank: the clients' epochs and the members' KIP-1251
    assignment epochs below the least group, target, member, previous and partition epoch.

    Such an epoch is only compared (KIP-848 heartbeat validation, GMM
    ``throwIfConsumerGroupMemberEpochIsInvalid``: equal, previous or fenced; KIP-1251 commits: not
    before the assignment epoch), never subtracted from, and never meets a later epoch (epochs
    grow): ranks keep every comparison. Relative to the group epoch, a stalled client's epoch, or a
    partition a member keeps while the others rebalance, falls further behind without end, which
    kept even 2 x 1 from finishing (as classic ranks past generations)."""
    live: list[int] = []
    behind: list[int] = [c.member_epoch for c in sim.clients.values()]
    behind += [c.inflight.member_epoch for c in sim.clients.values() if c.inflight is not None]
    if group is not None:
        live += (group.group_epoch, group.assignment_epoch, *group.partition_epochs.values())
        for m in group.members.values():
            live += (m.member_epoch, m.previous_member_epoch)
            behind += (e for _, e in m.assignment_epochs)
    floor = min((e for e in live if e > 0), default=float("inf"))
    past = sorted({e for e in behind if 0 < e < floor}, reverse=True)
    return {e: -(i + 1) for i, e in enumerate(past)}


def _client_field(norm: _Norm, c: Any, name: str, v: Any, horizon: int) -> Any:
    """A client's times, clamped to what its rules can tell apart (`model.consumer.client`).

    ``next_heartbeat_at`` is only compared with the clock (``now >=``): every past value means
    "due". ``_sent_at`` is read only to answer the in-flight request, as the base of the next
    heartbeat time (plus at most ``horizon``): without a request in flight it is dead, and any
    value ``horizon`` or more in the past yields a due heartbeat.
    """
    if name == "next_heartbeat_at":
        return ("t", max(v - norm.now, 0))
    if name == "_sent_at":
        return None if c.inflight is None else ("t", max(v - norm.now, -horizon))
    return norm.value(v, name)


def _horizon(sim: Any) -> int:
    """The longest delay a response adds to a send time: the heartbeat interval or a backoff."""
    config = getattr(sim.port, "config", None)
    interval = int(getattr(config, "heartbeat_interval_ms", 0))
    clients = sim.clients.values()
    return max(
        [interval, *(c.retry_backoff_ms for c in clients), *(c.heartbeat_interval_ms for c in clients)]
    )


def _orders(sim: Any) -> list[tuple[str, ...]]:
    """The client orders the symmetric key tries: clients sorted by their spec, and every order of
    clients with equal specs. Each client's entry in the key holds its spec, so two states' texts
    can only be equal under orders with equal spec sequences, and reordering both alike keeps them
    equal: the least text over these orders tells the same states apart as the least over every
    permutation. The spec holds the client's name, so no two clients tie and one order is tried."""
    by_spec: dict[str, list[str]] = {}
    for name in sorted(sim.clients):
        by_spec.setdefault(repr(sim.specs[name]), []).append(name)
    tied = [itertools.permutations(by_spec[spec]) for spec in sorted(by_spec)]
    return [tuple(itertools.chain.from_iterable(parts)) for parts in itertools.product(*tied)]


def _reports(norm: _Norm, sim: Any, order: tuple[str, ...]) -> Any:
    """What the simulator's record of the wire (`model.consumer.owned_reports`) carries from one
    step to the next, per client: the owned partitions its last heartbeat reported, what it held
    then, and whether its last heartbeat failed. Invariants read these, and a client's own state
    need not vouch for them (a faulty client is what they judge). Left out where no rule reads them
    again: a client that is unsubscribed, failed, or about to send a join (a full request that
    replaces the record)."""
    reports, value, out = sim.reports, norm.value, []
    for n in order:
        c = sim.clients[n]
        if c.state in _RECORD_UNREAD or (c.state == ClientState.JOINING and c.inflight is None):
            out.append(None)
        else:
            out.append(
                (value(reports.last.get(n)), value(reports.held_then.get(n)), n in reports.failed_last)
            )
    return tuple(out)


def _id_order(norm: _Norm, sim: Any, group: Any) -> tuple[Any, ...]:
    """The clients' member ids in the order the assignors sort them (`model.consumer.assignors`
    breaks ties by member id), as the clients' indexes: renaming ids by client loses which sorts
    first, and after a restart draws a new id that order can differ between two states."""
    ids = {c.member_id for c in sim.clients.values() if c.member_id}
    if group is not None:
        ids.update(group.members)
    return tuple(norm.member.get(m, "other") for m in sorted(ids))


def consumer_key(sim: Any, *, symmetry: bool = True) -> str:
    """A short stable id of the abstract state: the least text over `_orders` when ``symmetry``."""
    horizon = _horizon(sim)
    best = None
    group = sim.port.coordinator_state().groups.get(sim.group_id)
    past = _past_ranks(sim, group)
    for order in _orders(sim) if symmetry else [tuple(sorted(sim.clients))]:
        norm = _Norm(sim, order, group, past)
        structure = (
            None if group is None else norm.value(group),
            tuple((norm.value(sim.specs[n]), _client(norm, sim.clients[n], horizon)) for n in order),
            tuple(sorted(norm.index[n] for n in sim.lose_next)),
            _reports(norm, sim, order),
            _id_order(norm, sim, group),
        )
        text = repr(structure)
        best = text if best is None or text < best else best
    return hashlib.blake2b((best or "").encode(), digest_size=10).hexdigest()


def consumer_group_state(sim: Any) -> str:
    group = sim.port.coordinator_state().groups.get(sim.group_id)
    return "Empty" if group is None else str(getattr(group.state, "value", group.state))


def consumer_setup(
    members: int, partitions: int, ops: tuple[str, ...] = CONSUMER_OPS, static: int = 0
) -> dict[str, Any]:
    """The explored group: ``members`` consumers of topic t, the first ``static`` of them static."""
    clients: list[dict[str, Any]] = [
        {"name": f"c{i + 1}", "topics": ["t"], "rebalance_timeout_ms": 1500} for i in range(members)
    ]
    for i, c in enumerate(clients[:static]):
        c["instance_id"] = f"i{i + 1}"
    topics = {"t": partitions, **({"u": 1} if "subscribe" in ops else {})}
    return {"topics": topics, "clients": clients, "config": {}}


def _fresh(setup: dict[str, Any], variants: dict[str, str]) -> TracedConsumerSim:
    sim = make_consumer_sim(setup["topics"], setup["clients"], setup["config"], variants, where="explore")
    assert isinstance(sim, TracedConsumerSim)
    return sim


def _enabled(sim: Any, ops: tuple[str, ...] = CONSUMER_OPS, perturb: bool = True) -> list[dict[str, Any]]:
    """The ops enabled in ``sim``; ``perturb`` False: none of `PERTURBATIONS` (the budget is spent)."""
    wanted = set(ops) if perturb else set(ops) - set(PERTURBATIONS)
    out: list[dict[str, Any]] = []
    for name in sorted(sim.clients):
        c = sim.clients[name]
        if not c.crashed:
            out.append({"op": "client_step", "name": name})
            out.append({"op": "reconcile", "name": name})
        out.append({"op": "stall", "name": name, "stalled": not c.crashed})
        if "leave" in wanted and not c.crashed and c.member_id and c.member_epoch > 0:
            out.append({"op": "leave", "name": name})
        if "restart" in wanted and c.member_id:
            out.append({"op": "restart", "name": name})
        if "subscribe" in wanted and not c.crashed:
            topics = ["t"] if "u" in c.topics else ["t", "u"]
            out.append({"op": "subscribe", "name": name, "topics": topics})
        if "lose_response" in wanted and not c.crashed and name not in sim.lose_next:
            out.append({"op": "lose_response", "name": name})
    out.append({"op": "advance", "ms": TICK_MS})
    return out


def _label(op: dict[str, Any]) -> str:
    return " ".join([str(op["op"]), *(f"{k}={v}" for k, v in sorted(op.items()) if k != "op")])


def explore_consumer(
    members: int,
    partitions: int,
    *,
    depth: int,
    variants: dict[str, str] | None = None,
    budget_s: float = 600.0,
    symmetry: bool = True,
    cpu_clock: bool = False,
    ops: tuple[str, ...] = CONSUMER_OPS,
    perturbations: int | None = None,
    static: int = 0,
    workers: int = 1,
) -> ExploreResult:
    """BFS to ``depth`` ops; at most ``perturbations`` of `PERTURBATIONS` on any path (None: no
    bound), the count so far being part of the state, as `MaxPerturbations` is in Vanlightly's
    specification."""
    if not 1 <= members <= 4 or not 1 <= partitions <= 8 or not 0 <= static <= members:
        raise UsageError("explore: --members 1..4, --partitions 1..8 and --static 0..members")
    variants = dict(variants or {})
    setup = consumer_setup(members, partitions, ops, static)
    result = ExploreResult("consumer", members, partitions, variants, depth, ops, setup=setup)
    result.perturbations, result.static = perturbations, static
    checker = Checker("consumer")
    root = _fresh(setup, variants)
    root_key = perturbed_key(consumer_key(root, symmetry=symmetry), 0, perturbations)

    def expand(sim: Any, level: int) -> list[Step]:
        used = getattr(sim, "explore_perturbed", 0)
        steps = []
        for op in _enabled(sim, ops, perturbations is None or used < perturbations):
            child = clone(sim)
            before = len(child.log)
            observations = child.replay([action_of(op, "explore")])
            if not observations and len(child.log) == before and op["op"] != "stall":
                continue
            child.port.records = list(child.port.records)
            child.explore_perturbed = used + (op["op"] in PERTURBATIONS)
            key = perturbed_key(
                consumer_key(child, symmetry=symmetry), child.explore_perturbed, perturbations
            )
            violations = tuple(
                (v.invariant, v.message)
                for n, obs in enumerate(observations)
                for v in checker.check(obs, level + 1 + n)
            )
            steps.append(Step(op, _label(op), child, key, violations, consumer_group_state(child)))
        return steps

    return search(
        result,
        root,
        root_key,
        consumer_group_state(root),
        expand,
        depth=depth,
        budget_s=budget_s,
        cpu_clock=cpu_clock,
        workers=workers,
    )


#: the deep copy (`deep_clone`): the reference a plain search copies states with
_clone = deep_clone


def consumer_found_trace(result: ExploreResult, found: Found) -> Trace:
    sim = _fresh(result.setup, result.variants)
    checker = Checker("consumer")
    violations: list[tuple[str, str, int]] = []
    for op in found.path:
        for obs in sim.replay([action_of(op, "explore")]):
            vs = checker.check(obs, len(sim.log))
            sim.note_checks(
                obs, checker.last_checked, [(v.invariant, v.message) for v in vs], checker.last_sometimes
            )
            violations += [(v.invariant, v.message, len(sim.log)) for v in vs]
    return to_trace(
        sim,
        target="model",
        target_version=groupcheck_version(),
        origin={
            "kind": "explore",
            "members": result.members,
            "partitions": result.partitions,
            "bfs_length": len(found.path),
            "invariant": found.invariant,
        },
        violations=violations,
    )


def explore(
    members: int,
    partitions: int,
    *,
    depth: int,
    variants: dict[str, str] | None = None,
    budget_s: float = 600.0,
    ops: tuple[str, ...] | None = None,
    cpu_clock: bool = False,
    perturbations: int | None = None,
    static: int = 0,
    workers: int = 1,
) -> ExploreResult:
    """The kit's ``explore``: `explore_consumer` over ``ops`` (None: `CONSUMER_OPS`; the ops it
    always has plus any of `PERTURBATIONS`)."""
    ops = CONSUMER_OPS if ops is None else tuple(dict.fromkeys((*CONSUMER_OPS, *ops)))
    unknown = sorted(set(ops) - set(ALL_CONSUMER_OPS))
    if unknown:
        raise UsageError(f"--ops: unknown op(s) {unknown} (known: {', '.join(ALL_CONSUMER_OPS)})")
    return explore_consumer(
        members,
        partitions,
        depth=depth,
        variants=variants,
        budget_s=budget_s,
        cpu_clock=cpu_clock,
        ops=ops,
        perturbations=perturbations,
        static=static,
        workers=workers,
    )


def polish_space(trace: Trace) -> PolishSpace:
    """The kit's ``polish_space``: explore's ops; a trace's settle is never added whole."""

    def root(t: Trace) -> Any:
        return sim_from_trace(t, make_consumer_sim, dict(t.header["variants"]), "polish")

    def apply(sim: Any, op: dict[str, Any]) -> list[Any] | None:
        before = len(sim.log)
        observations = list(sim.replay([action_of(op, "polish")]))
        sim.port.records = list(sim.port.records)
        if not observations and len(sim.log) == before and op.get("op") != "stall":
            return None
        return observations

    # a settle is many ops (and no explore edge): never added whole
    own = (*CONSUMER_OPS, "cont", "settle")
    return PolishSpace(root, apply, _enabled, clone, lambda sim: consumer_key(sim, symmetry=False), own)
