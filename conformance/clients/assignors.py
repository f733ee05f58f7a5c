"""`groupcheck assignors`: real client libraries' assignors judged by the model's client invariants.

For each assignor (range, roundrobin, sticky, cooperative-sticky) Hypothesis draws leader inputs
(conformance/clients/inputs.py), the library's harness computes the assignment as its group leader
would (conformance/clients/harness.py), and every `client.*` invariant of model/assignors/invariants.py
judges the answer. The first violation is shrunk and saved as a replayable trace; an assignor that
throws is recorded as a `raised` finding (its input could not be judged).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings

from conformance.clients.harness import Harness, Library
from conformance.clients.inputs import Group, groups
from conformance.clients.protocol import Answer, decode_answer, judge
from conformance.clients.traces import AssignorTrace, read_trace
from conformance.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_VIOLATION, TargetError

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
DEFAULT_EXAMPLES = 200
MAX_EXAMPLES = 100_000


@dataclass
class Finding:
    outcome: str  # "violated" or "raised"
    messages: tuple[tuple[str, str], ...]
    path: Path


@dataclass
class Cell:
    """One library version x assignor: verdict, how many inputs were judged, what was found."""

    library: Library
    version: str
    assignor: str
    verdict: str = "PASSED"  # PASSED, FAILED, RAISED, UNAVAILABLE
    examples: int = 0
    raised: int = 0
    seconds: float = 0.0
    note: str = ""
    findings: list[Finding] = field(default_factory=list)


class _Violated(AssertionError):
    pass


class _Unavailable(Exception):
    pass


@dataclass
class _State:
    next_id: int = 0
    judged: int = 0
    raised: int = 0
    violation: tuple[dict[str, Any], dict[str, Any], list[tuple[str, str]]] | None = None
    first_raised: tuple[dict[str, Any], dict[str, Any], str] | None = None
    tool_error: TargetError | None = None


def _ask(harness: Harness, request: dict[str, Any], state: _State) -> tuple[dict[str, Any], Answer]:
    if state.tool_error is not None:  # the harness is gone: fail fast through Hypothesis's shrink
        raise state.tool_error
    try:
        raw = harness.ask(request)
        return raw, decode_answer(raw, request)
    except TargetError as e:
        state.tool_error = e
        harness.close()
        raise


def run_assignor(
    harness: Harness, assignor: str, *, seed_value: int, max_examples: int, run_dir: Path, inputs: str = "all"
) -> Cell:
    """Draw `max_examples` inputs for `assignor`, judge each answer, keep the shrunk first violation."""
    cell = Cell(harness.library, harness.version, assignor)
    state = _State()

    def body(group: Group) -> None:
        state.next_id += 1
        request = group.request(state.next_id)
        raw, answer = _ask(harness, request, state)
        if answer.unavailable:
            raise _Unavailable(answer.unavailable)
        if not answer.ok:
            state.raised += 1
            if state.first_raised is None:
                state.first_raised = (request, raw, answer.error)
            return
        state.judged += 1
        found = judge(request, answer)
        if found:
            state.violation = (request, raw, found)
            raise _Violated(found[0][1])

    test_settings = settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=False,
        print_blob=False,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
    )
    test = seed(seed_value)(test_settings(given(groups(assignor, inputs))(body)))
    start = time.perf_counter()
    try:
        test()
    except _Unavailable as e:
        cell.verdict, cell.note = "UNAVAILABLE", str(e)
    except _Violated:
        assert state.violation is not None
        request, raw, found = state.violation  # the last failing call: Hypothesis's shrunk example
        trace = AssignorTrace(
            harness.library.spec, assignor, seed_value, "violated", tuple(found), request, raw
        )
        cell.verdict = "FAILED"
        cell.findings.append(Finding("violated", tuple(found), trace.write(run_dir / "counterexamples")))
    if state.tool_error is not None:
        raise state.tool_error
    cell.seconds = time.perf_counter() - start
    cell.examples, cell.raised = state.judged, state.raised
    if state.first_raised is not None:
        request, raw, error = state.first_raised
        found = (("raised", error),)
        trace = AssignorTrace(harness.library.spec, assignor, seed_value, "raised", found, request, raw)
        cell.findings.append(Finding("raised", found, trace.write(run_dir / "counterexamples")))
        if cell.verdict == "PASSED":
            cell.verdict = "RAISED"
    return cell


def run_library(
    library: Library,
    assignors: Sequence[str],
    *,
    seed_value: int,
    max_examples: int,
    run_dir: Path,
    inputs: str = "all",
) -> list[Cell]:
    """Every named assignor of one library version, on one harness process."""
    with Harness(library) as harness:
        return [
            run_assignor(
                harness, a, seed_value=seed_value, max_examples=max_examples, run_dir=run_dir, inputs=inputs
            )
            for a in assignors
        ]


def replay_command(path: Path, library: Library) -> str:
    return f"groupcheck assignors --replay {shlex.quote(str(path))} --library {library.spec}"


def replay(path: Path, library: Library) -> int:
    """Send a trace's request to `library` again: FAILED (exit 1), RAISED (3) or FIXED (0)."""
    trace = read_trace(path)
    with Harness(library) as harness:
        request = dict(trace.request)
        raw = harness.ask(request)
        answer = decode_answer(raw, request)
    same = "the recorded answer" if raw == trace.answer else "a different answer than recorded"
    where = f"{trace.assignor} on {library.spec} ({harness.version})"
    if answer.unavailable:
        raise TargetError(f"cannot replay: {answer.unavailable}")
    if not answer.ok:
        print(f"RAISED: {where} threw, {same}: {answer.error}")
        return EXIT_INCONCLUSIVE
    found = judge(request, answer)
    if found:
        print(f"FAILED: {where} gave {same}, which violates {', '.join(sorted({f[0] for f in found}))}")
        for inv, msg in found:
            print(f"  {inv}: {msg}")
        return EXIT_VIOLATION
    print(f"FIXED: {where} gave {same}, which every client invariant accepts")
    return EXIT_OK
