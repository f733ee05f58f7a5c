"""`groupcheck pipeline swarm|audit|replay`: the CLI of the Spark pipeline (docs/pipeline.md).

pyspark is imported only when a Spark command runs, so `groupcheck` works without the `spark`
extra; without it a Spark command is a tool error saying how to install it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from conformance.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_VIOLATION, UsageError
from conformance.pipeline.swarm import swarm_kits
from conformance.strict import integer, number


def add_parser(sub: Any) -> None:
    p = sub.add_parser("pipeline", help="Spark pipeline: swarm exploration, trace lake, audits")
    psub = p.add_subparsers(dest="pipeline_command", required=True, parser_class=type(p))
    s = psub.add_parser("swarm", help="N seeded model runs on Spark into a Parquet trace lake")
    s.add_argument("--runs", type=integer("runs"), required=True)
    s.add_argument(
        "--protocol", default="classic", choices=[*(k.name for k in swarm_kits()), "both"],
        help="both: even runs classic, odd runs consumer",
    )  # fmt: skip
    s.add_argument(
        "--mix-variants", action="store_true",
        help="also draw each assignor's alternative variants (sticky v0, cooperative-sticky without "
        "adjustment, ConsumerGroupHeartbeat v0): a distribution for metrics over every assignor and variant",
    )  # fmt: skip
    s.add_argument("--seed", type=integer("seed"), default=0)
    s.add_argument("--steps", type=integer("steps"), default=80, help="steps per run")
    s.add_argument("--variant", action="append", default=[], help="pin a variant for every run (KEY=VALUE)")
    s.add_argument("--master", help="Spark master URL (default local[*])")
    s.add_argument("--out", type=Path, default=Path("reports/runs/lake"))
    s.add_argument("--overwrite", action="store_true")
    s.add_argument(
        "--coverage",
        action="store_true",
        help="record each step's abstract state (explore's key) for coverage",
    )
    s.add_argument(
        "--shape", help="M,P: every run has M dynamic members on one topic of P partitions (explore's set-up)"
    )
    a = psub.add_parser("audit", help="check the invariants over a trace lake")
    a.add_argument("path")
    a.add_argument("--master")
    a.add_argument("--out", type=Path, help="report directory (default: <path>-audit)")
    a.add_argument("--ownerless-bound-ms", type=integer("ownerless_bound_ms"), default=None)
    a.add_argument("--max-counterexamples", type=integer("max_counterexamples"), default=20)
    m = psub.add_parser("metrics", help="rebalance length, partitions moved, time without owner, coverage")
    m.add_argument("path")
    m.add_argument("--master")
    m.add_argument("--out", type=Path, help="report directory (default: reports/pipeline/<lake name>)")
    m.add_argument(
        "--graph", type=Path, help="an explore graph (explore --graph): coverage of it, and its picture"
    )
    im = psub.add_parser("import", help="convert groupcheck NDJSON traces into a trace lake")
    im.add_argument("traces", nargs="+", type=Path)
    im.add_argument("--out", type=Path, required=True)
    im.add_argument("--overwrite", action="store_true")
    r = psub.add_parser("replay", help="re-run a pipeline counterexample on the model (= groupcheck replay)")
    r.add_argument("file", type=Path)
    psub.add_parser(
        "jvm-archive",
        help="build the driver JVM's class-data-sharing archive: faster Spark sessions (docs/pipeline.md)",
    )
    c = psub.add_parser("coordlog", help="export, decode and audit a broker's __consumer_offsets")
    where = c.add_mutually_exclusive_group(required=True)
    where.add_argument("--bootstrap", help="audit the log of a running broker (e.g. after a conformance run)")
    where.add_argument(
        "--start", choices=["apache-kafka"], help="start this target, run real groups on it, audit"
    )
    c.add_argument(
        "--topic", default="groupcheck-orders", help="topic of the workload (created with --start)"
    )
    c.add_argument("--group", action="append", default=None, help="audit only these groups (default: all)")
    c.add_argument("--pace", type=number("pace"), default=3.0, help="seconds between workload phases")
    c.add_argument("--out", type=Path, default=Path("reports/runs/coordlog"))


def run(args: argparse.Namespace) -> int:
    """Every pipeline command but ``replay`` (`groupcheck replay` itself: the CLI runs it)."""
    if args.pipeline_command == "import":
        from conformance.pipeline.importer import import_traces

        n, rows = import_traces(list(args.traces), args.out, args.overwrite)
        print(f"import: {n} trace(s), {rows} rows -> {args.out}")
        return EXIT_OK
    if args.pipeline_command == "coordlog":
        from conformance.pipeline.coordreport import run_coordlog

        return run_coordlog(args)
    try:
        from conformance.pipeline import jobs
        from conformance.pipeline.session import get_session
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"the pipeline needs the spark extra ({exc.name} missing): pip install -e '.[spark]'"
        ) from exc
    from conformance.protocols import parse_variants

    if args.pipeline_command == "jvm-archive":
        from conformance.pipeline import jvm_archive
        from conformance.pipeline.session import DRIVER_GC

        start = time.perf_counter()
        path = jvm_archive.build(DRIVER_GC)
        size = path.stat().st_size / 2**20
        print(f"jvm-archive: {path} ({size:.0f} MiB, {time.perf_counter() - start:.0f} s)")
        return EXIT_OK
    if args.pipeline_command == "swarm":
        variants = parse_variants(args.variant)
        spark = get_session(args.master, "groupcheck-swarm")
        s = jobs.swarm(
            spark, args.runs, args.out, seed=args.seed, protocol=args.protocol, variants=variants,
            steps=args.steps, overwrite=args.overwrite, coverage=args.coverage, shape=_shape(args.shape),
            mix=args.mix_variants,
        )  # fmt: skip
        print(f"swarm: {s.runs} runs, {s.rows} rows in {s.seconds:.1f} s -> {s.out}")
        return EXIT_OK
    if args.pipeline_command == "metrics":
        from conformance.pipeline.report import write_metrics_report

        mout = args.out or Path("reports") / "pipeline" / Path(str(args.path).rstrip("/")).name
        graph = None
        if args.graph is not None:
            from conformance.engine.explore import load_graph

            graph = load_graph(args.graph)
        results, explore = jobs.metrics(
            get_session(args.master, "groupcheck-metrics"), args.path, mout, graph
        )
        summary = write_metrics_report(results, args.path, mout, explore)
        for row in results.get("coverage", []):
            print(
                f"coverage ({row['protocol']}, coarse states): {row['states']} states, {row['transitions']} transitions"
            )
        for row in results.get("abstract", []):
            print(
                f"coverage ({row['protocol']}, abstract states): {row['states']} states, {row['transitions']} transitions"
            )
        if explore is not None:
            print(explore.summary())
        print(f"metrics of {args.path}: {summary}")
        return EXIT_OK
    out = args.out or Path(str(args.path).rstrip("/") + "-audit")
    spark = get_session(args.master, "groupcheck-audit")
    from conformance.pipeline.windows import DEFAULT_OWNERLESS_BOUND_MS

    bound = args.ownerless_bound_ms if args.ownerless_bound_ms is not None else DEFAULT_OWNERLESS_BOUND_MS
    summary = jobs.audit(spark, args.path, out, bound_ms=bound, max_counterexamples=args.max_counterexamples)
    write_audit_report(summary, out)
    print(
        f"audit {summary.lake}: {summary.verdict} ({summary.traces} traces, {summary.steps} steps, "
        f"{summary.quarantined} quarantined, {summary.seconds:.1f} s)"
    )
    for inv, n in summary.violating_traces.items():
        print(f"  {inv}: {n} trace(s)")
    for reason, n in sorted(summary.quarantine_reasons.items()):
        print(f"  quarantined ({reason}): {n} row(s)")
    if summary.gaps:
        print(
            f"  truncated traces: {summary.gaps} gap(s) in step numbers (windows of those traces not judged)"
        )
    for note in summary.unreadable:
        print(f"  left out (not read): {note}")
    if summary.vacuous:
        print(f"  never exercised: {', '.join(summary.vacuous)}")
    if summary.counterexamples:
        print(f"counterexamples: {out / 'counterexamples'} ({len(summary.counterexamples)} files)")
        print("Reproduce with:")
        print(f"  groupcheck replay {summary.counterexamples[0]} --target model")
        print(f"  groupcheck show {summary.counterexamples[0]} --format text")
    for note in summary.unwritten:
        print(f"  no counterexample file for {note}")
    print(f"report: {out / 'summary.md'}")
    if summary.verdict == "FAILED":
        return EXIT_VIOLATION
    return EXIT_INCONCLUSIVE if summary.verdict == "INCONCLUSIVE" else EXIT_OK


def write_audit_report(summary: Any, out: Path) -> None:
    results = {
        "lake": summary.lake,
        "verdict": summary.verdict,
        "traces": summary.traces,
        "steps": summary.steps,
        "quarantined": summary.quarantined,
        "quarantine_reasons": summary.quarantine_reasons,
        "gaps": summary.gaps,
        "unreadable": summary.unreadable,
        "violating_traces": summary.violating_traces,
        "sometimes": summary.sometimes,
        "ownerless_bound_ms": summary.bound_ms,
        "counterexamples": [Path(p).name for p in summary.counterexamples],
    }
    (out / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    lines = [
        f"# Pipeline audit: {summary.verdict}",
        "",
        f"Lake `{summary.lake}`: {summary.traces} traces, {summary.steps} steps audited, "
        f"{summary.quarantined} rows quarantined (`quarantine.parquet`).",
        "",
        "| invariant | violating traces |",
        "|---|---|",
    ]
    lines += [f"| `{k}` | {v} |" for k, v in summary.violating_traces.items()] or ["| (none) | 0 |"]
    if summary.quarantine_reasons:
        lines += ["", "| quarantine reason | rows |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in sorted(summary.quarantine_reasons.items())]
    if summary.gaps:
        lines += [
            "",
            f"{summary.gaps} gap(s) in step numbers (truncated traces; their windows are not judged).",
        ]
    if summary.unreadable:
        lines += ["", "Files left out (not Parquet):", ""] + [f"- `{note}`" for note in summary.unreadable]
    lines += ["", "| sometimes | steps where it happened |", "|---|---|"]
    lines += [f"| `{k}` | {v} |" for k, v in summary.sometimes.items()]
    if summary.counterexamples:
        lines += [
            "",
            "Counterexamples (project traces: `groupcheck replay FILE`, `groupcheck show FILE`):",
            "",
        ]
        lines += [f"- `counterexamples/{Path(p).name}`" for p in summary.counterexamples]
    (out / "summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _shape(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        members, partitions = (int(x) for x in text.split(","))
    except ValueError:
        raise UsageError(f"--shape {text!r}: expected M,P (members, partitions)") from None
    if not (1 <= members <= 8 and 1 <= partitions <= 64):
        raise UsageError(f"--shape {text!r}: members 1..8, partitions 1..64")
    return members, partitions
