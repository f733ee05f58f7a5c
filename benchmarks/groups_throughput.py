"""Operations per second with ``--groups 1`` and ``--groups N`` on one Apache Kafka, and false alarms at N.

Starts one apache-kafka broker, then on it, in one process:

1. the anchor: ``--keep-going --groups 1`` (one group, the plain run), PROTOCOL, rounds of
   EXAMPLES examples (the first on the seed, the next on derived seeds as a top-up round is) until
   SECONDS are spent: no example starts after that;
2. ``--keep-going --groups N`` with the same per-group settings, measured the same way;
3. RUNS more runs at ``--groups N`` on seeds 1..RUNS, FA_EXAMPLES per group (the false-alarm count: Apache Kafka 4.4.0 is
   the reference, so every protocol-level divergence reported against it is a false alarm of the
   suite; each one's trace is kept under ``--keep DIR``).

An operation is one request the target answered (the oracle's round trips); a run's operations per
second are its answers over its wall time, which is its slowest group's. Why a time budget: the
examples of a seed differ in length (at 12 examples a group, 55 to 536 answers and 26 to 133 s
over the 32 groups), so with a fixed number of examples the slowest group's seed, not the
throughput, set the ratio; with the budget every group runs for the same time plus the rest of its
last example. Rounds of EXAMPLES keep Hypothesis drawing as a run of EXAMPLES examples does: with a
large ``max_examples`` it first runs the simplest extensions of prefixes it has seen
(``small_test_case_cap`` in hypothesis/internal/conjecture/engine.py), whose replayed prefixes a
real target answers otherwise, restarting rounds. SECONDS 0: EXAMPLES examples a group (and a
top-up round if a `sometimes` goal is unmet), as before. Prints one line per run (with the groups'
spread) and a Markdown table.

Usage: python benchmarks/groups_throughput.py [--groups 32] [--runs 20] [--protocol classic]
       [--examples 12] [--seconds 240] [--fa-examples 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from conformance.cli.keep_going import KeepGoing, run_on_target
from conformance.engine.profiles import real_profile
from conformance.formats.trace_file import write_trace
from conformance.protocols import get_kit
from conformance.targets.open import open_target


def one(
    handle: Any, protocol: str, examples: int, seed: int, groups: int, seconds: float
) -> tuple[Any, int, float]:
    """One run: (its merged result, answers, wall seconds). With ``seconds``, no group starts an
    example after that many seconds from the run's start (`MachineSettings.stop_at`)."""
    t0 = time.monotonic()
    cpu0 = _cpu()
    run_kw = dict(
        target=handle.name, target_version=handle.version, max_examples=examples, seed_value=seed,
        variants={}, level="protocol", stop_at=t0 + seconds if seconds else None,
    )  # fmt: skip
    result, _rtt, ops = run_on_target(
        handle, get_kit(protocol), real_profile("ci"), run_kw, KeepGoing(True, 0, groups)
    )
    wall = time.monotonic() - t0
    cpu = [b - a for a, b in zip(cpu0, _cpu(), strict=True)]
    print(
        f"    cpu: this process and its groups {cpu[0]:.1f} s ({1000 * cpu[0] / max(ops, 1):.1f} ms an answer), "
        f"the machine busy {cpu[1] / wall:.2f} of {os.cpu_count()} cores",
        flush=True,
    )
    return result, ops, wall


def _cpu() -> tuple[float, float]:
    """(CPU seconds of this process and its ended children, busy CPU seconds of the whole machine
    from /proc/stat: every process, other users' included)."""
    t = os.times()
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        ticks = [int(x) for x in fields]
        busy = (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        busy = 0.0
    return t.user + t.system + t.children_user + t.children_system, busy


def spread(result: Any) -> str:
    """The groups' own run lengths: the run's wall time is the slowest group's."""
    if len(result.group_runs) < 2:
        return ""
    first = result.group_runs[0]
    runs = sorted(result.group_runs)
    secs = [s for s, *_ in runs]
    answers = [a for _, a, *_ in runs]
    return (
        f"    group seconds min {secs[0]:.1f} median {statistics.median(secs):.1f} max {secs[-1]:.1f}; "
        f"answers min {min(answers)} median {statistics.median(answers):.0f} max {max(answers)}; "
        f"top-up rounds {sum(t for *_, t, _ in runs)}, restarts {sum(r for *_, r in runs)}; "
        f"group 0 (the anchor's seed) {first[1]} answers in {first[0]:.1f} s; "
        f"fewest answers: group {min(range(len(result.group_runs)), key=lambda g: result.group_runs[g][1])}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=32)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--protocol", default="classic")
    ap.add_argument(
        "--examples", type=int, default=400, help="most examples per group, anchor and throughput runs"
    )
    ap.add_argument(
        "--seconds", type=float, default=240.0,
        help="anchor and throughput runs: rounds until no example may start (0: one round)",
    )  # fmt: skip
    ap.add_argument("--fa-examples", type=int, default=3, help="examples per group, false-alarm runs")
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    rows = []
    false_alarms = 0
    with open_target("apache-kafka") as handle:
        plan = [(1, 0, "anchor")] + [(args.groups, 0, "throughput")]
        plan += [(args.groups, seed, "false alarms") for seed in range(1, args.runs + 1)]
        for groups, seed, what in plan:
            fa = what == "false alarms"
            examples = args.fa_examples if fa else args.examples
            r, ops, wall = one(handle, args.protocol, examples, seed, groups, 0.0 if fa else args.seconds)
            ops_s = ops / wall
            found = len(r.divergences)
            if what == "false alarms":
                false_alarms += found
            for k, d in enumerate(r.divergences):
                print(f"    divergence: {d.signature} (group {d.first.group}, example {d.first.example})")
                if args.keep and d.trace is not None:
                    write_trace(d.trace, args.keep / f"groups{groups}-seed{seed}-{k}.ndjson")
            if r.error:
                print("    error:", r.error)
            line = (
                f"{what:13s} groups {groups:3d} seed {seed:3d}: {ops:5d} answers in {wall:6.1f} s = "
                f"{ops_s:7.1f} ops/s, {found} divergence(s){' ERROR ' + r.error if r.error else ''}"
            )
            print(line, flush=True)
            if spread(r):
                print(spread(r), flush=True)
            rows.append((what, groups, seed, ops, wall, ops_s, found))
    print()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}; "
          f"load {os.getloadavg()[0]:.1f}; git {_commit()}")  # fmt: skip
    print("| run | groups | seed | answers | wall s | ops/s | divergences |")
    print("|---|---|---|---|---|---|---|")
    for what, groups, seed, ops, wall, ops_s, found in rows:
        print(f"| {what} | {groups} | {seed} | {ops} | {wall:.1f} | {ops_s:.1f} | {found} |")
    anchor = max(rows[0][5], 1e-9)
    print(
        f"\nspeed-up at {args.groups} groups: {rows[1][5] / anchor:.1f}x over the anchor ({anchor:.1f} ops/s)"
    )
    print(f"false alarms over {args.runs} runs at {args.groups} groups: {false_alarms}")


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
