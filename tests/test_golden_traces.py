"""Golden traces: fixed seeded runs on the in-process targets must keep writing the same bytes.

A guard for refactoring (files moved, code deduplicated): each case below is one `groupcheck`
command line, run in a scratch directory as a subprocess; its exit code, its standard output and
the NDJSON trace it writes must equal the files under ``tests/golden/`` byte for byte. The only
thing masked is the wall-clock duration `check` prints ("seed 0, 4.9 s)").

Per protocol, two cases:

* ``<protocol>-mutant``: `groupcheck check` against a mutant, seeded; the run fails and writes the
  Hypothesis-shrunk counterexample (generation, shrinking, the mutant and the model, trace writing).
* ``<protocol>-model``: `groupcheck replay` of a reference-model trace on ``--target model``. The
  trace is the mutant's ops replayed on the reference model; replaying it must be exact (every
  event and response as recorded) and must write the same trace again. `check` on the model
  writes no trace when it passes, so this is how the model's own answers are pinned.

Re-record (only after a change that is meant, e.g. a Hypothesis upgrade; review the diff first):

    .venv/bin/python -m tests.test_golden_traces --record

The test itself never records.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"
TIMEOUT_S = 300  # one case; the slowest takes about 10 s on a loaded 2-core machine


# ---------------------------------------------------------------------------------------------------
# The coupling to the code layout: how the CLI is started, and (record only) one Python API call.
def groupcheck(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the `groupcheck` console script next to this interpreter (``-m conformance.cli.main`` without it)."""
    script = Path(sys.executable).with_name("groupcheck")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "conformance.cli.main"]
    return subprocess.run(
        [*command, *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


def reference_replay(mutant_trace: Path, out: Path) -> None:
    """Record only: ``mutant_trace``'s ops on the reference model (its mutant variant dropped),
    written as a trace. The CLI cannot drop a variant a trace header names, so this uses the API
    that tests/test_regressions.py uses for the same purpose."""
    from conformance.formats.trace_file import read_trace, write_trace
    from conformance.protocols.classic import trace as classic
    from conformance.protocols.consumer import trace as consumer
    from conformance.protocols.mixed import trace as mixed
    from conformance.trace.replay import replay

    trace = read_trace(mutant_trace)
    result = replay(trace, variants={"mixed_mutant" if trace.protocol == "mixed" else "mutant": None})
    assert result.error is None and result.sim is not None, result.error
    to_trace = {"consumer": consumer.to_trace, "mixed": mixed.to_trace}.get(trace.protocol, classic.to_trace)
    write_trace(
        to_trace(
            result.sim,
            target="model",
            target_version=trace.header["groupcheck"],
            origin={"kind": "replay", "of": trace.fingerprint()},
            violations=[(v.invariant, v.message, v.step) for v in result.violations],
        ),
        out,
    )


# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[str, ...]
    #: a golden trace copied to ``input.ndjson`` in the scratch directory before the run
    input: str | None = None


def _mutant_check(protocol: str, target: tuple[str, ...], examples: int) -> tuple[str, ...]:
    # --no-minimise: the Hypothesis-shrunk trace as recorded; ddmin and polish have tests of their own
    return ("check", *target, "--protocol", protocol, "--profile", "ci", "--seed", "0",
            "--max-examples", str(examples), "--report-dir", "out", "--no-minimise")  # fmt: skip


MODEL_REPLAY = ("replay", "input.ndjson", "--target", "model", "--output", "out")
MUTANT_CASES = (
    Case("classic-mutant", _mutant_check("classic", ("--target", "mutant:timer-off-by-one"), 150)),
    Case("consumer-mutant", _mutant_check("consumer", ("--target", "mutant:kfake-d2"), 150)),
    Case(
        "mixed-mutant",
        _mutant_check(
            "mixed", ("--target", "model", "--variant", "mixed_mutant=empty-replacement-honours-policy"), 40
        ),
    ),
)
MODEL_CASES = tuple(
    Case(c.name.replace("-mutant", "-model"), MODEL_REPLAY, c.name.replace("-mutant", "-model") + ".ndjson")
    for c in MUTANT_CASES
)
CASES = MUTANT_CASES + MODEL_CASES

#: the one wall-clock field: `check`'s "(150 examples, seed 0, 4.9 s)"
SECONDS = re.compile(r"(, seed -?\d+, )\d+\.\d s\)")


@dataclass(frozen=True)
class Outcome:
    text: str  # the command, its exit code and its standard output
    trace_name: str
    trace: bytes
    stderr: str
    path: Path | None = None  # where the trace was written (in the scratch directory)


def run_case(case: Case, scratch: Path, golden: Path = GOLDEN) -> Outcome:
    scratch.mkdir(parents=True)
    if case.input is not None:
        shutil.copyfile(golden / case.input, scratch / "input.ndjson")
    done = groupcheck(list(case.args), scratch)
    stdout = SECONDS.sub(r"\1<seconds> s)", done.stdout)
    text = f"$ groupcheck {' '.join(case.args)}\nexit code: {done.returncode}\n{stdout}"
    traces = sorted((scratch / "out").rglob("*.ndjson"))
    if len(traces) != 1:
        return Outcome(text, f"{len(traces)} traces written", b"", done.stderr)
    return Outcome(text, traces[0].name, traces[0].read_bytes(), done.stderr, traces[0])


# ---------------------------------------------------------------------------------------------------
def _trace_difference(expected: bytes, actual: bytes) -> str:
    """The first differing NDJSON line, as a diff of its fields (whole lines are too long to read)."""
    old, new = expected.decode().splitlines(), actual.decode().splitlines()
    for n, (a, b) in enumerate(zip(old, new, strict=False), 1):
        if a != b:
            try:
                pretty = [json.dumps(json.loads(x), indent=1, sort_keys=True).splitlines() for x in (a, b)]
            except ValueError:
                pretty = [[a], [b]]
            diff = list(difflib.unified_diff(*pretty, "golden", "now", n=2, lineterm=""))
            more = f"\n... {len(diff) - 80} more diff lines" if len(diff) > 80 else ""
            return f"first difference at line {n}:\n" + "\n".join(diff[:80]) + more
    return f"{len(old)} lines in the golden trace, {len(new)} now (the shorter is a prefix of the longer)"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_golden_trace(case: Case, tmp_path: Path) -> None:
    text_file, trace_file = GOLDEN / f"{case.name}.txt", GOLDEN / f"{case.name}.ndjson"
    assert text_file.exists() and trace_file.exists(), (
        f"no golden for {case.name}: python -m tests.test_golden_traces --record"
    )
    got = run_case(case, tmp_path / "run")
    expected_text = text_file.read_text()
    if got.text != expected_text:
        diff = difflib.unified_diff(
            expected_text.splitlines(), got.text.splitlines(), "golden", "now", lineterm=""
        )
        pytest.fail(
            f"{case.name}: output differs from {text_file}\n" + "\n".join(diff) + f"\n{got.stderr}",
            pytrace=False,
        )
    if got.trace != trace_file.read_bytes():
        pytest.fail(
            f"{case.name}: trace {got.trace_name} differs from {trace_file}\n"
            + _trace_difference(trace_file.read_bytes(), got.trace),
            pytrace=False,
        )


# ---------------------------------------------------------------------------------------------------
def record(golden: Path = GOLDEN) -> None:
    """Run every case and write its golden files; a model case's trace must replay to itself."""
    golden.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        scratch = Path(tmp)
        for mutant, model in zip(MUTANT_CASES, MODEL_CASES, strict=True):
            got = run_case(mutant, scratch / mutant.name, golden)
            _write(golden, mutant, got)
            assert model.input is not None and got.path is not None
            first = scratch / f"{model.name}.ndjson"
            reference_replay(got.path, first)
            shutil.copyfile(first, golden / model.input)
            once = run_case(model, scratch / f"{model.name}-1", golden)  # origin: replay of the ops
            (golden / model.input).write_bytes(once.trace)
            again = run_case(model, scratch / f"{model.name}-2", golden)
            if again.trace != once.trace:
                raise SystemExit(f"{model.name}: the replayed trace does not replay to itself")
            _write(golden, model, again)


def _write(golden: Path, case: Case, got: Outcome) -> None:
    if not got.trace:
        raise SystemExit(f"{case.name}: {got.trace_name}\n{got.text}\n{got.stderr}")
    (golden / f"{case.name}.txt").write_text(got.text)
    (golden / f"{case.name}.ndjson").write_bytes(got.trace)
    print(f"{case.name}: {got.trace_name} ({len(got.trace)} bytes)")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        raise SystemExit("usage: python -m tests.test_golden_traces --record")
    record()
