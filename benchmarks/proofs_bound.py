"""Benchmark: z3 proof time versus bound (members x partitions), per invariant (docs/proofs.md).

For every z3-encoded invariant and every bound of the sweep, runs the whole proof (base case and
the inductive step of every rule, correct rules) and records the verdict and the wall time. An
invariant stops growing once a bound is not CONFIRMED within the per-call limits (that bound is where
it stops). Writes `benchmarks/results/proofs_bound.md`.

    .venv/bin/python benchmarks/proofs_bound.py [--timeout S] [--out FILE] [--max M]

With ``--section TITLE`` only the ``--only`` invariants and the ``--anchor`` ones (existing proofs
measured again in the same run, so the section's times can be compared with the main table) are
run, and the file keeps everything else: the section ``## TITLE`` is added or replaced.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import z3

from conformance.smt.prove import encoded_invariants, run_prove
from conformance.smt.solver import DEFAULT_RLIMIT, Limits, Verdict

SWEEP = [(2, 4), (3, 6), (4, 8), (5, 10), (6, 12), (8, 16), (10, 20), (12, 24), (16, 32)]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per solver call")
    p.add_argument("--rlimit", type=int, default=DEFAULT_RLIMIT * 10)
    p.add_argument("--max", type=int, default=16, help="largest member count of the sweep")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/proofs_bound.md"))
    p.add_argument("--only", action="append", default=None, help="invariant id (repeatable)")
    p.add_argument(
        "--stop-after", type=float, default=None, help="stop growing an invariant after a bound this slow"
    )
    p.add_argument("--resume", action="store_true", help="keep the rows of --out for invariants not run now")
    p.add_argument("--section", default=None, help="write a section of --out with this title instead")
    p.add_argument(
        "--anchor", action="append", default=[], help="invariant re-measured as the anchor (repeatable)"
    )
    args = p.parse_args()
    if args.section and not args.only:
        p.error("--section needs --only")
    limits = Limits(0, args.timeout, args.rlimit)
    sweep = [b for b in SWEEP if b[0] <= args.max]
    rows: dict[str, dict[tuple[int, int], str]] = read_rows(args.out, sweep) if args.resume else {}
    if args.section:
        rows = {}
    for inv in [*args.anchor, *(args.only or encoded_invariants())]:
        rows[inv] = {}
        for m, n in sweep:
            start = time.perf_counter()
            run = run_prove([inv], {}, m, n, limits)
            seconds = time.perf_counter() - start
            verdict = run.verdict_of(inv)
            rows[inv][(m, n)] = (
                f"{seconds:.2f}" if verdict == Verdict.CONFIRMED else f"{verdict.value} ({seconds:.0f})"
            )
            print(f"{inv:42s} {m}x{n:<3d} {verdict.value:9s} {seconds:8.2f}s", flush=True)
            if verdict != Verdict.CONFIRMED:
                break
            if args.stop_after is not None and seconds > args.stop_after:
                break
        if args.section:
            write_section(args, sweep, rows)
        else:
            write(args, sweep, rows)  # after every invariant, so a cut-off run still leaves its results


def read_rows(path: Path, sweep: list[tuple[int, int]]) -> dict[str, dict[tuple[int, int], str]]:
    """Rows of an earlier results table (for --resume)."""
    out: dict[str, dict[tuple[int, int], str]] = {}
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[cells[0].strip("`")] = {b: c for b, c in zip(sweep, cells[1:], strict=False) if c}
    return out


def _machine(args: argparse.Namespace) -> str:
    return (
        f"Machine: {platform.machine()}, {os.cpu_count()} cores ({platform.processor() or 'unknown cpu'}), "
        f"{platform.system()} {platform.release()}; Python {platform.python_version()}; z3 {z3.get_version_string()};"
        f" rlimit {args.rlimit}, timeout {args.timeout:g} s per call, seed 0."
    )


def _table(sweep: list[tuple[int, int]], rows: dict[str, dict[tuple[int, int], str]]) -> list[str]:
    lines = [
        "| invariant | " + " | ".join(f"{m}x{n}" for m, n in sweep) + " |",
        "|---|" + "---|" * len(sweep),
    ]
    for inv, cells in sorted(rows.items()):
        lines.append(f"| `{inv}` | " + " | ".join(cells.get(b, "") for b in sweep) + " |")
    return lines


def write_section(
    args: argparse.Namespace, sweep: list[tuple[int, int]], rows: dict[str, dict[tuple[int, int], str]]
) -> None:
    """Add or replace ``## <section>`` in --out, leaving the rest of the file as it is."""
    command = f".venv/bin/python benchmarks/proofs_bound.py --timeout {args.timeout:g} --max {args.max}"
    command += "".join(f" --anchor {a}" for a in args.anchor) + "".join(f" --only {o}" for o in args.only)
    command += f" --section '{args.section}'" + (
        f" --stop-after {args.stop_after:g}" if args.stop_after else ""
    )
    anchors = ", ".join(f"`{a}`" for a in args.anchor) or "none"
    body = [
        f"## {args.section}",
        "",
        f"Command: `{command}`",
        f"{_machine(args)} Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; the machine was"
        " shared with other jobs, so times are indicative.",
        f"Anchor (an existing proof measured again in this run): {anchors}.",
        "",
        *_table(sweep, rows),
        "",
    ]
    text = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    head, sep, rest = text.partition(f"\n## {args.section}\n")
    tail = ""
    if sep:
        _, nxt, after = rest.partition("\n## ")
        tail = f"\n## {after}" if nxt else ""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(head.rstrip("\n") + "\n\n" + "\n".join(body) + tail, encoding="utf-8")
    print(f"wrote {args.section!r} into {args.out}")


def write(
    args: argparse.Namespace, sweep: list[tuple[int, int]], rows: dict[str, dict[tuple[int, int], str]]
) -> None:
    lines = [
        "# z3 proof time versus bound",
        "",
        "`benchmarks/proofs_bound.py`: whole proof (base case + inductive step of every rule, correct rules)",
        "per invariant and bound, wall-clock seconds; a cell that is not a number is where the invariant",
        "stopped (its verdict and time); empty cells were not run after that. The classic generation and",
        "sync rules do not depend on the partition count.",
        "",
        f"Command: `.venv/bin/python benchmarks/proofs_bound.py --timeout {args.timeout:g} --max {args.max}`"
        + (
            f" (KIP-848 rows: `--stop-after {args.stop_after:g} --resume --only ...`, growth stops after a bound that"
            f" took more than {args.stop_after:g} s)"
            if args.stop_after
            else ""
        ),
        f"{_machine(args)} The machine was shared with other jobs,",
        "so times are indicative.",
        "",
        *_table(sweep, rows),
    ]
    old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    _, sep, sections = old.partition("\n## ")  # sections written with --section are kept
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n" + (f"\n## {sections}" if sep else ""), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
