"""Real client libraries' assignors (conformance/clients) judged by the model's client invariants.

The harnesses are built into the cache on first use (Maven Central, the Go module proxy), then run
from there. KAFKA-7026: kafka-clients 2.2.2's StickyAssignor (no generation in its user data) keeps
a partition claimed by two members on both; 4.4.0's does not.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.clients.assignors import ASSIGNORS, replay, run_assignor
from conformance.clients.harness import Harness, parse_library
from conformance.clients.inputs import groups
from conformance.clients.protocol import AnswerError, decode_answer, judge
from conformance.clients.traces import read_trace
from conformance.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_TOOL, EXIT_VIOLATION, UsageError
from model.embedded import decode_sticky_user_data

OLD, CURRENT, FRANZ = parse_library("java:2.2.2"), parse_library("java:4.4.0"), parse_library("franz-go")
N = 100
REPORTS = Path(__file__).resolve().parent.parent / "reports" / "clients" / "traces"


def harness_fixture(library_spec: str) -> Iterator[Harness]:
    with Harness(parse_library(library_spec)) as h:
        yield h


@pytest.fixture(scope="module")
def old() -> Iterator[Harness]:
    yield from harness_fixture("java:2.2.2")


@pytest.fixture(scope="module")
def current() -> Iterator[Harness]:
    yield from harness_fixture("java:4.4.0")


@pytest.fixture(scope="module")
def franz() -> Iterator[Harness]:
    yield from harness_fixture("franz-go")


def kafka_7026_request(request_id: int) -> dict[str, object]:
    """docs/protocol-reference.md#c4: C1 owned t-0 in generation 5, was removed, C2 took t-0 and t-1 in generation 6,
    and C1 rejoins with its old claim; each member's own assignor writes its user data."""
    return {
        "id": request_id,
        "assignor": "sticky",
        "partitions": {"t": 2},
        "members": [
            {"member_id": "C1", "topics": ["t"], "owned": [], "generation": 5, "user_data": None,
             "prior": {"partitions": [["t", 0]], "generation": 5}},
            {"member_id": "C2", "topics": ["t"], "owned": [], "generation": 6, "user_data": None,
             "prior": {"partitions": [["t", 0], ["t", 1]], "generation": 6}},
        ],
    }  # fmt: skip


@pytest.mark.target
def test_kafka_7026_scenario_double_assigns_on_2_2_2_only(old: Harness, current: Harness) -> None:
    request = kafka_7026_request(1)
    answer = decode_answer(old.ask(request), request)
    assert answer.assignment["C1"].partitions == (("t", 0),)
    assert ("t", 0) in answer.assignment["C2"].partitions
    assert ("client.assignment_single_owner", "t-0 assigned to C1, C2") in judge(request, answer)
    # 2.2.2 writes V0 user data (no generation) and sends no GenerationId: the leader cannot tell
    assert decode_sticky_user_data(answer.subscriptions["C1"].user_data) == ((("t", 0),), None)
    assert answer.subscriptions["C1"].generation_id == -1

    fixed = decode_answer(current.ask(request), request)
    assert judge(request, fixed) == []
    assert decode_sticky_user_data(fixed.subscriptions["C1"].user_data) == ((("t", 0),), 5)
    assert fixed.assignment["C2"].partitions == (("t", 0),)  # the current owner keeps it


@pytest.mark.target
def test_old_sticky_is_caught_on_single_owner_from_generated_inputs(old: Harness, tmp_path: Path) -> None:
    cell = run_assignor(old, "sticky", seed_value=0, max_examples=N, run_dir=tmp_path, inputs="steady")
    assert cell.verdict == "FAILED"
    (finding,) = [f for f in cell.findings if f.outcome == "violated"]
    assert {inv for inv, _ in finding.messages} == {"client.assignment_single_owner"}
    trace = read_trace(finding.path)
    owners = [m for m, ps in trace.answer["assignment"].items() for tp in ps if tp == ["t0", 0]]
    claims = [
        m["member_id"]
        for m in trace.request["members"]
        if ["t0", 0] in (m["prior"] or {}).get("partitions", [])
    ]
    assert len(owners) == 2 and set(owners) <= set(claims)  # both claimants kept it
    assert replay(finding.path, OLD) == EXIT_VIOLATION
    assert replay(finding.path, CURRENT) == EXIT_OK  # KIP-341 V1 user data: FIXED on 4.4.0
    again = run_assignor(
        old, "sticky", seed_value=0, max_examples=N, run_dir=tmp_path / "again", inputs="steady"
    )
    assert again.findings[0].path.name == finding.path.name  # same seed, same trace, byte for byte
    assert again.findings[0].path.read_bytes() == finding.path.read_bytes()


@pytest.mark.target
@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_current_java_assignors_pass(current: Harness, assignor: str, tmp_path: Path) -> None:
    cell = run_assignor(current, assignor, seed_value=0, max_examples=N, run_dir=tmp_path, inputs="steady")
    assert (cell.verdict, cell.examples, cell.raised, cell.findings) == ("PASSED", N, 0, [])


@pytest.mark.target
def test_current_java_sticky_under_churn(current: Harness, tmp_path: Path) -> None:
    """Claims past a recreated topic's partition count are kept as owned (reports/clients/assignors.md)."""
    cell = run_assignor(current, "sticky", seed_value=0, max_examples=N, run_dir=tmp_path, inputs="churn")
    assert cell.verdict == "FAILED"
    violated = next(f for f in cell.findings if f.outcome == "violated")
    assert violated.messages[0][0] == "client.assignment_only_subscribed"
    assert "which does not exist" in violated.messages[0][1]
    assert replay(violated.path, CURRENT) == EXIT_VIOLATION


@pytest.mark.target
def test_published_current_java_findings_replay(current: Harness) -> None:
    for name, verdict in (
        ("java-4.4.0_sticky_prev-owner-unsubscribed.ndjson", EXIT_VIOLATION),
        ("java-4.4.0_sticky_claim-past-count-raises.ndjson", EXIT_INCONCLUSIVE),
    ):
        assert replay(REPORTS / name, CURRENT) == verdict


@pytest.mark.target
def test_old_java_has_no_cooperative_sticky(old: Harness, tmp_path: Path) -> None:
    cell = run_assignor(old, "cooperative-sticky", seed_value=0, max_examples=N, run_dir=tmp_path)
    assert cell.verdict == "UNAVAILABLE" and "not in kafka-clients 2.2.2" in cell.note


@pytest.mark.target
@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_franz_go_balancers_pass_steady_inputs(franz: Harness, assignor: str, tmp_path: Path) -> None:
    cell = run_assignor(franz, assignor, seed_value=0, max_examples=N, run_dir=tmp_path, inputs="steady")
    assert (cell.verdict, cell.examples, cell.findings) == ("PASSED", N, [])


@pytest.mark.target
def test_franz_go_sticky_gives_a_stale_claim_back(franz: Harness) -> None:
    """franz-go re-stickies a stale claimant before balancing (internal/sticky tryRestickyStales): the
    current owner then loses its partition and takes an unclaimed one (reports/clients/assignors.md)."""
    path = REPORTS / "franz-go_sticky_resticky-stale.ndjson"
    assert replay(path, FRANZ) == EXIT_VIOLATION
    trace = read_trace(path)
    assert [f[0] for f in trace.findings] == ["client.sticky_stale_claim_loses"]
    assert replay(path, CURRENT) == EXIT_OK  # the Java 4.4.0 leader keeps the current owner's claim


@pytest.mark.target
def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["assignors", "--library", "java:2.2.2", "--assignor", "sticky", "--inputs", "steady"]
    report = tmp_path / "report.md"
    code = main([*args, "--max-examples", "50", "--run-dir", str(tmp_path), "--report", str(report)])
    assert code == EXIT_VIOLATION
    out = capsys.readouterr().out
    assert "java:2.2.2 sticky: FAILED" in out and "groupcheck assignors --replay" in out
    assert "| kafka-clients | 2.2.2 | sticky | FAILED |" in report.read_text()
    assert main(["assignors", "--library", "java:2.2.2", "--assignor", "range", "--max-examples", "20",
                 "--run-dir", str(tmp_path)]) == EXIT_OK  # fmt: skip


# ------------------------------------------------------------------ strict decoding, no harness needed


def test_bad_library_and_bad_trace_are_tool_errors(tmp_path: Path) -> None:
    assert main(["assignors", "--library", "java:4.4; rm -rf /"]) == EXIT_TOOL
    assert main(["assignors", "--library", "sarama"]) == EXIT_TOOL
    bad = tmp_path / "bad.ndjson"
    bad.write_text('{"format": "groupcheck-assignors-trace"}\n')
    with pytest.raises(UsageError, match="expected 3 lines"):
        read_trace(bad)
    bad.write_text("{}\n{}\n{}\n")
    with pytest.raises(UsageError, match=r"bad.ndjson:1: field format"):
        read_trace(bad)


def test_answers_are_decoded_strictly() -> None:
    request = kafka_7026_request(7)
    seen = [
        {"member_id": m, "topics": ["t"], "user_data": None, "owned": [], "generation": -1}
        for m in ("C1", "C2")
    ]
    good = {"id": 7, "ok": True, "subscriptions": seen, "assignment": {"C1": [["t", 0]], "C2": [["t", 1]]}}
    assert judge(request, decode_answer(good, request)) == []
    for broken, match in (
        ({**good, "id": 8}, "does not match"),
        ({**good, "extra": 1}, "unknown field"),
        ({**good, "assignment": {"C1": [["t", -1]]}}, "partition"),
        ({**good, "assignment": {"C1": [["t", True]]}}, "partition"),
        ({**good, "subscriptions": seen[:1]}, "not those sent"),
        ({**good, "subscriptions": [{**seen[0], "user_data": "@@"}, seen[1]]}, "not base64"),
        ({**good, "subscriptions": [{**seen[0], "topics": ["u"]}, seen[1]]}, "not what was sent"),
        ({"id": 7, "ok": False}, "exactly one"),
        ({"id": 7, "ok": False, "bad_request": "members: x"}, "refused"),
    ):
        with pytest.raises(AnswerError, match=match):
            decode_answer(broken, request)


def test_generated_requests_are_valid_json_with_the_claims_asked_for() -> None:
    from hypothesis import given, settings

    seen_kinds: set[str] = set()

    @settings(max_examples=60, deadline=None, database=None)
    @given(groups("sticky", "steady"))
    def check(group: object) -> None:
        request = group.request(1)  # type: ignore[attr-defined]
        json.dumps(request)
        for member, entry in zip(group.members, request["members"], strict=True):  # type: ignore[attr-defined]
            seen_kinds.add(member.kind)
            assert entry["owned"] == []  # EAGER: revoked before the join
            if entry["user_data"] is not None:
                claims, _ = decode_sticky_user_data(base64.b64decode(entry["user_data"]))
                assert all(tp[0] in member.topics for tp in claims)  # steady: claims on subscribed topics

    check()
    assert {"current", "stale", "new", "twin"} <= seen_kinds
