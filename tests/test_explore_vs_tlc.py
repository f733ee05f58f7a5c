"""The pure parts of benchmarks/explore_vs_tlc.py: TLC's configuration and the parsing of TLC's and
explore's output (no TLC run here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("explore_vs_tlc", ROOT / "benchmarks" / "explore_vs_tlc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["explore_vs_tlc"] = module  # its dataclasses resolve their module while created
    try:
        spec.loader.exec_module(module)
    finally:  # leave sys.modules as it was
        sys.modules.pop("explore_vs_tlc", None)
    return module


bench = _load()

STOPPED = """TLC2 Version 2.15 of Day Month 20?? (rev: d5b5a7f)
Starting... (2026-11-27 04:02:57)
Progress(10) at 2026-11-27 04:03:01: 5,050 states generated (5,050 s/min), 2,849 distinct states found (2,849 ds/min), 1,566 states left on queue.
Model checking completed. No error has been found.
28090 states generated, 14964 distinct states found, 6981 states left on queue.
The depth of the complete state graph search is 12.
Finished in 10s at (2026-11-27 04:03:05)
"""

COMPLETE = """Model checking completed. No error has been found.
708 states generated, 388 distinct states found, 0 states left on queue.
The depth of the complete state graph search is 20.
"""

KILLED = """Progress(7) at 2026-11-27 04:03:01: 1,000 states generated (1,000 s/min), 600 distinct states found (600 ds/min), 90 states left on queue.
Progress(9) at 2026-11-27 04:04:01: 3,000 states generated (2,000 s/min), 1,700 distinct states found (1,100 ds/min), 300 states left on queue.
(timeout)
"""

VIOLATED = """Error: Invariant NoDoubleClientAssignment is violated.
Error: The behavior up to this point is:
State 1: <Initial predicate>
Error: Invariant ValidMemberEpoch is violated.
Error: Invariant NoDoubleClientAssignment is violated.
40 states generated, 30 distinct states found, 0 states left on queue.
The depth of the complete state graph search is 6.
"""


def test_config_names_the_bound_and_the_invariants() -> None:
    cfg = bench.tlc_config(2, 3, 1, symmetry=False)
    assert "Clients = {c1, c2}" in cfg
    assert "TopicCount = 1" in cfg and "PartitionsPerTopic = 3" in cfg
    assert "MaxPerturbations = 1" in cfg
    assert "SPECIFICATION Spec" in cfg
    assert "INVARIANT TypeOK LegalTargetAssignment NoDoubleClientAssignment" in cfg
    assert "SYMMETRY" not in cfg
    assert "  Nil = Nil" in cfg and "  HeartbeatResponseMsg = HeartbeatResponseMsg" in cfg


def test_config_with_symmetry() -> None:
    cfg = bench.tlc_config(2, 1, 2, symmetry=True)
    assert cfg.rstrip().endswith("SYMMETRY symmClients")
    assert "MaxPerturbations = 2" in cfg and "VIEW" not in cfg
    assert bench.tlc_config(2, 1, 1, symmetry=False, view=True).rstrip().endswith("VIEW view")


@pytest.mark.parametrize("bad", [(0, 1, 1), (2, 0, 1), (10, 1, 1), (2, 1, -1)])
def test_config_rejects_out_of_range_bounds(bad: tuple[int, int, int]) -> None:
    with pytest.raises(bench.ToolError):
        bench.tlc_config(*bad, symmetry=False)


def test_a_stopped_search_is_not_finished_although_tlc_says_completed() -> None:
    o = bench.parse_tlc(STOPPED)
    assert (o.distinct, o.depth, o.left, o.finished, o.violated) == (14964, 12, 6981, False, ())


def test_an_emptied_queue_is_finished() -> None:
    o = bench.parse_tlc(COMPLETE)
    assert (o.distinct, o.depth, o.left, o.finished) == (388, 20, 0, True)


def test_a_killed_run_reports_its_last_progress_line() -> None:
    o = bench.parse_tlc(KILLED)
    assert (o.distinct, o.depth, o.left, o.finished) == (1700, 9, 300, False)


def test_violated_invariants_are_listed_once_in_order() -> None:
    o = bench.parse_tlc(VIOLATED)
    assert o.violated == ("NoDoubleClientAssignment", "ValidMemberEpoch")
    assert o.finished and o.error == ""


def test_a_crash_or_deadlock_is_an_error_and_not_finished() -> None:
    crash = "Error: TLC threw an unexpected exception.\n0 states generated, 0 distinct states found, 0 states left on queue.\n"
    assert bench.parse_tlc(crash).error == "error" and not bench.parse_tlc(crash).finished
    assert bench.parse_tlc("Error: Deadlock reached.\n").error == "deadlock"
    assert bench.parse_tlc("garbage").distinct is None


def test_explore_summary_parsing() -> None:
    done = "  largest bound finished: complete after 10 levels (no new states)\n  32 distinct abstract states, 80 transitions, 0.1 s (442 states/s)\n"
    o = bench.parse_explore(done)
    assert (o.distinct, o.depth, o.finished) == (32, 10, True)
    cut = (
        "  largest bound finished: depth 11 of 1000 (time budget 20 s reached)\n"
        "  1515 distinct abstract states, 4000 transitions, 20.0 s (75 states/s)\n"
        "  violations (BFS-shortest, in ops): 1\n"
        "  - consumer.single_partition_holder: BFS-minimal length 5 ops: two holders\n"
    )
    o = bench.parse_explore(cut)
    assert (o.distinct, o.depth, o.finished, o.violated) == (
        1515,
        11,
        False,
        ("consumer.single_partition_holder",),
    )
    assert bench.parse_explore("Traceback").error == "no summary"


def test_bounds_and_inputs(tmp_path: Path) -> None:
    assert bench.parse_bound(" 2x1") == (2, 1)
    with pytest.raises(bench.ToolError):
        bench.parse_bound("2by1")
    with pytest.raises(bench.ToolError, match="groupprotocol"):
        bench.spec_files(tmp_path)
    (tmp_path / "groupprotocol").mkdir()
    for f in bench.SPEC_FILES:
        (tmp_path / "groupprotocol" / f).write_text("x")
    assert bench.spec_files(tmp_path) == tmp_path / "groupprotocol"
    with pytest.raises(bench.ToolError, match="FiniteSetsExt.tla"):
        bench.community_dir(tmp_path)
    with pytest.raises(bench.ToolError, match="no tla2tools.jar"):
        bench.jar_in(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "tla2tools.jar").write_bytes(b"PK")
    assert bench.jar_in(tmp_path / "pkg").name == "tla2tools.jar"


def test_markdown_row_rate_is_states_per_cpu_second() -> None:
    r = bench.Run("TLC", "2 x 1", "none", 2000, 9, False, (), 4.0, 10.0, (1.0, 2.0))
    row = bench.markdown_row(r)
    assert "| 2,000 | 9 | no | 4.0 | 10 | 500 | none | 1.0 / 2.0 |" in row
    assert bench.Run("x", "1 x 1", "-", None, None, False, (), 1.0, 1.0, (0, 0)).rate() == "-"


def test_the_explorer_gets_the_perturbing_ops_and_their_budget(tmp_path: Path) -> None:
    plain = bench.explore_command(tmp_path, (2, 1), 600)
    assert "--ops" not in plain and plain[plain.index("--members") + 1] == "2"
    wide = bench.explore_command(tmp_path, (2, 1), 600, "leave,restart,subscribe,lose_response", 1)
    assert wide[-4:] == ["--ops", "leave,restart,subscribe,lose_response", "--perturbations", "1"]
