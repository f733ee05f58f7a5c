"""The `groupcheck` command line (docs/cli.md). Exit codes: 0 pass, 1 violation, 2 tool error, 3 inconclusive."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance.cli import keep_going
from conformance.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_TOOL, EXIT_VIOLATION, ToolError, UsageError
from conformance.protocols import KITS, get_kit, parse_variants

#: the protocol a command runs when ``--protocol`` is not given
DEFAULT_PROTOCOL = "classic"

#: commands that draw a live progress line on a terminal (conformance/cli/progress.py)
PROGRESS = ("check", "explore", "mutants", "pipeline")


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"usage: {message}")

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        """``--opt=--`` leaves argparse no value and it stores an empty list: refuse it."""
        value = super()._get_values(action, arg_strings)
        if action.nargs is None and action.option_strings and isinstance(value, list):
            raise argparse.ArgumentError(action, "expected one value")
        return value


class _Version(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from conformance.formats.trace_file import groupcheck_version

        print(f"groupcheck {groupcheck_version()}")
        parser.exit(EXIT_OK)


def build_parser() -> argparse.ArgumentParser:
    from conformance.cli import help as texts
    from conformance.cli.arguments import integer

    p = _Parser(
        prog="groupcheck",
        description="Kafka consumer-group conformance suite: a reference model of the group coordinator\n"
        "and property-based checks of real coordinators against it.",
        epilog=f"{texts.EXIT_CODES}\n\n'groupcheck COMMAND --help' describes a command. Docs: docs/cli.md",
    )
    p.add_argument("--version", action=_Version, help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    c = sub.add_parser(
        "check",
        help="run the stateful suite against a target",
        description="Run the stateful suite against a target; a failure writes a minimal counterexample.",
        epilog=f"{texts.variants_epilog()}\n\n{texts.EXIT_CODES}",
    )
    c.add_argument("--target", default="model", help=texts.targets_help())
    c.add_argument(
        "--protocol",
        default=DEFAULT_PROTOCOL,
        choices=[*KITS, "all"],
        help=f"{texts.PROTOCOLS}; default {DEFAULT_PROTOCOL}",
    )
    c.add_argument(
        "--max-examples", type=integer("max_examples"), help="examples to generate (default: the profile's)"
    )
    c.add_argument(
        "--seed",
        type=integer("seed"),
        default=0,
        help="Hypothesis seed (integer, default 0): same seed, same run",
    )
    c.add_argument("--profile", default="ci", help=f"{texts.profiles_help()}; default ci")
    c.add_argument(
        "--variant", action="append", default=[], help="KEY=VALUE, repeatable: a model variant (below)"
    )
    c.add_argument(
        "--report-dir", type=Path, help="write summary.md, results.json, junit.xml per protocol here"
    )
    c.add_argument(
        "--no-minimise",
        dest="minimise",
        action="store_false",
        help="write Hypothesis' shrunk counterexample as it is (default: minimise it further, replaying each step)",
    )
    c.add_argument("--design", help="check a design the seeds weighed instead (conformance/designs)")
    c.add_argument("--level", default="protocol", choices=["protocol", "kafka-compat"])
    c.add_argument(
        "--publish", action="store_true", help="real targets: write reports/conformance/<target>.md"
    )
    c.add_argument(  # the target's group settings (conformance/targets/settings.py)
        "--target-config",
        action="append",
        default=[],
        metavar="FILE|KEY=VALUE",
        help="real targets: a group setting the target runs with (repeatable; a file of KEY=VALUE lines)",
    )
    c.add_argument(  # faults on real targets (conformance/protocols/classic/faults.py)
        "--restarts",
        type=integer("restarts"),
        help="real targets that can restart: coordinator restarts per run (default: by profile)",
    )
    c.add_argument(  # faults on real targets (conformance/protocols/classic/faults.py)
        "--restart-signal",
        default="kill",
        choices=["kill", "term"],
        help="how a restart stops the target: kill (SIGKILL, a crash; default) or term (clean shutdown)",
    )

    from conformance.clientcheck.command import add_arguments as add_client_arguments  # real consumers

    add_client_arguments(c)
    # real targets (conformance/cli/check.py)
    tg = sub.add_parser("target", help="start, stop or look at a real target (detached)")
    tgsub = tg.add_subparsers(dest="target_command", required=True, parser_class=_Parser)
    for verb in ("start", "stop", "status"):
        tgsub.add_parser(verb).add_argument("name")
    c.add_argument(
        "--coverage", type=Path, help="an explore graph: report coverage (and picture with --report-dir)"
    )
    keep_going.add_arguments(c)  # --keep-going, --max-findings, --baseline, --write-baseline, --groups

    s = sub.add_parser("scenario", help="list or run named scenarios")
    ssub = s.add_subparsers(dest="scenario_command", required=True, parser_class=_Parser)
    ssub.add_parser("list")
    r = ssub.add_parser("run")
    r.add_argument("id")
    r.add_argument("--target", default="model")
    r.add_argument("--variant", action="append", default=[])
    r.add_argument("--report-dir", type=Path)

    e = sub.add_parser("explain", help="an invariant's statement, source and checkers")
    e.add_argument("id", nargs="?", help="invariant id, e.g. classic.single_owner_consumer (see --list)")
    e.add_argument("--list", action="store_true", help="list every invariant id with its kind and protocol")
    e.add_argument("--write-catalogue", action="store_true", help="regenerate reports/invariants.md")

    # -- traces (conformance/trace): replay, show, explore
    rp = sub.add_parser("replay", help="re-run a trace file on a target: FIXED / FAILED / ERROR")
    rp.add_argument("file")
    rp.add_argument(
        "--target",
        default="model",
        help="model | a target | recording (a mixed trace against its own recorded answers, no target)",
    )
    rp.add_argument("--variant", action="append", default=[])
    rp.add_argument("--output", type=Path, help="write the replay's own trace under this run directory")
    rp.add_argument(
        "--coverage", type=Path, help="an explore graph (explore --graph): report the run's coverage"
    )
    rp.add_argument("--coverage-picture", type=Path, help="with --coverage: draw the covered state machine")
    sh = sub.add_parser("show", help="render a trace: step table, Mermaid sequence diagram, SVG or PNG")
    sh.add_argument("file")
    sh.add_argument("--format", default="text", choices=["text", "mermaid", "svg", "png"])
    sh.add_argument("--output", type=Path)
    sh.add_argument("--steps", help="only steps FROM:TO")
    from conformance.cli.trace_commands import add_explore_parser

    add_explore_parser(sub, [k.name for k in KITS.values() if k.explore], DEFAULT_PROTOCOL)

    # -- suite power (conformance/mutants)
    from conformance.power.command import add_parser as add_mutants_parser

    add_mutants_parser(sub)

    sp = sub.add_parser("specs", help="validate the spec files")
    spsub = sp.add_subparsers(dest="specs_command", required=True, parser_class=_Parser)
    spsub.add_parser("validate")

    from conformance.smt.cli import add_prove_parser  # z3 proofs

    add_prove_parser(sub)

    # -- pipeline: parser and logic in conformance/pipeline/cli.py
    from conformance.pipeline.cli import add_parser as add_pipeline_parser

    add_pipeline_parser(sub)
    from conformance.clients.command import add_parser as add_assignors_parser  # real clients' assignors

    add_assignors_parser(sub)

    from conformance.designs.command import add_parsers as add_design_parsers  # the design review

    add_design_parsers(sub)
    from conformance.serve.command import add_parser as add_serve_parser  # the model served on loopback

    add_serve_parser(sub)
    texts.complete(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args: argparse.Namespace | None = None
    try:
        parser = build_parser()
        if not (sys.argv[1:] if argv is None else list(argv)):  # bare `groupcheck`: what it can do
            parser.print_help()
            return EXIT_TOOL
        try:
            args = parser.parse_args(argv)
        except SystemExit as done:  # --help, --version
            return int(done.code or 0)
        from conformance.cli.arguments import preflight
        from conformance.engine import collector

        preflight(args)
        collector.tune()
        from conformance.cli import trace_commands

        handler = {"check": cmd_check, "scenario": cmd_scenario, "explain": cmd_explain, "specs": cmd_specs}
        handler |= {"replay": trace_commands.cmd_replay, "show": trace_commands.cmd_show}
        handler |= {"explore": trace_commands.cmd_explore}
        from conformance.power.command import cmd_mutants

        handler |= {"mutants": cmd_mutants}
        handler["prove"] = cmd_prove
        handler |= {"target": cmd_target}
        handler["pipeline"] = cmd_pipeline
        from conformance.clients.command import cmd_assignors

        handler["assignors"] = cmd_assignors
        from conformance.designs.command import HANDLERS as design_handlers

        handler |= design_handlers
        from conformance.serve.command import cmd_serve

        handler["serve"] = cmd_serve
        from conformance.cli.progress import progress

        drawn = (
            progress(f"groupcheck {args.command}") if args.command in PROGRESS else contextlib.nullcontext()
        )
        with drawn:
            return handler[args.command](args)
    except ToolError as exc:
        print(f"groupcheck: error: {exc}", file=sys.stderr)
        return EXIT_TOOL
    except BrokenPipeError:  # `groupcheck ... | head`: the reader left before the verdict was written
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_TOOL
    except Exception as exc:  # a bug or an unforeseen input: one line and a log, never a traceback
        from conformance.cli.arguments import unexpected

        print(f"groupcheck: error: {unexpected(exc, argv, args)}", file=sys.stderr)
        return EXIT_TOOL


def _require_model(target: str) -> None:
    if target != "model":
        raise UsageError(f"unknown target {target!r} (available: model)")


def cmd_check(args: argparse.Namespace) -> int:
    from conformance.engine.profiles import get_profile
    from conformance.engine.run import run_check
    from conformance.reporting.deviations import deviation_lines
    from conformance.reporting.run_report import write_check_report
    from conformance.targets.open import in_process

    if args.client:  # a real consumer library on the served model (conformance/clientcheck)
        from conformance.clientcheck.command import cmd_check_client

        return cmd_check_client(args)
    if args.design:  # the designs the seeds weighed (conformance/designs/command.py)
        from conformance.designs.command import cmd_check_design

        return cmd_check_design(args)
    if not in_process(args.target):
        return cmd_check_target(args)
    if keep_going.wanted(args):
        return keep_going.cmd_check_in_process(args)
    profile = get_profile(args.profile)
    variants = parse_variants(args.variant)
    protocols = list(KITS) if args.protocol == "all" else [args.protocol]
    if args.target != "model":  # mutant:NAME: in process, its variants name the mutant
        from conformance.targets.mutant import check_setup

        variants, protocols = check_setup(args.target, variants, args.protocol)
    from conformance.cli.trace_commands import _coverage

    coverage = _coverage(args.coverage)
    if coverage is not None and args.protocol != "all":
        coverage.require(args.protocol)
    worst = EXIT_OK
    for protocol in protocols:
        result = run_check(
            get_kit(protocol),
            target=args.target,
            profile=profile,
            max_examples=args.max_examples,
            seed_value=args.seed,
            variants=variants,
            coverage=coverage if coverage is not None and coverage.protocol == protocol else None,
        )
        print(
            f"{protocol} on {args.target}: {result.verdict} ({result.max_examples} examples, seed {args.seed}, {result.seconds:.1f} s)"
        )
        for line in deviation_lines(result):
            print(line)
        example = None
        if result.violations:
            ids = sorted({v.invariant for v in result.violations})
            print(f"violated: {', '.join(ids)}")
            for v in result.violations:
                print(f"  {v.invariant}: {v.message}")
            print("steps:")
            for i, line in enumerate(result.steps, 1):
                print(f"  {i:3d}. {line}")
            if result.trace is not None:
                from conformance.cli.counterexample import write_counterexample
                from conformance.trace.emit import default_run_dir

                run_dir = args.report_dir / protocol if args.report_dir else None
                run_dir = run_dir or default_run_dir("check", args.target, protocol, args.seed)
                example = write_counterexample(result.trace, run_dir, shrink=args.minimise)
            worst = max(worst, EXIT_VIOLATION)
        elif result.vacuous:
            print(f"inconclusive: never exercised {', '.join(result.vacuous)}")
            worst = EXIT_INCONCLUSIVE if worst == EXIT_OK else worst
        if args.report_dir:
            out = write_check_report(result, args.report_dir / protocol, example)
            print(f"report: {out}/summary.md")
        if coverage is not None and coverage.protocol == protocol:
            from conformance.cli.trace_commands import report_coverage

            report_coverage(coverage, args.report_dir / protocol if args.report_dir else None)
    return worst


def cmd_target(args: argparse.Namespace) -> int:
    from conformance.cli.check import cmd_target as run

    return run(args)


def cmd_check_target(args: argparse.Namespace) -> int:
    from conformance.cli.check import print_result, run_protocols_on_target
    from conformance.reporting.target_report import write_target_report
    from conformance.targets.settings import parse_given

    variants = parse_variants(args.variant)
    protocols = list(KITS) if args.protocol == "all" else [args.protocol]
    kept = keep_going.options(args) if keep_going.wanted(args) else None
    if args.baseline:  # a malformed baseline is a tool error before the target starts
        from conformance.engine.baseline import load_baseline

        load_baseline(args.baseline)
    runs, skipped = run_protocols_on_target(
        args.target, protocols, args.profile, max_examples=args.max_examples, seed=args.seed,
        variants=variants, level=args.level, only_offered=args.protocol == "all", restarts=args.restarts,
        restart_signal=args.restart_signal, given=parse_given(args.target_config), keep=kept,
    )  # fmt: skip
    args.not_run = skipped
    if runs and getattr(runs[0].handle, "settings", None) is not None:
        print("settings the oracle used:")
        for line in runs[0].handle.settings.lines():
            print(f"  {line}")
    if kept is not None:
        return keep_going.on_target_done(args, runs, skipped)
    codes = []
    for run in runs:
        protocol = run.result.protocol
        codes.append(print_result(run))
        example = None
        if run.result.violations and run.result.trace is not None:
            from conformance.cli.counterexample import write_counterexample
            from conformance.trace.emit import default_run_dir

            run_dir = args.report_dir / protocol if args.report_dir else None
            run_dir = run_dir or default_run_dir("check", run.result.target, protocol, args.seed)
            example = write_counterexample(run.result.trace, run_dir)
        if args.report_dir:
            out = write_target_report(run, args.report_dir / protocol, example)
            print(f"report: {out}/summary.md")
    for protocol, why in skipped:
        print(f"{protocol} on {args.target}: {why}")
    if args.publish and runs:
        from conformance.reporting.target_report import publish

        path = publish(runs, args)
        print(f"published: {path}")
    return EXIT_VIOLATION if EXIT_VIOLATION in codes else max(codes, default=EXIT_OK)


def cmd_scenario(args: argparse.Namespace) -> int:
    from conformance.specs import load_scenarios
    from conformance.trace.scenario import run_scenario

    scenarios = load_scenarios()
    if args.scenario_command == "list":
        for sid, sc in sorted(scenarios.items()):
            print(f"{sid:36s} {sc.protocol:9s} {sc.title}")
        return EXIT_OK
    _require_model(args.target)
    sc = scenarios.get(args.id)
    if sc is None:
        raise UsageError(f"unknown scenario {args.id!r} (see 'groupcheck scenario list')")
    variants = parse_variants(args.variant)
    result = run_scenario(sc, variants)
    shown = ", ".join(f"{k}={v}" for k, v in sorted(result.variants.items())) or "none"
    print(
        f"scenario {sc.id} ({shown}): {'PASSED' if result.passed else 'FAILED'} in {len(result.observations)} steps"
    )
    if result.violations:
        print(f"violated: {', '.join(sorted({v.invariant for v in result.violations}))}")
        for v in result.violations[:10]:
            print(f"  step {v.step}: {v.invariant}: {v.message}")
    for msg in result.failed_expectations:
        print(f"  expectation failed: {msg}")
    if not result.passed:
        print("steps:")
        for entry in result.log:
            print(f"  {sc.path.name}:{entry.line} {entry.verb} {entry.detail}")
    if result.violations and result.sim is not None:
        from conformance.trace.emit import default_run_dir, emit_counterexample
        from conformance.trace.scenario import scenario_trace

        run_dir = args.report_dir or default_run_dir(f"scenario-{sc.id}", args.target, sc.protocol)
        emit_counterexample(scenario_trace(result, target=args.target), run_dir)
    return EXIT_OK if result.passed else EXIT_VIOLATION


def cmd_explain(args: argparse.Namespace) -> int:
    from conformance.specs import load_invariants

    if args.write_catalogue:
        from conformance.trace.catalogue import write

        print(f"wrote {write()}")
        return EXIT_OK
    specs = load_invariants()
    if args.list:
        for inv_id, item in sorted(specs.items()):
            print(f"{inv_id:48s} {item.kind:10s} {item.protocol}")
        return EXIT_OK
    if args.id is None:
        raise UsageError("usage: explain ID (or --list, --write-catalogue)")
    spec = specs.get(args.id)
    if spec is None:
        raise UsageError(f"unknown invariant {args.id!r} (see groupcheck explain --list)")
    print(f"{spec.id}  ({spec.kind}, {spec.protocol})")
    print(f"  statement: {spec.statement}")
    print(f"  source:    {spec.source}")
    print(f"  checkers:  {', '.join(spec.checkers)}")
    from conformance.cli.trace_commands import explain_example

    explain_example(spec.id)
    return EXIT_OK


def cmd_specs(args: argparse.Namespace) -> int:
    from conformance.specs import load_invariants, load_scenarios

    specs = load_invariants()
    scenarios = load_scenarios()
    print(f"specs valid: {len(specs)} invariants, {len(scenarios)} scenarios")
    return EXIT_OK


def cmd_prove(args: argparse.Namespace) -> int:
    from conformance.smt.cli import cmd_prove as run

    return run(args)


def cmd_pipeline(args: argparse.Namespace) -> int:
    if args.pipeline_command == "replay":  # pipeline counterexamples are project traces
        from conformance.cli.trace_commands import cmd_replay

        ns = argparse.Namespace(
            file=str(args.file), target="model", variant=[], coverage=None, coverage_picture=None, output=None
        )
        return cmd_replay(ns)
    from conformance.pipeline.cli import run

    return run(args)


if __name__ == "__main__":
    sys.exit(main())
