"""Known divergences: a baseline file, so a CI run fails only on a new one (docs/keep-going.md).

A baseline is YAML, read under the strict discipline (`conformance.strict`) and checked against
``specs/schemas/baseline.schema.json``: one entry per known divergence, named by its protocol and
signature (`conformance.engine.divergences.signature`) with the reason it is accepted. A run
compared with it splits its distinct divergences into known and new, and lists the entries it did
not meet (a fixed deviation, or one this run's examples did not reach).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from conformance import schema_check, strict
from conformance.errors import SpecError

#: the reason written for an entry `write_baseline` records
DEFAULT_REASON = "known divergence, recorded from a run; say why it is accepted"


@dataclass(frozen=True)
class Entry:
    protocol: str
    signature: str
    reason: str
    line: int = 0

    @property
    def key(self) -> tuple[str, str]:
        return (self.protocol, self.signature)


@dataclass(frozen=True)
class Comparison:
    """A run's distinct divergences against a baseline: ``known`` and ``new`` are (protocol,
    divergence) pairs; ``unseen`` the entries no divergence of the run matched."""

    known: list[tuple[str, Any]]
    new: list[tuple[str, Any]]
    unseen: list[Entry]


def load_baseline(path: Path) -> list[Entry]:
    """The entries of a baseline file; a SpecError naming file:line and field when it is malformed."""
    data, node = strict.yaml_document(path, SpecError)
    try:
        schema_check.check(data, "baseline")
    except strict.Malformed as exc:
        raise SpecError(exc.at(f"{path}:{strict.node_line(node, exc.path)}")) from None
    entries: list[Entry] = []
    seen: dict[tuple[str, str], int] = {}
    for i, item in enumerate(data["divergences"]):
        line = strict.node_line(node, ("divergences", i))
        entry = Entry(item["protocol"], item["signature"], item["reason"], line)
        if entry.key in seen:
            raise SpecError(
                f"{path}:{line}: divergences[{i}].signature: listed twice (first at line {seen[entry.key]})"
            )
        seen[entry.key] = line
        entries.append(entry)
    return entries


def compare(entries: Iterable[Entry], found: Iterable[tuple[str, Any]]) -> Comparison:
    """Split ``found`` ((protocol, divergence) pairs) by whether the baseline lists them."""
    listed = {e.key: e for e in entries}
    known, new, matched = [], [], set()
    for protocol, d in found:
        key = (protocol, d.signature)
        if key in listed:
            known.append((protocol, d))
            matched.add(key)
        else:
            new.append((protocol, d))
    unseen = [e for key, e in listed.items() if key not in matched]
    return Comparison(known, new, unseen)


def write_baseline(
    path: Path, found: Iterable[tuple[str, Any]], target: str, keep: Iterable[Entry] = ()
) -> int:
    """Write the entries of ``keep`` (an older baseline's, with their reasons, seen or not: a
    baseline only grows unless edited by hand), then every divergence of ``found`` they do not
    list; returns how many entries were written."""
    keep = list(keep)
    reasons = {e.key: e.reason for e in keep}
    items = [{"protocol": e.protocol, "signature": e.signature, "reason": e.reason} for e in keep]
    for protocol, d in found:
        key = (protocol, d.signature)
        if any((i["protocol"], i["signature"]) == key for i in items):
            continue
        items.append(
            {"protocol": protocol, "signature": d.signature, "reason": reasons.get(key, DEFAULT_REASON)}
        )
    doc = {"version": 1, "target": target, "divergences": items}
    head = "# groupcheck baseline: known divergences (docs/keep-going.md); edit each reason\n"
    path.write_text(
        head + yaml.safe_dump(doc, sort_keys=False, width=200, allow_unicode=False), encoding="utf-8"
    )
    return len(items)
