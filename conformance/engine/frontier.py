"""The breadth-first search every kit's explorer runs, on one core or on several.

A kit supplies the root and ``expand(sim, level)``: the enabled ops of one state, each applied to a
copy and checked (`Step`). The search keeps the graph, the BFS parents and the first path to each
violated invariant. With ``workers`` above 1 the frontier is expanded by forked worker processes
that hold the states themselves (a state never leaves the worker that made it unless the parent
moves it to even the load, as pickled bytes); only keys, labels and verdicts come back. The parent
merges the answers in frontier order, so the graph, the representatives and every path found are
those of the search on one core.
"""

from __future__ import annotations

import copyreg
import io
import multiprocessing
import pickle
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.engine.explore import ExploreResult, Found, path_to
from conformance.engine.progress import WATCHER
from conformance.errors import UsageError


@dataclass
class Step:
    """One op applied to a copy of a frontier state."""

    op: dict[str, Any]
    label: str
    child: Any
    key: str
    violations: tuple[tuple[str, str], ...]  # (invariant, message)
    group: str  # the group's state, for the coverage picture


Expand = Callable[[Any, int], list[Step]]

#: the most worker processes (`groupcheck explore --workers`)
MAX_WORKERS = 16


def search(
    result: ExploreResult,
    root: Any,
    root_key: str,
    root_group: str,
    expand: Expand,
    *,
    depth: int,
    budget_s: float,
    cpu_clock: bool = False,
    workers: int = 1,
) -> ExploreResult:
    """BFS from ``root`` to ``depth`` levels within ``budget_s`` seconds (CPU seconds of every
    process when ``cpu_clock``), recording into ``result``."""
    if not 1 <= workers <= MAX_WORKERS:
        raise UsageError(f"explore: --workers 1..{MAX_WORKERS}")
    result.graph.add_node(root_key, depth=0, group=root_group)
    parent: dict[str, tuple[str, dict[str, Any]] | None] = {root_key: None}
    record = _Recorder(result, parent)
    if workers == 1:
        _serial(result, record, root, root_key, expand, depth, budget_s, cpu_clock)
    else:
        _parallel(result, record, root, root_key, expand, depth, budget_s, cpu_clock, workers)
    return result


class _Recorder:
    """Adds one step to the graph; True when it reached a new state."""

    def __init__(self, result: ExploreResult, parent: dict[str, tuple[str, dict[str, Any]] | None]) -> None:
        self.result = result
        self.parent = parent
        self.watcher = WATCHER.get()

    def __call__(self, key: str, step: Step, level: int) -> bool:
        graph = self.result.graph
        new = step.key not in graph
        if new:
            graph.add_node(step.key, depth=level + 1, group=step.group)
            self.parent[step.key] = (key, step.op)
        if not graph.has_edge(key, step.key):
            graph.add_edge(key, step.key, op=step.label, bad=bool(step.violations))
        for invariant, message in step.violations:
            if invariant not in self.result.found:
                path = self.result.prefix + path_to(self.parent, key) + (step.op,)
                self.result.found[invariant] = Found(invariant, message, path)
        if self.watcher is not None:
            self.watcher.step(len(step.violations))
        return new


def _serial(
    result: ExploreResult,
    record: _Recorder,
    root: Any,
    root_key: str,
    expand: Expand,
    depth: int,
    budget_s: float,
    cpu_clock: bool,
) -> None:
    clock = time.process_time if cpu_clock else time.perf_counter
    start = clock()
    frontier: list[tuple[str, Any]] = [(root_key, root)]
    for level in range(depth):
        nxt: list[tuple[str, Any]] = []
        for key, sim in frontier:
            if clock() - start > budget_s:
                result.budget_hit = True
                break
            for step in expand(sim, level):
                if record(key, step, level):
                    nxt.append((step.key, step.child))
        if result.budget_hit:
            break
        result.levels_done = level + 1
        frontier = nxt
        if not frontier:
            result.complete = True
            break
    result.seconds = clock() - start


# --- several processes -------------------------------------------------------------------------


class WorkerError(RuntimeError):
    """A worker process failed; the message carries its traceback."""


def _worker(conn: Any, expand: Expand, held: dict[str, Any], cpu_clock: bool) -> None:
    """A worker's loop: expand the states it holds, keep the children the parent names, hand out
    or take in states to even the load. Every answer carries the worker's CPU seconds so far."""
    import traceback

    clock = time.process_time if cpu_clock else time.perf_counter
    pending: dict[tuple[str, int], Any] = {}
    reported: set[str] = set(held)  # every key this worker has answered with
    try:
        while True:
            message = conn.recv()
            kind = message[0]
            if kind == "expand":
                _, keys, level, allowance = message
                deadline = clock() + allowance
                answers: list[list[tuple[Any, ...]]] = []
                for key in keys:
                    if clock() > deadline:
                        break
                    steps = expand(held[key], level)
                    for i, step in enumerate(steps):
                        if step.key not in reported:  # else the parent has it already: never kept
                            reported.add(step.key)
                            pending[(key, i)] = step.child
                    answers.append([(s.op, s.label, s.key, s.violations, s.group) for s in steps])
                conn.send(("ok", answers, time.process_time()))
            elif kind == "keep":
                _, keep, give = message
                held = {child_key: pending[(key, i)] for key, i, child_key in keep}
                pending = {}
                out: list[tuple[str, bytes | None]] = []
                for child_key in give:
                    try:
                        out.append((child_key, _dumps(held[child_key])))
                        del held[child_key]
                    except (pickle.PicklingError, TypeError, AttributeError):  # a class made at run time
                        out.append((child_key, None))
                conn.send(("ok", out, time.process_time()))
            elif kind == "take":
                for child_key, data in message[1]:
                    held[child_key] = pickle.loads(data)
                conn.send(("ok", None, time.process_time()))
            else:  # "stop"
                conn.send(("ok", None, time.process_time()))
                return
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises it
        conn.send(("error", traceback.format_exc(limit=20), time.process_time()))


def _proxy(mapping: dict[Any, Any]) -> types.MappingProxyType[Any, Any]:
    return types.MappingProxyType(mapping)


#: how states travel: the models' frozen snapshots hold read-only mapping views, which pickle does
#: not take by itself
_DISPATCH = {**copyreg.dispatch_table, types.MappingProxyType: lambda m: (_proxy, (dict(m),))}


def _dumps(state: Any) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    pickler.dump(state)
    return buffer.getvalue()


class _Workers:
    """The worker processes and their pipes; every answer's CPU seconds are kept."""

    def __init__(self, n: int, root_key: str, root: Any, expand: Expand, cpu_clock: bool) -> None:
        if "fork" not in multiprocessing.get_all_start_methods():
            raise UsageError("explore --workers needs the fork start method (Linux, macOS)")
        ctx = multiprocessing.get_context("fork")
        self.pipes: list[Any] = []
        self.procs: list[Any] = []
        self.cpu = [0.0] * n
        for w in range(n):
            mine, theirs = ctx.Pipe()
            held = {root_key: root} if w == 0 else {}
            proc = ctx.Process(target=_worker, args=(theirs, expand, held, cpu_clock), daemon=True)
            proc.start()
            theirs.close()
            self.pipes.append(mine)
            self.procs.append(proc)

    def ask(self, messages: list[tuple[Any, ...]]) -> list[Any]:
        """Send one message to each worker, then collect their answers in order."""
        for conn, message in zip(self.pipes, messages, strict=True):
            conn.send(message)
        out = []
        for w, conn in enumerate(self.pipes):
            if not conn.poll(_ANSWER_DEADLINE_S):
                raise WorkerError(f"explore worker {w} gave no answer in {_ANSWER_DEADLINE_S:.0f} s")
            status, value, cpu = conn.recv()
            self.cpu[w] = cpu
            if status != "ok":
                raise WorkerError(f"explore worker {w} failed:\n{value}")
            out.append(value)
        return out

    def close(self) -> None:
        for conn in self.pipes:
            try:
                conn.send(("stop",))
                if conn.poll(10):
                    _, _, cpu = conn.recv()
                    self.cpu[self.pipes.index(conn)] = cpu
            except (OSError, EOFError):
                pass
        for proc in self.procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()


#: the longest a worker may take to answer one message (a level of a large search)
_ANSWER_DEADLINE_S = 6 * 3600.0


def _parallel(
    result: ExploreResult,
    record: _Recorder,
    root: Any,
    root_key: str,
    expand: Expand,
    depth: int,
    budget_s: float,
    cpu_clock: bool,
    n: int,
) -> None:
    wall_start, parent_start = time.perf_counter(), time.process_time()
    pool = _Workers(n, root_key, root, expand, cpu_clock)

    def spent() -> float:
        if cpu_clock:
            return time.process_time() - parent_start + sum(pool.cpu)
        return time.perf_counter() - wall_start

    frontier: list[tuple[str, int]] = [(root_key, 0)]  # (key, the worker holding it), in BFS order
    movable = True
    try:
        for level in range(depth):
            left = budget_s - spent()
            if left <= 0:
                result.budget_hit = True
                break
            allowance = left / n if cpu_clock else left
            got = pool.ask(
                [("expand", [k for k, o in frontier if o == w], level, allowance) for w in range(n)]
            )
            answers = [iter(a) for a in got]
            keep: list[list[tuple[str, int, str]]] = [[] for _ in range(n)]
            nxt: list[tuple[str, int]] = []
            for key, owner in frontier:
                steps = next(answers[owner], None)
                if steps is None:  # that worker's share of the budget ran out before this state
                    result.budget_hit = True
                    continue
                for i, (op, label, child_key, violations, group) in enumerate(steps):
                    if record(key, Step(op, label, None, child_key, violations, group), level):
                        keep[owner].append((key, i, child_key))
                        nxt.append((child_key, owner))
            if result.budget_hit:
                break
            movable = _rebalance(pool, keep, nxt, movable)
            result.levels_done = level + 1
            frontier = nxt
            if not frontier:
                result.complete = True
                break
    finally:
        pool.close()
    result.seconds = spent()
    result.workers = n


def _rebalance(
    pool: _Workers, keep: list[list[tuple[str, int, str]]], nxt: list[tuple[str, int]], movable: bool
) -> bool:
    """Tell each worker which children to keep; a worker holding more than its share hands the
    surplus to the others (``nxt``'s owners are updated in place). Returns whether states still
    move (False once one would not pickle)."""
    n = len(keep)
    share = -(-len(nxt) // n)
    give = [[k[j][2] for j in _spread(len(k) - share, len(k))] if movable else [] for k in keep]
    handed = pool.ask([("keep", k, g) for k, g in zip(keep, give, strict=True)])
    moving = [(key, data) for out in handed for key, data in out if data is not None]
    movable = movable and all(data is not None for out in handed for _, data in out)
    if not moving:
        return movable
    room = [max(0, share - (len(k) - len(g))) for k, g in zip(keep, give, strict=True)]
    takes: list[list[tuple[str, bytes]]] = [[] for _ in range(n)]
    owner: dict[str, int] = {}
    w = 0
    for key, data in moving:
        while room[w] == 0:
            w += 1
        room[w] -= 1
        takes[w].append((key, data))
        owner[key] = w
    pool.ask([("take", t) for t in takes])
    nxt[:] = [(k, owner.get(k, o)) for k, o in nxt]
    return movable


def _spread(surplus: int, count: int) -> list[int]:
    """``surplus`` positions out of ``count``, evenly spaced. Early frontier states reach most of the
    next level's new states first (later ones mostly meet states already found), so a worker
    holding a block of the frontier's tail finds little: states handed out evenly keep both
    workers' shares spread over the frontier, and the next level balanced."""
    if surplus <= 0:
        return []
    return [i * count // surplus for i in range(surplus)]
