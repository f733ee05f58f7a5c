"""`groupcheck assignors`: the parser block and the command over `conformance.clients.assignors`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from conformance.clients.assignors import (
    ASSIGNORS,
    DEFAULT_EXAMPLES,
    MAX_EXAMPLES,
    Cell,
    replay,
    replay_command,
    run_library,
)
from conformance.clients.harness import parse_library
from conformance.clients.inputs import INPUTS
from conformance.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_VIOLATION, UsageError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("assignors", help="judge a client library's assignors with the client invariants")
    p.add_argument("--library", required=True, help="java:VERSION | franz-go[:VERSION]")
    p.add_argument("--assignor", action="append", choices=ASSIGNORS, help="repeatable; default: all four")
    p.add_argument(
        "--inputs", default="all", choices=INPUTS, help="input family (conformance/clients/inputs.py)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-examples", type=int, default=DEFAULT_EXAMPLES)
    p.add_argument("--report", type=Path, help="write a Markdown verdict table to this file")
    p.add_argument("--run-dir", type=Path, help="where counterexample traces go (default reports/runs/...)")
    p.add_argument("--replay", type=Path, help="re-send a saved trace's request to --library and judge it")


def cmd_assignors(args: argparse.Namespace) -> int:
    library = parse_library(args.library)
    if args.replay is not None:
        return replay(args.replay, library)
    if not 1 <= args.max_examples <= MAX_EXAMPLES:
        raise UsageError(f"--max-examples must be between 1 and {MAX_EXAMPLES}")
    assignors = list(dict.fromkeys(args.assignor or ASSIGNORS))
    run_dir = (
        args.run_dir or Path("reports") / "runs" / f"assignors-{library.slug}-{args.inputs}-seed{args.seed}"
    )
    cells = run_library(
        library,
        assignors,
        seed_value=args.seed,
        max_examples=args.max_examples,
        run_dir=run_dir,
        inputs=args.inputs,
    )
    for cell in cells:
        print_cell(cell, args.seed)
    if args.report is not None:
        from conformance.clients.report import write_report

        write_report(
            args.report, cells, seed_value=args.seed, max_examples=args.max_examples, inputs=args.inputs
        )
        print(f"report: {args.report}")
    verdicts = {c.verdict for c in cells}
    if "FAILED" in verdicts:
        return EXIT_VIOLATION
    return EXIT_INCONCLUSIVE if "RAISED" in verdicts else EXIT_OK


def print_cell(cell: Cell, seed_value: int) -> None:
    head = f"{cell.library.spec} {cell.assignor}: {cell.verdict}"
    if cell.verdict == "UNAVAILABLE":
        print(f"{head} ({cell.note})")
        return
    print(f"{head} ({cell.examples} judged, {cell.raised} raised, seed {seed_value}, {cell.seconds:.1f} s)")
    for finding in cell.findings:
        for inv, msg in finding.messages:
            print(f"  {inv}: {msg}")
        print(f"  trace: {finding.path}")
        print(f"  Reproduce with: {replay_command(finding.path, cell.library)}")
