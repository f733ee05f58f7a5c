"""The failure cases the seeds name, as scenarios: each expectation holds on the design it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.designs import scenarios as scn
from conformance.errors import SpecError

ALL = scn.load_all()
CASES = [(sid, i) for sid, sc in ALL.items() for i in range(len(sc.expect))]


def test_the_named_failure_cases_are_there() -> None:
    for sid in (
        "sync-synchronizer-hard-failure",
        "stale-metadata-member",
        "broker-socket-lost",
        "server-id-leave",
        "local-marker-reset",
        "broker-zombie-coordinator",
        "broker-offsets-in-ping-answers",
        "broker-per-thread-ownership",
    ):
        assert sid in ALL
    assert all(any(e.passes for e in sc.expect) for sc in ALL.values())


@pytest.mark.parametrize(("sid", "index"), CASES)
def test_expectation(sid: str, index: int) -> None:
    sc = ALL[sid]
    outcome = scn.run_one(sc, sc.expect[index])
    assert outcome.met, (
        f"{sid} on {scn.label(outcome.expectation.design, outcome.expectation.options)}: {outcome.why}"
    )


def test_a_bad_scenario_names_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "id: x\ntitle: t\nsource: s\ntopics: {t: 1}\nsteps:\n  - {op: join}\nexpect:\n  - {design: shipped, passes: true}\n"
    )
    with pytest.raises(SpecError, match=r"bad.yaml:6: steps\[0\]: lacks field 'member'"):
        scn.load(path)
    path.write_text(
        "id: x\ntitle: t\nsource: s\ntopics: {t: 1}\nsteps:\n  - {op: join, member: A}\nexpect:\n  - {design: nowhere, passes: true}\n"
    )
    with pytest.raises(SpecError, match="unknown design"):
        scn.load(path)


BAD_DESIGN_SCENARIOS = [
    # (steps and expect lines, where, what)
    ("  - {op: join, member: A, version: 9}\n", 6, r"steps\[0\]\.version: 9 is out of range"),
    ("  - {op: settle, ms: -1000}\n", 6, r"steps\[0\]\.ms: -1000 is out of range"),
    ("  - {op: warp, member: A}\n", 6, r"steps\[0\]\.op"),
    ("  - {op: join, member: [A]}\n", 6, r"steps\[0\]\.member: expected a string, got a list"),
    (
        "  - {op: settle, ms: 3600000}\n" * 3,
        1,
        r"steps: advance and settle run 10800000 ms in all, at most 1800000",
    ),
]


@pytest.mark.parametrize(("steps", "line", "what"), BAD_DESIGN_SCENARIOS)
def test_design_scenarios_are_checked_against_their_schema_and_bounds(
    tmp_path: Path, steps: str, line: int, what: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        f"id: x\ntitle: t\nsource: s\ntopics: {{t: 1}}\nsteps:\n{steps}expect:\n  - {{design: shipped, passes: true}}\n"
    )
    with pytest.raises(SpecError, match=rf"bad.yaml:{line}: {what}"):
        scn.load(path)
