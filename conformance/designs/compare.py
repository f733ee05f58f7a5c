"""`groupcheck compare`: every design on the same workloads, predicates, measurements and costs.

For each design row: the seeded search and the scenarios give counterexamples per predicate; each is
shrunk (keeping it harmless to the design's baseline), written as a trace, and replayed on the design
(must be FAILED) and on the baseline (must be PASSED). Then the liveness workloads, the balance,
and the per-rebalance cost for the group sizes asked for. `report.write` turns it into markdown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from conformance.designs import scenarios as scn
from conformance.designs import trace as tr
from conformance.designs.measure import WORKLOADS, Measure, balance, measure
from conformance.designs.search import TOPICS, Counterexample, search
from conformance.designs.shrink import distinguishes, shrink
from model.designs import DESIGNS, make_engine, parse_design
from model.designs.cost import COST_DESIGNS, Cost, cost
from model.designs.cost import broker as broker_cost
from model.designs.cost_kip848 import JOIN_COST_DESIGNS, JoinCost, first_join
from model.designs.driver import run

PROPERTIES = (
    ("design.single_owner", "single owner"),
    ("design.generation_monotonic", "monotonic generations"),
    ("design.eventually_owned", "every partition eventually owned"),
    ("design.members_survive", "members survive"),
    ("design.upgrade_completes", "strategy upgrade takes effect"),
    ("design.leave_accepted", "leave accepted"),
    ("design.coordinator_state_bounded", "coordinator state bounded"),
)
NOT_APPLICABLE = {
    ("broker-coordinator", "design.generation_monotonic"): "no generation: seed 001's ownership carries none",
    ("broker-coordinator", "design.leave_accepted"): "seed 001 has no leave request",
    ("kip1082-server-id", "design.upgrade_completes"): "server-side assignors: no client strategy to upgrade",
    ("shipped-kip848", "design.upgrade_completes"): "server-side assignors: no client strategy to upgrade",
}
DEFAULT_ROWS = (
    "shipped",
    "independent-hash",
    "independent-hash:scope=cluster",
    "consistent-hash",
    "hashed-subgroups",
    "hashed-subgroups:tie=own",
    "compressed",
    "sync-in-join",
    "sync-in-join:choice=max-version",
    "broker-coordinator",
    "broker-coordinator:max_ping_retries=3",
    "broker-coordinator:failover=zombie",
    "broker-coordinator:threads=2",
    "kip341-local-marker",
    "kip1082-server-id",
    "shipped-kip848",
)
DEFAULT_MEMBERS = (5, 50, 500, 5000)
TOPIC_SWEEP = (1, 10, 100, 1000)
SWEEP_MEMBERS = 50
SCALING_TOPICS = 10


@dataclass
class Cell:
    status: str  # held | violated | n/a
    note: str = ""
    trace: Path | None = None
    message: str = ""
    at: int = 0
    ops: int = 0
    origin: str = ""
    replay_design: str = ""
    replay_baseline: str = ""


@dataclass
class Row:
    label: str
    design: str
    options: dict[str, str]
    cells: dict[str, Cell] = field(default_factory=dict)
    workloads: int = 0
    scenarios: list[str] = field(default_factory=list)
    measures: dict[str, Measure] = field(default_factory=dict)
    balance: float | None = None

    @property
    def baseline(self) -> str:
        spec = DESIGNS[self.design]
        return scn.label(spec.baseline, spec.baseline_options)


@dataclass
class Comparison:
    rows: list[Row]
    costs: dict[str, list[Cost]]
    sweep: dict[str, list[Cost]]
    seed: int
    workloads: int
    figures: dict[str, Path] = field(default_factory=dict)
    #: every design scenario and what each of its expectations gave: (scenario, outcomes)
    scenarios: list[tuple[scn.DesignScenario, list[scn.Outcome]]] = field(default_factory=list)
    #: KIP-848 designs: the joining member's exchange until it is in the group, per group size
    join_costs: dict[str, list[JoinCost]] = field(default_factory=dict)
    #: seed 001 per-thread ownership: one rebalance with 1 and with 2 threads per consumer
    threads: dict[int, Cost] = field(default_factory=dict)

    def replays_ok(self) -> bool:
        return all(
            c.replay_design == "FAILED" and c.replay_baseline == "PASSED"
            for r in self.rows
            for c in r.cells.values()
            if c.status == "violated"
        )


def slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def _scenario_counterexamples(row: Row, known: set[str]) -> list[Counterexample]:
    out = []
    for sc in scn.load_all().values():
        for exp in sc.expect:
            if exp.design != row.design or exp.options != row.options:
                continue
            row.scenarios.append(sc.id)
            outcome = scn.run_one(sc, exp)
            for inv in outcome.result.violated:
                if inv in known:
                    continue
                check = distinguishes(row.design, row.options, sc.topics, sc.seed, inv)
                if not check(sc.ops):
                    continue
                small = shrink(sc.ops, check, 60)
                origin = {
                    "kind": "scenario",
                    "scenario": sc.id,
                    "ops_before_shrink": len(sc.ops),
                    "topics": sc.topics,
                }
                out.append(Counterexample(row.design, row.options, inv, small, sc.seed, origin))
                known.add(inv)
    return out


def _record(row: Row, ce: Counterexample, traces: Path) -> Cell:
    topics = dict(ce.origin.get("topics", TOPICS))
    result = run(make_engine(row.design, topics, row.options, ce.seed), ce.ops)
    trace = tr.trace_of(
        result,
        options=row.options,
        seed=ce.seed,
        topics=topics,
        origin={k: v for k, v in ce.origin.items() if k != "topics"},
    )
    path = tr.write(trace, traces / f"{slug(row.label)}--{ce.invariant.split('.', 1)[1]}.ndjson")
    again = tr.read(path)
    spec = DESIGNS[row.design]
    on_design = tr.replay(again)
    on_base = tr.replay(again, spec.baseline, spec.baseline_options)
    first = result.first(ce.invariant)
    return Cell(
        "violated", "", path, first.message if first else "", first.now if first else 0, len(ce.ops),
        ce.origin.get("scenario", "search"), on_design.verdict, on_base.verdict,
    )  # fmt: skip


def evaluate(label: str, *, seed: int, workloads: int, traces: Path, measure_liveness: bool = True) -> Row:
    design, options = parse_design(label)
    row = Row(label, design, options)
    spec = DESIGNS[design]
    if spec.factory is None:
        row.cells = {inv: Cell("n/a", "size model only") for inv, _ in PROPERTIES}
        return row
    found = search(design, options, seed=seed, workloads=workloads)
    row.workloads = found.workloads
    counterexamples = list(found.found.values())
    counterexamples += _scenario_counterexamples(row, set())  # a named failure case explains best
    by_inv = {ce.invariant: ce for ce in counterexamples}
    for inv, _ in PROPERTIES:
        if (design, inv) in NOT_APPLICABLE:
            row.cells[inv] = Cell("n/a", NOT_APPLICABLE[(design, inv)])
        elif inv in by_inv:
            row.cells[inv] = _record(row, by_inv[inv], traces)
        else:
            row.cells[inv] = Cell("held", f"{row.workloads} workloads, {len(row.scenarios)} scenario runs")
    if measure_liveness:
        row.measures = {w: measure(design, options, w, seed) for w in WORKLOADS}
        row.balance = balance(design, options)
    return row


def compare(
    labels: list[str],
    *,
    members: list[int],
    seed: int,
    workloads: int,
    out_dir: Path,
    measure_liveness: bool = True,
    topics: tuple[int, ...] = TOPIC_SWEEP,
    scenarios: bool = True,
) -> Comparison:
    rows = [
        evaluate(
            label,
            seed=seed,
            workloads=workloads,
            traces=out_dir / "traces",
            measure_liveness=measure_liveness,
        )
        for label in labels
    ]
    names = [r.design for r in rows if r.design in COST_DESIGNS and not r.options]
    costs = {d: [cost(d, n, SCALING_TOPICS) for n in members] for d in dict.fromkeys(names)}
    sweep = {d: [cost(d, SWEEP_MEMBERS, t) for t in topics] for d in dict.fromkeys(names)}
    threads: dict[int, Cost] = {}
    if "broker-coordinator" in names:  # per-thread ownership: 2 threads, partitions for every thread
        n = max(members)
        threads = {k: broker_cost(n, SCALING_TOPICS, 2 * n, k) for k in (1, 2)}
    joins = [r.design for r in rows if r.design in JOIN_COST_DESIGNS and not r.options]
    join_costs = {d: [first_join(d, n, SCALING_TOPICS) for n in members] for d in dict.fromkeys(joins)}
    outcomes = [(sc, scn.run_scenario(sc)) for sc in scn.load_all().values()] if scenarios else []
    return Comparison(
        rows, costs, sweep, seed, workloads, scenarios=outcomes, join_costs=join_costs, threads=threads
    )


def figures(comparison: Comparison, out_dir: Path) -> dict[str, Path]:
    from conformance.designs import plots

    figs: dict[str, Path] = {}
    if comparison.costs:
        figs["bytes"] = plots.scaling(comparison.costs, out_dir / "bytes-per-rebalance.png", "bytes")
        figs["messages"] = plots.scaling(comparison.costs, out_dir / "messages-per-rebalance.png", "messages")
        figs["topics"] = plots.topic_sweep(comparison.sweep, out_dir / "bytes-by-topics.png")
    measured = [r for r in comparison.rows if r.measures]
    if measured:
        storms = {
            r.label: {
                w: float(r.measures[w].rebalances)
                for w in ("churn-subscribed", "churn-other-topic", "flapping-member")
            }
            for r in measured
        }
        figs["storms"] = plots.bars(
            storms,
            out_dir / "rebalances-under-churn.png",
            "rebalances in 30 s",
            "Rebalances under metadata churn and a flapping member",
        )
        conv = {
            r.label: {
                w: (r.measures[w].converged_ms or 60_000) / 1000
                for w in ("join", "leave", "crash", "failover")
            }
            for r in measured
        }
        figs["converge"] = plots.bars(
            conv,
            out_dir / "time-to-converge.png",
            "seconds (60 = not within the window)",
            "Time to converge after a join, a leave, a crash, a coordinator failover",
        )
    comparison.figures = figs
    return figs


__all__ = [
    "DEFAULT_MEMBERS",
    "DEFAULT_ROWS",
    "PROPERTIES",
    "Cell",
    "Comparison",
    "Row",
    "compare",
    "evaluate",
    "figures",
]
