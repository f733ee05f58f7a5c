"""CLI handlers for `replay`, `show` and `explore` (cli.py holds only their parser block)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from conformance.errors import UsageError
from conformance.protocols import get_kit, parse_variants


def _coverage(path: Path | None) -> Any:
    if path is None:
        return None
    from conformance.engine.coverage import Coverage, load_graph

    meta, graph = load_graph(path)
    return Coverage(graph, meta)


def report_coverage(coverage: Any, directory: Path | None) -> None:
    """Print the coverage figure; with a report directory also write coverage.md and coverage.png."""
    print(coverage.summary())
    if directory is None:
        return
    directory.mkdir(parents=True, exist_ok=True)
    picture = coverage.picture(directory / "coverage.png")
    (directory / "coverage.md").write_text(
        f"# Coverage\n\n{coverage.summary()}\n\n![state machine]({picture.name})\n"
    )
    print(f"coverage: {directory / 'coverage.md'}")


def cmd_replay(args: argparse.Namespace) -> int:
    from conformance.formats.trace_file import read_trace
    from conformance.trace.emit import emit_counterexample
    from conformance.trace.replay import replay

    trace = read_trace(Path(args.file))
    target, variants = args.target, parse_variants(args.variant)
    if target.startswith("mutant:"):  # a mutant target is the model with its mutant variant
        from conformance.targets.mutant import replay_setup

        target, variants = replay_setup(target, variants)
    coverage = _coverage(args.coverage)
    if target == "recording":  # a mixed trace against its own recorded answers, no target
        result = get_kit(trace.protocol).require("replay_recorded")(trace)
    elif target != "model":  # a real coordinator: adapter + oracle (the kit's replay_on_target)
        from conformance.trace.replay import replay_on_target

        result, notes = replay_on_target(trace, target, variants)
        for note in notes:
            print(f"note: {note}")
    else:
        result = replay(trace, target=target, variants=variants, coverage=coverage)
    shown = ", ".join(f"{k}={v}" for k, v in sorted(result.variants.items())) or "none"
    recorded = ", ".join(trace.violated) or "nothing"
    print(f"replay {args.file} on {args.target} (variants {shown}; recorded: {recorded}): {result.verdict}")
    if result.error:  # exit 2: the one line of a tool error, on stderr like every other
        print(f"groupcheck: error: {result.error}", file=sys.stderr)
        return result.exit_code
    print(
        f"  {len(trace.steps)} steps, {'exact' if result.exact else 'diverged'}"
        + (f" ({result.difference})" if result.difference else "")
    )
    for v in result.violations[:10]:
        print(f"  step {v.step}: {v.invariant}: {v.message}")
    for dev in result.deviations:
        print(f"  known deviation of Apache Kafka: {dev} (docs/known-deviations.md)")
    if coverage is not None:
        print(f"  {coverage.summary()}")
        if args.coverage_picture:
            print(f"  coverage picture: {coverage.picture(args.coverage_picture)}")
    if args.output and result.sim is not None:
        again = get_kit(trace.protocol).to_trace(
            result.sim,
            target=args.target,
            target_version=getattr(result, "target_version", None) or trace.header["target"]["version"],
            origin={"kind": "replay", "of": trace.fingerprint()},
            violations=[(v.invariant, v.message, v.step) for v in result.violations],
        )
        emit_counterexample(again, Path(args.output))
    return result.exit_code


def _window(spec: str | None) -> tuple[int, int] | None:
    if spec is None:
        return None
    first, sep, last = spec.partition(":")
    try:
        lo = int(first) if first else 1
        hi = int(last) if sep and last else (lo if not sep else 10**9)
    except ValueError:
        raise UsageError(f"--steps {spec!r}: expected FROM:TO (step numbers)") from None
    if lo < 1 or hi < lo:
        raise UsageError(f"--steps {spec!r}: expected 1 <= FROM <= TO")
    return lo, hi


def cmd_show(args: argparse.Namespace) -> int:
    from conformance.formats.trace_file import read_trace
    from conformance.trace import render

    path = Path(args.file)
    trace = read_trace(path)
    window = _window(args.steps)
    if args.format in ("svg", "png"):
        out = args.output or path.with_suffix(f".{args.format}")
        render.image(trace, out, args.format, window)
        print(f"wrote {out}")
        return 0
    body = render.text(trace, window) if args.format == "text" else render.mermaid(trace, window)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(body)
        print(f"wrote {args.output}")
    else:
        print(body, end="")
    return 0


def add_explore_parser(sub: Any, protocols: list[str], default: str) -> None:
    """The `explore` subcommand's arguments."""
    from conformance.cli.arguments import integer, number

    ex = sub.add_parser("explore", help="breadth-first exploration of the model's abstract state graph")
    ex.add_argument("--protocol", default=default, choices=protocols)
    ex.add_argument("--members", type=integer("members"), default=2)
    ex.add_argument("--partitions", type=integer("partitions"), default=2)
    ex.add_argument("--depth", type=integer("depth"), default=12)
    ex.add_argument("--budget", type=number("budget"), default=600.0, help="seconds")
    ex.add_argument(
        "--ops",
        help="comma-separated op alphabet (classic default step,advance,stall,resume; perturbations:"
        " leave,restart,subscribe,lose_response and, classic only, stale_subscription)",
    )
    ex.add_argument(
        "--perturbations",
        type=integer("perturbations"),
        help="at most this many perturbing ops on any path (default: no bound)",
    )
    ex.add_argument(
        "--static",
        type=integer("static"),
        default=0,
        help="the first N members are static (group.instance.id i1..iN; default 0)",
    )
    ex.add_argument(
        "--workers",
        type=integer("workers"),
        default=1,
        help="processes expanding the frontier (default 1; the same graph and paths as one)",
    )
    ex.add_argument("--variant", action="append", default=[])
    ex.add_argument("--graph", type=Path, help="write the explored graph (node-link JSON) for coverage")
    ex.add_argument("--report-dir", type=Path)


def cmd_explore(args: argparse.Namespace) -> int:
    from conformance.engine.explore import save_graph
    from conformance.trace.emit import emit_counterexample

    variants = parse_variants(args.variant)
    kit = get_kit(args.protocol)
    ops = None if not args.ops else tuple(o.strip() for o in args.ops.split(",") if o.strip())
    result = kit.require("explore")(
        args.members,
        args.partitions,
        depth=args.depth,
        variants=variants,
        budget_s=args.budget,
        ops=ops,
        perturbations=args.perturbations,
        static=args.static,
        workers=args.workers,
    )
    make_trace = kit.require("explore_trace")
    shown = ", ".join(f"{k}={v}" for k, v in sorted(variants.items())) or "none"
    rate = result.states / result.seconds if result.seconds else 0.0
    print(
        f"explore {args.protocol}: {args.members} members x {args.partitions} partitions, variants {shown}, "
        f"ops {','.join(result.ops)}"
        + ("" if result.perturbations is None else f", at most {result.perturbations} perturbation(s) a path")
        + (f", {result.static} static" if result.static else "")
        + (f", {result.workers} workers" if result.workers > 1 else "")
    )
    bound = (
        f"complete after {result.levels_done} levels (no new states)"
        if result.complete
        else f"depth {result.levels_done} of {args.depth}"
    )
    if result.budget_hit:
        bound += f" (time budget {args.budget:g} s reached)"
    print(f"  largest bound finished: {bound}")
    print(
        f"  {result.states} distinct abstract states, {result.transitions} transitions, "
        f"{result.seconds:.1f} s ({rate:.0f} states/s)"
    )
    name = f"explore-{args.protocol}-m{args.members}-p{args.partitions}"
    run_dir = args.report_dir or Path("reports") / "runs" / name
    if args.graph:
        save_graph(result, args.graph)
        print(f"  graph: {args.graph}")
    if not result.found:
        print("  no invariant violated")
        return 0
    print(f"  violations (BFS-shortest, in ops): {len(result.found)}")
    for inv_id, found in sorted(result.found.items()):
        print(f"  - {inv_id}: BFS-minimal length {len(found.path)} ops: {found.message}")
        emit_counterexample(make_trace(result, found), run_dir)
    return 1


def explain_example(inv_id: str) -> None:
    """`explain`: the shortest shipped regression trace of ``inv_id``, its last steps as a table."""
    from conformance.formats.trace_file import read_trace
    from conformance.trace import render
    from conformance.trace.catalogue import shortest

    ex = shortest(inv_id)
    if ex is None:
        protocol = {"client": "classic"}.get(inv_id.split(".")[0], inv_id.split(".")[0])
        print(
            f"  counterexample: none shipped (a failing `groupcheck check --protocol {protocol}` writes one)"
        )
        return
    print(f"  counterexample: {ex.path.name} ({ex.steps} steps; groupcheck show {ex.path})")
    trace = read_trace(ex.path)
    table = render.text(trace, (max(1, ex.steps - 11), ex.steps)).splitlines()
    print("\n".join(f"    {line}" for line in table[2:]))
