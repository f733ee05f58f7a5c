"""``--groups N``: N independent groups against one coordinator at once (docs/keep-going.md#groups).

Each group is a run of its own: its own machine, oracle and Hypothesis seed, derived from the run
seed and the group's index alone (`group_seed`), so a group's trace replays on its own and the
same run seed draws the same N runs. The groups run on threads (the work is mostly waiting for the
target's answers and for its timers); what comes back is ordered by group index and every
divergence is dated by (group, example, step), never by the wall clock, so the verdict and the
report do not depend on how the threads were scheduled.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from conformance.errors import UsageError

#: the most groups one run drives (each holds its own connections and threads)
MAX_GROUPS = 256


def group_seed(seed: int, group: int) -> int:
    """Group 0 runs on the run seed itself (``--groups 1`` is the plain run); group k on a seed
    drawn from (seed, k) by SHA-256, the same on every machine."""
    if group == 0:
        return seed
    digest = hashlib.sha256(f"groupcheck-group/{seed}/{group}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def run_groups(n: int, run_one: Callable[[int], Any], *, deadline_s: float | None = None) -> list[Any]:
    """``run_one(group)`` for groups 0..n-1 at once; the results in group order. An exception of a
    group is raised after every group has ended (the lowest group's first)."""
    if not 1 <= n <= MAX_GROUPS:
        raise UsageError(f"--groups {n}: between 1 and {MAX_GROUPS}")
    if n == 1:
        return [run_one(0)]
    with _serial_parser():
        return _on_threads(n, run_one, deadline_s)


def _on_threads(n: int, run_one: Callable[[int], Any], deadline_s: float | None) -> list[Any]:
    results: list[Any] = [None] * n
    errors: list[BaseException | None] = [None] * n

    def body(i: int) -> None:
        try:
            results[i] = run_one(i)
        except BaseException as e:  # noqa: BLE001 - handed back to the caller in group order
            errors[i] = e

    threads = [
        threading.Thread(target=body, args=(i,), name=f"groupcheck-group-{i}", daemon=True) for i in range(n)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(deadline_s)
    if any(t.is_alive() for t in threads):
        raise TimeoutError(f"--groups {n}: a group was still running after {deadline_s} s")
    for e in errors:
        if e is not None:
            raise e
    return results


_PARSE_LOCK = threading.RLock()


@contextlib.contextmanager
def _serial_parser() -> Iterator[None]:
    """``ast.parse`` one thread at a time while groups run: Hypothesis reads rule and strategy
    sources with `inspect.getsource`, and CPython 3.11's AST validation keeps its recursion depth
    in state the threads share ("AST constructor recursion depth mismatch" otherwise)."""
    original = ast.parse

    def parse(*args: Any, **kwargs: Any) -> Any:
        with _PARSE_LOCK:
            return original(*args, **kwargs)

    ast.parse = parse
    try:
        yield
    finally:
        ast.parse = original
