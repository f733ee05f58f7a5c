"""The explorers' perturbing ops and their budget (docs/traces.md#explore-and-coverage): with a
budget of 0 the wider alphabet explores exactly the default one's states, a budget of 1 still
finishes at 1 x 1, every perturbing op labels some edge, and a path through them replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.errors import UsageError
from conformance.formats.trace_file import read_trace, write_trace
from conformance.protocols.classic import explore as classic
from conformance.protocols.consumer import explore as consumer
from conformance.trace.replay import replay

CLASSIC_OPS = classic.ALL_OPS
CONSUMER_OPS = consumer.ALL_CONSUMER_OPS


def _op_kinds(result) -> set[str]:  # type: ignore[no-untyped-def]
    return {data["op"].split()[0] for _a, _b, data in result.graph.edges(data=True)}


def test_a_spent_budget_explores_the_default_alphabet() -> None:
    c = consumer.explore_consumer(
        1, 1, depth=1000, budget_s=300, cpu_clock=True, ops=CONSUMER_OPS, perturbations=0
    )
    assert c.complete and c.states == 32  # tests/test_explore_bounds.py: the default alphabet
    k = classic.explore_classic(
        1, 1, depth=1000, budget_s=300, cpu_clock=True, ops=CLASSIC_OPS, perturbations=0
    )
    assert k.complete and k.states == 80


def test_one_perturbation_finishes_at_one_member_and_uses_every_op() -> None:
    c = consumer.explore_consumer(
        1, 1, depth=1000, budget_s=300, cpu_clock=True, ops=CONSUMER_OPS, perturbations=1
    )
    assert c.complete and not c.found and c.states == 338
    assert set(consumer.PERTURBATIONS) <= _op_kinds(c)
    ops = tuple(o for o in CLASSIC_OPS if o != "stale_subscription")  # a cooperative assignor's fault
    k = classic.explore_classic(1, 1, depth=1000, budget_s=300, cpu_clock=True, ops=ops, perturbations=1)
    assert k.complete and not k.found and k.states == 828
    assert {"leave", "restart", "subscribe", "lose_response"} <= _op_kinds(k)


def test_a_larger_budget_reaches_more_states() -> None:
    one = consumer.explore_consumer(
        1, 1, depth=1000, budget_s=300, cpu_clock=True, ops=CONSUMER_OPS, perturbations=1
    )
    two = consumer.explore_consumer(
        1, 1, depth=1000, budget_s=300, cpu_clock=True, ops=CONSUMER_OPS, perturbations=2
    )
    assert two.complete and two.states > one.states


def test_a_path_found_with_the_wider_alphabet_replays(tmp_path: Path) -> None:
    """kafka-16147's mutant at 2 x 1, the set-up holding topic u for ``subscribe``: the explorer's
    trace replays FAILED and passes on the fixed model."""
    r = consumer.explore_consumer(
        2, 1, depth=6, variants={"mutant": "kafka-16147"}, ops=CONSUMER_OPS, perturbations=1
    )
    assert r.found
    hit = next(iter(r.found.values()))
    path = write_trace(consumer.consumer_found_trace(r, hit), tmp_path / "t.ndjson")
    assert replay(read_trace(path)).verdict == "FAILED"
    assert replay(read_trace(path), variants={"mutant": None}).verdict == "FIXED"


def test_an_unknown_op_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown op"):
        consumer.explore(1, 1, depth=1, ops=("crash_everything",))
    with pytest.raises(UsageError, match="unknown op"):
        classic.explore(1, 1, depth=1, ops=("crash_everything",))


def test_static_members_change_what_leave_and_restart_reach() -> None:
    """``--static N``: the first N members carry group.instance.id, so a leave keeps the member for
    its session (epoch -2 / LeaveGroup of a static member) and a restart takes its place back."""
    ops = ("client_step", "leave", "restart")
    dynamic = consumer.explore_consumer(
        1, 1, depth=1000, budget_s=300, cpu_clock=True, ops=ops, perturbations=1
    )
    static = consumer.explore_consumer(
        1, 1, depth=1000, budget_s=300, cpu_clock=True, ops=ops, perturbations=1, static=1
    )
    assert static.setup["clients"][0]["instance_id"] == "i1"
    assert static.complete and not static.found and (static.states, dynamic.states) == (120, 164)
    ops = ("step", "advance", "stall", "resume", "leave", "restart")
    dynamic = classic.explore_classic(
        1, 1, depth=1000, budget_s=300, cpu_clock=True, ops=ops, perturbations=1
    )
    static = classic.explore_classic(
        1, 1, depth=1000, budget_s=300, cpu_clock=True, ops=ops, perturbations=1, static=1
    )
    assert static.complete and not static.found and (static.states, dynamic.states) == (123, 529)
    with pytest.raises(UsageError):
        classic.explore_classic(1, 1, depth=3, static=2)
