"""`groupcheck compare`, `design replay|show|scenarios` and `check --design`: outputs and exit codes."""

from __future__ import annotations

from pathlib import Path

from conformance.cli.main import main
from conformance.designs.command import split_labels


def test_compare_writes_the_table_the_figures_and_replayable_traces(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "review.md"
    code = main(
        [
            "compare",
            "--designs",
            "broker-coordinator,compressed",
            "--members",
            "5",
            "50",
            "--topics",
            "1",
            "10",
            "--workloads",
            "1",
            "--no-liveness",
            "--no-scenarios",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    text = out.read_text()
    assert (
        "| `broker-coordinator` |" in text
        and "**violated** ([trace](review/traces/broker-coordinator--single_owner.ndjson))" in text
    )
    assert "| `compressed` |" in text and "n/a" in text
    assert (tmp_path / "review" / "bytes-per-rebalance.png").stat().st_size > 1000
    trace = tmp_path / "review" / "traces" / "broker-coordinator--single_owner.ndjson"
    assert main(["design", "replay", str(trace)]) == 1
    assert main(["design", "replay", str(trace), "--design", "shipped"]) == 0
    assert main(["design", "show", str(trace)]) == 0
    assert "VIOLATED design.single_owner" in capsys.readouterr().out


def test_check_design(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert (
        main(["check", "--design", "kip1082-server-id", "--max-examples", "1", "--report-dir", str(tmp_path)])
        == 1
    )
    assert "design.leave_accepted" in capsys.readouterr().out
    assert (
        main(["check", "--design", "shipped-kip848", "--max-examples", "1", "--report-dir", str(tmp_path)])
        == 0
    )


def test_bad_input_exits_2(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["compare", "--designs", "nowhere", "--out", str(tmp_path / "r.md")]) == 2
    assert main(["check", "--design", "compressed"]) == 2
    bad = tmp_path / "t.ndjson"
    bad.write_text("{not json\n")
    assert main(["design", "replay", str(bad)]) == 2
    assert "t.ndjson:1" in capsys.readouterr().err
    assert main(["design", "scenarios", "--id", "nope"]) == 2


def test_design_labels_keep_their_options() -> None:
    assert split_labels("a,b:x=1,y=2,c") == ["a", "b:x=1,y=2", "c"]
    assert split_labels("a:x=1;b") == ["a:x=1", "b"]


def test_compare_reports_first_join_costs_and_the_zombie_coordinator(tmp_path: Path) -> None:
    out = tmp_path / "review.md"
    args = ["compare", "--designs", "kip1082-server-id,shipped-kip848,broker-coordinator:failover=zombie"]
    args += [
        "--members",
        "5",
        "500",
        "--workloads",
        "1",
        "--no-liveness",
        "--no-scenarios",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    text = out.read_text()
    assert "## Cost of a first join under KIP-848" in text
    assert "| `kip1082-server-id` | 4 / " in text and "| `shipped-kip848` | 2 / " in text
    assert "needs 2 round trips, 4 messages" in text and "(shipped-kip848: 1, 2," in text
    trace = tmp_path / "review" / "traces" / "broker-coordinator-failover-zombie--single_owner.ndjson"
    assert "origin" in trace.read_text() and "broker-zombie-coordinator" in trace.read_text()
    assert main(["design", "replay", str(trace)]) == 1
    assert main(["design", "replay", str(trace), "--design", "shipped"]) == 0
