"""Wire faults of the KIP-848 consumer machine on the model (model/consumer/sim.py, profile `faults`):
a heartbeat that reaches the coordinator twice, a connection cut under a heartbeat the coordinator
took, and a heartbeat held by the network and delivered after other members' requests or after its
session expired. Against Apache Kafka: tests/test_wire_fault_rules.py (one broker start)."""

from __future__ import annotations

from typing import Any

from conformance.protocols.build import make_consumer_sim
from model.consumer.client import ClientState
from model.consumer.messages import ConsumerGroupHeartbeatResponse
from model.consumer.world import ClientEvent, HeartbeatEvent
from model.errors import ErrorCode


def _sim(n: int = 2, session_ms: int = 2000) -> Any:
    clients = [{"name": f"c{i}", "topics": ["t"], "rebalance_timeout_ms": 1500} for i in range(1, n + 1)]
    return make_consumer_sim({"t": 2}, clients, {"session_timeout_ms": session_ms}, {})


def _answer(obs: Any) -> ConsumerGroupHeartbeatResponse:
    got = next(d.response for d in obs.deliveries if d.ref == obs.event.ref)
    assert isinstance(got, ConsumerGroupHeartbeatResponse)
    return got


def _stable(sim: Any) -> None:
    for _ in range(30):
        for name in sorted(sim.clients):
            sim.client_step(name)
        if all(c.state == ClientState.STABLE and c.owned for c in sim.clients.values()):
            return
        sim.advance(250)
    raise AssertionError("the group did not settle")


def test_duplicated_heartbeat_is_applied_twice_and_heard_once() -> None:
    sim = _sim()
    _stable(sim)
    sim.advance(600)  # a heartbeat is due (interval 500 ms)
    epoch = sim.client("c1").member_epoch
    first, copy = sim.duplicate_request("c1")
    assert isinstance(first.event, HeartbeatEvent) and isinstance(copy.event, HeartbeatEvent)
    assert copy.event.request == first.event.request and copy.event.ref != first.event.ref
    a, b = _answer(first), _answer(copy)
    assert a.error_code == b.error_code == ErrorCode.NONE
    assert a.member_epoch == b.member_epoch == epoch  # a repeated heartbeat changes nothing
    assert sim.client("c1").member_epoch == epoch and sim.client("c1").inflight is None
    assert [a.name for a in sim.actions[-1:]] == ["duplicate_request"]


def test_cut_connection_keeps_what_the_coordinator_applied() -> None:
    sim = _sim(1)
    [obs] = sim.cut_connection("c1")  # the first join reaches the coordinator; the answer does not
    member = sim.client("c1").member_id
    group = sim.port.coordinator_state().groups["g"]
    assert member in group.members and _answer(obs).member_epoch > 0  # the coordinator took it
    c1 = sim.client("c1")
    assert c1.member_epoch == 0 and c1.inflight is None  # the client heard nothing
    sim.advance(1000)  # after the retry backoff it joins again, with the same member id (KIP-1082)
    again = sim.client_step("c1")
    assert again.event.request.member_id == member and again.event.request.member_epoch == 0
    assert _answer(again).error_code == ErrorCode.NONE and sim.client("c1").member_epoch > 0


def test_delayed_heartbeat_arrives_after_later_requests_of_others() -> None:
    sim = _sim()
    held = sim.delay_request("c1")  # c1's join is held on the wire
    assert isinstance(held.event, ClientEvent) and "c1" in sim.held
    assert sim.client_step("c1") is None  # one heartbeat in flight: c1 sends nothing more
    c2 = sim.client_step("c2")  # c2's join overtakes it
    assert _answer(c2).member_epoch == 1 and set(_answer(c2).assigned() or ()) == {("t", 0), ("t", 1)}
    late = sim.release("c1")
    assert late is not None and late.event.ref < c2.event.ref  # sent first, applied second
    assert _answer(late).error_code == ErrorCode.NONE and _answer(late).member_epoch == 2
    assert sim.client("c1").member_epoch == 2 and "c1" not in sim.held


def test_delayed_heartbeat_after_its_session_expired_is_unknown_and_the_member_rejoins() -> None:
    sim = _sim(session_ms=2000)
    _stable(sim)
    sim.advance(600)
    assert sim.delay_request("c1") is not None
    for _ in range(5):  # c2 keeps its session; c1's session runs out while its heartbeat is held
        sim.client_step("c2")
        sim.advance(600)
    assert sim.client("c1").member_id not in sim.port.coordinator_state().groups["g"].members
    late = sim.release("c1")
    assert _answer(late).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert sim.client("c1").state == ClientState.JOINING  # Java: release everything, join again
    back = sim.client_step("c1")
    assert back.event.request.member_epoch == 0 and _answer(back).error_code == ErrorCode.NONE


def test_a_held_heartbeat_arrives_before_the_same_members_next_request() -> None:
    sim = _sim()
    _stable(sim)
    sim.advance(600)
    assert sim.delay_request("c1") is not None
    before = len(sim.actions)
    sim.leave("c1")  # one connection keeps its order: the held heartbeat first, then the leave
    assert [a.name for a in sim.actions[before:]] == ["release", "leave"]
    assert "c1" not in sim.held and sim.client("c1").state == ClientState.UNSUBSCRIBED


def test_wire_fault_ops_replay_exactly() -> None:
    """The new ops are trace ops: a recorded run replays action for action on a fresh simulator."""
    sim = _sim()
    _stable(sim)
    sim.advance(600)
    sim.duplicate_request("c1")
    sim.delay_request("c2")
    sim.advance(600)
    sim.cut_connection("c1")
    sim.release("c2")
    sim.advance(1000)
    sim.client_step("c1")
    again = _sim()
    again.replay(list(sim.actions))
    assert again.world == sim.world and again.actions == sim.actions


def test_faults_profile_has_the_rules_and_passes_on_the_model() -> None:
    from conformance.engine.profiles import get_profile
    from conformance.engine.run import run_check
    from conformance.protocols.classic.machine import MachineSettings
    from conformance.protocols.consumer.machine import make_machine

    with_faults, without = make_machine(MachineSettings(wire_faults=True)), make_machine(MachineSettings())
    for name in ("duplicate_request", "cut_connection", "delay_request", "release"):
        assert hasattr(with_faults, name) and not hasattr(without, name)
    result = run_check("consumer", profile=get_profile("faults"), max_examples=30, seed_value=1)
    assert result.violations == [], result.steps
