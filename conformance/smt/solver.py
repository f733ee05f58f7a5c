"""Verdicts and solver construction shared by every encoding (docs/proofs.md).

A solver is seeded (``random_seed``, ``smt.random_seed``) and bounded twice: by a wall-clock
``timeout`` and by z3's deterministic resource counter ``rlimit``. Running out of either is UNKNOWN,
which is never a pass.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import z3

DEFAULT_SEED = 0
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_RLIMIT = 200_000_000


class Verdict(enum.Enum):
    CONFIRMED = "CONFIRMED"
    REFUTED = "REFUTED"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class Limits:
    """Seed and the two resource limits of every solver of one run."""

    seed: int = DEFAULT_SEED
    timeout_s: float = DEFAULT_TIMEOUT_S
    rlimit: int = DEFAULT_RLIMIT


def make_solver(limits: Limits) -> z3.Solver:
    """A fresh solver with the run's seed, timeout (ms) and resource limit."""
    s = z3.Solver()
    s.set("random_seed", limits.seed)
    s.set("timeout", max(1, int(limits.timeout_s * 1000)))
    s.set("rlimit", limits.rlimit)
    return s


def check(s: z3.Solver) -> tuple[z3.CheckSatResult, str]:
    """``s.check()`` plus the reason z3 gives for ``unknown`` (timeout, resource limit, ...)."""
    result = s.check()
    reason = s.reason_unknown() if result == z3.unknown else ""
    return result, reason
