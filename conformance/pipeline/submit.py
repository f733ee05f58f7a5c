"""Entry point for `spark-submit` (a cluster run): `spark-submit ... submit.py swarm|audit ARGS`.

Same as `groupcheck pipeline ARGS` for the Spark commands; the master comes from spark-submit's
`--master`. (`pipeline replay` is `groupcheck replay`, which needs no cluster.)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from conformance.errors import EXIT_TOOL, ToolError, UsageError
from conformance.pipeline.cli import add_parser, run


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"usage: {message}")


def main(argv: Sequence[str]) -> int:
    parser = _Parser(prog="submit.py")
    add_parser(parser.add_subparsers(dest="command", required=True, parser_class=_Parser))
    try:
        args = parser.parse_args(["pipeline", *argv])
        if args.pipeline_command == "replay":
            raise UsageError("pipeline replay: run `groupcheck replay FILE` (no cluster needed)")
        return run(args)
    except ToolError as exc:
        print(f"groupcheck: error: {exc}", file=sys.stderr)
        return EXIT_TOOL


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
