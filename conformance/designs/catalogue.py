"""specs/design-invariants.yaml: the design predicates' statements and sources, matched to the code."""

from __future__ import annotations

from pathlib import Path

from conformance.errors import SpecError
from conformance.specs import SPECS_DIR, read_yaml
from model.designs.invariants import DESIGN_REGISTRY

PATH = SPECS_DIR / "design-invariants.yaml"
FIELDS = ("id", "kind", "statement", "source")


def load(path: Path | None = None) -> dict[str, dict[str, str]]:
    path = path or PATH
    data, _ = read_yaml(path)
    entries = data.get("invariants") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise SpecError(f"{path}:1: expected a mapping with an 'invariants' list")
    out: dict[str, dict[str, str]] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or sorted(entry) != sorted(FIELDS):
            raise SpecError(f"{path}: invariants[{i}] must have exactly the fields {', '.join(FIELDS)}")
        inv = DESIGN_REGISTRY.get(str(entry["id"]))
        if inv is None or inv.kind != entry["kind"]:
            raise SpecError(
                f"{path}: invariants[{i}] {entry['id']!r} does not match a design predicate of kind {entry['kind']!r}"
            )
        out[str(entry["id"])] = {k: str(entry[k]) for k in FIELDS}
    missing = sorted(set(DESIGN_REGISTRY) - set(out))
    if missing:
        raise SpecError(f"{path}: design predicates missing from the catalogue: {', '.join(missing)}")
    return out
