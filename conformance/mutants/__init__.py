"""Mutants: the model with one named fault, to show the suite has teeth (docs/mutants.md).

Each mutant is a small subclass of a model class overriding one rule (a coordinator, a virtual
client, an assignor or the in-process port), or a variant flag of the model; never a copy of the
model. Catalogue mutants reproduce a row of ``docs/bug-catalogue.md``; generic mutants
are the classic faults of a group coordinator (skip a generation bump, accept a stale generation, ...).

A mutant is a *target*: ``--variant mutant=NAME`` (recorded in the trace header, so a counterexample
replays against the same mutant) builds the simulator on the mutant instead of the reference model;
the suite drives it exactly as it drives any coordinator. ``groupcheck mutants`` runs the suite from
scratch against every mutant and prints the kill matrix (`conformance.power.matrix`).
"""

from __future__ import annotations

from collections.abc import Mapping

from conformance.errors import UsageError
from conformance.mutants.base import Mutant


def _registry() -> dict[str, Mutant]:
    from conformance.mutants.classic import CLASSIC_MUTANTS
    from conformance.mutants.classic_promises import CLASSIC_PROMISE_MUTANTS
    from conformance.mutants.classic_strays import CLASSIC_STRAY_MUTANTS
    from conformance.mutants.consumer import CONSUMER_MUTANT_LIST

    out: dict[str, Mutant] = {}
    for m in (*CLASSIC_MUTANTS, *CLASSIC_PROMISE_MUTANTS, *CLASSIC_STRAY_MUTANTS, *CONSUMER_MUTANT_LIST):
        if m.name in out:
            raise ValueError(f"mutant {m.name} defined twice")
        out[m.name] = m
    return out


MUTANTS: dict[str, Mutant] = _registry()


#: Bug-catalogue rows without a mutant, and why (kept honest by tests/test_mutants.py).
UNMODELLED_ROWS: dict[int, str] = {}


def heldout_mutants() -> dict[str, Mutant]:
    """The mutants of the second bug catalogue (docs/bug-catalogue-heldout.md), kept out of `MUTANTS`
    and its kill matrix; `get_mutant` finds them, so ``--target mutant:NAME`` runs them."""
    from conformance.mutants.heldout2_classic import HELDOUT2_CLASSIC_MUTANTS
    from conformance.mutants.heldout2_clients import HELDOUT2_CLIENT_MUTANTS
    from conformance.mutants.heldout2_consumer import HELDOUT2_CONSUMER_MUTANTS
    from conformance.mutants.heldout2_others import HELDOUT2_OTHERS_MUTANTS
    from conformance.mutants.heldout3_classic import HELDOUT3_CLASSIC_MUTANTS
    from conformance.mutants.heldout3_consumer import HELDOUT3_CONSUMER_MUTANTS
    from conformance.mutants.heldout3_others import HELDOUT3_OTHERS_MUTANTS
    from conformance.mutants.heldout_classic import HELDOUT_CLASSIC_MUTANTS
    from conformance.mutants.heldout_consumer import HELDOUT_CONSUMER_MUTANTS
    from conformance.mutants.heldout_mixed import HELDOUT_MIXED_MUTANT_LIST

    return {
        m.name: m
        for m in (
            *HELDOUT_CLASSIC_MUTANTS,
            *HELDOUT_CONSUMER_MUTANTS,
            *HELDOUT_MIXED_MUTANT_LIST,
            *HELDOUT2_OTHERS_MUTANTS,
            *HELDOUT2_CONSUMER_MUTANTS,
            *HELDOUT2_CLIENT_MUTANTS,
            *HELDOUT2_CLASSIC_MUTANTS,
            *HELDOUT3_CLASSIC_MUTANTS,
            *HELDOUT3_CONSUMER_MUTANTS,
            *HELDOUT3_OTHERS_MUTANTS,
        )
    }


def get_mutant(name: str, protocol: str | None = None) -> Mutant:
    """The named mutant; a usage error naming the known ones, or the protocol mismatch."""
    mutant = MUTANTS.get(name) or heldout_mutants().get(name)
    if mutant is None:
        known = sorted({*MUTANTS, *heldout_mutants()})
        raise UsageError(f"unknown mutant {name!r} (known: {', '.join(known)})")
    if protocol is not None and mutant.protocol != protocol:
        raise UsageError(f"mutant {name} is a {mutant.protocol} mutant, not {protocol}")
    return mutant


def named_mutant(variants: Mapping[str, str], protocol: str) -> Mutant | None:
    """The ``protocol`` mutant named by ``variants['mutant']``, or None (the reference model)."""
    if not variants.get("mutant"):
        return None
    return get_mutant(variants["mutant"], protocol)


def with_mutant_variants(variants: Mapping[str, str]) -> dict[str, str]:
    """``variants`` plus the model variants the named mutant is made of (explicit values win)."""
    out = dict(variants)
    name = out.get("mutant")
    if name:
        for key, value in get_mutant(name).variants:
            out.setdefault(key, value)
    return out


__all__ = ["MUTANTS", "Mutant", "get_mutant", "named_mutant", "with_mutant_variants"]
