"""`groupcheck check --keep-going | --baseline FILE | --write-baseline FILE | --groups N` (docs/keep-going.md).

The run records every divergence instead of stopping at the first (`conformance.engine.divergences`),
on one group or on N groups at once (`conformance.engine.groups`), then prints and writes each
distinct one with its smallest trace and the command that replays it, compares them with a
baseline of known ones, and writes a baseline. Exit codes: with ``--baseline``, 1 only for a
divergence the baseline does not list; otherwise 1 for any divergence.
"""

from __future__ import annotations

import argparse
import shlex
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from conformance.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_VIOLATION
from conformance.strict import integer


@dataclass(frozen=True)
class KeepGoing:
    """What the flags ask of one run."""

    keep_going: bool
    max_findings: int
    groups: int

    @property
    def limit(self) -> int:
        """Distinct divergences after which the run stops (without --keep-going: the first)."""
        return self.max_findings if self.keep_going else 1


def add_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument(
        "--keep-going",
        action="store_true",
        help="record every divergence (adopting each as a known deviation) instead of stopping at the first",
    )
    c.add_argument(
        "--max-findings",
        type=integer("max_findings"),
        default=50,
        help="with --keep-going: stop after this many distinct divergences (default 50; 0: no bound)",
    )
    c.add_argument(
        "--baseline",
        type=Path,
        help="YAML of known divergences: exit 1 only on a new one (implies --keep-going)",
    )
    c.add_argument(
        "--write-baseline",
        type=Path,
        help="write this run's distinct divergences as a baseline (implies --keep-going)",
    )
    c.add_argument(
        "--groups",
        type=integer("groups"),
        default=1,
        help="drive N independent groups against the target at once, each with its own seed (default 1)",
    )


def wanted(args: argparse.Namespace) -> bool:
    return bool(args.keep_going or args.baseline or args.write_baseline or args.groups != 1)


def options(args: argparse.Namespace) -> KeepGoing:
    from conformance.engine.groups import MAX_GROUPS
    from conformance.errors import UsageError

    if not 1 <= args.groups <= MAX_GROUPS:
        raise UsageError(f"--groups {args.groups}: between 1 and {MAX_GROUPS}")
    if args.max_findings < 0:
        raise UsageError(f"--max-findings {args.max_findings}: 0 (no bound) or more")
    keep = bool(args.keep_going or args.baseline or args.write_baseline)
    return KeepGoing(keep, args.max_findings, args.groups)


# ---------------------------------------------------------------------------------- running
def cmd_check_in_process(args: argparse.Namespace) -> int:
    """--keep-going, --baseline, --groups on the model or a mutant (conformance/cli/py)."""
    from conformance.engine.profiles import get_profile
    from conformance.protocols import KITS, get_kit, parse_variants
    from conformance.trace.emit import default_run_dir

    if args.baseline:  # a malformed baseline is a tool error before anything runs
        from conformance.engine.baseline import load_baseline

        load_baseline(args.baseline)
    variants, protocols = (
        parse_variants(args.variant),
        list(KITS) if args.protocol == "all" else [args.protocol],
    )
    if args.target != "model":
        from conformance.targets.mutant import check_setup

        variants, protocols = check_setup(args.target, variants, args.protocol)
    runs = []
    for protocol in protocols:
        result = run_in_process(args, get_kit(protocol), variants, get_profile(args.profile))
        run_dir = (
            args.report_dir / protocol
            if args.report_dir
            else default_run_dir("check", args.target, protocol, args.seed)
        )
        runs.append((protocol, result, run_dir))
    return conclude(args, runs)


def run_in_process(args: argparse.Namespace, kit: Any, variants: dict[str, str], profile: Any) -> Any:
    """One protocol on the model or a mutant, every group on its own seed; the merged result."""
    from conformance.engine.divergences import DivergenceLog
    from conformance.engine.groups import group_seed, run_groups
    from conformance.engine.run import run_check

    opts = options(args)

    def one(g: int) -> Any:
        result = run_check(
            kit, target=args.target, profile=profile, max_examples=args.max_examples,
            seed_value=group_seed(args.seed, g), variants=variants,
            keep_going=DivergenceLog(max_findings=opts.limit), group=g,
        )  # fmt: skip
        result.observations = []  # handed back from the group's process: what the report needs
        return result

    start = time.perf_counter()
    results = run_groups(opts.groups, one)
    return merge(results, time.perf_counter() - start, opts.limit)


def run_on_target(
    handle: Any, kit: Any, profile: Any, run_kw: dict[str, Any], opts: KeepGoing
) -> tuple[Any, list[float], int]:
    """One protocol on an opened real target, N groups each on a session of its own; (merged
    result, answer round trips, answered requests)."""
    from conformance.engine.divergences import DivergenceLog
    from conformance.engine.groups import group_seed, run_groups
    from conformance.engine.run import run_check
    from conformance.targets.open import group_handle

    seed = run_kw.pop("seed_value")
    if opts.groups > 1:
        from conformance.targets.open import prepare_groups

        prepare_groups(handle)

    def one(g: int) -> tuple[Any, list[float], list[Any]]:
        h = handle if opts.groups == 1 else group_handle(handle, g)
        session = h.session
        rtt0, compat0 = len(session.rtt_ms), len(session.compat)
        try:
            port_factory, config, prof = kit.require("real_setup")(h, profile)
            result = run_check(
                kit, profile=prof, port_factory=port_factory, config=config, real_time=True,
                seed_value=group_seed(seed, g), keep_going=DivergenceLog(max_findings=opts.limit), group=g,
                **run_kw,
            )  # fmt: skip
        finally:
            if opts.groups > 1:
                session.adapter.close()
        result.observations = []  # handed back from the group's process: what the report needs
        return result, session.rtt_ms[rtt0:], session.compat[compat0:]

    start = time.perf_counter()
    outcomes = run_groups(opts.groups, one)
    runs = [(r.seconds, len(times), r.top_up_rounds, r.restarts) for r, times, _ in outcomes]
    result = merge([r for r, _, _ in outcomes], time.perf_counter() - start, opts.limit)
    result.group_runs = runs
    rtt = [x for _, times, _ in outcomes for x in times]
    result.compat = [f for _, _, found in outcomes for f in found]
    return result, rtt, len(rtt)


def merge(results: list[Any], seconds: float, limit: int) -> Any:
    """Group 0's result carrying every group's divergences (first seen by group, example, step)."""
    from conformance.engine.groups import merge_divergences

    out = results[0]
    out.seconds = seconds
    out.divergences = merge_divergences((r.divergences for r in results), limit)
    errors = [r.error for r in results if r.error]
    out.error = errors[0] if errors else out.error
    out.stopped_at_limit = any(r.stopped_at_limit for r in results)
    if out.divergences:
        from conformance.engine.checker import Violation

        out.violations = [Violation(d.rule, d.first.message, d.first.step) for d in out.divergences]
        out.trace = out.divergences[0].trace
    vacuous = set(results[0].vacuous)
    for r in results[1:]:
        vacuous &= set(r.vacuous)
    out.vacuous = sorted(vacuous)
    return out


# ---------------------------------------------------------------------------------- reporting
def shown(protocol: str, result: Any, run_dir: Path, *, shrink: bool) -> list[Any]:
    """Each distinct divergence with its smallest trace written (minimised in process) and drawn."""
    from conformance.cli.counterexample import minimal
    from conformance.formats.trace_file import write_trace
    from conformance.reporting.divergences import Shown
    from conformance.trace.render import mermaid

    out = []
    for k, d in enumerate(result.divergences, 1):
        trace, path, text, steps = d.trace, None, "", 0
        if trace is not None:
            if shrink and not d.smallest.tainted:
                trace = minimal(trace)
            path = write_trace(trace, run_dir / "divergences" / f"{k:02d}-{_slug(d.rule)}.ndjson")
            text, steps = mermaid(trace), len(trace.steps)
        replay = f"groupcheck replay {shlex.quote(str(path))} --target {result.target}" if path else ""
        out.append(Shown(protocol, d, path, replay, text, steps))
    return out


def conclude(args: argparse.Namespace, runs: list[tuple[str, Any, Path]]) -> int:
    """Print every distinct divergence of (protocol, result, run directory) runs, compare with and
    write baselines, write the report; the exit code (the divergences shown go to ``args.shown``)."""
    from conformance.engine.baseline import compare, load_baseline, write_baseline
    from conformance.reporting.divergences import write_report

    entries = load_baseline(args.baseline) if args.baseline else []
    items = []
    for protocol, result, run_dir in runs:
        items += shown(protocol, result, run_dir, shrink=getattr(args, "minimise", True))
    found = [(i.protocol, i.divergence) for i in items]
    cmp = compare(entries, found)
    new_keys = {(p, d.signature) for p, d in cmp.new}
    if args.baseline:
        items = [
            replace(i, status="new" if (i.protocol, i.divergence.signature) in new_keys else "known")
            for i in items
        ]
    args.shown = items
    for protocol, result, _ in runs:
        n = len(result.divergences)
        limit = " (stopped at --max-findings)" if result.stopped_at_limit else ""
        print(f"{protocol} on {result.target}: {n} distinct divergence(s){limit}, {result.seconds:.1f} s")
    for k, i in enumerate(items, 1):
        d = i.divergence
        status = f" [{i.status}]" if i.status else ""
        print(f"  {k:2d}.{status} {i.protocol} x{d.count} {d.signature}")
        print(f"      first seen: group {d.first.group}, example {d.first.example}, step {d.first.step}")
        if i.replay:
            print(f"      replay: {i.replay}")
    if args.baseline:
        print(
            f"baseline {args.baseline}: {len(cmp.known)} known, {len(cmp.new)} new, {len(cmp.unseen)} not seen"
        )
        for p, d in cmp.new:
            print(f"  new: {p} {d.signature}")
        for e in cmp.unseen:
            print(f"  not seen: {e.protocol} {e.signature} (line {e.line})")
    if args.write_baseline:
        n = write_baseline(args.write_baseline, found, runs[0][1].target if runs else "", entries)
        print(f"baseline written: {args.write_baseline} ({n} entries)")
    if args.report_dir and runs:
        header = [
            f"# groupcheck: every distinct divergence on {runs[0][1].target}",
            "",
            f"Command: `{_command(args)}`",
        ]
        print(f"report: {write_report(items, args.report_dir, header, cmp.unseen)}/divergences.md")
    errors = [r for _, r, _ in runs if r.error]
    if errors:
        return 2
    if args.baseline:
        return EXIT_VIOLATION if cmp.new else EXIT_OK
    if found:
        return EXIT_VIOLATION
    if any(r.vacuous for _, r, _ in runs):
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def _slug(rule: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in rule)[:64]


def _command(args: argparse.Namespace) -> str:
    parts = [
        "groupcheck",
        "check",
        "--target",
        args.target,
        "--protocol",
        args.protocol,
        "--seed",
        str(args.seed),
    ]
    if getattr(args, "profile", None):
        parts += ["--profile", args.profile]
    if args.max_examples:
        parts += ["--max-examples", str(args.max_examples)]
    if args.keep_going:
        parts += ["--keep-going", "--max-findings", str(args.max_findings)]
    if args.groups != 1:
        parts += ["--groups", str(args.groups)]
    if args.baseline:
        parts += ["--baseline", str(args.baseline)]
    return " ".join(shlex.quote(p) for p in parts)


def on_target_done(args: argparse.Namespace, runs: list[Any], skipped: list[tuple[str, str]]) -> int:
    """After a keep-going run on a real target: the levels, the divergences, the published page."""
    from conformance.trace.emit import default_run_dir

    kept = []
    for run in runs:
        r = run.result
        print(
            f"{r.protocol} on {r.target} {r.target_version}: {r.verdict} ({r.max_examples} examples x "
            f"{options(args).groups} group(s), seed {r.seed}, {r.seconds:.1f} s, {run.ops} answers, "
            f"{run.ops / max(r.seconds, 1e-9):.1f} ops/s)"
        )
        run_dir = (
            args.report_dir / r.protocol
            if args.report_dir
            else default_run_dir("check", r.target, r.protocol, args.seed)
        )
        if args.publish:  # the published page's traces sit beside it
            from conformance.reporting.target_report import published_dir

            run_dir = published_dir(r.target) / r.protocol
        kept.append((r.protocol, r, run_dir))
    for protocol, why in skipped:
        print(f"{protocol} on {args.target}: {why}")
    code = conclude(args, kept)
    if args.publish and runs:
        from conformance.reporting.target_report import publish

        print(f"published: {publish(runs, args, _command(args), args.shown)}")
    return code
