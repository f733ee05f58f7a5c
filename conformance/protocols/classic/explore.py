"""`groupcheck explore`: breadth-first exploration of the model over its abstract states (networkx).

From the initial group (M dynamic members with identical configuration, one topic of P
partitions) every enabled op is tried on a copy of each frontier state: a member's next request,
time running to the next point where something can happen (`conformance.protocols.classic.build.quiet_gap`), a
member stalling or resuming (and, on request, lost responses, leaves, restarts). States are
deduplicated by `conformance.protocols.classic.abstraction.abstract_key` (symmetry over member ids), so the
graph is finite; BFS order makes the first counterexample found for each invariant a shortest one
(in ops, within the abstraction). Each is replayed and written as an ordinary trace.

Kafka has no such tool; the approach is explicit-state model checking as in TLC (breadth-first,
symmetry sets), run on the executable model instead of a specification.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from conformance.engine.checker import Checker
from conformance.engine.explore import ExploreResult, Found, clone_chooser, perturbed_key, shallow_copy
from conformance.engine.frontier import Step, search
from conformance.engine.polish import PolishSpace
from conformance.engine.replay import sim_from_trace
from conformance.errors import UsageError
from conformance.formats.trace_file import Trace, groupcheck_version
from conformance.protocols.classic.abstraction import abstract_key, group_state
from conformance.protocols.classic.build import make_classic_sim, quiet_gap
from conformance.protocols.classic.trace import CLIENT_OPS, TracedClassicSim, apply_op, to_trace

DEFAULT_OPS = ("step", "advance", "stall", "resume")
#: the perturbing ops ``--ops`` may add (Vanlightly's KIP-848 specification perturbs a group by
#: leaves, crashes, subscription changes and replies lost on an old connection); ``subscribe``
#: toggles a member between t and t,u (topic u of one partition then joins the set-up)
PERTURBATIONS = ("lose_response", "leave", "restart", "stale_subscription", "subscribe")
ALL_OPS = (*DEFAULT_OPS, *PERTURBATIONS)
#: explore op kinds the BFS polish adds only when the trace itself used that kind
OPTIONAL_KINDS = ("lose_response", "leave", "restart")


def classic_setup(
    members: int,
    partitions: int,
    variants: dict[str, str],
    ops: tuple[str, ...] = DEFAULT_OPS,
    static: int = 0,
) -> dict[str, Any]:
    """The explored group: ``members`` consumers of topic t, the first ``static`` of them static."""
    assignor = variants.get("assignor", "range")
    if assignor == "mixed":
        raise UsageError("explore: pick one assignor (--variant assignor=...), not mixed")
    clients: list[dict[str, Any]] = [
        {
            "name": f"c{i + 1}",
            "assignors": [assignor],
            "topics": ["t"],
            "session_timeout_ms": 6000,
            "rebalance_timeout_ms": 10_000,
        }
        for i in range(members)
    ]
    for i, c in enumerate(clients[:static]):
        c["instance_id"] = f"i{i + 1}"
    topics = {"t": partitions, **({"u": 1} if "subscribe" in ops else {})}
    return {"topics": topics, "clients": clients, "config": {}}


def _fresh(setup: dict[str, Any], variants: dict[str, str]) -> TracedClassicSim:
    return make_classic_sim(setup["topics"], setup["clients"], setup["config"], variants, where="explore")


def _enabled(sim: TracedClassicSim, ops: Iterable[str], perturb: bool = True) -> list[dict[str, Any]]:
    """The ops enabled in ``sim``; ``perturb`` False: none of `PERTURBATIONS` (the budget is spent)."""
    wanted = set(ops) if perturb else set(ops) - set(PERTURBATIONS)
    out: list[dict[str, Any]] = []
    for name in sorted(sim.clients):
        c = sim.clients[name]
        stalled = name in sim.stalled
        if "step" in wanted and not stalled:
            out.append({"op": "step", "client": name})
        if "stall" in wanted and not stalled and c.member_id:
            out.append({"op": "stall", "client": name})
        if "resume" in wanted and stalled:
            out.append({"op": "resume", "client": name})
        if "lose_response" in wanted and name in sim.awaiting and name not in sim.lose_next:
            out.append({"op": "lose_response", "client": name})
        if "leave" in wanted and not stalled and c.member_id:
            out.append({"op": "leave", "client": name})
        if "restart" in wanted and c.member_id:
            out.append({"op": "restart", "client": name})
        if "stale_subscription" in wanted and c.owned and not c.stale_subscription and c.cooperative:
            # the fault of docs/bug-catalogue.md#row-2
            out.append({"op": "stale_subscription", "client": name})
        if "subscribe" in wanted and "u" in sim.topics:
            topics = ["t"] if "u" in c.config.topics else ["t", "u"]
            out.append({"op": "subscribe", "client": name, "topics": topics})
    if "advance" in wanted:
        out.append({"op": "advance", "ms": quiet_gap(sim)})
    return out


def _label(op: dict[str, Any]) -> str:
    return " ".join(str(op[k]) for k in ("op", "client", "ms") if k in op)


def explore_classic(
    members: int,
    partitions: int,
    *,
    depth: int,
    variants: dict[str, str] | None = None,
    budget_s: float = 600.0,
    ops: tuple[str, ...] = DEFAULT_OPS,
    symmetry: bool = True,
    cpu_clock: bool = False,
    prefix: tuple[dict[str, Any], ...] = (),
    perturbations: int | None = None,
    static: int = 0,
    workers: int = 1,
) -> ExploreResult:
    """BFS to ``depth`` ops (after the optional ``prefix`` ops, which every path then starts with);
    at most ``perturbations`` of `PERTURBATIONS` on any path (None: no bound), the count so far
    being part of the state (`perturbed_key`)."""
    if not 1 <= members <= 4 or not 1 <= partitions <= 8 or not 0 <= static <= members:
        raise UsageError("explore: --members 1..4, --partitions 1..8 and --static 0..members")
    variants = dict(variants or {})
    setup = classic_setup(members, partitions, variants, ops, static)
    result = ExploreResult("classic", members, partitions, variants, depth, ops, setup=setup)
    result.static = static
    result.perturbations = perturbations
    root = _fresh(setup, variants)
    for op in prefix:
        apply_op(root, op, "explore --prefix")
    root.log.clear()
    result.prefix = tuple(prefix)
    root_key = perturbed_key(abstract_key(root, symmetry=symmetry), 0, perturbations)
    checker = Checker("classic")

    def expand(sim: TracedClassicSim, level: int) -> list[Step]:
        used = getattr(sim, "explore_perturbed", 0)
        steps = []
        for op in _enabled(sim, ops, perturbations is None or used < perturbations):
            child = clone(sim)
            obs = apply_op(child, op, "explore")
            child.log.clear()
            child.port.records.clear()  # type: ignore[attr-defined]  # the log of records, not state
            if obs is None and op["op"] not in ("restart", "stale_subscription", "subscribe"):
                continue
            spent = used + (op["op"] in PERTURBATIONS)
            child.explore_perturbed = spent  # type: ignore[attr-defined]
            key = perturbed_key(abstract_key(child, symmetry=symmetry), spent, perturbations)
            violations = (
                tuple((v.invariant, v.message) for v in checker.check(obs, level + 1))
                if obs is not None
                else ()
            )
            steps.append(Step(op, _label(op), child, key, violations, group_state(child)))
        return steps

    return search(
        result,
        root,
        root_key,
        group_state(root),
        expand,
        depth=depth,
        budget_s=budget_s,
        cpu_clock=cpu_clock,
        workers=workers,
    )


def found_trace(result: ExploreResult, found: Found) -> Trace:
    """Replay a found path on a fresh simulator, recording it as a trace."""
    sim = _fresh(result.setup, result.variants)
    checker = Checker("classic")
    violations: list[tuple[str, str, int]] = []
    for n, op in enumerate(found.path, 1):
        obs = apply_op(sim, op, "explore")
        if obs is None:
            continue
        vs = checker.check(obs, n)
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


def clone(sim: TracedClassicSim) -> TracedClassicSim:
    """A copy of ``sim`` that shares only immutable parts (frozen members, records, snapshots).

    `copy.deepcopy` walks every snapshot and record and dominated exploration time; this copies
    exactly the mutable containers (group dicts and sets, timers, clients, the simulator's maps)
    and the chooser's random state. A test checks it behaves like deepcopy.
    """
    from model.classic.port import ModelPort

    port = sim.port
    assert isinstance(port, ModelPort)
    new_port = type(port).__new__(type(port))  # the classes of a mutant's port and coordinator too
    new_port.__dict__.update(port.__dict__)
    coord = type(port.coordinator).__new__(type(port.coordinator))
    coord.__dict__.update(port.coordinator.__dict__)
    coord.chooser = clone_chooser(port.coordinator.chooser)
    new_port.coordinator = coord
    new_port.state = port.state.clone()
    new_port.durable = list(port.durable)
    new_port.records = []
    out = type(sim).__new__(type(sim))
    out.__dict__.update(sim.__dict__)
    out.port = new_port
    out.clients = {n: shallow_copy(c) for n, c in sim.clients.items()}
    out.topics = dict(sim.topics)
    out.awaiting = dict(sim.awaiting)
    out.stalled = set(sim.stalled)
    out.buffered = {n: list(ds) for n, ds in sim.buffered.items()}
    out.lose_next = set(sim.lose_next)
    out.owner_of_ref = dict(sim.owner_of_ref)
    out.sent = sim.sent.copy()
    out.deviations = set(sim.deviations)
    out.computed = dict(sim.computed)
    out.held = dict(sim.held)
    out.duplicate_next = set(sim.duplicate_next)
    out.delay_next = set(sim.delay_next)
    out.copies = dict(sim.copies)
    out.copies_due = list(sim.copies_due)
    out.handed = list(sim.handed)
    out.log = []
    return out  # setup, variants, the world snapshot and the snapshot cache (checked per use) shared


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
    """The kit's ``explore``: `explore_classic` over ``ops`` (None: `DEFAULT_OPS`; a usage error
    naming an op it does not know)."""
    ops = DEFAULT_OPS if ops is None else ops
    unknown = sorted(set(ops) - set(ALL_OPS))
    if unknown:
        raise UsageError(f"--ops: unknown op(s) {unknown} (known: {', '.join(ALL_OPS)})")
    return explore_classic(
        members,
        partitions,
        depth=depth,
        variants=variants,
        budget_s=budget_s,
        ops=ops,
        cpu_clock=cpu_clock,
        perturbations=perturbations,
        static=static,
        workers=workers,
    )


def polish_space(trace: Trace) -> PolishSpace:
    """The kit's ``polish_space``: explore's ops, plus lost responses, leaves and restarts when
    the trace itself used that kind (`OPTIONAL_KINDS`)."""
    used = {s.action.get("op") for s in trace.steps}
    kinds = (*DEFAULT_OPS, *(k for k in OPTIONAL_KINDS if k in used))

    def root(t: Trace) -> Any:
        return sim_from_trace(t, make_classic_sim, dict(t.header["variants"]), "polish")

    def apply(sim: Any, op: dict[str, Any]) -> list[Any] | None:
        obs = apply_op(sim, op, "polish")
        sim.log.clear()
        sim.port.records.clear()  # the log of records, not state
        if obs is None:
            return [] if op.get("op") in CLIENT_OPS else None
        return [obs]

    return PolishSpace(
        root,
        apply,
        lambda sim: _enabled(sim, kinds),
        clone,
        lambda sim: abstract_key(sim, symmetry=False),
        (*DEFAULT_OPS, *OPTIONAL_KINDS),
    )
