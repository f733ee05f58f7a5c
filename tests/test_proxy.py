"""The fault proxy against a fake Kafka-framed server (fast, no real target).

The fake server answers every request frame with a response carrying the request's correlation id
and how many requests it has seen so far, so each test can tell what the target received and what
the client heard."""

from __future__ import annotations

import selectors
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from conformance.wire.proxy import COPY_CORRELATION_BASE, FaultProxy, ProxyError


class FakeServer:
    """Answers each request frame with (correlation id, request count); records correlation ids."""

    def __init__(self) -> None:
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(8)
        self.addr = self.srv.getsockname()
        self.seen: list[int] = []
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        sel = selectors.DefaultSelector()
        self.srv.setblocking(False)
        sel.register(self.srv, selectors.EVENT_READ, None)
        bufs: dict[socket.socket, bytearray] = {}
        while not self.stop:
            for key, _ in sel.select(0.05):
                if key.data is None:
                    conn, _ = self.srv.accept()
                    conn.setblocking(True)
                    sel.register(conn, selectors.EVENT_READ, "c")
                    bufs[conn] = bytearray()
                    continue
                conn = key.fileobj  # type: ignore[assignment]
                chunk = conn.recv(65536)
                if not chunk:
                    sel.unregister(conn)
                    conn.close()
                    continue
                buf = bufs[conn]
                buf += chunk
                while len(buf) >= 4 and len(buf) >= 4 + struct.unpack_from(">i", buf)[0]:
                    size = struct.unpack_from(">i", buf)[0]
                    frame = bytes(buf[4 : 4 + size])
                    del buf[: 4 + size]
                    corr = struct.unpack_from(">i", frame, 4)[0]
                    self.seen.append(corr)
                    body = struct.pack(">ii", corr, len(self.seen))
                    conn.sendall(struct.pack(">i", len(body)) + body)
        sel.close()
        self.srv.close()

    def close(self) -> None:
        self.stop = True
        self.thread.join(2)
        assert not self.thread.is_alive()


@pytest.fixture
def proxied() -> Iterator[tuple[FakeServer, FaultProxy, socket.socket]]:
    server = FakeServer()
    proxy = FaultProxy()
    addr = proxy.route(server.addr)
    client = socket.create_connection(addr, timeout=2)
    try:
        yield server, proxy, client
    finally:
        client.close()
        proxy.close()
        server.close()
        assert not proxy.running


def request(corr: int) -> bytes:
    """A request frame: api key 12 (Heartbeat), version 0, correlation id, empty client id."""
    body = struct.pack(">hhih", 12, 0, corr, -1)
    return struct.pack(">i", len(body)) + body


def answers(client: socket.socket, wait_s: float) -> list[tuple[int, int, float]]:
    """(correlation id, server's request count, arrival time) of every answer within ``wait_s``."""
    client.settimeout(0.05)
    out, buf = [], b""
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        try:
            chunk = client.recv(4096)
        except TimeoutError:
            continue
        if not chunk:
            out.append((-1, -1, time.monotonic()))  # EOF
            break
        buf += chunk
        while len(buf) >= 12:
            corr, count = struct.unpack_from(">ii", buf, 4)
            out.append((corr, count, time.monotonic()))
            buf = buf[12:]
    return out


def test_plain_forwarding(proxied: tuple[FakeServer, FaultProxy, socket.socket]) -> None:
    server, _proxy, client = proxied
    for corr in (1, 2, 3):
        client.sendall(request(corr))
    got = answers(client, 0.5)
    assert [(c, n) for c, n, _ in got] == [(1, 1), (2, 2), (3, 3)]
    assert server.seen == [1, 2, 3]


def test_drop_response_after_forwarding(proxied: tuple[FakeServer, FaultProxy, socket.socket]) -> None:
    server, proxy, client = proxied
    proxy.drop_response(client.getsockname(), 2)
    for corr in (1, 2, 3):
        client.sendall(request(corr))
    got = answers(client, 0.5)
    assert [c for c, _, _ in got] == [1, 3]  # the client never hears 2 ...
    assert server.seen == [1, 2, 3]  # ... but the target applied it
    assert [e.kind for e in proxy.take_events()] == ["drop"]
    captured = proxy.take_captured()  # the observer still sees the swallowed answer
    assert [(peer, corr) for peer, corr, _, _ in captured] == [(client.getsockname(), 2)]
    assert struct.unpack(">ii", captured[0][2]) == (2, 2)


def test_duplicate_request_is_seen_twice_and_answered_once(
    proxied: tuple[FakeServer, FaultProxy, socket.socket],
) -> None:
    server, proxy, client = proxied
    proxy.duplicate_request(client.getsockname(), 1)
    client.sendall(request(1))
    client.sendall(request(2))
    got = answers(client, 0.5)
    assert [(c, n) for c, n, _ in got] == [(1, 1), (2, 3)]
    assert server.seen == [1, COPY_CORRELATION_BASE, 2]


def test_delay_holds_the_request_and_what_follows(
    proxied: tuple[FakeServer, FaultProxy, socket.socket],
) -> None:
    server, proxy, client = proxied
    proxy.delay_request(client.getsockname(), 1, 300)
    t0 = time.monotonic()
    client.sendall(request(1))
    client.sendall(request(2))
    time.sleep(0.1)
    assert server.seen == []  # nothing overtakes the held request
    got = answers(client, 1.0)
    assert [c for c, _, _ in got] == [1, 2]  # order kept
    assert got[0][2] - t0 >= 0.29


def test_release_ends_a_hold_when_the_caller_says(
    proxied: tuple[FakeServer, FaultProxy, socket.socket],
) -> None:
    """A delayed request stays held past what else happens until `release` (the oracle's moment)."""
    server, proxy, client = proxied
    peer = client.getsockname()
    assert proxy.release(peer) == 0  # nothing held: nothing released
    proxy.delay_request(peer, 1, 30_000)
    client.sendall(request(1))
    assert proxy.held(peer) == 1  # waits until the request reached the proxy
    time.sleep(0.2)
    assert server.seen == []
    t0 = time.monotonic()
    assert proxy.release(peer) == 1
    got = answers(client, 0.5)
    assert [c for c, _, _ in got] == [1] and got[0][2] - t0 < 0.4  # not the 30 s hold
    assert server.seen == [1] and proxy.held(peer, timeout_s=0.05) == 0
    assert [e.kind for e in proxy.take_events()] == ["delay", "release"]


def test_cut_closes_both_sides(proxied: tuple[FakeServer, FaultProxy, socket.socket]) -> None:
    _server, proxy, client = proxied
    client.sendall(request(1))
    assert answers(client, 0.3)[0][0] == 1
    assert proxy.cut(client.getsockname())
    assert answers(client, 0.5) == [(-1, -1, pytest.approx(time.monotonic(), abs=1))]
    assert proxy.links() == 0
    assert not proxy.cut(("127.0.0.1", 1), timeout_s=0.1)  # unknown connection: False, within deadline


def test_upstream_refused_closes_the_client() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = s.getsockname()
    s.close()  # nothing listens there
    with FaultProxy(connect_timeout_s=1) as proxy:
        client = socket.create_connection(proxy.route(dead), timeout=2)
        client.settimeout(2)
        assert client.recv(10) == b""
        client.close()
        assert [e.kind for e in proxy.take_events()] == ["upstream-refused"]
    assert not proxy.running


def test_commands_after_close_fail_fast() -> None:
    proxy = FaultProxy()
    proxy.close()
    with pytest.raises(ProxyError):
        proxy.route(("127.0.0.1", 9))
    with pytest.raises(ValueError):
        FaultProxy.delay_request(proxy, ("127.0.0.1", 1), 1, -5)


def test_drop_of_an_answer_already_forwarded_is_refused(
    proxied: tuple[FakeServer, FaultProxy, socket.socket],
) -> None:
    _server, proxy, client = proxied
    client.sendall(request(1))
    assert [c for c, _, _ in answers(client, 0.3)] == [1]
    assert not proxy.drop_pending_response(client.getsockname(), 1)
