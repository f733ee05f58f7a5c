"""`classic.leader_gets_metadata_as_sent`: the leader's member list carries each member's metadata
as its JoinGroup sent it, judged against the harness's record (`model.classic.wire_record`)."""

from __future__ import annotations

from conformance.engine.checker import Checker
from conformance.mutants import get_mutant
from model.classic.messages import JoinGroupRequest, JoinGroupResponse
from model.classic.wire_record import KEEP, WireRecord
from model.errors import ErrorCode
from model.result import Delivery
from tests.test_incremental_checking import classic_walk

PROMISE = "classic.leader_gets_metadata_as_sent"


def _violated(mutant: str, seed: int) -> set[str]:
    checker = Checker("classic")
    found: set[str] = set()
    for step, obs in enumerate(classic_walk(2000, seed, mutant), 1):
        found |= {v.invariant for v in checker.check(obs, step)}
    return found


def test_the_model_keeps_the_promise_and_a_stale_rejoin_breaks_it() -> None:
    assert PROMISE not in _violated("", 1) | _violated("", 2)
    assert PROMISE in _violated("rejoin-keeps-metadata", 1)
    assert get_mutant("rejoin-keeps-metadata").expect == (PROMISE,)


def test_joins_are_kept_until_answered_and_bounded() -> None:
    record = WireRecord()
    join = JoinGroupRequest("g", "", "consumer", (("range", b"\x01"),), 10_000, 30_000)
    for ref in range(KEEP + 5):
        record.record(ref, join)
    assert len(record.joins) == KEEP and min(record.joins) == 5  # the oldest, never answered, went first
    answer = Delivery(7, JoinGroupResponse(ErrorCode.NONE, member_id="m"))
    assert record.take([answer]) == (((7, (("range", b"\x01"),)),), ())
    assert 7 not in record.joins and record.take([answer]) == ((), ())
