"""`groupcheck mutants`: print the kill matrix and write it to reports/mutants.md (docs/mutants.md#kill-matrix)."""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from conformance.engine.variants import MUTANT
from conformance.errors import EXIT_OK, EXIT_VIOLATION, UsageError
from conformance.protocols import KITS, get_kit


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    m = sub.add_parser("mutants", help="run the suite from scratch against every mutant: the kill matrix")
    m.add_argument(
        "--protocol",
        default="all",
        choices=[*KITS, "all"],
        help="all: every protocol whose mutants are registered mutants (conformance/mutants); mixed: "
        "the mixed machine against the mixed-group mutants (reports/mutants_mixed.md)",
    )
    m.add_argument("--mutant", action="append", default=[], help="only this mutant (repeatable)")
    m.add_argument("--budget", type=float, default=60.0, help="seconds per mutant (default 60)")
    m.add_argument("--max-examples", type=int, help="examples per mutant (default: the profile's)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--profile", default="ci")
    m.add_argument("--report", type=Path, default=Path("reports") / "mutants.md")
    m.add_argument("--no-report", action="store_true", help="print the matrix only")
    m.add_argument("--list", action="store_true", help="list the mutants and exit")
    m.add_argument("--no-shrink", action="store_true", help="report the first failing example unshrunk")
    m.add_argument(
        "--bfs-budget",
        type=float,
        default=30.0,
        help="CPU seconds of `explore` per mutant for the BFS-minimal column (0: skip)",
    )
    m.add_argument("--jobs", type=int, default=1, help="mutants run in this many worker processes")


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def _write_report(path: Path, render: Callable[[str], str]) -> None:
    """Write a kill-matrix report; ``render`` gets the command line that produced it."""
    command = "groupcheck " + " ".join(shlex.quote(a) for a in sys.argv[1:] if a)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(command))
    print(f"report: {path}")


def cmd_mutants(args: argparse.Namespace) -> int:
    from conformance.engine.profiles import get_profile
    from conformance.mutants import MUTANTS, get_mutant
    from conformance.power.matrix import render_markdown, run_matrix, text_row

    if args.protocol != "all" and get_kit(args.protocol).mutant_key != MUTANT.name:
        return cmd_mixed_mutants(args)  # mutants chosen by a variant of their own: their own matrix
    if args.list:
        for m in MUTANTS.values():
            if args.protocol in ("all", m.protocol):
                row = f"row {m.row}" if m.row else "generic"
                print(f"{m.name:26s} {m.protocol:8s} {row:8s} {m.fault}")
        return EXIT_OK
    if args.budget <= 0:
        raise UsageError("--budget must be positive (seconds per mutant)")
    for name in args.mutant:
        get_mutant(name)
    profile = get_profile(args.profile)
    run_dir = Path("reports") / "runs" / f"mutants-seed{args.seed}"
    print(f"kill matrix: budget {args.budget:g} s per mutant, profile {profile.name}, seed {args.seed}")
    rows = run_matrix(
        args.mutant or None,
        protocol=args.protocol,
        profile=profile,
        budget_s=args.budget,
        max_examples=args.max_examples,
        seed=args.seed,
        run_dir=run_dir,
        progress=lambda r: print(text_row(r), flush=True),
        shrink=not args.no_shrink,
        bfs_budget_s=args.bfs_budget if args.bfs_budget > 0 else None,
        jobs=args.jobs,
    )
    caught = sum(r.caught for r in rows)
    print(f"caught {caught} of {len(rows)}")
    for r in rows:
        if r.trace_path:
            print(f"  {r.name}: counterexample {r.trace_path}")
    if not args.no_report:
        _write_report(
            args.report,
            lambda command: render_markdown(
                rows, command=command, machine=machine(), shrunk=not args.no_shrink
            ),
        )
    return EXIT_OK if caught == len(rows) else EXIT_VIOLATION


def cmd_mixed_mutants(args: argparse.Namespace) -> int:
    """`groupcheck mutants --protocol mixed`: the mixed-group mutants (conformance/power/mixed_kill.py)."""
    from conformance.engine.profiles import get_profile
    from conformance.mutants.mixed import MIXED_MUTANTS
    from conformance.power.mixed_kill import render_markdown, run_mixed_matrix, text_row

    if args.list:
        for name, cls in MIXED_MUTANTS.items():
            print(f"{name:34s} mixed    {' '.join((cls.__doc__ or '').split())}")
        return EXIT_OK
    if args.budget <= 0:
        raise UsageError("--budget must be positive (seconds per mutant)")
    for name in args.mutant:
        if name not in MIXED_MUTANTS:
            raise UsageError(f"unknown mixed mutant {name!r} (known: {', '.join(MIXED_MUTANTS)})")
    profile = get_profile(args.profile)
    print(f"mixed kill matrix: budget {args.budget:g} s per mutant, profile {profile.name}, seed {args.seed}")
    rows = run_mixed_matrix(
        args.mutant or None,
        profile=profile,
        budget_s=args.budget,
        max_examples=args.max_examples,
        seed=args.seed,
        progress=lambda r: print(text_row(r), flush=True),
    )
    caught = sum(r.caught and r.expected_hit for r in rows)
    print(f"caught {caught} of {len(rows)} (by an expected invariant)")
    if not args.no_report:
        report = (
            args.report
            if args.report != Path("reports") / "mutants.md"
            else Path("reports") / "mutants_mixed.md"
        )
        _write_report(
            report, lambda command: render_markdown(rows, command=command, machine=machine(), profile=profile)
        )
    return EXIT_OK if caught == len(rows) else EXIT_VIOLATION
