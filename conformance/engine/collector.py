"""The cyclic garbage collector's thresholds for long runs (checks, explore, mutants, pipelines).

A run allocates hundreds of short-lived containers per step (snapshots, observations, messages),
and reference counting frees nearly all of them: they are not cyclic. With CPython's default
thresholds (700, 10, 10) the cyclic collector still makes a young pass every step or two and,
every few hundred steps, a full pass over every live object (Hypothesis, the loaded model, the
trace so far): a sixth of a checked walk's time (benchmarks/results/model_throughput.md). Higher
thresholds collect the same garbage, less often; what a run computes does not depend on when.
"""

from __future__ import annotations

import gc

#: young-generation allocations between passes, and passes between older-generation passes
THRESHOLDS = (50_000, 20, 20)


def tune() -> None:
    """Raise the collector's thresholds to `THRESHOLDS` (never lowers one set higher)."""
    gc.set_threshold(*(max(now, ours) for now, ours in zip(gc.get_threshold(), THRESHOLDS, strict=True)))
