"""``--groups N``: N independent groups against one coordinator at once (docs/keep-going.md#groups).

Each group is a run of its own: its own machine, oracle, connections and Hypothesis seed, derived
from the run seed and the group's index alone (`group_seed`), so a group's trace replays on its
own and the same run seed draws the same N runs. Each group runs in a process of its own, forked
from the caller: a group's oracle dates the target's answers by when it reads them, and N groups
on threads of one interpreter would wait for one another's turn at the interpreter lock (the
timing windows of docs/oracle.md#timing are tens of milliseconds). What comes back is ordered by
group index and every divergence is dated by (group, example, step), never by the wall clock, so
the verdict and the report do not depend on how the groups were scheduled (`merge_divergences`).
"""

from __future__ import annotations

import gc
import hashlib
import multiprocessing
import pickle
import time
from collections.abc import Callable, Iterable
from typing import Any

from conformance.engine.divergences import Divergence, DivergenceLog
from conformance.errors import UsageError

#: the most groups one run drives (each is a process with its own connections)
MAX_GROUPS = 256


def group_seed(seed: int, group: int) -> int:
    """Group 0 runs on the run seed itself (``--groups 1`` is the plain run); group k on a seed
    drawn from (seed, k) by SHA-256, the same on every machine."""
    if group == 0:
        return seed
    digest = hashlib.sha256(f"groupcheck-group/{seed}/{group}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def run_groups(n: int, run_one: Callable[[int], Any], *, deadline_s: float | None = None) -> list[Any]:
    """``run_one(group)`` for groups 0..n-1 at once, each in a forked process (one group: in this
    one); the results in group order. What ``run_one`` returns must pickle. An exception of a group
    is raised after every group has ended (the lowest group's)."""
    if not 1 <= n <= MAX_GROUPS:
        raise UsageError(f"--groups {n}: between 1 and {MAX_GROUPS}")
    if n == 1:
        return [run_one(0)]
    ctx = multiprocessing.get_context("fork")
    pipes, procs = [], []
    # what the groups inherit is never garbage to them: frozen, a child's collections neither walk
    # it nor write to its pages (copy-on-write; the `gc.freeze` documentation)
    gc.freeze()
    try:
        for i in range(n):
            receive, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(
                target=_child, args=(run_one, i, send), name=f"groupcheck-group-{i}", daemon=True
            )
            proc.start()
            send.close()
            pipes.append(receive)
            procs.append(proc)
    finally:
        gc.unfreeze()
    end = None if deadline_s is None else time.monotonic() + deadline_s
    outcomes: list[tuple[bool, Any]] = []
    try:
        for i, receive in enumerate(pipes):
            outcomes.append(_receive(i, receive, procs[i], end))
    finally:
        for proc in procs:
            proc.join(1.0)
            if proc.is_alive():
                proc.kill()
                proc.join()
    for ok, value in outcomes:
        if not ok:
            raise value
    return [value for _, value in outcomes]


def _receive(i: int, receive: Any, proc: Any, end: float | None) -> tuple[bool, Any]:
    if not receive.poll(None if end is None else max(0.0, end - time.monotonic())):
        return False, TimeoutError(f"--groups: group {i} was still running at the deadline")
    try:
        return receive.recv()  # type: ignore[no-any-return]
    except EOFError:
        proc.join()
        return False, RuntimeError(f"--groups: group {i} ended without a result (exit {proc.exitcode})")


def _child(run_one: Callable[[int], Any], i: int, send: Any) -> None:
    try:
        outcome: tuple[bool, Any] = (True, run_one(i))
    except BaseException as e:  # noqa: BLE001 - handed back to the parent
        outcome = (False, e)
    try:
        send.send(outcome)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        send.send((False, RuntimeError(f"--groups: group {i}'s outcome cannot be handed back: {e}")))
    finally:
        send.close()


def merge_divergences(parts: Iterable[Iterable[Divergence]], max_findings: int = 0) -> list[Divergence]:
    """The distinct divergences of every group together: counts added, the first and the smallest
    occurrence of each signature kept (their order does not depend on the order of ``parts``)."""
    log = DivergenceLog(max_findings=0)
    for part in parts:
        for d in part:
            log.absorb(d)
    out = log.distinct()
    return out[:max_findings] if max_findings else out
