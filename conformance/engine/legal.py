"""Member timeouts inside what a target accepts (docs/real-targets.md#legal-ranges).

A coordinator rejects a member whose timeout lies outside its configured range (classic: JoinGroup
answers INVALID_SESSION_TIMEOUT outside ``group.min/max.session.timeout.ms``, GroupMetadataManager
``classicGroupJoin``). Against a real target the machines take their members' timeouts from the
range the target was learned to accept (`conformance.targets.settings`), stretch their time steps
with them, and now and then put one member just outside it, where the model must predict the
rejection.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LegalRange:
    """The closed range ``[lo, hi]`` (ms) a target accepts for one member-chosen timeout."""

    lo: int
    hi: int

    def clamp(self, ms: int) -> int:
        """``ms`` moved into the range (the nearest legal value)."""
        return min(max(ms, self.lo), self.hi)

    def outside(self) -> int:
        """A value just outside the range: one below its minimum, else one above its maximum."""
        return self.lo - 1 if self.lo > 1 else self.hi + 1

    def __contains__(self, ms: object) -> bool:
        return isinstance(ms, int) and self.lo <= ms <= self.hi


def stretch(values: tuple[int, ...], factor: float) -> tuple[int, ...]:
    """Time steps scaled with the member timeouts (never shortened: the tuned steps are the minimum)."""
    if factor <= 1:
        return values
    return tuple(int(v * factor) for v in values)
