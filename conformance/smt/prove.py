"""`groupcheck prove`: which invariants have a z3 encoder, their lemmas, variants, and the run.

An invariant is proved at a bound (members x partitions) when its base case and the inductive step
of every rule are CONFIRMED with the strengthening lemmas the catalogue lists for it
(`specs/invariants.yaml`, field ``lemmas``). When a step is not inductive, bounded model checking
from the initial state looks for a reachable violation: found and confirmed by the model, the
invariant is REFUTED; otherwise it stays UNKNOWN. UNKNOWN is never a pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from conformance.errors import UsageError
from conformance.smt.outcome import Outcome
from conformance.smt.solver import Limits, Verdict


@dataclass(frozen=True)
class ProveVariant:
    name: str
    values: tuple[str, ...]
    default: str
    broken: str
    help: str


PROVE_VARIANTS: dict[str, ProveVariant] = {
    v.name: v
    for v in (
        ProveVariant(
            "reconcile_pending",
            ("respect", "ignore"),
            "respect",
            "ignore",
            "KIP-848 reconciliation: ignore = a partition still pending revocation counts as free",
        ),
        ProveVariant(
            "leave_bump",
            ("true", "false"),
            "true",
            "false",
            "KIP-848: false = a leave does not bump the group epoch",
        ),
        ProveVariant(
            "epoch_check",
            ("true", "false"),
            "true",
            "false",
            "KIP-848: false = heartbeat member epochs are not validated (docs/protocol-reference.md#b6 row 12)",
        ),
        ProveVariant(
            "sync_generation_check",
            ("true", "false"),
            "true",
            "false",
            "classic: false = SyncGroup from a stale generation is accepted",
        ),
        ProveVariant(
            "install_missing",
            ("empty", "keep"),
            "empty",
            "keep",
            "classic: keep = a member left out of the leader's SyncGroup assignment keeps its old one",
        ),
        ProveVariant(
            "sticky",
            ("v1", "v0"),
            "v1",
            "v0",
            "sticky claims: v0 = pre-KIP-341, every claim counts as ownership",
        ),
        ProveVariant(
            "cooperative_adjust",
            ("true", "false"),
            "true",
            "false",
            "KIP-429 adjustment: false = a partition moves directly to its new owner (KAFKA-14639)",
        ),
        ProveVariant(
            "assignment_interval_wait",
            ("1x", "2x"),
            "1x",
            "2x",
            "KIP-848 batching: 2x = the next target only after twice the assignment interval",
        ),
        ProveVariant(
            "assignment_interval_check",
            ("true", "false"),
            "true",
            "false",
            "KIP-848 batching: false = a target at every group epoch bump, interval or not",
        ),
        ProveVariant(
            "commit_epochs",
            ("assignment", "exact-only"),
            "assignment",
            "exact-only",
            "KIP-1251: exact-only = a coordinator promising KIP-1251 commits keeps the exact-epoch rule",
        ),
    )
}
BROKEN_VARIANTS: tuple[tuple[str, str], ...] = tuple((v.name, v.broken) for v in PROVE_VARIANTS.values())


def parse_prove_variants(items: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--variant {item!r}: expected KEY=VALUE")
        spec = PROVE_VARIANTS.get(key)
        if spec is None:
            raise UsageError(f"unknown prove variant {key!r} (known: {', '.join(sorted(PROVE_VARIANTS))})")
        if value not in spec.values:
            raise UsageError(f"variant {key}={value!r}: expected one of {', '.join(spec.values)}")
        out[key] = value
    return out


def full_variant(given: Mapping[str, str]) -> dict[str, str]:
    return {name: given.get(name, v.default) for name, v in PROVE_VARIANTS.items()}


ProveFn = Callable[[str, tuple[str, ...], int, int, Mapping[str, str], Limits, int], list[Outcome]]


def _families() -> dict[str, ProveFn]:
    """Invariant id -> the function proving it (imported lazily: z3 formulas are built on demand)."""
    from conformance.smt import (
        batching_check,
        claims_check,
        classic_assign_check,
        classic_check,
        commit_epochs_check,
        kip848_check,
    )

    out: dict[str, ProveFn] = {}
    modules = (
        kip848_check,
        batching_check,
        commit_epochs_check,
        classic_check,
        classic_assign_check,
        claims_check,
    )
    for module in modules:
        for inv in module.INVARIANTS:
            out[inv] = module.prove
    return out


def encoded_invariants() -> list[str]:
    return sorted(_families())


def catalogue_lemmas() -> dict[str, tuple[str, ...]]:
    """Each z3-checked invariant's strengthening lemmas, as stated in the catalogue."""
    from conformance.specs import load_invariants

    out: dict[str, tuple[str, ...]] = {}
    for inv_id, spec in load_invariants().items():
        if "z3" in spec.checkers:
            out[inv_id] = tuple(spec.extra.get("lemmas") or ())
    return out


@dataclass
class ProveRun:
    outcomes: list[Outcome]
    seconds: float

    def verdict_of(self, invariant_id: str) -> Verdict:
        rows = [o for o in self.outcomes if o.invariant_id == invariant_id]
        return overall(rows)

    @property
    def invariants(self) -> list[str]:
        return sorted({o.invariant_id for o in self.outcomes})

    @property
    def encoding_bugs(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.encoding_bug]


def overall(rows: list[Outcome]) -> Verdict:
    """REFUTED if any row is; CONFIRMED if the base case and every step are; otherwise UNKNOWN."""
    if any(o.verdict == Verdict.REFUTED for o in rows):
        return Verdict.REFUTED
    steps = [o for o in rows if o.transition != "bmc"]
    if steps and all(o.verdict == Verdict.CONFIRMED for o in steps):
        return Verdict.CONFIRMED
    return Verdict.UNKNOWN


def run_prove(
    invariants: Iterable[str] | None,
    variant: Mapping[str, str],
    members: int,
    partitions: int,
    limits: Limits,
    depth: int = 6,
) -> ProveRun:
    families = _families()
    wanted = sorted(families) if invariants is None else list(invariants)
    for inv in wanted:
        if inv not in families:
            raise UsageError(f"no z3 encoder for invariant {inv!r} (encoded: {', '.join(sorted(families))})")
    if members < 1 or partitions < 1:
        raise UsageError("--members and --partitions must be at least 1")
    lemmas = catalogue_lemmas()
    variant = full_variant(variant)
    start = time.perf_counter()
    outcomes: list[Outcome] = []
    for inv in wanted:
        rows = families[inv](inv, lemmas.get(inv, ()), members, partitions, variant, limits, depth)
        for row in rows:
            row.variant = {k: v for k, v in variant.items() if v != PROVE_VARIANTS[k].default}
        outcomes += rows
    return ProveRun(outcomes, time.perf_counter() - start)
