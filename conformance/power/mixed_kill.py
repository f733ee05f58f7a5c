"""The mixed-group kill matrix: the mixed machine, from scratch, against every mixed mutant.

The coordinator and client mutants of `conformance.mutants` have `reports/mutants.md`; the eleven
mixed-group mutants (`conformance.mutants.mixed.MIXED_MUTANTS`, one broken KIP-848 migration
rule each, docs/protocol-reference.md#b13) are variants (``--variant mixed_mutant=NAME``), not `Mutant` entries, so that matrix does
not list them. `run_mixed_mutant` runs exactly what ``groupcheck check --protocol mixed --variant
mixed_mutant=NAME --seed S`` runs, then seeds S+1, S+2, ... while a time budget lasts, and records
whether it was caught, by which invariants (one of ``MIXED_EXPECT`` must be among them), after how
many examples and seconds, and the length of Hypothesis' shrunk counterexample. `render_markdown`
writes ``reports/mutants_mixed.md`` (``groupcheck mutants --protocol mixed``).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from conformance.engine.profiles import Profile
from conformance.engine.run import run_check
from conformance.errors import UsageError
from conformance.mutants.mixed import MIXED_MUTANTS
from conformance.protocols import get_kit

#: the protocol whose machine these mutants are run against
PROTOCOL = "mixed"

#: The invariant(s) each mixed mutant's broken rule is written against (model/mixed/invariants.py;
#: `classic.session_expiry_armed` in model/classic/invariants.py runs on the classic groups of a mixed run).
MIXED_EXPECT: dict[str, tuple[str, ...]] = {
    "upgrade-ignores-policy": ("mixed.upgrade_rules", "mixed.upgrade_refused"),
    "upgrade-keeps-classic-group": ("mixed.one_group_type", "mixed.upgrade_rules"),
    "empty-replacement-honours-policy": ("mixed.empty_group_replaced",),
    "downgrade-ignores-policy": ("mixed.downgrade_rules",),
    "never-downgrades": ("mixed.downgrade_rules",),
    "no-replacement-downgrade": ("mixed.downgrade_rules",),
    "heartbeat-never-rejoins": ("mixed.classic_heartbeat_rule",),
    "generation-off-by-one": ("mixed.classic_generation_is_member_epoch",),
    "sync-gives-target": ("mixed.classic_sync_gives_assigned", "consumer.no_double_client_assignment"),
    "classic-rebalance-timer": ("mixed.classic_member_timers",),
    "classic-load-forgets-expiry": ("classic.session_expiry_armed",),
}


@dataclass
class MixedKillRow:
    name: str
    fault: str
    expect: tuple[str, ...]
    caught: bool = False
    invariants: list[str] = field(default_factory=list)
    seed: int = 0  # the seed whose run caught it (or the last one tried)
    seeds: int = 0  # check runs until caught or out of budget
    examples: int | None = None  # examples of the catching run (its max_examples)
    seconds: float = 0.0  # wall-clock seconds over all runs until the catching run ended
    shrunk_steps: int | None = None  # ops of Hypothesis' shrunk counterexample
    message: str = ""

    @property
    def expected_hit(self) -> bool:
        return bool(set(self.invariants) & set(self.expect))


def _fault(name: str) -> str:
    """The first sentence of the mutant's docstring (a dot inside a name does not end it)."""
    doc = " ".join((MIXED_MUTANTS[name].__doc__ or "").split())
    return re.split(r"\.(?:\s|$)", doc, maxsplit=1)[0]


def run_mixed_mutant(
    name: str, *, profile: Profile, budget_s: float = 60.0, max_examples: int | None = None, seed: int = 0
) -> MixedKillRow:
    """``check --protocol mixed --variant mixed_mutant=NAME`` at seeds S, S+1, ... until a run
    finds a violation or the budget is spent (a Hypothesis run is never cut short)."""
    kit = get_kit(PROTOCOL)
    if name not in MIXED_MUTANTS:
        raise UsageError(f"unknown mixed mutant {name!r} (known: {', '.join(MIXED_MUTANTS)})")
    row = MixedKillRow(name, _fault(name), MIXED_EXPECT[name], seed=seed)
    start = time.perf_counter()
    run_seed = seed
    while True:
        result = run_check(
            kit,
            profile=profile,
            max_examples=max_examples,
            seed_value=run_seed,
            variants={kit.mutant_key: name},
        )
        row.seeds += 1
        row.seed = run_seed
        if result.error:
            row.message = result.error
            break
        if result.violations:
            row.caught = True
            row.invariants = sorted({v.invariant for v in result.violations})
            row.message = result.violations[0].message
            row.examples = result.max_examples
            row.shrunk_steps = len(result.trace.steps) if result.trace is not None else None
            break
        if time.perf_counter() - start >= budget_s:
            break
        run_seed += 1
    row.seconds = time.perf_counter() - start
    return row


def run_mixed_matrix(
    names: list[str] | None,
    *,
    profile: Profile,
    budget_s: float,
    max_examples: int | None,
    seed: int,
    progress: Callable[[MixedKillRow], None] | None = None,
) -> list[MixedKillRow]:
    rows = []
    for name in names or list(MIXED_MUTANTS):
        rows.append(
            run_mixed_mutant(name, profile=profile, budget_s=budget_s, max_examples=max_examples, seed=seed)
        )
        if progress is not None:
            progress(rows[-1])
    return rows


def text_row(r: MixedKillRow) -> str:
    if not r.caught:
        return f"{r.name:34s} NOT caught in {r.seeds} run(s), {r.seconds:.1f} s {r.message}"
    hit = "" if r.expected_hit else "  (not an expected invariant)"
    return (
        f"{r.name:34s} caught at seed {r.seed} ({r.seeds} run(s), {r.seconds:.1f} s) by "
        f"{', '.join(r.invariants)}{hit}"
    )


def render_markdown(rows: list[MixedKillRow], *, command: str, machine: str, profile: Profile) -> str:
    caught = sum(r.caught and r.expected_hit for r in rows)
    lines = [
        "# Mixed-group kill matrix: the mixed machine against every mixed mutant",
        "",
        "Generated by `groupcheck mutants --protocol mixed` (conformance/power/mixed_kill.py); do not",
        "edit by hand. Each mutant is the mixed coordinator with one KIP-848 migration rule (docs/protocol-reference.md#b13) broken",
        "(`conformance/mutants/mixed.py`); the mixed machine (`conformance/protocols/mixed/machine.py`) runs from",
        "scratch exactly as `groupcheck check --protocol mixed --variant mixed_mutant=NAME --seed S` does,",
        "at seeds S, S+1, ... until one run finds a violation or the budget is spent.",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine}; profile {profile.name} ({profile.max_examples} examples x {profile.step_count} steps "
        "unless --max-examples)  ",
        f"Load average (1 min) at the end: {os.getloadavg()[0]:.1f} (a shared machine: seconds are wall clock).  ",
        f"Caught by an expected invariant: {caught} of {len(rows)}.",
        "",
        "Columns: *runs* = check runs (seeds) until caught; *s* = wall-clock seconds of those runs (the",
        "catching run includes Hypothesis' shrink); *shrunk steps* = ops of the shrunk counterexample.",
        "",
        "| mutant | broken rule | caught | invariant(s) | expected | seed | runs | s | shrunk steps |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| `{r.name}` | {r.fault} | {'yes' if r.caught else '**no**'} | "
            f"{', '.join(f'`{i}`' for i in r.invariants) or '-'} | {', '.join(f'`{i}`' for i in r.expect)} | "
            f"{r.seed} | {r.seeds} | {r.seconds:.1f} | {r.shrunk_steps if r.shrunk_steps is not None else '-'} |"
        )
    lines.append("")
    return "\n".join(lines)
