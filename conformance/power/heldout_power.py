"""Suite power on the held-out bug catalogue: run ``groupcheck check --target mutant:NAME --protocol P
--profile ci --seed S`` for every entry of ``specs/bugs-heldout.yaml``, one after the other, each in
its own process bounded by a wall-clock timeout, and record caught / not caught, the violated
invariants and the time to catch (reports/suite-power.md).

    python -m conformance.power.heldout_power --out reports/heldout/before.jsonl [--only NAME ...]

``--served`` runs each coordinator mutant as ``--target served-model:NAME`` instead: served over the
Kafka wire with the oracle beside it, as a broker team's coordinator is checked; a client mutant has
no coordinator to serve and gets the verdict ``CLIENT`` (not run, not caught). ``--infection`` runs
each in process with its coordinator probed (`conformance.power.infection`): the same verdict, and
whether the run ever executed the fault so that an answer or a record changed.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

SPEC = Path("specs") / "bugs-heldout.yaml"
MAX_BUGS = 200
#: the seed of each wave's split; a wave's entries are split among themselves, so a later wave
#: never moves an entry of an earlier one between the halves
WAVE_SEEDS = {1: 20261126, 2: 20261129, 3: 20261130}
VERDICT = re.compile(
    r"^(classic|consumer|mixed) on (?:mutant|served-model):\S+(?: .*?)?: (\w+)(?: at level \S+)? "
    r"\((\d+) examples, seed \d+, ([\d.]+) s\)"
)


@dataclass
class PowerRow:
    id: str
    mutant: str
    protocol: str
    half: str
    command: str
    verdict: str = "ERROR"  # FAILED (caught) | PASSED | INCONCLUSIVE | TIMEOUT | ERROR | CLIENT
    exit_code: int | None = None
    invariants: list[str] = field(default_factory=list)
    check_seconds: float | None = None  # the run's own clock (printed by groupcheck)
    wall_seconds: float = 0.0
    #: ``--infection``: outermost coordinator calls, infected ones, by entry (`InfectionLog`)
    infection: dict[str, Any] | None = None

    @property
    def caught(self) -> bool:
        return self.verdict == "FAILED" and self.exit_code == 1


def load_bugs(path: Path = SPEC) -> list[dict[str, Any]]:
    """The entries of the held-out catalogue (bounded; each must name its mutant, protocol, half)."""
    data = yaml.safe_load(path.read_text())
    bugs = data.get("bugs") if isinstance(data, dict) else None
    if not isinstance(bugs, list) or not 0 < len(bugs) <= MAX_BUGS:
        raise ValueError(f"{path}: 'bugs' must be a list of 1..{MAX_BUGS} entries")
    for i, bug in enumerate(bugs):
        for key in ("id", "mutant", "protocol", "half"):
            if not isinstance(bug, dict) or not isinstance(bug.get(key), str):
                raise ValueError(f"{path}: bugs[{i}].{key} missing or not a string")
        if bug.setdefault("wave", 1) not in WAVE_SEEDS:
            raise ValueError(f"{path}: bugs[{i}].wave must be one of {sorted(WAVE_SEEDS)}")
    return bugs


def split_halves(ids: list[str], seed: int) -> dict[str, str]:
    """The fixed split of one wave: ids sorted, shuffled by ``random.Random(seed)``, the first
    ``len(ids) // 2`` dev, the rest held-out."""
    order = sorted(ids)
    random.Random(seed).shuffle(order)
    dev = set(order[: len(order) // 2])
    return {i: "dev" if i in dev else "heldout" for i in order}


def expected_halves(bugs: list[dict[str, Any]]) -> dict[str, str]:
    """Every entry's half as its wave's split gives it."""
    out: dict[str, str] = {}
    for wave, seed in WAVE_SEEDS.items():
        out.update(split_halves([b["id"] for b in bugs if b["wave"] == wave], seed))
    return out


def command(
    mutant: str, protocol: str, seed: int, profile: str, served: bool = False, infection: bool = False
) -> list[str]:
    if infection:
        return ["python", "-m", "conformance.power.infection", "--mutant", mutant, "--protocol", protocol,
                "--profile", profile, "--seed", str(seed)]  # fmt: skip
    target = f"served-model:{mutant}" if served else f"mutant:{mutant}"
    return ["groupcheck", "check", "--target", target, "--protocol", protocol,
            "--profile", profile, "--seed", str(seed)]  # fmt: skip


def run_one(
    bug: dict[str, Any],
    *,
    seed: int,
    profile: str,
    timeout_s: float,
    served: bool = False,
    infection: bool = False,
) -> PowerRow:
    argv = command(bug["mutant"], bug["protocol"], seed, profile, served, infection)
    row = PowerRow(bug["id"], bug["mutant"], bug["protocol"], bug["half"], " ".join(argv))
    if served:
        from conformance.mutants import get_mutant

        if get_mutant(bug["mutant"]).coordinator is None:
            row.verdict = "CLIENT"
            return row
    exe = sys.executable if infection else str(Path(sys.executable).with_name("groupcheck"))
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [exe, *argv[1:]], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        row.verdict, row.wall_seconds = "TIMEOUT", time.perf_counter() - start
        return row
    row.wall_seconds = time.perf_counter() - start
    row.exit_code = done.returncode
    for line in done.stdout.splitlines():
        m = VERDICT.match(line)
        if m:
            row.verdict, row.check_seconds = m.group(2), float(m.group(4))
        elif line.startswith("violated: "):
            row.invariants = [s.strip() for s in line[len("violated: ") :].split(",")]
        elif line.startswith("infection: {"):
            seen = json.loads(line[len("infection: ") :])
            first, divergence = seen.pop("first", None), seen.pop("first_divergence", None)
            row.infection = {
                **seen,
                "first_entry": first["entry"] if first else None,
                "first_divergence_entry": divergence["entry"] if divergence else None,
            }
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="JSON lines, one row per mutant")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--profile", default="ci")
    p.add_argument("--timeout", type=float, default=300.0, help="wall-clock seconds per mutant")
    p.add_argument("--only", action="append", default=[], help="only this mutant (repeatable)")
    p.add_argument("--wave", type=int, choices=sorted(WAVE_SEEDS), help="only this wave's entries")
    p.add_argument(
        "--served",
        action="store_true",
        help="each coordinator mutant served over the wire, the oracle beside it",
    )
    p.add_argument("--half", choices=("dev", "heldout"), help="only this half's entries")
    p.add_argument(
        "--infection",
        action="store_true",
        help="in process with the coordinator probed: did the run ever execute the fault",
    )
    args = p.parse_args(argv)
    if args.infection and args.served:
        p.error("--infection runs in process; it cannot be combined with --served")
    bugs = [
        b
        for b in load_bugs()
        if (not args.only or b["mutant"] in args.only)
        and (args.wave is None or b["wave"] == args.wave)
        and (args.half is None or b["half"] == args.half)
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as out:
        for bug in bugs:
            row = run_one(
                bug,
                seed=args.seed,
                profile=args.profile,
                timeout_s=args.timeout,
                served=args.served,
                infection=args.infection,
            )
            out.write(json.dumps({**asdict(row), "caught": row.caught}, sort_keys=True) + "\n")
            out.flush()
            infected = (
                f" infected {row.infection['infected']}/{row.infection['calls']}" if row.infection else ""
            )
            print(f"{row.id} {row.mutant:20s} {row.protocol:8s} {row.verdict:12s} "
                  f"{','.join(row.invariants) or '-'} {row.wall_seconds:.1f} s{infected}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
