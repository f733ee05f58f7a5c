"""`python -m conformance.trace.minimise IN.ndjson OUT_DIR [--invariant ID]`: a trace minimised.

Delta debugging over the recorded ops (`conformance.engine.minimise`), through the trace's kit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance.engine.minimise import minimise
from conformance.formats.trace_file import counterexample_path, read_trace, write_trace
from conformance.protocols import get_kit


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.trace.minimise")
    p.add_argument("file", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--invariant")
    args = p.parse_args(argv)
    trace = read_trace(args.file)
    small = minimise(trace, args.invariant, get_kit(trace.protocol))
    path = write_trace(small, counterexample_path(small, args.out))
    print(f"{args.file}: {len(read_trace(args.file).steps)} steps -> {path}: {len(small.steps)} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
