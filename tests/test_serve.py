"""`groupcheck serve`: real librdkafka consumers against the model served on loopback."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from conformance.serve.adversary import Adversary, parse_kinds
from conformance.serve.server import ServeConfig, Server

ck = pytest.importorskip("confluent_kafka")

TEST_BUDGET_S = 90


@pytest.fixture(autouse=True)
def _bounded() -> Iterator[None]:
    """Every test here has a total deadline (librdkafka calls run in C; an alarm still interrupts)."""

    def expired(_sig: int, _frame: Any) -> None:
        raise TimeoutError(f"test exceeded {TEST_BUDGET_S} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_BUDGET_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def served(**kw: Any) -> Iterator[Server]:
    config = ServeConfig(topics={"t": 3}, initial_rebalance_delay_ms=0, heartbeat_interval_ms=500, **kw)
    server = Server(config).start()
    try:
        yield server
    finally:
        server.stop()
    assert server.error is None, server.error


class Member:
    """One librdkafka consumer and the partition events its rebalance callbacks saw."""

    def __init__(self, server: Server, protocol: str, client_id: str = "c1") -> None:
        conf: dict[str, Any] = {
            "bootstrap.servers": f"127.0.0.1:{server.address[1]}",
            "group.id": "g",
            "group.protocol": protocol,
            "enable.auto.commit": False,
            "client.id": client_id,
            "log_level": 3,
        }
        if protocol == "classic":
            conf |= {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
        self.events: list[tuple[str, tuple[int, ...]]] = []
        self.consumer = ck.Consumer(conf)
        self.consumer.subscribe(
            ["t"],
            on_assign=lambda _c, ps: self.events.append(("assign", tuple(sorted(p.partition for p in ps)))),
            on_revoke=lambda _c, ps: self.events.append(("revoke", tuple(sorted(p.partition for p in ps)))),
        )

    def poll_until(self, done: Callable[[], bool], seconds: float) -> bool:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if done():
                return True
            self.consumer.poll(0.1)
        return done()

    def assigned(self) -> set[int]:
        return {p.partition for p in self.consumer.assignment()}


def _trace(server: Server, kind: str, api: str | None = None) -> list[dict[str, Any]]:
    return [x for x in server.trace.lines if x["kind"] == kind and (api is None or x.get("api") == api)]


def _join_commit_rebalance_leave(protocol: str) -> Server:
    with served(phantom_stay_ms=2_000) as server:
        m = Member(server, protocol)
        assert m.poll_until(lambda: m.assigned() == {0, 1, 2}, 30), m.events
        m.consumer.commit(offsets=[ck.TopicPartition("t", 0, 5)], asynchronous=False)
        (got,) = m.consumer.committed([ck.TopicPartition("t", 0)], timeout=10)
        assert got.offset == 5
        assert server.port_model.committed("g", "t", 0)[0] == 5
        before = len(m.events)
        server.force("rebalance", "g")
        assert m.poll_until(lambda: any(e[0] == "revoke" for e in m.events[before:]), 30), m.events
        assert m.poll_until(lambda: m.assigned() == {0, 1, 2}, 30), m.events
        m.consumer.close()
        assert server.port_model.state.group_type("g") == ("classic" if protocol == "classic" else "consumer")
        time.sleep(0.3)
    return server


def test_classic_member_joins_commits_survives_rebalance_and_leaves() -> None:
    server = _join_commit_rebalance_leave("classic")
    joins = [x for x in _trace(server, "response", "JoinGroup") if x["answer"]["error"] == 0]
    generations = [x["answer"]["generation"] for x in joins]
    assert generations[0] == 1 and len(generations) >= 2 and generations == sorted(set(generations))
    leaves = _trace(server, "response", "LeaveGroup")
    assert [x["answer"]["error"] for x in leaves] == [0]
    assert not server.port_model.state.classic.groups["g"].members


def test_consumer_protocol_member_joins_commits_survives_rebalance_and_leaves() -> None:
    assert ck.libversion()[1] >= 0x02040000  # KIP-848 clients: librdkafka 2.4+
    server = _join_commit_rebalance_leave("consumer")
    beats = _trace(server, "response", "ConsumerGroupHeartbeat")
    epochs = [x["answer"]["epoch"] for x in beats if x["answer"]["error"] == 0]
    assert epochs[-1] == -1  # the leave
    assert max(epochs) >= 3  # the server-made member's join and leave each bumped the group epoch
    assert not server.port_model.state.consumer.groups["g"].members


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_fenced_member_rejoins(protocol: str) -> None:
    with served() as server:
        m = Member(server, protocol)
        assert m.poll_until(lambda: m.assigned() == {0, 1, 2}, 30), m.events
        assert server.force("fence", "g") != "no member to fence"
        assert m.poll_until(lambda: len([e for e in m.events if e[0] == "assign"]) >= 2, 30), m.events
        assert m.poll_until(lambda: m.assigned() == {0, 1, 2}, 30), m.events
        m.consumer.close()


def test_failover_keeps_commits_and_the_member_rejoins() -> None:
    with served() as server:
        m = Member(server, "classic")
        assert m.poll_until(lambda: m.assigned() == {0, 1, 2}, 30), m.events
        m.consumer.commit(offsets=[ck.TopicPartition("t", 1, 7)], asynchronous=False)
        server.force("failover", "g")
        assert server.port_model.committed("g", "t", 1)[0] == 7  # durable: reloaded
        assert any(x["why"] == "failover" for x in _trace(server, "closed"))
        hb_before = len(_trace(server, "response", "Heartbeat"))
        assert m.poll_until(lambda: len(_trace(server, "response", "Heartbeat")) > hb_before + 2, 30)
        (got,) = m.consumer.committed([ck.TopicPartition("t", 1)], timeout=10)
        assert got.offset == 7
        m.consumer.close()


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_seeded_lose_and_delay_faults_are_traced_and_survived(protocol: str) -> None:
    with served(adversary=("lose", "delay"), every=(2, 3), seed=7) as server:
        m = Member(server, protocol)
        faults = lambda: [x for x in _trace(server, "response") if "fault" in x]  # noqa: E731
        assert m.poll_until(lambda: {x["fault"] for x in faults()} == {"lose", "delay"}, 45), faults()
        assert any(x["why"] == "adversary: response lost" for x in _trace(server, "closed"))
        server.adversary.kinds = ()
        assert m.poll_until(lambda: m.assigned() == {0, 1, 2}, 30), m.events
        m.consumer.close()


def test_adversary_draws_depend_only_on_seed_and_order() -> None:
    def draws(seed: int) -> list[Any]:
        a = Adversary(seed, parse_kinds("all"), 2, 5)
        return [a.on_group_request() for _ in range(200)]

    assert draws(3) == draws(3)
    assert draws(3) != draws(4)
    assert sum(d is not None for d in draws(3)) >= 200 // 5
    assert all(d is None for d in (Adversary(3, (), 1, 1).on_group_request() for _ in range(50)))
    with pytest.raises(ValueError, match="unknown fault"):
        parse_kinds("lose,explode")


def _api_versions_frame(version: int, corr: int) -> bytes:
    client = b"raw"
    body = struct.pack(">hhih", 18, version, corr, len(client)) + client
    if version >= 3:
        body += b"\x00" + b"\x04raw\x041.0\x00"  # header tags; client software name, version; tags
    return struct.pack(">i", len(body)) + body


def _read_frame(sock: socket.socket) -> bytes:
    sock.settimeout(5)
    head = b""
    while len(head) < 4:
        try:
            chunk = sock.recv(4 - len(head))
        except ConnectionResetError:
            return b""
        if not chunk:
            return b""
        head += chunk
    (size,) = struct.unpack(">i", head)
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk
        data += chunk
    return data


def test_bad_frames_close_only_their_connection() -> None:
    with served() as server:
        addr = ("127.0.0.1", server.address[1])
        good = socket.create_connection(addr, timeout=5)
        for junk in (
            struct.pack(">i", 1 << 30),
            struct.pack(">ihhi", 8, 999, 0, 1),
            struct.pack(">i", 3) + b"abc",
        ):
            bad = socket.create_connection(addr, timeout=5)
            bad.sendall(junk)
            assert _read_frame(bad) == b""  # closed by the server
            bad.close()
        good.sendall(_api_versions_frame(3, 42))
        answer = _read_frame(good)
        corr, error = struct.unpack_from(">ih", answer, 0)
        assert (corr, error) == (42, 0)
        good.sendall(_api_versions_frame(99, 43))  # unknown version: v0 answer, UNSUPPORTED_VERSION
        corr, error = struct.unpack_from(">ih", _read_frame(good), 0)
        assert (corr, error) == (43, 35)
        good.close()


def test_cli_serve_runs_for_its_duration_and_writes_a_trace(tmp_path: Any) -> None:
    from conformance.cli.main import main

    trace = tmp_path / "serve.ndjson"
    assert main(["serve", "--duration", "0.5", "--topics", "t:2,u:1", "--trace", str(trace)]) == 0
    assert trace.exists()
    for line in trace.read_text().splitlines():
        json.loads(line)
    assert main(["serve", "--duration", "0.1", "--topics", "t:zero"]) == 2
    assert main(["serve", "--duration", "0.1", "--adversary", "explode"]) == 2


def _scripted_run(seed: int, path: Any) -> bytes:
    """A fixed request script from a wire client of this suite (classic codec, kio framing) against a
    server with every fault on; the client does not react to answers, so its behaviour is fixed."""
    from conformance.protocols.classic.codec import encode_request
    from conformance.serve.trace import Trace
    from conformance.wire.framing import decode_frame, encode_frame
    from model.classic.messages import (
        HeartbeatRequest,
        JoinGroupRequest,
        LeaveGroupRequest,
        MemberIdentity,
        OffsetCommitPartition,
        OffsetCommitRequest,
        SyncGroupRequest,
    )

    config = ServeConfig(
        topics={"t": 2}, seed=seed, adversary=parse_kinds("all"), every=(1, 3), initial_rebalance_delay_ms=0
    )
    server = Server(config, Trace(path)).start()
    addr = ("127.0.0.1", server.address[1])
    sock: socket.socket | None = None
    member = ""
    try:
        join = JoinGroupRequest("g", "", "consumer", (("range", b"\x00\x01"),), 10_000, 10_000, version=5)
        script: list[Any] = [join, join]
        script += [SyncGroupRequest("g", 1, "", (), version=3)]
        script += [HeartbeatRequest("g", 1, "", version=3)] * 4
        script += [OffsetCommitRequest("g", 1, "", (OffsetCommitPartition("t", 0, 3),), version=8)]
        script += [LeaveGroupRequest("g", (MemberIdentity(""),), version=3)]
        for corr, request in enumerate(script, start=1):
            if hasattr(request, "member_id") and member:
                request = type(request)(**{**request.__dict__, "member_id": member})
            if isinstance(request, LeaveGroupRequest):
                request = LeaveGroupRequest("g", (MemberIdentity(member),), version=3)
            if isinstance(request, SyncGroupRequest):
                request = SyncGroupRequest("g", 1, member, ((member, b"\x00\x01"),), version=3)
            payload = encode_request(request, request.version)
            if sock is None:
                sock = socket.create_connection(addr, timeout=5)
            sock.sendall(encode_frame(payload, corr, "scripted"))
            frame = _read_frame(sock)
            if not frame:  # a lost answer or a failover closed the connection
                sock.close()
                sock = None
                continue
            value, findings = decode_frame(payload.__api_key__, payload.__version__, frame)
            assert not findings
            if getattr(value, "member_id", "") and not member:
                member = str(value.member_id)
    finally:
        if sock is not None:
            sock.close()
        time.sleep(0.2)
        server.stop()
    assert server.error is None
    return path.read_bytes()


def test_trace_is_deterministic_for_a_fixed_client_and_seed(tmp_path: Any) -> None:
    first = _scripted_run(11, tmp_path / "a.ndjson")
    again = _scripted_run(11, tmp_path / "b.ndjson")
    other = _scripted_run(12, tmp_path / "c.ndjson")
    assert first == again
    assert first != other
    kinds = {json.loads(line).get("fault") or json.loads(line).get("action") for line in first.splitlines()}
    assert kinds & {"lose", "delay", "fence", "rebalance", "failover"}


GO_CONSUMER = __import__("pathlib").Path(__file__).parent.parent / "conformance" / "clients" / "go-consumer"


@pytest.fixture(scope="module")
def go_consumer(tmp_path_factory: Any) -> str:
    import os
    import shutil
    import subprocess

    go = shutil.which("go")
    if go is None:
        pytest.skip("Go is not installed (the franz-go consumer is built with go build)")
    binary = tmp_path_factory.mktemp("go-consumer") / "go-consumer"
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly -buildvcs=false"}
    subprocess.run([go, "build", "-o", str(binary), "."], cwd=GO_CONSUMER, env=env, check=True, timeout=300)
    return str(binary)


def test_franz_go_member_joins_commits_survives_rebalance_and_leaves(go_consumer: str) -> None:
    import queue
    import subprocess
    import threading

    with served() as server:
        proc = subprocess.Popen(
            [go_consumer, "-brokers", f"127.0.0.1:{server.address[1]}", "-seconds", "12", "-commit", "4"],
            stdout=subprocess.PIPE,
            text=True,
        )
        lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(json.loads(x)) for x in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
        seen: list[dict[str, Any]] = []

        def wait_for(event: str, seconds: float) -> dict[str, Any]:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                with contextlib.suppress(queue.Empty):
                    line = lines.get(timeout=0.2)
                    seen.append(line)
                    if line["event"] == event:
                        return line
            raise AssertionError(f"no {event} within {seconds} s: {seen}")

        try:
            assert wait_for("assigned", 30)["partitions"] == ["t:0", "t:1", "t:2"]
            assert wait_for("committed", 10)["ok"] is True
            assert server.port_model.committed("g", "t", 0)[0] == 4
            server.force("rebalance", "g")
            assert wait_for("assigned", 15)["partitions"] == ["t:0", "t:1", "t:2"]
            joins = [x for x in _trace(server, "response", "JoinGroup") if x["answer"]["error"] == 0]
            generations = [x["answer"]["generation"] for x in joins]
            assert generations[0] == 1 and len(generations) >= 2 and generations == sorted(set(generations))
            assert wait_for("left", 30)["ok"] is True
            assert proc.wait(timeout=10) == 0
        finally:
            proc.kill()
            proc.wait(timeout=5)
        time.sleep(0.3)
        assert not server.port_model.state.classic.groups["g"].members


def test_classic_member_joins_a_consumer_group_and_they_share_the_partitions() -> None:
    """KIP-848 mixed groups: a classic member in a consumer group (model/mixed/coordinator.py)."""
    with served() as server:
        first = Member(server, "consumer", "c848")
        assert first.poll_until(lambda: first.assigned() == {0, 1, 2}, 30), first.events
        second = Member(server, "classic", "cclassic")
        both = (first, second)

        def shared() -> bool:
            for m in both:
                m.consumer.poll(0.05)
            a, b = first.assigned(), second.assigned()
            return bool(a) and bool(b) and not a & b and a | b == {0, 1, 2}

        assert first.poll_until(shared, 40), (first.events, second.events)
        assert server.group_type("g") == "consumer"
        second.consumer.close()
        first.consumer.close()


def test_bumped_epochs_keep_the_consumer_protocol_member_s_partitions() -> None:
    with served() as server:
        m = Member(server, "consumer")
        assert m.poll_until(lambda: m.assigned() == {0, 1, 2}, 30), m.events

        def epochs() -> list[int]:
            beats = _trace(server, "response", "ConsumerGroupHeartbeat")
            return [x["answer"]["epoch"] for x in beats if x["answer"]["error"] == 0]

        before = max(epochs())
        events = len(m.events)
        server.force("bump", "g")
        assert m.poll_until(lambda: max(epochs()) >= before + 2, 15), epochs()
        assert m.assigned() == {0, 1, 2}
        assert not [e for e in m.events[events:] if e[0] == "revoke"], m.events
        m.consumer.close()
