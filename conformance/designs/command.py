"""The command line of the design review: `compare`, `design replay|show|scenarios`, `check --design`.

Registered in `conformance/cli/main.py` by `add_parsers` (one call) and `HANDLERS`; `check --design NAME`
hands over to `cmd_check_design` before the protocol machines start. Exit codes as everywhere: 0
passed, 1 a predicate violated, 2 tool error, 3 inconclusive (a linked trace did not replay as
the report claims).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from conformance.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_TOOL, EXIT_VIOLATION, ToolError, UsageError
from model.designs import DESIGNS, parse_design
from model.designs.net import DesignError

MAX_WORKLOADS = 10_000


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from conformance.designs.compare import DEFAULT_MEMBERS, DEFAULT_ROWS

    c = sub.add_parser(
        "compare", help="run the designs the seeds weighed side by side; write the design review"
    )
    c.add_argument(
        "--designs", default=",".join(DEFAULT_ROWS), help="name or name:key=value,... separated by ';' or ','"
    )
    c.add_argument("--members", type=int, nargs="+", default=list(DEFAULT_MEMBERS))
    c.add_argument(
        "--topics", type=int, nargs="+", default=[1, 10, 100, 1000], help="topic counts of the size sweep"
    )
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--workloads", type=int, default=30, help="random workloads per design")
    c.add_argument("--out", type=Path, default=Path("reports/design-review.md"))
    c.add_argument("--no-liveness", action="store_true", help="skip the liveness and upgrade measurements")
    c.add_argument("--no-scenarios", action="store_true", help="leave out the table of scenario outcomes")
    d = sub.add_parser("design", help="design traces and scenarios (replay, show, scenarios)")
    dsub = d.add_subparsers(dest="design_command", required=True, parser_class=type(d))
    r = dsub.add_parser("replay", help="re-run a design trace: FAILED / PASSED / FIXED / ERROR")
    r.add_argument("file", type=Path)
    r.add_argument("--design", help="another design to run the trace on (name or name:key=value,...)")
    s = dsub.add_parser("show", help="render a design trace as a step table")
    s.add_argument("file", type=Path)
    sc = dsub.add_parser("scenarios", help="run the design scenarios (specs/scenarios/designs)")
    sc.add_argument("--id", help="only this scenario")


def split_labels(text: str) -> list[str]:
    """``a,b:x=1,y=2,c``: a comma starts a new design unless the item is a key=value option."""
    labels: list[str] = []
    for item in filter(None, (p.strip() for p in text.replace(";", ",").split(","))):
        if "=" in item and ":" not in item and labels:
            labels[-1] += ("," if ":" in labels[-1] else ":") + item
        else:
            labels.append(item)
    return labels


def cmd_compare(args: argparse.Namespace) -> int:
    from conformance.designs import report
    from conformance.designs.compare import compare, figures

    labels = split_labels(args.designs)
    if not labels:
        raise UsageError("--designs: name at least one design")
    try:
        for label in labels:
            parse_design(label)
    except DesignError as exc:
        raise UsageError(f"--designs: {exc}") from None
    if not all(2 <= n <= 100_000 for n in args.members) or not 1 <= args.workloads <= MAX_WORKLOADS:
        raise UsageError(f"--members must be 2..100000 and --workloads 1..{MAX_WORKLOADS}")
    if not all(1 <= t <= 10_000 for t in args.topics):
        raise UsageError("--topics must be 1..10000")
    out: Path = args.out
    assets = out.parent / out.stem
    result = compare(
        labels,
        members=sorted(set(args.members)),
        seed=args.seed,
        workloads=args.workloads,
        out_dir=assets,
        measure_liveness=not args.no_liveness,
        topics=tuple(sorted(set(args.topics))),
        scenarios=not args.no_scenarios,
    )
    figures(result, assets)
    sizes = " ".join(map(str, sorted(set(args.members))))
    sweep = " ".join(map(str, sorted(set(args.topics))))
    command = f"groupcheck compare --designs {','.join(labels)} --members {sizes} --topics {sweep} --seed {args.seed} --workloads {args.workloads}"
    path = report.write(result, out, command)
    for row in result.rows:
        bad = [inv for inv, c in row.cells.items() if c.status == "violated"]
        print(f"{row.label:40s} {'violated ' + ', '.join(bad) if bad else 'held (or n/a)'}")
    print(f"report: {path}")
    if not result.replays_ok():
        print("inconclusive: a linked trace does not replay FAILED on its design and PASSED on its baseline")
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def cmd_design(args: argparse.Namespace) -> int:
    from conformance.designs import scenarios as scn
    from conformance.designs import trace as tr

    if args.design_command == "show":
        print(tr.render(tr.read(args.file)), end="")
        return EXIT_OK
    if args.design_command == "replay":
        trace = tr.read(args.file)
        try:
            name, options = parse_design(args.design) if args.design else (trace.design, None)
        except DesignError as exc:
            raise UsageError(f"--design: {exc}") from None
        result = tr.replay(trace, name, options)
        print(
            f"{args.file} on {name}: {result.verdict}"
            + (f" ({result.difference})" if result.difference else "")
        )
        for f in result.result.findings[:10] if result.result else []:
            print(f"  step {f.step} t={f.now}: {f.invariant}: {f.message}")
        return result.exit_code
    chosen = scn.load_all()
    if args.id is not None:
        if args.id not in chosen:
            raise UsageError(f"unknown design scenario {args.id!r} (known: {', '.join(chosen)})")
        chosen = {args.id: chosen[args.id]}
    worst = EXIT_OK
    for sid, sc in chosen.items():
        for outcome in scn.run_scenario(sc):
            e = outcome.expectation
            verdict = "ok" if outcome.met else "UNMET"
            seen = ", ".join(outcome.result.violated) or "nothing violated"
            print(
                f"{verdict:5s} {sid} on {scn.label(e.design, e.options)}: {seen}"
                + (f" ({outcome.why})" if outcome.why else "")
            )
            if not outcome.met:
                worst = EXIT_VIOLATION
    return worst


def cmd_check_design(args: argparse.Namespace) -> int:
    """`check --design NAME`: the seeded search and the design's scenarios; traces for what fails."""
    from conformance.designs.compare import evaluate, slug
    from conformance.engine.profiles import get_profile

    try:
        name, _ = parse_design(args.design)
    except DesignError as exc:
        raise UsageError(f"--design: {exc}") from None
    if DESIGNS[name].factory is None:
        raise UsageError(f"--design {name}: a size model only, nothing to check")
    workloads = (
        args.max_examples
        if args.max_examples is not None
        else max(5, get_profile(args.profile).max_examples // 5)
    )
    if not 1 <= workloads <= MAX_WORKLOADS:
        raise UsageError(f"--max-examples must be 1..{MAX_WORKLOADS}")
    out = (args.report_dir or Path("reports/runs")) / f"design-{slug(args.design)}-seed{args.seed}"
    row = evaluate(args.design, seed=args.seed, workloads=workloads, traces=out, measure_liveness=False)
    bad = {inv: c for inv, c in row.cells.items() if c.status == "violated"}
    verdict = "FAILED" if bad else "PASSED"
    print(
        f"design {args.design}: {verdict} ({row.workloads} workloads, {len(row.scenarios)} scenario runs, seed {args.seed})"
    )
    for inv, c in sorted(bad.items()):
        print(f"  {inv}: {c.message} (t={c.at} ms, {c.ops} ops)")
        print(f"    trace: {c.trace} (replays {c.replay_design} here, {c.replay_baseline} on {row.baseline})")
    return EXIT_VIOLATION if bad else EXIT_OK


def _guarded(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A design that cannot go on, or anything unexpected, is a tool error (exit 2), not a traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except ToolError:
            raise
        except DesignError as exc:
            raise ToolError(str(exc)) from exc
        except Exception as exc:  # noqa: BLE001 - the exit-code contract: unexpected -> 2
            raise ToolError(f"unexpected {type(exc).__name__}: {exc}") from exc

    return run


HANDLERS = {"compare": _guarded(cmd_compare), "design": _guarded(cmd_design)}
cmd_check_design = _guarded(cmd_check_design)
__all__ = ["EXIT_TOOL", "HANDLERS", "add_parsers", "cmd_check_design"]
