"""--keep-going, --baseline and --groups on in-process mutants (docs/keep-going.md).

A coordinator with two faults is built from two catalogued mutants' coordinator classes: a run
that stops at the first divergence names one of them; a keep-going run names both; a baseline
written from a run of the first alone makes the two-fault run exit 1 naming only the second.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.engine.baseline import load_baseline
from conformance.engine.divergences import DivergenceLog, Occurrence, signature
from conformance.engine.groups import group_seed
from conformance.errors import SpecError
from conformance.mutants import MUTANTS
from conformance.mutants.base import Mutant
from conformance.mutants.classic import DuplicateStaticJoin, SkipGenerationBump

TWO = "test-two-faults"
ONE = "kafka-8500"  # DuplicateStaticJoin alone: classic.static_instance_unique
RUN = ["--max-examples", "20", "--seed", "0"]


@pytest.fixture
def two_faults(monkeypatch: pytest.MonkeyPatch) -> str:
    both = type("TwoFaults", (DuplicateStaticJoin, SkipGenerationBump), {})
    mutant = Mutant(
        TWO, "classic", "generic", "kafka-8500 and skip-generation-bump at once", "test only",
        ("classic.static_instance_unique", "classic.generation_bump_once"), coordinator=both,
    )  # fmt: skip
    monkeypatch.setitem(MUTANTS, TWO, mutant)
    return TWO


def _new_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("  new: ")]


def test_keep_going_finds_every_fault_where_a_plain_run_names_one(
    two_faults: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--target", f"mutant:{two_faults}", "--report-dir", str(tmp_path / "a"), *RUN]) == 1
    plain = capsys.readouterr().out
    assert (
        main(
            [
                "check",
                "--target",
                f"mutant:{two_faults}",
                "--keep-going",
                "--report-dir",
                str(tmp_path / "b"),
                *RUN,
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    rules = {"classic.static_instance_unique", "classic.generation_bump_once"}
    assert sum(rule in plain.split("steps:")[0] for rule in rules) == 1
    assert all(rule in out for rule in rules)
    report = (tmp_path / "b" / "divergences.md").read_text()
    assert "```mermaid" in report and "sequenceDiagram" in report and "groupcheck replay" in report
    # each distinct divergence's trace replays FAILED on the mutant (exit 1)
    traces = sorted((tmp_path / "b" / "classic" / "divergences").glob("*.ndjson"))
    assert len(traces) >= 2
    capsys.readouterr()
    assert main(["replay", str(traces[0]), "--target", f"mutant:{two_faults}"]) == 1


def test_a_baseline_hides_known_divergences_and_names_only_the_new_one(
    two_faults: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = tmp_path / "baseline.yaml"
    assert main(["check", "--target", f"mutant:{ONE}", "--write-baseline", str(baseline), *RUN]) == 1
    entries = load_baseline(baseline)
    assert entries and all(e.signature.startswith("classic.static_instance_unique") for e in entries)
    capsys.readouterr()
    # the same coordinator behind its own baseline passes
    assert main(["check", "--target", f"mutant:{ONE}", "--baseline", str(baseline), *RUN]) == 0
    assert "0 new" in capsys.readouterr().out
    # what the added fault alone diverges in (a generation kept at a join completion breaks more
    # than one invariant)
    alone = tmp_path / "alone.yaml"
    assert (
        main(["check", "--target", "mutant:skip-generation-bump", "--write-baseline", str(alone), *RUN]) == 1
    )
    added = {e.signature for e in load_baseline(alone)}
    assert any(s.startswith("classic.generation_bump_once") for s in added)
    capsys.readouterr()
    # one more fault: exit 1, and only the added fault's divergences are named new
    assert main(["check", "--target", f"mutant:{two_faults}", "--baseline", str(baseline), *RUN]) == 1
    out = capsys.readouterr().out
    new = {line.removeprefix("  new: classic ") for line in _new_lines(out)}
    # by invariant: with both faults a convergence failure may read otherwise than with one
    assert new and {s.split()[0] for s in new} <= {s.split()[0] for s in added}
    assert not new & {e.signature for e in entries}
    known = re.search(r"(\d+) known", out)
    assert known is not None and int(known.group(1)) >= 1  # the first fault is still met, as known


def test_baseline_entries_not_seen_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = tmp_path / "b.yaml"
    baseline.write_text(
        "version: 1\ndivergences:\n"
        "  - protocol: classic\n    signature: oracle.JoinGroup JoinGroup error NONE\n    reason: fixed upstream\n"
    )
    assert (
        main(["check", "--target", "model", "--protocol", "classic", "--baseline", str(baseline), *RUN]) == 0
    )
    assert "not seen: classic oracle.JoinGroup JoinGroup error NONE (line 3)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("version: 1\ndivergences:\n  - protocol: classic\n    signature: x\n", ":3:"),
        ("version: 1\ndivergences:\n  - {protocol: nope, signature: x, reason: y}\n", ":3:"),
        ("version: 2\ndivergences: []\n", ":1:"),
        (
            "version: 1\ndivergences:\n  - {protocol: classic, signature: x, reason: y}\n"
            "  - {protocol: classic, signature: x, reason: z}\n",
            ":4:",
        ),
    ],
)
def test_a_malformed_baseline_is_a_tool_error_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, where: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match=where):
        load_baseline(path)
    assert main(["check", "--target", "model", "--baseline", str(path), *RUN]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{path}{where}" in err[0]


def test_groups_are_independent_and_do_not_depend_on_scheduling(
    two_faults: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert group_seed(7, 0) == 7 and group_seed(7, 1) != group_seed(7, 2)
    runs = []
    for k in range(2):
        path = tmp_path / f"r{k}"
        args = [
            "check",
            "--target",
            f"mutant:{two_faults}",
            "--keep-going",
            "--groups",
            "4",
            "--report-dir",
            str(path),
        ]
        assert main([*args, "--max-examples", "6"]) == 1
        found = json.loads((path / "divergences.json").read_text())
        runs.append([{k: v for k, v in d.items() if k != "trace"} for d in found])
    assert runs[0] == runs[1]  # counts, first and smallest occurrences: the same on every run
    assert {d["smallest"]["group"] for d in runs[0]} - {0}  # the other groups ran and found some


def test_signatures_drop_values_and_keep_shapes() -> None:
    a = (
        "at t=1735, c2 sends Heartbeat v0 (ref 2): no model hypothesis explains the target (2 tried): "
        "ref 2 (c2 Heartbeat v0): error REBALANCE_IN_PROGRESS, model ILLEGAL_GENERATION"
    )
    b = (
        "at t=99, c1 sends Heartbeat v4 (ref 17): no model hypothesis explains the target (1 tried): "
        "ref 17 (c1 Heartbeat v4): error REBALANCE_IN_PROGRESS, model ILLEGAL_GENERATION | other"
    )
    c = b.replace("error REBALANCE_IN_PROGRESS", "error GROUP_ID_NOT_FOUND")
    assert signature("oracle.Heartbeat", a) == signature("oracle.Heartbeat", b)
    assert signature("oracle.Heartbeat", a) != signature("oracle.Heartbeat", c)
    assert (
        signature("oracle.Heartbeat", a)
        == "oracle.Heartbeat Heartbeat error REBALANCE_IN_PROGRESS (model ILLEGAL_GENERATION)"
    )
    late = (
        "at t=2212, time passes: no model hypothesis explains the target (1 tried): ref 3 (c2 SyncGroup v4): "
        "the model answered SyncGroup(UNKNOWN_MEMBER_ID) at t=69; the target gave no answer within 8000 ms"
    )
    assert signature("oracle.SyncGroup", late) == signature(
        "oracle.SyncGroup",
        late.replace("time passes", "c1 sends SyncGroup v4 (ref 6)").replace("t=69", "t=7"),
    )
    epoch = (
        "at t=2027, c4 sends ConsumerGroupHeartbeat v1 (ref 17): the target answered NONE epoch 5 "
        "assignment {t-1}; no model hypothesis explains it (2 tried): adopted {t-1}: member epoch 5, model 4"
    )
    assert signature("oracle.ConsumerGroupHeartbeat", epoch).endswith("fields epoch")


def test_signatures_drop_generated_member_ids() -> None:
    """Kafka prints a KIP-848 member id as a 22-character base64url `Uuid`: with or without digits,
    "_" or "-", it never reaches a signature; Kafka's CamelCase names do."""
    reason = (
        "at t=8096, c3 sends ConsumerGroupHeartbeat v1 (ref 33): the target answered NONE epoch 9 "
        "assignment none; no model hypothesis explains it (2 tried): adopting {} for {id}: no legal completion"
    )
    ids = [
        "OMksVyFcSNqv_mZm-nJ2bQ",
        "EBzUaFpcRomkw4xBGWE2mA",
        "wqevnqtqQAWtaXfSxwDYTA",
        "abcdefghijKLMNOPQRSTUV",
    ]
    sigs = {signature("oracle.ConsumerGroupHeartbeat", reason.replace("{id}", i)) for i in ids}
    assert sigs == {
        "oracle.ConsumerGroupHeartbeat ConsumerGroupHeartbeat adopting # for #: no legal completion"
    }
    names = signature(
        "x.rule", "ConsumerGroupHeartbeat answered UNKNOWN_MEMBER_ID to ConsumerGroupHeartbeatResponse"
    )
    assert (
        names == "x.rule ConsumerGroupHeartbeat answered UNKNOWN_MEMBER_ID to ConsumerGroupHeartbeatResponse"
    )


def test_the_log_counts_and_keeps_the_smallest_untainted_occurrence() -> None:
    from conformance.engine.checker import Violation

    taken = []
    log = DivergenceLog(snapshot=lambda sim, v, o, sig: taken.append(o.step) or o.step)
    v = Violation("classic.x", "member c1-abc owns 3", 9)
    log.record(v, Occurrence(0, 1, 9, v.message, False), None)
    log.record(v, Occurrence(0, 2, 4, v.message, True), None)  # smaller but tainted
    log.record(v, Occurrence(1, 1, 5, v.message, False), None)
    (d,) = log.distinct()
    assert d.count == 3 and d.smallest.step == 5 and d.trace == 5 and d.first.example == 1
    assert taken == [9, 5]


def test_merging_groups_does_not_depend_on_their_order() -> None:
    from conformance.engine.checker import Violation
    from conformance.engine.groups import merge_divergences

    logs = []
    for g in range(3):
        log = DivergenceLog()
        for step in (7 - g, 9):
            v = Violation(
                "oracle.X", f"at t={step}, c1 sends X v1 (ref {step}): (1 tried): error E, model F", step
            )
            log.record(v, Occurrence(g, 1, step, v.message, step == 9), None)
        logs.append(log.distinct())
    forward, backward = merge_divergences(logs), merge_divergences(reversed(logs))
    assert [(d.count, d.first, d.smallest) for d in forward] == [
        (d.count, d.first, d.smallest) for d in backward
    ]
    (d,) = forward
    assert d.count == 6 and d.first.group == 0 and d.smallest.step == 5 and d.smallest.group == 2


def test_writing_over_a_baseline_keeps_its_entries_and_reasons(
    two_faults: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "grow.yaml"
    assert main(["check", "--target", f"mutant:{ONE}", "--write-baseline", str(path), *RUN]) == 1
    first = load_baseline(path)
    path.write_text(path.read_text().replace(first[0].reason, "accepted, the catalogued KAFKA-8500"))
    args = ["--baseline", str(path), "--write-baseline", str(path)]
    assert main(["check", "--target", f"mutant:{two_faults}", *args, *RUN]) == 1
    grown = load_baseline(path)
    assert [e.signature for e in grown[: len(first)]] == [e.signature for e in first]
    assert grown[0].reason == "accepted, the catalogued KAFKA-8500"
    assert any(e.signature.startswith("classic.generation_bump_once") for e in grown[len(first) :])
    capsys.readouterr()
    assert main(["check", "--target", f"mutant:{two_faults}", "--baseline", str(path), *RUN]) == 0
