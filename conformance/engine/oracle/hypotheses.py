"""The model kept as a set of hypotheses beside a real target.

What the inputs alone do not decide (a timer inside the tolerance window, Kafka's arbitrary
choices, docs/oracle.md) makes the model several: one hypothesis per outcome. An operation
turns each hypothesis into candidates (`timer_prefixes` for the oracles that wait for each answer;
the classic oracle enumerates its own, `protocols/classic/candidates.py`); the target's answer
keeps the candidates that explain it (`explained`), equal ones are merged (`dedupe`), and the
first (ranked by each protocol) is the one the simulator is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from conformance.engine.oracle.timer_split import carry, fired_before

H = TypeVar("H")


def dedupe(
    cands: Iterable[H], same: Callable[[H, H], bool], limit: int, merge: Callable[[H, H], None] | None = None
) -> list[H]:
    """The first of each group of equal hypotheses (``same(kept, candidate)``), at most ``limit``;
    ``merge(kept, dropped)`` lets the kept one take what the dropped twin knew."""
    out: list[H] = []
    for c in cands:
        twin = next((o for o in out if same(o, c)), None)
        if twin is None:
            out.append(c)
        elif merge is not None:
            merge(twin, c)
    return out[:limit]


def explained(
    hypos: Iterable[Any],
    candidates: Callable[[Any], Iterable[tuple[Any, str | None]]],
    rejected: list[Any] | None = None,
) -> tuple[list[Any], list[str]]:
    """(the candidates that explain the target's answer, why each of the others does not), over
    every hypothesis' ``candidates`` (each a (candidate, None or why not)); the others are added
    to ``rejected`` when given (``--keep-going`` adopts them after a divergence)."""
    cands: list[Any] = []
    reasons: list[str] = []
    for h in hypos:
        for c, why in candidates(h):
            if why is None:
                cands.append(c)
            else:
                reasons.append(why)
                if rejected is not None:
                    rejected.append(c)
    return cands, reasons


def timer_prefixes(
    h: Any,
    t: int,
    fire_certain: Callable[[Any, int], None],
    uncertain: Callable[[Any], list[int]],
    fire_to: Callable[[Any, int, int], None],
    apply: Callable[[Any, int], list[tuple[Any, str | None]]],
) -> list[tuple[Any, str | None]]:
    """The candidates of hypothesis ``h`` for a request sent at ``t``: the timers that certainly
    fired before it (``fire_certain``), then every prefix, in deadline order, of the ``uncertain``
    ones (``fire_to(candidate, deadline, k)`` fires up to the k-th), then the request (``apply`` at
    the candidate's clock, never before ``t``). Each candidate remembers the timers it fired first
    and the hypothesis it came from (`timer_split.carry`). ``h`` has ``copy()`` and ``now``."""
    base = h.copy()
    fire_certain(base, t)
    deadlines = uncertain(base)
    out: list[tuple[Any, str | None]] = []
    for k in range(len(deadlines) + 1):
        c = base.copy()
        if k:
            fire_to(c, deadlines[k - 1], k)
        pre = fired_before(h, c)
        out.extend(carry(pre, apply(c, max(t, c.now)), h))
    return out


def tie_variants(h: Any, deadlines: list[int], to: int) -> list[Any]:
    """``h``, and when two of its timers expire at the same instant by ``to``, a copy that fires
    such ties in the other order (``ties_reversed``): Kafka does not fix that order
    (`model.consumer.coordinator.ConsumerCoordinator.reverse_ties`, docs/oracle.md#timer-ties)."""
    due = sorted(d for d in deadlines if d <= to)
    if all(a != b for a, b in zip(due, due[1:], strict=False)):
        return [h]
    other = h.copy()
    other.ties_reversed = not h.ties_reversed
    return [h, other]
