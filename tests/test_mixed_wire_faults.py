"""Wire faults inside mixed groups on the model (docs/faults.md): what the coordinator applies and what the
members hear when an answer is lost, a connection cut, a request duplicated or held
(`model.mixed.world.MixedRun`); every consumer and mixed invariant holds throughout, and
the fault ops replay from a trace (`conformance.protocols.mixed.trace`)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.protocols.mixed.trace import make_mixed_run
from model.classic.client import ClassicClient
from model.classic.messages import HeartbeatRequest, HeartbeatResponse
from model.consumer.messages import ConsumerGroupHeartbeatResponse
from model.errors import ErrorCode
from model.invariants import REGISTRY, Invariant, for_protocol, load_all
from model.mixed.coordinator import MixedCoordinator
from model.mixed.world import CLASSIC_STATE_INVARIANTS, MixedRun

load_all()

INVARIANTS: tuple[Invariant, ...] = (
    tuple(for_protocol("consumer"))
    + tuple(for_protocol("mixed"))
    + tuple(REGISTRY[i] for i in CLASSIC_STATE_INVARIANTS)
)


def _classic(run: MixedRun, name: str) -> None:
    run.add_classic(
        name, topics=("t",), assignors=("range",), session_timeout_ms=10_000, rebalance_timeout_ms=20_000
    )


def _mixed(run: MixedRun) -> MixedRun:
    """c1 forms a classic group, k2 upgrades it, c3 joins the consumer group (docs/protocol-reference.md#b13)."""
    run.topic("t", 4)
    _classic(run, "c1")
    run.run_for(20_000)
    run.add_consumer("k2", topics=("t",))
    run.run_for(20_000)
    _classic(run, "c3")
    run.run_for(20_000)
    assert run.group_type() == "consumer"
    return run


def _answers(run: MixedRun, since: int) -> list[tuple[str, Any]]:
    return run.responses[since:]


def _until_sent(run: MixedRun, name: str) -> None:
    """Tick until the fault armed for ``name`` met its next request."""
    for _ in range(20):
        if name not in run.wire_next:
            return
        run.tick()
    raise AssertionError(f"{name} sent nothing")


@pytest.mark.parametrize("fault", ["lose_response", "cut_connection"])
@pytest.mark.parametrize("member", ["c1", "k2"])
def test_a_lost_answer_is_applied_and_the_member_takes_the_disconnect_path(fault: str, member: str) -> None:
    run = _mixed(MixedRun(MixedCoordinator(), INVARIANTS))
    g = run.state.consumer.groups["g"]
    epochs = {m: x.member_epoch for m, x in g.members.items()}
    records = len(run.records)
    getattr(run, fault)(member)
    assert run.wire_next == {member: "drop" if fault == "lose_response" else "cut"}
    client = run.clients[member]
    for _ in range(20):
        heard = len(run.responses)
        run.tick()
        if member not in run.wire_next:
            break
    # the coordinator answered it but the member heard nothing, and gave the request up (classic:
    # rejoin with its member id; KIP-848: resend every field)
    assert all(name != member for name, _ in _answers(run, heard))
    assert client.inflight is None or isinstance(client, ClassicClient)
    run.run_for(30_000)
    assert run.violations == []
    # the group converges again with the same members, nobody fenced by the fault
    assert set(run.state.consumer.groups["g"].members) == set(epochs)
    assert len(run.records) >= records


def test_a_duplicated_request_is_applied_twice_and_only_the_original_is_heard() -> None:
    run = _mixed(MixedRun(MixedCoordinator(), INVARIANTS))
    run.run_for(10_000)
    steps, heard = len(run.observations) if run.keep_observations else 0, len(run.responses)
    run.duplicate_request("c1")
    _until_sent(run, "c1")
    # two deliveries for c1's heartbeat: the original (heard) and the copy (heard by nobody)
    heard_now = [r for name, r in _answers(run, heard) if name == "c1"]
    assert len(heard_now) == 1 and isinstance(heard_now[0], HeartbeatResponse)
    assert run.last.deliveries and isinstance(run.last.deliveries[0].response, HeartbeatResponse)
    assert run.last.deliveries[0].response.error == ErrorCode.NONE  # a repeated heartbeat is harmless
    run.duplicate_request("k2")
    _until_sent(run, "k2")
    copy = next(d.response for o in [run.last] for d in o.deliveries)
    assert isinstance(copy, ConsumerGroupHeartbeatResponse) and copy.error_code == ErrorCode.NONE
    run.run_for(20_000)
    assert run.violations == [] and steps == 0


def test_a_held_heartbeat_arrives_after_its_session_expired() -> None:
    """The classic member's heartbeat is held past its session: the coordinator removed it meanwhile
    and answers UNKNOWN_MEMBER_ID at the release; the member rejoins and the group converges."""
    run = _mixed(MixedRun(MixedCoordinator(), INVARIANTS))
    run.delay_request("c3")
    _until_sent(run, "c3")
    _ref, request = run.wire_held["c3"]
    assert isinstance(request, HeartbeatRequest)
    run.run_for(12_000)  # c3 sends nothing while it waits; its session (10 s) expires
    assert "c3" not in {m for m in run.state.consumer.groups["g"].members}
    heard = len(run.responses)
    run.release("c3")
    (answer,) = [r for name, r in _answers(run, heard) if name == "c3"]
    assert isinstance(answer, HeartbeatResponse) and answer.error == ErrorCode.UNKNOWN_MEMBER_ID
    run.run_for(30_000)
    assert run.violations == []
    assert len(run.state.consumer.groups["g"].members) == 3  # c3 rejoined under a new member id


def test_a_held_request_reaches_the_coordinator_before_the_members_leave_and_a_failover() -> None:
    run = _mixed(MixedRun(MixedCoordinator(), INVARIANTS))
    run.delay_request("k2")
    _until_sent(run, "k2")
    assert "k2" in run.wire_held
    run.failover()  # the network delivers what it held before the coordinator goes
    assert run.wire_held == {} and run.violations == []
    run.delay_request("c3")
    _until_sent(run, "c3")
    run.stop("c3")  # the held heartbeat first, then the LeaveGroup (one connection keeps its order)
    assert run.wire_held == {}
    run.run_for(20_000)
    assert run.violations == []
    assert "c3" not in {m for m in run.state.consumer.groups["g"].members}


def test_the_fault_ops_replay_from_a_trace() -> None:
    from conformance.protocols.mixed.trace import apply_op

    run = make_mixed_run({"seed": 3}, {}, "test")
    _mixed(run)
    run.lose_response("c1")
    run.duplicate_request("k2")
    run.delay_request("c3")
    run.run_for(3_000)
    run.release("c3")
    run.cut_connection("k2")
    run.run_for(5_000)
    again = make_mixed_run({"seed": 3}, {}, "test")
    for entry in run.log:
        if entry.op.get("op") != "cont":
            apply_op(again, dict(entry.op), "test")
    assert [type(e.obs.event).__name__ if e.obs else None for e in again.log] == [
        type(e.obs.event).__name__ if e.obs else None for e in run.log
    ]
    assert again.responses == run.responses and again.state == run.state


def test_the_faults_profile_drives_the_mixed_fault_rules_on_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`check --protocol mixed --profile faults` on the model: the machine's fault rules arm, the
    faults happen (answers lost, requests held and released) and no invariant fails; the other
    profiles keep their rule set."""
    from collections import Counter

    from conformance.engine.profiles import get_profile
    from conformance.engine.run import run_check
    from conformance.protocols.classic.machine import MachineSettings
    from conformance.protocols.mixed.machine import make_machine

    calls: Counter[str] = Counter()
    for name in ("_lost", "_hold_request", "_release_held"):
        original = getattr(MixedRun, name)

        def counted(self: MixedRun, *args: Any, _original: Any = original, _name: str = name) -> Any:
            calls[_name] += 1
            return _original(self, *args)

        monkeypatch.setattr(MixedRun, name, counted)
    result = run_check("mixed", profile=get_profile("faults"), max_examples=8, seed_value=0)
    assert result.violations == [], result.steps
    assert calls["_lost"] > 0 and calls["_hold_request"] > 0 and calls["_release_held"] > 0, calls
    with_faults, without = make_machine(MachineSettings(wire_faults=True)), make_machine(MachineSettings())
    for rule in ("wire_fault", "release"):
        assert hasattr(with_faults, rule) and not hasattr(without, rule)
