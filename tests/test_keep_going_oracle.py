"""Adoption of a divergent answer by the oracles that wait for each answer (docs/keep-going.md).

Under ``--keep-going`` an answer no hypothesis explains is still a finding, and the oracle goes on
with the candidates it had to reject (the request applied as the model would), so the next request
is judged from there; without it the hypotheses stay as they were.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.engine.oracle.port import ExchangePort
from conformance.wire.session import Timing


@dataclass
class H:
    state: str
    origin: int = 0
    now: int = 0
    fired: int = 0
    pre: Any = None

    def copy(self) -> H:
        return H(self.state, self.origin, self.now)


@dataclass
class Port(ExchangePort):
    hypos: list[Any] = field(default_factory=list)
    findings: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.timing = Timing()
        self.t0 = 0.0
        self.adapter = SimpleNamespace(alive=lambda: True)
        self.session = SimpleNamespace(compat=[], launcher=None)

    def _candidates(
        self, h: Any, t: int, t_ans: int, request: Any, ref: int, target: Any, prior: Any = None
    ) -> Any:
        applied = H(f"{h.state}+{request}", h.origin, h.now)
        return [(applied, None if target == "ok" else f"answered {target}, model ok")]


@pytest.mark.parametrize("keep_going", [False, True])
def test_an_unexplained_answer_is_a_finding_and_adopted_only_when_keeping_going(keep_going: bool) -> None:
    port = Port(hypos=[H("s0")])
    port.keep_going = keep_going
    cands, reasons = port._explain(0, 1, "join", 1, "odd", None)
    assert cands == [] and reasons == ["answered odd, model ok"]
    port._unexplained("oracle.X", 0, "c1 sends X v1 (ref 1)", "odd", reasons)
    assert [f.rule for f in port.take_findings()] == ["oracle.X"]
    assert [h.state for h in port.hypos] == (["s0+join"] if keep_going else ["s0"])
    assert port.adopted == (1 if keep_going else 0)
    # an explained answer afterwards is followed as usual, from the adopted state
    cands, _ = port._explain(0, 1, "sync", 2, "ok", None)
    assert [c.state for c in cands] == (["s0+join+sync"] if keep_going else ["s0+sync"])


def test_a_slow_target_is_seen_past_a_deadline_only_by_a_request_sent_later_than_its_lag() -> None:
    from conformance.engine.oracle.windows import answer_lag, seen_running

    sent = {1: 0, 2: 1000, 3: 1900}
    answers = {1: ("a", 700), 2: ("b", 1100), 3: ("c", 1950)}  # the target lately answers 700 ms late
    lag = answer_lag(answers, sent.__getitem__)
    assert lag == 700
    # a request sent 100 ms after the deadline, answered: running, but maybe before it queued the timer
    assert seen_running(1800, 2500, 30, 2000, answers, sent.__getitem__)
    assert not seen_running(1800, 2500, 30, 2000, answers, sent.__getitem__, lag)
    assert seen_running(1800, 3800, 30, 2000, answers, sent.__getitem__, lag)  # the cap still holds
