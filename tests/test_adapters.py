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

from conformance.adapters import open_target
from conformance.adapters.codec import API_HEARTBEAT, build, payload_class
from conformance.adapters.oracle import PROVISIONAL, rename
from conformance.adapters.wire import Network
from conformance.errors import TargetError, UsageError
from conformance.run import run_check
from model.classic.coordinator import ClassicCoordinator
from model.classic.state import ClassicGroup, ClassicState, Member, Timer

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
    from conformance.adapters.kafka import KafkaAdapter

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
    from conformance.adapters.check import REAL_PROFILES

    port_factory = handle.port_factory()  # type: ignore[attr-defined]
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


#: A known weakness of the oracle, open in issue 4: under scheduling delays it can still report a
#: divergence that a second run of the same examples does not (seen: Kafka NONE where the model has
#: UNKNOWN_MEMBER_ID about 3.2 s into a run, and a leader Kafka chose that no hypothesis kept, in 1 of
#: about 5 full test runs). One second attempt keeps CI from depending on that luck; a deterministic
#: divergence fails both attempts, and each first-attempt finding is printed for the record.
ATTEMPTS = 2


@pytest.mark.target
def test_oracle_agrees_with_apache_kafka(kafka: object) -> None:
    for attempt in range(ATTEMPTS):
        result = _run(kafka, 3, 7)
        if not result.violations:
            break
        print(f"attempt {attempt + 1}: {result.violations}")
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
    def broken(coord: ClassicCoordinator) -> ClassicCoordinator:
        return HeartbeatIgnoresRebalance(coord.config, coord.chooser)

    for attempt in range(ATTEMPTS):
        result = _run(kafka, 12, 3, broken)
        if "REBALANCE_IN_PROGRESS" in " ".join(v.message for v in result.violations):
            break
        print(f"attempt {attempt + 1}: {result.violations}")
    assert any(v.invariant.startswith("oracle.") for v in result.violations), result.violations
    assert "REBALANCE_IN_PROGRESS" in " ".join(v.message for v in result.violations)


@pytest.mark.target
def test_consumer_oracle_catches_a_model_that_differs_from_kafka(kafka: object) -> None:
    """The consumer oracle has teeth: with a broken model beside Apache Kafka (every epoch-0 join gets
    a coordinator-generated member id, KAFKA-17116) the first join's answer is a protocol divergence."""
    from conformance.adapters.check import _run_one, real_profile

    run = _run_one(
        kafka, "consumer", real_profile("ci"), 2, 0, {"mutant": "kafka-17116"}, "protocol", time.monotonic()
    )  # two examples: with the failover and topic rules on (issue 4) seed 0's first draw sends nothing
    found = {v.invariant for v in run.result.violations}
    assert "oracle.ConsumerGroupHeartbeat" in found, (found, run.result.steps)
    assert any("member id" in v.message for v in run.result.violations)
    assert run.result.trace is not None and any(s.actual for s in run.result.trace.steps)
