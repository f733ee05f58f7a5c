"""The catalogue's z3 side: strengthening lemmas and which invariants carry ``z3`` (docs/proofs.md).

`specs/invariants.yaml` has a top-level ``lemmas`` list (id, statement, source) and, per invariant, an
optional ``lemmas`` field naming the lemmas and other invariants its inductive proof assumes. This
module checks that every invariant with the ``z3`` checker has exactly one encoder, that every
invariant with an encoder says ``z3``, and that every lemma named exists in the catalogue and in code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from conformance.errors import SpecError
from conformance.specs import SPECS_DIR, load_invariants, read_yaml


@dataclass(frozen=True)
class Lemma:
    id: str
    statement: str
    source: str


def load_lemmas(path: Path | None = None) -> dict[str, Lemma]:
    path = path or SPECS_DIR / "invariants.yaml"
    data, _ = read_yaml(path)
    out: dict[str, Lemma] = {}
    for n, entry in enumerate(data.get("lemmas") or [], start=1):
        if not isinstance(entry, dict) or not all(entry.get(k) for k in ("id", "statement", "source")):
            raise SpecError(f"{path}: lemmas entry {n} needs id, statement and source")
        out[str(entry["id"])] = Lemma(str(entry["id"]), str(entry["statement"]), str(entry["source"]))
    return out


def coded_lemmas() -> set[str]:
    from conformance.smt import batching, classic, classic_assign, kip848_claims

    return set(kip848_claims.LEMMAS) | set(classic.LEMMAS) | set(classic_assign.LEMMAS) | set(batching.LEMMAS)


def validate(path: Path | None = None) -> None:
    """Raise SpecError naming file:line when the catalogue and the z3 encoders disagree."""
    from conformance.smt.prove import encoded_invariants

    path = path or SPECS_DIR / "invariants.yaml"
    specs = load_invariants(path)
    lemmas = load_lemmas(path)
    encoded = set(encoded_invariants())
    coded = coded_lemmas()
    for lemma in sorted(set(lemmas) ^ coded):
        where = "the catalogue" if lemma in lemmas else "the code"
        raise SpecError(f"{path}: lemma {lemma!r} exists only in {where}")
    for inv_id, spec in specs.items():
        has = "z3" in spec.checkers
        if has and inv_id not in encoded:
            raise SpecError(f"{path}:{spec.line}: {inv_id} lists checker z3 but has no z3 encoder")
        if not has and inv_id in encoded:
            raise SpecError(f"{path}:{spec.line}: {inv_id} has a z3 encoder but does not list checker z3")
        named = spec.extra.get("lemmas") or []
        if named and not isinstance(named, list):
            raise SpecError(f"{path}:{spec.line}: {inv_id}: lemmas must be a list")
        for lemma in named:
            if lemma not in lemmas and lemma not in specs:
                raise SpecError(f"{path}:{spec.line}: {inv_id}: unknown lemma {lemma!r}")
            if lemma in specs and lemma not in encoded:
                raise SpecError(f"{path}:{spec.line}: {inv_id}: lemma {lemma!r} has no z3 encoder")
