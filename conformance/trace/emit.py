"""Writing a failing run's counterexample and telling the user how to reproduce it (docs/traces.md)."""

from __future__ import annotations

import shlex
from pathlib import Path

from conformance.formats.trace_file import Trace, counterexample_path, write_trace


def default_run_dir(kind: str, target: str, protocol: str, seed: int | None = None) -> Path:
    """``reports/runs/<run>``: named by what ran, never by the clock (same run, same path)."""
    name = f"{kind}-{target}-{protocol}" + (f"-seed{seed}" if seed is not None else "")
    return Path("reports") / "runs" / name


def emit_counterexample(trace: Trace, run_dir: Path) -> Path:
    """Write ``<run_dir>/counterexamples/<id>_<fingerprint>.ndjson`` and print "Reproduce with:"."""
    path = write_trace(trace, counterexample_path(trace, run_dir / "counterexamples"))
    target = trace.header["target"]["name"]
    quoted = shlex.quote(str(path))
    print(f"counterexample: {path} ({len(trace.steps)} steps)")
    print("Reproduce with:")
    print(f"  groupcheck replay {quoted} --target {target}")
    print(f"  groupcheck show {quoted} --format text")
    return path
