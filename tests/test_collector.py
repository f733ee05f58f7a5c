"""`groupcheck` raises the cyclic collector's thresholds and never lowers them (conformance/engine/collector.py)."""

from __future__ import annotations

import gc

from conformance.cli.main import main
from conformance.engine import collector


def test_tune_raises_and_never_lowers() -> None:
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        collector.tune()
        assert gc.get_threshold() == collector.THRESHOLDS
        gc.set_threshold(10**6, 5, 100)
        collector.tune()
        assert gc.get_threshold() == (10**6, 20, 100)
    finally:
        gc.set_threshold(*saved)


def test_the_cli_tunes_before_it_runs_a_command(capsys) -> None:  # type: ignore[no-untyped-def]
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        assert main(["explain", "classic.max_size"]) == 0
        assert gc.get_threshold() == collector.THRESHOLDS
    finally:
        gc.set_threshold(*saved)
