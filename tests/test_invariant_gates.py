"""Gates: ``when`` tests decided from the types a step carries, once per kind of step
(`model.invariant_gates`, `conformance.engine.reuse`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.engine.reuse import GATE_MEMO, Reuse
from model.classic.messages import HeartbeatRequest, HeartbeatResponse, LeaveGroupRequest
from model.classic.produced import responded_with
from model.classic.sim import Advance, Send, Stall
from model.errors import ErrorCode
from model.invariant_gates import answered, delivered, on, sent, signature
from model.invariants import Invariant
from model.result import Delivery

# real messages of the classic protocol stand in for any request and response types
Req, OtherReq, Resp = HeartbeatRequest, LeaveGroupRequest, HeartbeatResponse


@dataclass(frozen=True)
class Obs:
    event: Any
    deliveries: tuple[Delivery, ...] = ()


SEND = Send("c0", 1, Req("g", 1, "m"))


def test_each_gate_reads_the_types_it_names() -> None:
    answer = (Delivery(1, Resp(ErrorCode.NONE)),)
    assert on(Send)(Obs(SEND)) and not on(Send)(Obs(Advance(5)))
    assert sent(Send, Req)(Obs(SEND)) and not sent(Send, OtherReq)(Obs(SEND))
    assert not sent(Send, Req)(Obs(Advance(5)))  # no request at all
    assert answered(Resp)(Obs(Advance(5), answer)) and not answered(Resp)(Obs(Advance(5)))
    assert not answered(Req)(Obs(Advance(5), answer))
    assert not answered(Resp, unless=(Stall,))(Obs(Stall("c0", False), answer))
    assert delivered(Obs(Advance(5), answer)) and not delivered(Obs(Advance(5)))
    assert not responded_with(Resp)(Obs(Stall("c0", False), answer))  # replayed, judged when produced


def test_a_gate_verdict_depends_only_on_the_signature() -> None:
    one, two = (
        Obs(SEND, (Delivery(1, Resp(ErrorCode.NONE)),)),
        Obs(Send("c1", 9, Req("g", 2, "n")), (Delivery(9, Resp(ErrorCode.NONE)),)),
    )
    assert signature(one) == signature(two)
    assert signature(one) != signature(Obs(SEND))


def _counting(when: Any) -> tuple[Invariant, list[int]]:
    calls: list[int] = []

    def predicate(obs: Any) -> list[str]:
        calls.append(1)
        return ["spoke"]

    return Invariant("test.gated", "transition", "test", predicate, "", None, when), calls


def test_the_checker_runs_a_gated_invariant_only_where_its_gate_passes() -> None:
    inv, calls = _counting(sent(Send, Req))
    reuse = Reuse([inv], [])
    assert reuse.run(Obs(Advance(5))) == [[]] and not calls
    assert reuse.run(Obs(SEND)) == [["spoke"]] and len(calls) == 1
    assert reuse.speaking == {0}
    assert reuse.run(Obs(Send("c0", 2, OtherReq("g", ())))) == [[]] and len(calls) == 1
    assert reuse.speaking == set()


def test_gate_verdicts_kept_are_bounded() -> None:
    inv, _ = _counting(answered(Resp))
    reuse = Reuse([inv], [])
    for i in range(GATE_MEMO + 10):
        kind = type(f"R{i}", (), {})  # a new kind of response each step
        reuse.run(Obs(Advance(1), (Delivery(1, kind()),)))
    assert 0 < len(reuse.verdicts) <= GATE_MEMO
