"""The per-trace audit in plain Python: rebuild each step's Observation and run the registry.

Used as it is by the Spark grouped-map UDF (`conformance.pipeline.jobs`), by the plain-Python
audit and by the tests, so the Spark audit and the Hypothesis suite share one definition of every
invariant (docs/invariants.md): the predicates come from `model.invariants.REGISTRY` through
`conformance.engine.checker.Checker`. Bad rows are quarantined with a reason, never dropped silently
and never checked: a row that does not decode, a protocol without a registry, a step number out of
range or seen before. Each quarantined row is one entry, so counts by reason are exact. Gaps in a
trace's steps (a truncated trace) are noted apart (`gaps`): the rows around them are fine and are
checked, but transition checks across a gap would be meaningless, so checking restarts after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.engine.checker import Checker
from conformance.formats import lake as codec
from conformance.pipeline.swarm import swarm_kits
from conformance.protocols import get_kit
from model.observation import Observation

#: the lake's protocols (the kits that offer swarm runs) and the world class each row must hold
WORLD_TYPES = {kit.name: kit.require("swarm")().world_type for kit in swarm_kits()}
KNOWN_PROTOCOLS = tuple(WORLD_TYPES)
MAX_STEP = 1_000_000  # a swarm run has at most 100,000 steps (`pipeline swarm --steps`)


@dataclass
class TraceAudit:
    trace_id: str
    steps: int = 0
    violations: list[tuple[int, str, str]] = field(default_factory=list)  # (step, invariant, message)
    quarantined: list[tuple[int | None, str]] = field(default_factory=list)  # (step, reason): one per row
    gaps: list[tuple[int, str]] = field(default_factory=list)  # (first step after the gap, what is missing)
    sometimes: dict[str, int] = field(default_factory=dict)


def audit_trace(trace_id: str, rows: Iterable[Mapping[str, Any]]) -> TraceAudit:
    """Audit one trace's rows (any order). Keys as in `schema.AUDIT_COLUMNS`."""
    out = TraceAudit(trace_id)
    ordered = sorted(rows, key=lambda r: (r.get("step") is None, r.get("step") or 0))
    checkers: dict[str, Checker] = {}
    before: Any = None
    expected_step = 1
    for row in ordered:
        step = row.get("step")
        if step is None:
            out.quarantined.append((None, "malformed row: null step"))
            continue
        step = int(step)
        if not 1 <= step <= MAX_STEP:
            out.quarantined.append((step, f"step out of range: {step} (1..{MAX_STEP})"))
            continue
        if step != expected_step:
            if step < expected_step:
                out.quarantined.append((step, "duplicate step: already seen"))
                continue
            out.gaps.append((step, f"truncated trace: steps {expected_step}..{step - 1} missing"))
            before = None
        expected_step = step + 1
        protocol = row.get("protocol")
        if protocol not in KNOWN_PROTOCOLS:
            out.quarantined.append((step, f"unknown protocol: {str(protocol)[:40]!r}"))
            before = None
            continue
        try:
            if step == 1 and row.get("before"):
                before = codec.loads(str(row["before"]))
            for name in ("event", "deliveries", "world", "now"):
                if row.get(name) is None:
                    raise codec.LakeFormatError(f"null {name}")
            obs = Observation(
                before,
                codec.loads(str(row["event"])),
                tuple(codec.loads(str(row["deliveries"]))),
                codec.loads(str(row["world"])),
                int(row["now"]),
            )
            if type(obs.after).__name__ != WORLD_TYPES[protocol]:
                raise codec.LakeFormatError(
                    f"world is a {type(obs.after).__name__}, expected {WORLD_TYPES[protocol]}"
                )
        except (codec.LakeFormatError, TypeError, ValueError) as exc:
            out.quarantined.append((step, f"malformed row: {exc}"))
            before = None
            continue
        checker = checkers.get(protocol) or checkers.setdefault(protocol, Checker(get_kit(protocol)))
        try:
            found = checker.check(obs, step)
        except Exception as exc:  # a world that decodes but is inconsistent: say so, do not crash the job
            out.quarantined.append((step, f"inconsistent world: {type(exc).__name__}: {exc}"))
            before = None
            continue
        out.violations.extend((v.step, v.invariant, v.message) for v in found)
        out.steps += 1
        before = obs.after
    for checker in checkers.values():
        for k, n in checker.hits.items():
            out.sometimes[k] = out.sometimes.get(k, 0) + n
    return out
