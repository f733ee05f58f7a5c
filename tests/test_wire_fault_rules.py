"""Wire faults as machine rules: a duplicated request and a cut connection (model/classic/sim.py
DuplicateRequest, CutConnection; conformance/protocols/classic/faults.py maps them onto the fault proxy).

On the model: a duplicated request is applied twice, the copy only once the original is answered
(Kafka serves one connection's requests in order); a cut abandons the awaited answer, the
coordinator keeps what it applied and the client takes the disconnect path (rejoin). Against
Apache Kafka (marked ``target``): the oracle judges the copies' answers too, the model and Kafka
agree, and a model that answers a duplicated LeaveGroup wrongly is caught. The same for the KIP-848
consumer protocol (lost, duplicated, cut and held heartbeats; a model that bumps the member epoch on
a duplicated heartbeat is caught)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.engine.checker import Checker
from conformance.engine.profiles import REAL_PROFILES
from conformance.protocols import get_kit
from conformance.protocols.build import make_classic_sim, settle_round
from conformance.targets.open import open_target
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupResponse
from model.classic.sim import CutConnection, DuplicateRequest
from model.classic.state import GroupState
from model.consumer.coordinator import ConsumerCoordinator
from model.errors import ErrorCode

CLASSIC = get_kit("classic")


def _sim(n: int = 2, **kw: Any) -> Any:
    clients = [
        {"name": f"c{i}", "assignors": ["range"], "session_timeout_ms": 1500, "rebalance_timeout_ms": 2000}
        for i in range(1, n + 1)
    ]
    return make_classic_sim({"t": 2}, clients, {}, {}, **kw)


def _stable(sim: Any, names: list[str], seen: list[Any]) -> None:
    for _ in range(12):
        settle_round(sim, names, seen.append)
        g = sim.port.group("g")
        if (
            g is not None
            and g.state == GroupState.STABLE
            and all(c.generation > 0 for c in sim.clients.values())
        ):
            if all(n not in sim.awaiting for n in names):
                return
    raise AssertionError("the group did not become stable")


def test_duplicated_heartbeat_is_applied_twice_and_answered_once() -> None:
    sim, seen = _sim(), []
    _stable(sim, ["c1", "c2"], seen)
    assert isinstance(sim.duplicate_request("c1").event, DuplicateRequest)
    obs = sim.client_step("c1")
    beats = [d for d in obs.deliveries if isinstance(d.response, HeartbeatResponse)]
    assert len(beats) == 1 and "c1" not in sim.awaiting  # the original, answered and delivered
    assert len(sim.copies_due) == 1  # the copy is applied at the start of the next step
    nxt = sim.advance(10)
    copies = [d for d in nxt.deliveries if isinstance(d.response, HeartbeatResponse)]
    assert len(copies) == 1 and copies[0].ref != beats[0].ref  # the copy has a ref of its own
    assert sim.owner_of_ref.get(copies[0].ref) is None  # ... and goes to no client
    assert not sim.copies and not sim.copies_due


def test_copy_of_a_parked_join_waits_for_the_join_to_complete() -> None:
    sim, seen = _sim(), []
    _stable(sim, ["c1", "c2"], seen)
    sim.clients["c1"].needs_rejoin = True
    sim.duplicate_request("c1")
    obs = sim.client_step("c1")  # c1 rejoins: parked until c2 rejoins too
    assert isinstance(obs.event.request, JoinGroupRequest)
    assert [d for d in obs.deliveries if isinstance(d.response, JoinGroupResponse)] == []
    assert len(sim.copies) == 1  # the copy waits behind the parked original
    done = None
    for _ in range(6):
        o = sim.client_step("c2") or sim.advance(100)
        joins = [d for d in o.deliveries if isinstance(d.response, JoinGroupResponse)]
        if len(joins) >= 2:
            done = joins
            break
    assert done is not None, "the join did not complete"
    assert not sim.copies and len(sim.copies_due) == 1
    copy = [d for d in sim.advance(10).deliveries if isinstance(d.response, JoinGroupResponse)]
    # the copy arrives in CompletingRebalance from a known member: answered with the current generation
    assert len(copy) == 1 and sim.owner_of_ref.get(copy[0].ref) is None
    assert copy[0].response.error == ErrorCode.NONE
    assert copy[0].response.generation_id == done[0].response.generation_id


def test_cut_connection_abandons_the_parked_join_and_the_client_rejoins() -> None:
    sim, seen = _sim(), []
    _stable(sim, ["c1", "c2"], seen)
    sim.clients["c1"].needs_rejoin = True
    sim.client_step("c1")  # parked
    member = sim.clients["c1"].member_id
    assert "c1" in sim.awaiting
    obs = sim.cut_connection("c1")
    assert isinstance(obs.event, CutConnection)
    assert "c1" not in sim.awaiting
    g = sim.port.group("g")
    assert g is not None and member in {m.member_id for m in g.members}  # the coordinator kept it
    again = sim.client_step("c1")  # Java's disconnect path: join again, same member id
    assert isinstance(again.event.request, JoinGroupRequest) and again.event.request.member_id == member


def test_faults_profile_drives_the_rules_on_the_model() -> None:
    from conformance.engine.profiles import get_profile
    from conformance.engine.run import run_check

    result = run_check("classic", profile=get_profile("faults"), max_examples=40, seed_value=1)
    assert result.violations == [], result.steps
    from conformance.protocols.classic.machine import MachineSettings, make_machine

    with_faults, without = make_machine(MachineSettings(wire_faults=True)), make_machine(MachineSettings())
    for name in ("cut_connection", "duplicate_request", "delay_request", "release"):
        assert hasattr(with_faults, name) and not hasattr(without, name)


def test_held_request_arrives_after_others_and_after_its_session() -> None:
    """DelayRequest on the model: c2's heartbeat is held while c1 acts and c2's session runs out;
    released, the coordinator has expired c2 (UNKNOWN_MEMBER_ID) and c2 rejoins."""
    from model.classic.sim import DelayRequest

    sim, seen = _sim(), []
    _stable(sim, ["c1", "c2"], seen)
    assert isinstance(sim.delay_request("c2").event, DelayRequest)
    sim.advance(600)
    held = sim.client_step("c2")
    assert isinstance(held.event, DelayRequest) and held.deliveries == () and "c2" in sim.held
    assert sim.client_step("c2") is None  # one request in flight
    for _ in range(4):
        sim.client_step("c1")
        sim.advance(500)
    member = sim.clients["c2"].member_id
    late = sim.release("c2")
    answer = next(d.response for d in late.deliveries if d.ref == late.event.ref)
    assert isinstance(answer, HeartbeatResponse) and answer.error == ErrorCode.UNKNOWN_MEMBER_ID
    assert member not in {m.member_id for m in sim.port.group("g").members}
    again = sim.client_step("c2")  # Java: UNKNOWN_MEMBER_ID -> reset, rejoin
    assert isinstance(again.event.request, JoinGroupRequest)


def test_held_request_is_dropped_when_the_client_restarts() -> None:
    sim, seen = _sim(), []
    _stable(sim, ["c1", "c2"], seen)
    sim.delay_request("c2")
    sim.advance(600)
    sim.client_step("c2")
    assert "c2" in sim.held
    sim.restart("c2")  # the old process's connection closes: the held request never arrives
    assert sim.held == {} and sim.release("c2") is None


# ---------------------------------------------------------------------------------------------
# Apache Kafka: the proxy duplicates and cuts, the oracle judges
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kafka() -> Iterator[Any]:
    with open_target("apache-kafka") as handle:
        yield handle


class LeaveTwiceIsFine(ClassicCoordinator):
    """A broken model: a LeaveGroup from a member that already left is answered NONE (Kafka:
    UNKNOWN_MEMBER_ID for that member, GroupMetadataManager classicGroupLeave)."""

    def handle(self, state, request, ref, now):  # type: ignore[no-untyped-def]
        from dataclasses import replace

        result = super().handle(state, request, ref, now)
        result.deliveries = [
            replace(
                d,
                response=replace(
                    d.response, members=tuple(replace(m, error=ErrorCode.NONE) for m in d.response.members)
                ),
            )
            if isinstance(d.response, LeaveGroupResponse)
            else d
            for d in result.deliveries
        ]
        return result


def _faults_on_kafka(handle: Any, broken: bool) -> tuple[Any, list[tuple[str, str]]]:
    from conformance.protocols.classic.realtime import REAL_TIMING, RealTimeSim

    factory = CLASSIC.real_setup(handle, REAL_PROFILES["dev"])[0]
    port_factory = (lambda c: factory(LeaveTwiceIsFine(c.config, c.chooser))) if broken else factory
    clients = [
        {"name": f"c{i}", "assignors": ["range"], "topics": ["t"], "session_timeout_ms": 1500,
         "rebalance_timeout_ms": 2000}
        for i in (1, 2)
    ]  # fmt: skip
    sim = make_classic_sim(
        {"t": 2}, clients, handle.model_config, {}, port_factory=port_factory, sim_class=RealTimeSim,
        request_timeout_ms=REAL_TIMING.request_timeout_ms,
    )  # fmt: skip
    checker, found, n = Checker("classic"), [], [0]

    def judge(obs: Any) -> None:
        if obs is None:
            return
        n[0] += 1
        found.extend((v.invariant, v.message) for v in checker.check(obs, n[0]))
        found.extend((f.rule, f.message) for f in sim.port.take_findings())

    try:
        for _ in range(12):
            settle_round(sim, ["c1", "c2"], judge)
            g = sim.port.group("g")
            if g is not None and g.state == GroupState.STABLE and not sim.awaiting:
                break
        judge(sim.duplicate_request("c1"))  # a heartbeat twice
        settle_round(sim, ["c1", "c2"], judge)
        sim.clients["c2"].needs_rejoin = True
        judge(sim.client_step("c2"))  # c2 rejoins: parked until c1 rejoins
        judge(sim.cut_connection("c2"))  # ... and its connection is cut under the parked join
        for _ in range(4):
            settle_round(sim, ["c1", "c2"], judge)
        judge(sim.duplicate_request("c1"))
        judge(sim.leave("c1"))  # a LeaveGroup twice: the copy's answer is UNKNOWN_MEMBER_ID
        judge(sim.advance(300))
    finally:
        sim.port.close()
    return sim, found


@pytest.mark.target
def test_duplicates_and_cuts_agree_with_apache_kafka(kafka: Any) -> None:
    proxy = kafka.session.adapter.proxy
    assert proxy is not None
    proxy.take_events()
    sim, found = _faults_on_kafka(kafka, broken=False)
    kinds = [e.kind for e in proxy.take_events()]
    assert kinds.count("duplicate") == 2 and "cut" in kinds, kinds
    assert sum("applies the copy" in line for line in sim.port.log) == 2, sim.port.log
    assert found == [], found


@pytest.mark.target
def test_a_model_wrong_about_a_duplicated_leave_is_caught_on_apache_kafka(kafka: Any) -> None:
    _sim_, found = _faults_on_kafka(kafka, broken=True)
    assert any(rule == "oracle.LeaveGroup" for rule, _ in found), found


# ---------------------------------------------------------------------------------------------
# The KIP-848 consumer protocol on Apache Kafka: lost, duplicated, cut and held heartbeats
# (conformance/protocols/consumer/faults.py), on the same broker start
# ---------------------------------------------------------------------------------------------


class RepeatBumpsEpoch(ConsumerCoordinator):
    """A broken model: a heartbeat that repeats the member's previous one field for field within
    50 ms (a duplicate on the wire) is answered with the member epoch bumped once more. Kafka
    answers a repeated heartbeat with the same member state (GroupMetadataManager
    consumerGroupHeartbeat: nothing changed, no new epoch)."""

    def handle_consumer_group_heartbeat(self, state, request, ref, now):  # type: ignore[no-untyped-def]
        from dataclasses import replace

        result = super().handle_consumer_group_heartbeat(state, request, ref, now)
        seen = self.__dict__.setdefault("seen", {})
        prev = seen.get(request.member_id)
        if prev is not None and prev[2] != ref and prev[0] == request and now - prev[1] <= 50:
            result.deliveries = [
                replace(d, response=replace(d.response, member_epoch=d.response.member_epoch + 1))
                if d.ref == ref and d.response.error_code == ErrorCode.NONE and request.member_epoch > 0
                else d
                for d in result.deliveries
            ]
        elif prev is None or prev[2] != ref:
            seen[request.member_id] = (request, now, ref)
        return result


def _until(make: Any, sim: Any, judge: Any, tries: int = 20) -> Any:
    """Call ``make()`` until the member had something to send (its heartbeat was due)."""
    for _ in range(tries):
        got = make()
        if got:
            return got
        judge(sim.advance(100))
    raise AssertionError("the member never had a heartbeat to send")


def _consumer_faults_on_kafka(handle: Any, broken: bool) -> tuple[Any, list[tuple[str, str]]]:
    from conformance.cli.check import real_profile
    from conformance.protocols.build import make_consumer_sim
    from conformance.protocols.consumer.realtime import RealTimeConsumerSim
    from conformance.protocols.consumer.setup import consumer_setup

    factory, config, _profile = consumer_setup(handle, real_profile("faults"))
    port_factory = (lambda c: factory(RepeatBumpsEpoch(c.config, c.chooser))) if broken else factory
    clients = [{"name": f"c{i}", "topics": ["t"], "rebalance_timeout_ms": 1000} for i in (1, 2)]
    sim = make_consumer_sim(
        {"t": 2}, clients, config, {}, port_factory=port_factory, sim_class=RealTimeConsumerSim
    )
    checker, found, n = Checker("consumer"), [], [0]

    def judge(obs: Any) -> None:
        for o in obs if isinstance(obs, list) else [obs]:
            if o is None:
                continue
            n[0] += 1
            found.extend((v.invariant, v.message) for v in checker.check(o, n[0]))
            found.extend((f.rule, f.message) for f in sim.port.take_findings())

    try:
        for _ in range(20):  # the group forms and settles
            for name in ("c1", "c2"):
                judge(sim.client_step(name))
            if all(c.member_epoch > 0 and c.owned for c in sim.clients.values()):
                break
            judge(sim.advance(150))
        judge(_until(lambda: sim.duplicate_request("c1"), sim, judge))  # a heartbeat twice
        judge(_until(lambda: sim.cut_connection("c2"), sim, judge))  # answer lost, connection closed
        judge(_until(lambda: sim.delay_request("c1"), sim, judge))  # c1's heartbeat held ...
        for _ in range(3):  # ... while c2 goes on
            judge(sim.advance(200))
            judge(sim.client_step("c2"))
        judge(sim.release("c1"))
        judge(_until(lambda: sim.delay_request("c2"), sim, judge))  # held past its 2 s session
        for _ in range(6):
            judge(sim.advance(500))
            judge(sim.client_step("c1"))
        late = sim.release("c2")
        judge(late)
        for _ in range(6):  # c2 rejoins
            judge(sim.advance(200))
            for name in ("c1", "c2"):
                judge(sim.client_step(name))
    finally:
        sim.port.close()
    return (sim, late), found


@pytest.mark.target
def test_consumer_wire_faults_agree_with_apache_kafka(kafka: Any) -> None:
    from model.consumer.messages import ConsumerGroupHeartbeatResponse

    proxy = kafka.session.adapter.proxy
    proxy.take_events()
    (sim, late), found = _consumer_faults_on_kafka(kafka, broken=False)
    kinds = [e.kind for e in proxy.take_events()]
    for kind in ("duplicate", "drop", "cut", "delay", "release"):
        assert kind in kinds, kinds
    assert found == [], found
    answer = next(d.response for d in late.deliveries if d.ref == late.event.ref)
    assert isinstance(answer, ConsumerGroupHeartbeatResponse)
    assert answer.error_code == ErrorCode.UNKNOWN_MEMBER_ID  # Kafka expired it meanwhile, as the model
    assert sim.client("c2").member_epoch > 0  # and it joined again


@pytest.mark.target
def test_a_model_that_bumps_the_epoch_on_a_duplicated_heartbeat_is_caught_on_apache_kafka(kafka: Any) -> None:
    _sim_, found = _consumer_faults_on_kafka(kafka, broken=True)
    assert any(rule == "oracle.ConsumerGroupHeartbeat" for rule, _ in found), found


@pytest.mark.target
def test_a_held_classic_heartbeat_arrives_after_its_session_and_kafka_agrees(kafka: Any) -> None:
    """DelayRequest on Apache Kafka: c2's heartbeat is held by the proxy while c1 goes on and c2's
    1.5 s session runs out; released, it reaches a group that has expired c2 (model and Kafka)."""
    from conformance.protocols.classic.realtime import REAL_TIMING, RealTimeSim
    from model.classic.sim import DelayRequest

    proxy = kafka.session.adapter.proxy
    proxy.take_events()
    clients = [
        {"name": f"c{i}", "assignors": ["range"], "topics": ["t"], "session_timeout_ms": 1500,
         "rebalance_timeout_ms": 2000}
        for i in (1, 2)
    ]  # fmt: skip
    factory = CLASSIC.real_setup(kafka, REAL_PROFILES["dev"])[0]
    sim = make_classic_sim(
        {"t": 2}, clients, kafka.model_config, {}, port_factory=factory, sim_class=RealTimeSim,
        request_timeout_ms=REAL_TIMING.request_timeout_ms,
    )  # fmt: skip
    checker, found, n = Checker("classic"), [], [0]

    def judge(obs: Any) -> Any:
        if obs is not None:
            n[0] += 1
            found.extend((v.invariant, v.message) for v in checker.check(obs, n[0]))
            found.extend((f.rule, f.message) for f in sim.port.take_findings())
        return obs

    try:
        for _ in range(12):
            settle_round(sim, ["c1", "c2"], judge)
            g = sim.port.group("g")
            if g is not None and g.state == GroupState.STABLE and not sim.awaiting:
                break
        judge(sim.delay_request("c2"))
        for _ in range(20):  # c2's next heartbeat goes on the wire and is held
            got = judge(sim.client_step("c2"))
            if got is not None:
                assert isinstance(got.event, DelayRequest) and "c2" in sim.held
                break
            judge(sim.advance(100))
        for _ in range(7):  # c1 goes on while c2's session runs out
            judge(sim.client_step("c1"))
            judge(sim.advance(300))
        late = judge(sim.release("c2"))
        answer = next(d.response for d in late.deliveries if d.ref == late.event.ref)
        for _ in range(6):
            settle_round(sim, ["c1", "c2"], judge)
    finally:
        sim.port.close()
    kinds = [e.kind for e in proxy.take_events()]
    assert "delay" in kinds and "release" in kinds, kinds
    assert found == [], found
    assert isinstance(answer, HeartbeatResponse) and answer.error == ErrorCode.UNKNOWN_MEMBER_ID, answer
