"""`--variant KEY=VALUE`: protocol variants as configuration of the model, not copies (docs/cli.md#variants)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.errors import UsageError
from conformance.mutants import MUTANTS, with_mutant_variants


@dataclass(frozen=True)
class VariantKey:
    name: str
    values: tuple[str, ...]
    help: str


#: the key every protocol with registered mutants reads (`conformance.mutants`); the others
#: come from the kits (`ProtocolKit.variants`)
MUTANT = VariantKey(
    "mutant",
    tuple(sorted(MUTANTS)),
    "run against a mutant (conformance/mutants/, docs/mutants.md) instead of the reference model",
)


def variant_keys(kits: Iterable[Any]) -> dict[str, VariantKey]:
    """Every key the given kits read, plus `MUTANT`."""
    out = {MUTANT.name: MUTANT}
    for kit in kits:
        out.update((v.name, v) for v in kit.variants)
    return out


def parse_variants(items: Iterable[str], known: Mapping[str, VariantKey]) -> dict[str, str]:
    """Parse KEY=VALUE items against the ``known`` keys (`variant_keys`); unknown keys or values
    are a usage error naming the item.

    ``mutant=NAME`` brings the model variants that mutant is made of (e.g. kafka-7026: sticky v0)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--variant {item!r}: expected KEY=VALUE")
        spec = known.get(key)
        if spec is None:
            raise UsageError(f"unknown variant {key!r} (known: {', '.join(sorted(known))})")
        if value not in spec.values:
            raise UsageError(f"variant {key}={value!r}: expected one of {', '.join(spec.values)}")
        out[key] = value
    return with_mutant_variants(out)
