"""The kill matrix: the stateful suite, from scratch, against every mutant (docs/mutants.md#kill-matrix).

For each mutant, `run_mutant` runs exactly what ``groupcheck check --protocol P --variant
mutant=NAME --seed S --max-examples N`` runs (random exploration, not the mutant's named scenario),
capped by a time budget, and records: caught or not, the invariant(s) that caught it, how many
examples and seconds it took to the *first* failing step (before shrinking), and the length of the
shrunk counterexample. `render_markdown` writes ``reports/mutants.md``.

Measurement hooks, both local to a run: a port factory that counts examples (one simulator per
example) and a wrapper around `Checker.check` that notes the first violation's time. The budget is
checked between whole check runs (a Hypothesis run is never cut short, so its result is the one
``groupcheck check`` gives for that seed).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from conformance.engine.checker import Checker
from conformance.engine.minimise import fails, minimise, with_steps
from conformance.engine.polish import polish
from conformance.engine.profiles import Profile
from conformance.engine.run import run_check
from conformance.mutants import MUTANTS, Mutant, get_mutant, with_mutant_variants
from conformance.protocols import get_kit

#: Why a mutant survives random exploration, when it does (survivors are listed, never hidden).
SURVIVOR_REASONS: dict[str, str] = {}


@dataclass
class KillRow:
    name: str
    protocol: str
    family: str
    row: int | None
    expect: tuple[str, ...]
    caught: bool = False
    invariants: list[str] = field(default_factory=list)
    examples: int | None = None  # examples started up to and including the first failing one
    seconds: float | None = None  # wall-clock seconds from the start of the run to the first violation
    cpu_seconds: float | None = None  # CPU seconds of this process to the first violation (load-proof)
    shrunk_steps: int | None = (
        None  # after Hypothesis' shrink and then ddmin (conformance/engine/minimise.py)
    )
    hypothesis_steps: int | None = None  # after Hypothesis' shrink alone
    bfs_minimal: int | None = None
    bfs_note: str = ""  # why there is no BFS-minimal length, or the bound it was found in
    total_seconds: float = 0.0
    examples_run: int = 0
    budget_hit: bool = False
    seed: int = 0
    seeds: int = 1  # check runs (seeds S, S+1, ...) until caught or out of budget
    trace_path: str | None = None
    message: str = ""

    @property
    def expected_hit(self) -> bool:
        return bool(set(self.invariants) & set(self.expect))

    @property
    def ratio(self) -> float | None:
        """Shrunk length over the BFS-minimal length (goal: <= 1.25, docs/mutants.md#shrinking)."""
        if self.shrunk_steps is None or not self.bfs_minimal:
            return None
        return self.shrunk_steps / self.bfs_minimal


class _Clock:
    def __init__(self, budget_s: float) -> None:
        self.start = time.perf_counter()
        self.cpu_start = time.process_time()
        self.cpu_first: float | None = None
        self.budget_s = budget_s
        self.examples = 0
        self.first: tuple[float, int] | None = None
        self.budget_hit = False

    def elapsed(self) -> float:
        return time.perf_counter() - self.start


@contextlib.contextmanager
def _first_violation_hook(clock: _Clock) -> Iterator[None]:
    original = Checker.check

    def check(self: Checker, obs: Any, step: int) -> Any:
        out = original(self, obs, step)
        if out and clock.first is None:
            clock.first = (clock.elapsed(), clock.examples)
            clock.cpu_first = time.process_time() - clock.cpu_start
        return out

    Checker.check = check  # type: ignore[method-assign]
    try:
        yield
    finally:
        Checker.check = original  # type: ignore[method-assign]


def _port_factory(mutant: Mutant, clock: _Clock) -> Any:
    model_port = get_kit(mutant.protocol).require("model_port")

    def factory(coord: Any) -> Any:
        clock.examples += 1
        if mutant.port is not None:
            return mutant.port(coord)
        return model_port(coord)

    return factory


def run_mutant(
    name: str,
    *,
    profile: Profile,
    budget_s: float = 60.0,
    max_examples: int | None = None,
    seed: int = 0,
    run_dir: Path | None = None,
    shrink: bool = True,
    polish_budget_s: float = 5.0,
) -> KillRow:
    """The suite from scratch against one mutant: ``groupcheck check --seed S`` (the profile's
    examples), then seeds S+1, S+2, ... while the budget lasts; the first failure ends the run and
    its (shrunk) counterexample is written under ``run_dir``."""
    mutant = get_mutant(name)
    row = KillRow(mutant.name, mutant.protocol, mutant.family, mutant.row, mutant.expect, seed=seed)
    clock = _Clock(budget_s)
    variants = with_mutant_variants({"mutant": mutant.name})
    result = None
    run_seed = seed
    with _first_violation_hook(clock):
        while True:
            result = run_check(
                get_kit(mutant.protocol),
                profile=profile,
                max_examples=max_examples,
                seed_value=run_seed,
                variants=variants,
                port_factory=_port_factory(mutant, clock),
                shrink=shrink,
            )
            if result.violations or result.error or clock.elapsed() >= budget_s:
                break
            run_seed += 1
    row.total_seconds = clock.elapsed()
    row.examples_run = clock.examples
    row.budget_hit = not result.violations
    row.seeds = run_seed - seed + 1
    if result.error:
        row.message = result.error
    if result.violations:
        row.caught = True
        row.invariants = sorted({v.invariant for v in result.violations})
        row.message = result.violations[0].message
        row.shrunk_steps = len(result.trace.steps) if result.trace is not None else len(result.observations)
        if clock.first is not None:
            row.seconds, row.examples = clock.first
            row.cpu_seconds = clock.cpu_first
        trace = result.trace
        if trace is not None and shrink:
            row.hypothesis_steps = len(trace.steps)
            trace = ddmin(trace, row.invariants, mutant.expect, polish_budget_s=polish_budget_s)
            row.shrunk_steps = len(trace.steps)
        if trace is not None and run_dir is not None:
            from conformance.formats.trace_file import counterexample_path, write_trace

            path = write_trace(trace, counterexample_path(trace, run_dir / mutant.name))
            row.trace_path = str(path)
    return row


def ddmin(trace: Any, found: list[str], expect: tuple[str, ...], *, polish_budget_s: float = 5.0) -> Any:
    """Hypothesis' shrunk trace, minimised further by delta debugging over its recorded ops
    (`conformance.engine.minimise`: a rule such as ``settle`` expands into many ops Hypothesis cannot
    drop one by one), then merged advances where the kit allows it (`compress_time`), and a
    breadth-first polish of the tail (`conformance.engine.polish`, ``polish_budget_s`` CPU seconds;
    0 skips it).
    Keeps the violation of an expected invariant when there is one."""
    kit = get_kit(trace.protocol)
    wanted = [i for i in found if i in expect] or found
    try:
        small = minimise(trace, wanted[0], kit)
        if kit.merge_advances:
            small = minimise(compress_time(small, wanted[0]), wanted[0], kit)
        if polish_budget_s > 0:  # a shorter tail found breadth-first (conformance/engine/polish.py)
            polished = polish(small, wanted[0], budget_s=polish_budget_s, kit=kit)
            if len(polished.steps) < len(small.steps):
                small = minimise(polished, wanted[0], kit)
    except (ValueError, AssertionError):  # not exactly replayable: keep Hypothesis' trace
        return trace
    return small if len(small.steps) < len(trace.steps) else trace


def compress_time(trace: Any, invariant: str, *, max_replays: int = 300) -> Any:
    """Collapse a stretch between two ``advance`` ops into one advance of their summed time when
    the violation survives: ddmin cannot, since dropping one advance changes every later deadline.
    Longest stretches first; at most ``max_replays`` replays. Returns a trace of the kept ops
    (``minimise`` re-records it)."""
    steps = list(trace.steps)
    budget = max_replays
    changed = True
    while changed and budget > 0:
        changed = False
        adv = [k for k, st in enumerate(steps) if st.action.get("op") == "advance"]
        pairs = sorted(((i, j) for a, i in enumerate(adv) for j in adv[a + 1 :]), key=lambda p: p[0] - p[1])
        for i, j in pairs:
            if budget <= 0:
                break
            budget -= 1
            total = sum(int(steps[k].action["ms"]) for k in range(i, j + 1) if k in adv)
            merged = replace(steps[i], action={**steps[i].action, "ms": total})
            candidate = steps[:i] + [merged] + steps[j + 1 :]
            if fails(trace, candidate, invariant):
                steps, changed = candidate, True
                break
    return with_steps(trace, steps)


def run_matrix(
    names: list[str] | None = None,
    *,
    protocol: str | None = None,
    profile: Profile,
    budget_s: float = 60.0,
    max_examples: int | None = None,
    seed: int = 0,
    run_dir: Path | None = None,
    progress: Any = None,
    shrink: bool = True,
    bfs_budget_s: float | None = None,
    jobs: int = 1,
) -> list[KillRow]:
    """Every chosen mutant's row, in registry order; ``jobs`` > 1 runs mutants in worker processes
    (each row is still one mutant's own check runs; only wall-clock time is shared)."""
    chosen = [get_mutant(n) for n in names] if names else list(MUTANTS.values())
    if protocol and protocol != "all":
        chosen = [m for m in chosen if m.protocol == protocol]
    args = [(m.name, profile, budget_s, max_examples, seed, run_dir, shrink, bfs_budget_s) for m in chosen]
    if jobs <= 1:
        rows = []
        for a in args:
            rows.append(_one(a))
            if progress is not None:
                progress(rows[-1])
        return rows
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        rows = []
        for row in pool.map(_one, args):
            rows.append(row)
            if progress is not None:
                progress(row)
    return rows


def _one(a: tuple[Any, ...]) -> KillRow:
    name, profile, budget_s, max_examples, seed, run_dir, shrink, bfs_budget_s = a
    row = run_mutant(
        name,
        profile=profile,
        budget_s=budget_s,
        max_examples=max_examples,
        seed=seed,
        run_dir=run_dir,
        shrink=shrink,
    )
    if bfs_budget_s is not None:
        from conformance.power.bfs import bfs_minimal

        row.bfs_minimal, row.bfs_note = bfs_minimal(name, budget_s=bfs_budget_s)
    return row


# ---------------------------------------------------------------------------------- rendering

HEADER = (
    "| mutant | protocol | family | row | caught | invariant(s) | examples to 1st failure | "
    "s to 1st failure | Hypothesis-shrunk steps | shrunk steps (+ddmin) | BFS-minimal | ratio |"
)


def _fmt(value: float | int | None, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def table_row(r: KillRow) -> str:
    caught = ("yes" if r.seeds == 1 else f"yes (seed +{r.seeds - 1})") if r.caught else "**SURVIVED**"
    invs = ", ".join(f"`{i}`" for i in r.invariants) or "-"
    return (
        f"| `{r.name}` | {r.protocol} | {r.family} | {r.row or '-'} | {caught} | {invs} | "
        f"{_fmt(r.examples)} | {_fmt(r.seconds, '.2f')} | {_fmt(r.hypothesis_steps)} | "
        f"{_fmt(r.shrunk_steps)} | {_fmt(r.bfs_minimal)} | {_fmt(r.ratio, '.2f')} |"
    )


def text_row(r: KillRow) -> str:
    caught = "caught" if r.caught else "SURVIVED"
    invs = ",".join(r.invariants) or "-"
    return (
        f"{r.name:26s} {r.protocol:8s} {caught:8s} ex={_fmt(r.examples):>4s} "
        f"t={_fmt(r.seconds, '.2f'):>6s}s shrunk={_fmt(r.shrunk_steps):>3s} bfs={_fmt(r.bfs_minimal):>3s}  {invs}"
    )


def render_markdown(rows: list[KillRow], *, command: str, machine: str, shrunk: bool = True) -> str:
    caught = [r for r in rows if r.caught]
    lines = [
        "# Kill matrix: the suite against every mutant",
        "",
        "Generated by `groupcheck mutants` (conformance/power/matrix.py); do not edit by hand.",
        "Each mutant is the reference model with one named fault (`conformance/mutants/`); the suite",
        "runs from scratch (random exploration, not the named scenario), exactly as",
        "`groupcheck check --protocol P --variant mutant=NAME --seed S` does.",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine}  ",
        f"Caught: {len(caught)} of {len(rows)}.",
        "",
        "Columns: *examples / s to 1st failure* = Hypothesis examples started and wall-clock seconds until",
        "the first violated invariant (before shrinking); *Hypothesis-shrunk steps* = recorded ops of the",
        "counterexample after Hypothesis' shrink; *shrunk steps* = after a further delta-debugging pass",
        "over the recorded ops (`conformance/trace/minimise.py`)"
        + ("" if shrunk else " (this run did not shrink: `--no-shrink`, so the first failing example)")
        + "; *BFS-minimal* = shortest op",
        "sequence violating one of the mutant's expected invariants found by `groupcheck explore` within",
        "the bound in `conformance/power/bfs.py` (the notes below say why a row has none); *ratio* =",
        "shrunk / BFS-minimal (goal <= 1.25; below 1 where the machine's alphabet has a shortcut BFS lacks).",
        "",
        HEADER,
        "|" + "---|" * 12,
    ]
    lines += [table_row(r) for r in rows]
    ratios = sorted(r.ratio for r in rows if r.ratio is not None)
    if ratios:
        lines += [
            "",
            f"Shrunk / BFS-minimal over {len(ratios)} mutants with both: median "
            f"{statistics.median(ratios):.2f}, max {ratios[-1]:.2f} (goal <= 1.25).",
        ]
    notes = [r for r in rows if r.bfs_note]
    if notes:
        lines += ["", "BFS bounds and gaps:", ""]
        lines += [f"* `{r.name}`: {r.bfs_note}" for r in notes]
    survivors = [r for r in rows if not r.caught]
    lines += ["", "## Survivors", ""]
    if not survivors:
        lines.append("None.")
    for r in survivors:
        m = MUTANTS[r.name]
        lines.append(
            f"* `{r.name}` ({m.fault}; expected: {', '.join(m.expect)}): ran {r.examples_run} examples "
            f"({r.seeds} seed(s)) in {r.total_seconds:.1f} s without a violation. Why: "
            f"{SURVIVOR_REASONS.get(r.name, 'not analysed yet')}."
        )
    missed = [r for r in caught if not r.expected_hit]
    if missed:
        lines += ["", "## Caught by another invariant than expected", ""]
        for r in missed:
            lines.append(f"* `{r.name}`: expected {', '.join(r.expect)}; caught by {', '.join(r.invariants)}")
    lines += ["", "## The mutants", "", "| mutant | fault | source |", "|---|---|---|"]
    for r in rows:
        m = MUTANTS[r.name]
        lines.append(f"| `{m.name}` | {m.fault} | {m.source} |")
    return "\n".join(lines) + "\n"
