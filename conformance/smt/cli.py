"""`groupcheck prove`: parser block and command (kept out of `conformance/cli/main.py`, which only wires it).

Prints one line per invariant and rule (CONFIRMED / REFUTED / UNKNOWN, with time), one overall
line per invariant, and for every REFUTED invariant the model-confirmed counterexample. Exit codes:
0 all CONFIRMED, 1 something REFUTED, 2 usage error or an encoding bug (a z3 counterexample the model
did not confirm), 3 something UNKNOWN with ``--fail-on-unknown``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from conformance.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_TOOL, EXIT_VIOLATION
from conformance.smt.counterexample import plain
from conformance.smt.solver import DEFAULT_RLIMIT, DEFAULT_SEED, DEFAULT_TIMEOUT_S, Limits, Verdict


def add_prove_parser(sub: Any) -> None:
    p = sub.add_parser("prove", help="z3: prove invariants inductive, refute broken variants")
    p.add_argument(
        "--invariant", action="append", default=None, help="invariant id (repeatable; default all)"
    )
    p.add_argument("--variant", action="append", default=[], help="KEY=VALUE (see --list-variants)")
    p.add_argument("--members", type=int, default=4)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per solver call")
    p.add_argument("--rlimit", type=int, default=DEFAULT_RLIMIT, help="z3 resource limit per solver call")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--depth", type=int, default=6, help="bounded model checking depth")
    p.add_argument("--fail-on-unknown", action="store_true")
    p.add_argument("--no-times", action="store_true", help="omit times (byte-identical output per seed)")
    p.add_argument("--json", type=Path, help="write all verdicts as JSON")
    p.add_argument("--counterexamples", type=Path, help="directory for REFUTED counterexamples")
    p.add_argument("--list-variants", action="store_true")
    p.add_argument("--report", type=Path, help="regenerate the published table (e.g. reports/proofs.md)")


def cmd_prove(args: argparse.Namespace) -> int:
    from conformance.smt.prove import PROVE_VARIANTS, parse_prove_variants, run_prove

    if args.list_variants:
        for v in PROVE_VARIANTS.values():
            print(f"{v.name}={'|'.join(v.values)}  (default {v.default}; broken {v.broken})  {v.help}")
        return EXIT_OK
    limits = Limits(args.seed, args.timeout, args.rlimit)
    if args.report is not None:
        from conformance.smt.report import write_report

        write_report(args.report, limits)
        print(f"report: {args.report}")
        return EXIT_OK
    variant = parse_prove_variants(args.variant)
    run = run_prove(args.invariant, variant, args.members, args.partitions, limits, args.depth)
    times = not args.no_times
    for o in run.outcomes:
        t = f"{o.seconds:8.2f}s" if times else ""
        print(
            f"{o.invariant_id:42s} {o.bound:6s} {o.transition:14s} {o.verdict.value:9s} {t} {o.detail}".rstrip()
        )
    print()
    worst = EXIT_OK
    for inv in run.invariants:
        verdict = run.verdict_of(inv)
        print(f"{inv:42s} {args.members}x{args.partitions:<4d} overall        {verdict.value}")
        if verdict == Verdict.REFUTED:
            worst = max(worst, EXIT_VIOLATION)
        elif verdict == Verdict.UNKNOWN and args.fail_on_unknown and worst == EXIT_OK:
            worst = EXIT_INCONCLUSIVE
    for o in run.outcomes:
        if o.verdict == Verdict.REFUTED and o.counterexample is not None:
            print(f"\ncounterexample for {o.invariant_id} (re-checked on the model):")
            print(json.dumps(plain(o.counterexample), indent=2, sort_keys=True))
    if args.counterexamples is not None:
        for path in write_counterexamples(run.outcomes, args.counterexamples):
            print(f"counterexample: {path}")
            print(f"Reproduce with:\n  groupcheck replay {path}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        rows = [o.to_json(times=times) for o in run.outcomes]
        for row in rows:
            if "counterexample" in row:
                row["counterexample"] = plain(row["counterexample"])
        args.json.write_text(json.dumps(rows, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if run.encoding_bugs:
        for o in run.encoding_bugs:
            print(f"groupcheck: error: {o.invariant_id}: {o.detail}")
        return EXIT_TOOL
    if times:
        print(f"\ntotal {run.seconds:.2f}s (seed {args.seed}, timeout {args.timeout}s, rlimit {args.rlimit})")
    return worst


def write_counterexamples(outcomes: list[Any], directory: Path) -> list[Path]:
    from conformance.smt.counterexample import write_counterexample

    directory.mkdir(parents=True, exist_ok=True)
    return [write_counterexample(o, directory) for o in outcomes if o.verdict == Verdict.REFUTED]
