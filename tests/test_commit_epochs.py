"""KIP-1251 commit epochs (Kafka 4.3+): a commit whose epoch is older than the member's but not
below the partition's assignment epoch is accepted; the invariant follows the configured rule, the
Kafka 4.0 rule would flag such a commit, and a coordinator keeping the exact rule is caught."""

from __future__ import annotations

import dataclasses

from conformance.specs import load_scenarios
from conformance.trace.scenario import run_scenario
from model.consumer.invariants import offset_commit_exact_epoch
from model.consumer.records import CurrentAssignmentRecord, derive_assignment_epochs
from model.consumer.state import ConsumerMember, MemberState
from model.consumer.world import OffsetCommitEvent

SCENARIO = "kip-1251-commit-epochs"


def _commits(result: object) -> list[object]:
    return [o for o in result.observations if isinstance(o.event, OffsetCommitEvent)]  # type: ignore[attr-defined]


def test_reference_accepts_the_older_epoch_commit() -> None:
    result = run_scenario(load_scenarios()[SCENARIO], {})
    assert result.passed, (result.violations, result.failed_expectations)
    (commit,) = _commits(result)
    assert commit.event.request.generation_id_or_member_epoch == 1  # type: ignore[attr-defined]


def test_the_kafka_40_rule_flags_the_kip_1251_commit() -> None:
    result = run_scenario(load_scenarios()[SCENARIO], {})
    (commit,) = _commits(result)
    assert offset_commit_exact_epoch(commit) == []  # type: ignore[arg-type]
    old = dataclasses.replace(commit, after=dataclasses.replace(commit.after, offset_commit_epochs="exact"))  # type: ignore[call-overload]
    assert any("accepted" in m for m in offset_commit_exact_epoch(old))


def test_a_kafka_40_coordinator_rejects_it() -> None:
    result = run_scenario(load_scenarios()[SCENARIO], {"offset_commit_epochs": "exact"})
    assert result.violations == []  # the exact rule is legal for a 4.0 coordinator
    assert any("STALE_MEMBER_EPOCH" in f for f in result.failed_expectations)


def test_exact_only_mutant_is_caught() -> None:
    result = run_scenario(load_scenarios()[SCENARIO], {"mutant": "commit-epochs-exact-only"})
    assert {v.invariant for v in result.violations} == {"consumer.offset_commit_exact_epoch"}


def test_assignment_epochs_follow_the_partitions() -> None:
    old = ConsumerMember("m", member_epoch=3, assignment_epochs=((("t", 0), 1), (("t", 1), 3)))
    record = CurrentAssignmentRecord("g", "m", 5, 3, MemberState.STABLE, (("t", 0), ("t", 2)), (("t", 1),))
    assert derive_assignment_epochs(old, record) == ((("t", 0), 1), (("t", 1), 3), (("t", 2), 5))
    assert derive_assignment_epochs(None, dataclasses.replace(record, member_epoch=-2))[0] == (("t", 0), 0)
