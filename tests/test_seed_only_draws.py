"""The same seed draws the same run whichever modules the process has loaded.

Hypothesis 6.x mixes constants collected from loaded local modules into its draws
(conformance/engine/draws.py); a seeded model check changed its verdict once a benchmark module had
been imported beside it. The engine switches that off.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import conformance.protocols  # noqa: F401 - installs the protocol kits
from conformance.engine.draws import seed_only_draws
from conformance.engine.profiles import PROFILES
from conformance.engine.run import run_check

ROOT = Path(__file__).resolve().parents[1]


def _fingerprint() -> tuple[Any, ...]:
    res = run_check("mixed", profile=PROFILES["dev"], max_examples=40, seed_value=0)
    return res.verdict, sorted(res.sometimes.items()), res.vacuous


def test_a_loaded_module_does_not_change_a_seeded_run() -> None:
    first = _fingerprint()
    spec = importlib.util.spec_from_file_location("explore_vs_tlc", ROOT / "benchmarks" / "explore_vs_tlc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["explore_vs_tlc"] = module  # a local module full of constants, loaded mid-process
    try:
        spec.loader.exec_module(module)
        assert _fingerprint() == first
    finally:
        sys.modules.pop("explore_vs_tlc", None)


def test_switching_off_is_idempotent() -> None:
    assert seed_only_draws() is seed_only_draws()
