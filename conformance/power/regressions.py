"""Regenerate the committed counterexample of a catalogue mutant (tests/regressions/).

    python -m conformance.power.regressions NAME [NAME ...] [--seed S] [--out tests/regressions]
    python -m conformance.power.regressions NAME ... --from-run reports/runs/mutants-seed0

For each mutant: the suite from scratch (or the counterexample a `groupcheck mutants` run left under
``--from-run``) (`conformance.power.matrix.run_mutant`, shrunk by
Hypothesis and then by ddmin), the trace written to ``--out``, and the ``regressions.yaml`` entry
printed (``fixed_by: {mutant: null}``: the same ops on the reference model are FIXED). The entry's
``source`` names the catalogue row and the command, so the trace can be regenerated.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

from conformance.engine.profiles import get_profile
from conformance.mutants import get_mutant
from conformance.power.matrix import run_mutant


def from_run(name: str, run_dir: Path, *, out: Path) -> dict[str, object]:
    """The counterexample `groupcheck mutants` wrote for ``name`` under ``run_dir``, copied to ``out``."""
    from conformance.formats.trace_file import read_trace

    mutant = get_mutant(name)
    found = sorted((run_dir / name).glob("*.ndjson"))
    if not found:
        raise SystemExit(f"{name}: no counterexample under {run_dir / name}")
    src = min(found, key=lambda p: (not any(p.name.startswith(i) for i in mutant.expect), p.name))
    trace = read_trace(src)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, out / src.name)
    invariant = next((i for i in trace.violated if i in mutant.expect), sorted(trace.violated)[0])
    origin = trace.header.get("origin", {})
    seed = origin.get("of", origin).get("seed", "?") if isinstance(origin.get("of", origin), dict) else "?"
    return _entry(name, src.name, invariant, seed, f"--from-run {run_dir}")


def _entry(name: str, file: str, invariant: str, seed: object, how: str) -> dict[str, object]:
    mutant = get_mutant(name)
    return {
        "file": file,
        "bug": mutant.source.split(": ", 1)[-1].split(" / ")[0],
        "source": f"{mutant.source}; found from scratch by the kill matrix "
        f"(groupcheck check --target mutant:{name} --seed {seed}), shrunk by Hypothesis then ddmin "
        f"(python -m conformance.power.regressions {name} {how})",
        "invariant": invariant,
        "fixed_by": {"mutant": None},
    }


def regenerate(name: str, *, seed: int, out: Path, budget_s: float = 120.0) -> dict[str, object]:
    mutant = get_mutant(name)
    with tempfile.TemporaryDirectory() as tmp:
        row = run_mutant(name, profile=get_profile("ci"), budget_s=budget_s, seed=seed, run_dir=Path(tmp))
        if not row.caught or row.trace_path is None:
            raise SystemExit(f"{name}: not caught from scratch with seed {seed} in {budget_s:g} s")
        src = Path(row.trace_path)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, out / src.name)
    invariant = next((i for i in row.invariants if i in mutant.expect), row.invariants[0])
    return _entry(name, src.name, invariant, seed + row.seeds - 1, f"--seed {seed}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.power.regressions")
    p.add_argument("names", nargs="+")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("tests") / "regressions")
    p.add_argument("--from-run", type=Path, help="take the counterexamples of a `groupcheck mutants` run")
    args = p.parse_args(argv)
    if args.from_run is not None:
        entries = [from_run(n, args.from_run, out=args.out) for n in args.names]
    else:
        entries = [regenerate(n, seed=args.seed, out=args.out) for n in args.names]
    print(yaml.safe_dump(entries, sort_keys=False, width=200))
    return 0


if __name__ == "__main__":
    sys.exit(main())
