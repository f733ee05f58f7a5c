"""Adapter layer: wire guards (a fake server that misbehaves), id renaming, and the oracle against
Apache Kafka with the reference model and with a broken model (the oracle must notice)."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from conformance.engine.run import run_check
from conformance.errors import TargetError, UsageError
from conformance.protocols import get_kit
from conformance.protocols.classic.codec import API_HEARTBEAT, build, payload_class
from conformance.protocols.classic.oracle import PROVISIONAL, Hypo, OraclePort, Timing, _rename_hypo, rename
from conformance.targets.open import open_target
from conformance.wire.framing import Network
from model.classic.coordinator import ClassicCoordinator
from model.classic.state import ClassicGroup, ClassicState, GroupState, Member, Timer

CLASSIC = get_kit("classic")

# ---------------------------------------------------------------------------------------------
# a server that answers every request with bytes we choose
# ---------------------------------------------------------------------------------------------


def heartbeat_answer(corr: int, error: int = 0) -> bytes:
    """A valid Heartbeat v0 response body (correlation id, error code)."""
    return struct.pack(">ih", corr, error)


def serve_once(answer: Callable[[int], bytes]) -> tuple[int, threading.Thread]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def run() -> None:
        conn, _ = srv.accept()
        with conn, srv:
            size = struct.unpack(">i", conn.recv(4))[0]
            data = b""
            while len(data) < size:
                data += conn.recv(size - len(data))
            corr = struct.unpack_from(">i", data, 4)[0]
            conn.sendall(answer(corr))
            time.sleep(0.2)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return port, t


def exchange(answer: Callable[[int], bytes]) -> tuple[list, list]:  # type: ignore[type-arg]
    port, t = serve_once(answer)
    net = Network()
    conn = net.open("127.0.0.1", port, 2.0, "m")
    cls = payload_class(API_HEARTBEAT, 0, True)
    net.send(conn, build(cls, {"group_id": "g", "generation_id": 1, "member_id": "m"}), "ref")
    arrivals = []
    end = time.monotonic() + 2
    while time.monotonic() < end and not arrivals and not net.findings:
        arrivals += net.poll(0.05)
    t.join(2)
    net.poll(0.3)
    findings = net.take_findings()
    net.close_all()
    return arrivals, findings


def framed(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def test_well_formed_answer_has_no_finding() -> None:
    arrivals, findings = exchange(lambda c: framed(heartbeat_answer(c)))
    assert findings == [] and len(arrivals) == 1 and int(arrivals[0].value.error_code.value) == 0


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (lambda c: framed(heartbeat_answer(c) + b"\x00\x07"), "trailing-bytes"),
        (lambda c: framed(heartbeat_answer(c + 1)), "correlation-id"),
        (lambda c: framed(struct.pack(">i", c) + b"\x00"), "undecodable"),
        (lambda c: struct.pack(">i", 2**31 - 1) + heartbeat_answer(c), "frame-size"),
        (lambda c: struct.pack(">i", 40) + heartbeat_answer(c), "closed"),
        (lambda c: b"", "closed"),
    ],
    ids=["trailing", "correlation", "truncated-body", "oversized", "closed-mid-frame", "closed"],
)
def test_misbehaving_answers_are_findings_with_bytes(answer: Callable[[int], bytes], kind: str) -> None:
    _arrivals, findings = exchange(answer)
    assert findings and findings[0].kind == kind, findings
    assert findings[0].describe().startswith(f"wire {kind}")


def test_rename_reaches_members_timers_and_leader() -> None:
    old, new = f"c1-{PROVISIONAL}000000010001", "c1-5f0c"
    member = Member(old, None, "c1", 1500, 2000, "consumer", (("range", b""),))
    state = ClassicState(groups={"g": ClassicGroup("g", leader=old, members={old: member})})
    state.groups["g"].timers[f"expire:{old}"] = Timer(10)
    out = rename(state, old, new)
    g = out.groups["g"]
    assert g.leader == new and list(g.members) == [new] and g.members[new].member_id == new
    assert list(g.timers) == [f"expire:{new}"] and state.groups["g"].leader == old  # original untouched


def test_binding_a_provisional_id_keeps_its_timer_slack() -> None:
    """A new member's pending timer is widened by its late MEMBER_ID_REQUIRED answer, which is also
    what names the member: the slack must follow the rename or the timer fires early in the oracle."""
    old, new = f"c1-{PROVISIONAL}000000010001", "c1-5f0c"
    member = Member(old, None, "c1", 1500, 2000, "consumer", (("range", b""),))
    h = Hypo(ClassicState(groups={"g": ClassicGroup("g", members={old: member})}))
    h.slack = {("g", f"pending:{old}", 1501): 635}
    h.armed = {7: (1, (("g", f"expire:{old}", 1501),))}
    _rename_hypo(h, old, new)
    assert h.slack == {("g", f"pending:{new}", 1501): 635}
    assert h.armed == {7: (1, (("g", f"expire:{new}", 1501),))}


def _bare_port(answers: dict[int, tuple[int, int]]) -> OraclePort:
    """An OraclePort without a target: only what `_seen_running` reads (ref -> (sent, answered))."""
    port = OraclePort.__new__(OraclePort)
    port.timing = Timing()
    port.requests = {ref: ("c1", None, 4, sent) for ref, (sent, _at) in answers.items()}  # type: ignore[misc]
    port.answers = {ref: (None, at) for ref, (_sent, at) in answers.items()}
    return port


def test_a_due_timer_is_certain_only_once_the_target_was_seen_running_after_it() -> None:
    """A broker paused across a deadline races the timeout with the requests queued meanwhile
    (CoordinatorRuntime.EventBasedCoordinatorTimer enqueues it when the reaper runs): the oracle
    counts a due timer as fired only after an answer to a request sent at or after the deadline."""
    quiet = _bare_port({1: (900, 905)})  # nothing sent after the deadline (1000)
    assert not quiet._seen_running(1000, 1400)
    assert quiet._seen_running(1000, 1000 + Timing().unseen_cap_ms)  # beyond the cap: out of scope
    seen = _bare_port({1: (900, 905), 2: (1100, 1110)})
    assert seen._seen_running(1000, 1400)
    assert not seen._seen_running(1000, 1130)  # that answer came too close before the operation
    assert not seen._seen_running(1200, 1400)  # and was sent before this deadline


def test_timers_fired_before_a_request_are_shown_from_the_state_they_left() -> None:
    """While RealTimeSim shows the timers that fired just before a request (`take_pre_split`), the
    port's view is the state before that request: its groups, transitions and durable records."""
    from model.classic.world import GroupSnap

    port = _bare_port({})
    early = ClassicGroup("g", state=GroupState.COMPLETING_REBALANCE, generation=2)
    late = ClassicGroup("g", state=GroupState.PREPARING_REBALANCE, generation=2)
    h = Hypo(ClassicState(groups={"g": late}))
    h.transitions = [
        (GroupState.EMPTY, GroupState.COMPLETING_REBALANCE),
        (GroupState.COMPLETING_REBALANCE, GroupState.PREPARING_REBALANCE),
    ]
    port.hypos = [h]
    port.pre_split = (frozenset({3}), {"g": GroupSnap.of(early)}, 1, 0)
    port.mid_view = None
    refs, groups, transitions, durable = port.take_pre_split() or ((), {}, 0, 0)
    assert refs == {3} and port.take_pre_split() is None  # taken once
    port.mid_view = (groups, transitions, durable)
    assert port.group("g") == GroupSnap.of(early)
    assert port.take_transitions() == ((GroupState.EMPTY, GroupState.COMPLETING_REBALANCE),)
    port.mid_view = None
    assert port.group("g") == GroupSnap.of(late)
    assert port.take_transitions() == ((GroupState.COMPLETING_REBALANCE, GroupState.PREPARING_REBALANCE),)


def test_consumer_oracle_cutoff_waits_for_the_target_to_be_seen_running() -> None:
    """The consumer and mixed oracles' certain-fired cutoff: ``late_ms`` before the operation, no later
    than the last send the target answered in time, and never more than ``unseen_cap_ms`` behind."""
    from conformance.protocols.consumer.oracle import ConsumerOraclePort, ConsumerTiming

    port = ConsumerOraclePort.__new__(ConsumerOraclePort)
    port.timing = ConsumerTiming()
    assert port._certain_cutoff(5000) == 5000 - port.unseen_cap_ms  # never seen running
    port._note_answer(4000, 4004)
    assert port._certain_cutoff(5000) == 3996  # seen running at 4000 (less the 4 ms it may arm late)
    port._note_answer(4800, 4805)
    assert port._certain_cutoff(5000) == 4500  # late_ms bounds it
    port._note_answer(4900, 4990)  # answered too close to the operation to vouch for it
    assert port._certain_cutoff(5000) == 4500
    port._note_answer(4995, 5700)  # a 705 ms answer: the target may arm its timers that late
    assert port._certain_cutoff(6000) == 4995 - 705  # seen running at 4995 vouches for 705 ms less
    port._note_answer(6500, 6505)
    assert port._certain_cutoff(7000) == 6500 - 705
    port._note_answer(7100, 7105)
    assert port._certain_cutoff(8000) == 7100 - 705  # the 705 ms answer is still among the recent ones


def test_unknown_target_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown target"), open_target("no-such-target"):
        pass


def test_unreachable_host_port_is_a_target_error() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    t0 = time.monotonic()
    with pytest.raises(TargetError, match="refused"), open_target(f"127.0.0.1:{port}"):
        pass
    assert time.monotonic() - t0 < 5


def test_target_that_never_answers_is_a_target_error_within_deadline() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    from conformance.wire.connection import KafkaAdapter

    t0 = time.monotonic()
    with pytest.raises(TargetError, match="no answer"):
        KafkaAdapter(f"127.0.0.1:{port}", timeout_s=0.5).connect()
    assert time.monotonic() - t0 < 3
    srv.close()


# ---------------------------------------------------------------------------------------------
# the oracle against Apache Kafka
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kafka() -> Iterator[object]:
    with open_target("apache-kafka") as handle:
        yield handle


def _run(
    handle: object, examples: int, seed: int, factory: Callable[[ClassicCoordinator], object] | None = None
):  # type: ignore[no-untyped-def]
    from conformance.cli.check import REAL_PROFILES

    port_factory = CLASSIC.real_setup(handle, REAL_PROFILES["dev"])[0]
    if factory is not None:
        inner = port_factory

        def port_factory(coord: ClassicCoordinator) -> object:  # type: ignore[misc]
            return inner(factory(coord))  # type: ignore[misc]

    return run_check(
        "classic",
        target="apache-kafka",
        profile=REAL_PROFILES["dev"],
        max_examples=examples,
        seed_value=seed,
        port_factory=port_factory,
        config=handle.model_config,  # type: ignore[attr-defined]
        real_time=True,
    )


@pytest.mark.target
def test_oracle_agrees_with_apache_kafka(kafka: object) -> None:
    result = _run(kafka, 3, 7)
    assert result.violations == [], result.steps
    assert kafka.session.rtt_ms  # type: ignore[attr-defined]


class HeartbeatIgnoresRebalance(ClassicCoordinator):
    """A broken model: heartbeats never say REBALANCE_IN_PROGRESS (Kafka does, GMM L6005)."""

    def handle_heartbeat(self, state, req, ref, now):  # type: ignore[no-untyped-def]
        from model.classic.messages import HeartbeatResponse
        from model.errors import ErrorCode

        result = super().handle_heartbeat(state, req, ref, now)
        result.deliveries = [
            replace(d, response=HeartbeatResponse(ErrorCode.NONE))
            if d.response.error == ErrorCode.REBALANCE_IN_PROGRESS
            else d
            for d in result.deliveries
        ]
        return result


@pytest.mark.target
def test_oracle_catches_a_model_that_differs_from_kafka(kafka: object) -> None:
    """Scripted, so the heartbeat meets the rebalance whatever the machine's load: two members
    settle, c2 rejoins (parked), c1 heartbeats until it is answered."""
    from conformance.cli.check import REAL_PROFILES
    from conformance.protocols.build import make_classic_sim, settle_round
    from conformance.protocols.classic.realtime import REAL_TIMING, RealTimeSim

    factory = CLASSIC.real_setup(kafka, REAL_PROFILES["dev"])[0]
    clients = [
        {"name": f"c{i}", "assignors": ["range"], "topics": ["t"], "session_timeout_ms": 3000,
         "rebalance_timeout_ms": 4000}
        for i in (1, 2)
    ]  # fmt: skip
    sim = make_classic_sim(
        {"t": 2}, clients, kafka.model_config, {},  # type: ignore[attr-defined]
        port_factory=lambda c: factory(HeartbeatIgnoresRebalance(c.config, c.chooser)),
        sim_class=RealTimeSim, request_timeout_ms=REAL_TIMING.request_timeout_ms,
    )  # fmt: skip
    found: list[tuple[str, str]] = []

    def judge(_obs: object) -> None:
        found.extend((f.rule, f.message) for f in sim.port.take_findings())

    try:
        for _ in range(12):
            settle_round(sim, ["c1", "c2"], judge)
            g = sim.port.group("g")
            if g is not None and g.state == GroupState.STABLE and not sim.awaiting:
                break
        sim.clients["c2"].needs_rejoin = True
        judge(sim.client_step("c2"))  # parked until c1 rejoins: the group is rebalancing
        for _ in range(20):
            judge(sim.client_step("c1") or sim.advance(200))
            if found:
                break
    finally:
        sim.port.close()
    assert any(rule.startswith("oracle.") for rule, _ in found), found
    assert "REBALANCE_IN_PROGRESS" in " ".join(m for _, m in found)


@pytest.mark.target
def test_consumer_oracle_catches_a_model_that_differs_from_kafka(kafka: object) -> None:
    """The consumer oracle has teeth: with a broken model beside Apache Kafka (every epoch-0 join gets
    a coordinator-generated member id, KAFKA-17116) the first join's answer is a protocol divergence."""
    from conformance.cli.check import _run_one, real_profile

    run = _run_one(
        kafka, "consumer", real_profile("ci"), 2, 0, {"mutant": "kafka-17116"}, "protocol", time.monotonic()
    )  # two examples: with the failover and topic rules on, seed 0's first draw sends nothing
    found = {v.invariant for v in run.result.violations}
    assert "oracle.ConsumerGroupHeartbeat" in found, (found, run.result.steps)
    assert any("member id" in v.message for v in run.result.violations)
    assert run.result.trace is not None and any(s.actual for s in run.result.trace.steps)
