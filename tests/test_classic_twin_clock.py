"""Twin hypotheses (equal state, equal outstanding answers) that differ in their clock: the earlier
clock stands, whichever of the two ranked first.

One twin may have reached the state by a timer fired after an operation at a deadline still ahead of
the real clock, the other by an earlier timer. The next operation is applied at the later of its
own time and the hypothesis' clock, so the later clock would date it, and every timer it arms, in
the future (seen with 32 groups on Apache Kafka 4.4.0: a join armed the initial rebalance a second
late and the target's answer came before it). `ClassicOperation._dedupe` keeps the earlier one.
"""

from __future__ import annotations

from types import SimpleNamespace

from conformance.protocols.classic.hypo import Hypo
from conformance.protocols.classic.operation import ClassicOperation
from conformance.wire.session import Timing
from model.classic.state import ClassicGroup, ClassicState, GroupState


def _twin(now: int, slack: int) -> Hypo:
    state = ClassicState(groups={"g": ClassicGroup("g", state=GroupState.EMPTY, generation=3)})
    return Hypo(state, now=now, choices=(f"at={now}",), slack={("g", "expire:m", 9): slack})


def _dedupe(cands: list[Hypo]) -> list[Hypo]:
    port = SimpleNamespace(timing=Timing())
    return ClassicOperation._dedupe(port, cands)  # type: ignore[arg-type]


def test_the_twin_with_the_earlier_clock_stands() -> None:
    late, early = _twin(5011, 0), _twin(3978, 40)
    (kept,) = _dedupe([late, early])
    assert (kept.now, kept.choices) == (3978, ("at=3978",))


def test_the_kept_twin_takes_the_wider_slack_either_way() -> None:
    (kept,) = _dedupe([_twin(3978, 0), _twin(5011, 40)])
    assert kept.now == 3978
    assert kept.slack == {("g", "expire:m", 9): 40}
    (kept,) = _dedupe([_twin(5011, 40), _twin(3978, 0)])
    assert kept.now == 3978
    assert kept.slack == {("g", "expire:m", 9): 40}


def test_hypotheses_that_differ_in_state_are_both_kept() -> None:
    other = _twin(3978, 0)
    other.state.groups["g"].generation = 4
    assert len(_dedupe([_twin(5011, 0), other])) == 2
