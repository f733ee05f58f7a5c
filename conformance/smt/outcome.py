"""One verdict of `groupcheck prove`: an invariant, a transition (or "bmc"), a bound, a time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.smt.solver import Verdict


@dataclass
class Outcome:
    invariant_id: str
    transition: str
    members: int
    partitions: int
    verdict: Verdict
    seconds: float
    detail: str = ""
    counterexample: dict[str, Any] | None = None
    lemmas: tuple[str, ...] = ()
    variant: dict[str, str] = field(default_factory=dict)
    failed: tuple[str, ...] = ()
    """For a step that is not inductive: the conjuncts (invariant, lemmas) the rule can break."""
    encoding_bug: bool = False
    """A z3 counterexample the model did not confirm: the run fails (docs/proofs.md)."""

    @property
    def bound(self) -> str:
        return f"{self.members}x{self.partitions}" if self.partitions else f"{self.members}m"

    def to_json(self, *, times: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "invariant": self.invariant_id,
            "transition": self.transition,
            "bound": self.bound,
            "verdict": self.verdict.value,
            "detail": self.detail,
            "lemmas": list(self.lemmas),
            "variant": dict(sorted(self.variant.items())),
        }
        if times:
            out["seconds"] = round(self.seconds, 3)
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
        return out
