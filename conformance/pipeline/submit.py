"""Entry point for `spark-submit` (a cluster run): `spark-submit ... submit.py swarm|audit ARGS`.

Same as `groupcheck pipeline ARGS`; the master comes from spark-submit's `--master`.
"""

from __future__ import annotations

import sys

from conformance.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["pipeline", *sys.argv[1:]]))
