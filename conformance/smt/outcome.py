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


def confirmed(
    invariant_id: str,
    how: str,
    members: int,
    partitions: int,
    seconds: float,
    counterexample: dict[str, Any],
    *,
    unconfirmed: str,
    detail: str,
) -> Outcome:
    """A z3 counterexample replayed on the model: REFUTED with ``detail`` when the model confirms
    it, else an encoding bug naming why not (``unconfirmed``: what failed to confirm it)."""
    if unconfirmed:
        return Outcome(
            invariant_id,
            how,
            members,
            partitions,
            Verdict.UNKNOWN,
            seconds,
            f"ENCODING BUG: z3 counterexample not confirmed by {unconfirmed}",
            counterexample,
            encoding_bug=True,
        )
    return Outcome(invariant_id, how, members, partitions, Verdict.REFUTED, seconds, detail, counterexample)
