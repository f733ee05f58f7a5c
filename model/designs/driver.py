"""Run a workload on a design and judge every step with the design predicates.

Time-passing ops are cut into ticks so a double ownership that opens and closes inside one long
`Advance` is still seen; the observation kept per op is the one after it. Same design, options and
ops give the same views, step for step (everything is seeded or ordered).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from model.designs import ops as o
from model.designs.invariants import design_invariants
from model.designs.view import DesignView
from model.invariants import Invariant
from model.observation import Observation

TICK_MS = 100
MAX_OPS = 5_000


@dataclass(frozen=True)
class Finding:
    step: int  # 1-based op index
    invariant: str
    message: str
    now: int


@dataclass
class Run:
    design: str
    ops: list[Any]
    views: list[DesignView] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: (messages, bytes) after each op: all traffic, and the rebalance messages only
    traffic: list[tuple[int, int, int, int]] = field(default_factory=list)

    @property
    def violated(self) -> tuple[str, ...]:
        return tuple(sorted({f.invariant for f in self.findings}))

    def first(self, invariant: str | None = None) -> Finding | None:
        return next((f for f in self.findings if invariant in (None, f.invariant)), None)


def run(
    engine: Any,
    ops: Sequence[Any],
    *,
    invariants: Sequence[Invariant] | None = None,
    stop_at: str | None = None,
    tick_ms: int = TICK_MS,
    on_step: Callable[[int, Any, DesignView], None] | None = None,
) -> Run:
    """Apply ``ops`` in order; ``stop_at``: stop after the op that first violates that invariant id."""
    if len(ops) > MAX_OPS:
        raise ValueError(f"a workload has at most {MAX_OPS} ops, got {len(ops)}")
    checks = list(invariants if invariants is not None else design_invariants())
    result = Run(engine.design, list(ops))
    before = engine.view()
    for i, op in enumerate(ops, 1):
        if isinstance(op, o.Advance | o.Settle) and op.ms > tick_ms:
            left = op.ms
            while left > 0:
                chunk = min(tick_ms, left)
                left -= chunk
                engine.apply(type(op)(chunk))
                after = engine.view(checkpoint=_checkpoint(op) and left == 0)
                _judge(checks, Observation(before, op, (), after, after.now), i, result)
                before = after
        else:
            engine.apply(op)
            after = engine.view(checkpoint=_checkpoint(op))
            _judge(checks, Observation(before, op, (), after, after.now), i, result)
            before = after
        result.views.append(before)
        result.traffic.append((*engine.traffic(), *engine.traffic(rebalance_only=True)))
        if on_step is not None:
            on_step(i, op, before)
        if stop_at is not None and any(f.invariant == stop_at for f in result.findings):
            result.ops = list(ops[:i])
            break
    return result


def _checkpoint(op: Any) -> bool:
    return isinstance(op, o.Settle) and op.ms >= o.LIVENESS_MS


def _judge(checks: Sequence[Invariant], obs: Observation[DesignView], step: int, result: Run) -> None:
    seen = {(f.step, f.invariant) for f in result.findings}
    for inv in checks:
        if (step, inv.id) in seen:
            continue  # one finding per op and invariant: the first tick that shows it
        for message in inv.check(obs):
            result.findings.append(Finding(step, inv.id, message, obs.now))
            break
