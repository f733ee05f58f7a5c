"""The lake's window checks in plain Python, over rows of one or many traces (docs/pipeline.md).

The checks and their ids are described with their SQL in `conformance.pipeline.windows`; this is
the same definition without Spark, which `groupcheck replay` runs again over a replayed pipeline
counterexample (a `window.*` id reads a span of steps, not one observation).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

DEFAULT_OWNERLESS_BOUND_MS = 60_000


def python_window_checks(
    rows: Iterable[Mapping[str, Any]], bound_ms: int = DEFAULT_OWNERLESS_BOUND_MS
) -> list[tuple[str, int, str, str]]:
    """The same three checks in plain Python over rows sorted by (trace_id, step)."""
    out: list[tuple[str, int, str, str]] = []
    found: dict[tuple[str, str], tuple[int, str]] = {}  # (trace, check) -> (first step, message)
    trace = None
    prev_gen = prev_persisted = None
    prev_step = -1
    open_since: dict[tuple[str, int], tuple[int, int]] = {}  # (topic, part) -> (first step, first now)

    def flush_trace() -> None:
        for (tid, inv), (step, msg) in sorted(found.items()):
            out.append((tid, step, inv, msg))
        found.clear()

    def report(tid: str, inv: str, step: int, msg: str) -> None:
        key = (tid, inv)
        if key not in found or step < found[key][0]:
            found[key] = (step, msg)

    for r in rows:
        tid = r["trace_id"]
        if tid != trace:
            flush_trace()
            trace, prev_gen, prev_persisted, prev_step = tid, None, None, -1
            open_since = {}
        step, now, gen = r["step"], r["now"], r["generation"]
        stable_owned: dict[tuple[str, int], set[str]] = {}
        for h in r["holdings"] or ():
            if gen is not None and h["phase"] == "stable" and h["generation"] == gen:
                stable_owned.setdefault((h["topic"], h["partition"]), set()).add(h["client"])
        for (topic, part), holders in stable_owned.items():
            if len(holders) > 1:
                report(tid, "window.single_holder", step, f"{topic}-{part} held by {len(holders)} clients")
        if gen is not None and prev_gen is not None and gen < prev_gen:
            if not (r["failover"] and gen >= (prev_persisted or 0)):
                report(tid, "window.generation_monotonic", step, f"generation {prev_gen} -> {gen}")
        prev_gen, prev_persisted = gen, r["persisted_generation"]
        subscribed = set(r["subscribed"] or ())
        still_open: dict[tuple[str, int], tuple[int, int]] = {}
        if r["group_state"] == "Stable":
            for tp in r["topic_partitions"] or ():
                if tp["topic"] not in subscribed:
                    continue
                for part in range(tp["partitions"]):
                    key = (tp["topic"], part)
                    if key in stable_owned:
                        continue
                    first = open_since.get(key) if step == prev_step + 1 else None
                    first = first or (step, now)
                    still_open[key] = first
                    if now - first[1] > bound_ms:
                        report(tid, "window.ownerless_bound", first[0], f"{key[0]}-{part} without owner")
        open_since, prev_step = still_open, step
    flush_trace()
    return out


def replayed_window_violations(
    lake_row: Callable[..., dict[str, Any]],
    protocol: str,
    observations: list[Any],
    bound_ms: int = DEFAULT_OWNERLESS_BOUND_MS,
) -> list[tuple[str, str, int]]:
    """The window checks over a replayed run's observations: (invariant, message, observation number).

    ``lake_row`` is the protocol's lake row of one observation (its kit's swarm hooks)."""
    origin = _ReplayOrigin("replay", protocol, 0, 0)
    rows = [lake_row(origin, "{}", n, obs, "replay") for n, obs in enumerate(observations, 1)]
    return [(inv, msg, step) for _tid, step, inv, msg in python_window_checks(rows, bound_ms)]


class _ReplayOrigin:
    """The identity columns of rows built during a replay (a lake row reads these)."""

    def __init__(self, trace_id: str, protocol: str, seed: int, index: int) -> None:
        self.trace_id, self.protocol, self.seed, self.index = trace_id, protocol, seed, index
