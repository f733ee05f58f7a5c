"""Shared parts of the fuzz suite: the bounded Hypothesis profiles and a hostile Kafka peer on loopback.

`HostilePeer` listens on 127.0.0.1 and answers every request in one of its modes: ``hang`` (reads,
never answers), ``drip`` (a valid ApiVersions answer, one byte at a time), ``garbage``,
``truncated`` (a frame that stops half way and a close), ``wrong-id`` (a valid answer under another
correlation id), ``reset`` (RST), ``oversize`` (a frame size of 2 GiB), ``closed`` (nothing listens)
and ``valid``. The suite's clients must turn each into a target error within their deadline.
Profiles: ``fuzz-ci`` (bounded, the default) and ``fuzz-long`` (``GROUPCHECK_FUZZ=long``), used as
``@FUZZ`` on every property of tests/fuzz/.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import struct
import threading
from collections.abc import Callable

from hypothesis import HealthCheck, settings

settings.register_profile(
    "fuzz-ci",
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
settings.register_profile(
    "fuzz-long",
    max_examples=400,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
PROFILE = "fuzz-long" if os.environ.get("GROUPCHECK_FUZZ") == "long" else "fuzz-ci"

MODES = ("hang", "drip", "garbage", "truncated", "wrong-id", "reset", "oversize", "closed")


def api_versions_answer(
    correlation_id: int, version: int, keys: tuple[int, ...] = (3, 10, 11, 12, 13, 14, 18, 19)
) -> bytes:
    """A well-formed ApiVersions answer (header v0, as Kafka sends for every version) with its size."""
    body = struct.pack(">ih", correlation_id, 0)
    if version >= 3:
        body += bytes([len(keys) + 1])  # compact array length (N + 1), one byte for N < 127
        body += b"".join(struct.pack(">hhhB", k, 0, 9, 0) for k in keys)
        body += struct.pack(">iB", 0, 0)  # throttle_time_ms, no tagged fields
    else:
        body += struct.pack(">i", len(keys)) + b"".join(struct.pack(">hhh", k, 0, 9) for k in keys)
        if version >= 1:
            body += struct.pack(">i", 0)
    return struct.pack(">i", len(body)) + body


def _read_request(conn: socket.socket) -> tuple[int, int, int] | None:
    """(api key, version, correlation id) of the next request, None when the peer closed."""
    head = b""
    while len(head) < 4:
        chunk = conn.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    (size,) = struct.unpack(">i", head)
    data = b""
    while len(data) < size:
        chunk = conn.recv(min(65536, size - len(data)))
        if not chunk:
            return None
        data += chunk
    return struct.unpack_from(">hhi", data, 0)


class HostilePeer:
    def __init__(self, mode: str, drip_s: float = 0.2, garbage: bytes = b"\x00\x00\x00\x08garbage!") -> None:
        self.mode, self.drip_s, self.garbage = mode, drip_s, garbage
        self.srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.port = self.srv.getsockname()[1]
        self.stop = threading.Event()
        self.conns: list[socket.socket] = []
        if mode == "closed":
            self.srv.close()  # the port was free a moment ago: nothing listens there now
            self.thread = None
            return
        self.srv.listen(16)
        self.srv.settimeout(0.1)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.srv.accept()
            except OSError:
                continue
            self.conns.append(conn)
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.settimeout(30)
            while not self.stop.is_set():
                req = _read_request(conn)
                if req is None:
                    return
                api, version, corr = req
                answer = api_versions_answer(corr, version) if api == 18 else api_versions_answer(corr, 0)
                if self.mode == "valid":
                    conn.sendall(answer)
                elif self.mode == "hang":
                    self.stop.wait(60)
                elif self.mode == "drip":
                    for i in range(len(answer)):
                        if self.stop.wait(self.drip_s):
                            return
                        conn.sendall(answer[i : i + 1])
                elif self.mode == "garbage":
                    conn.sendall(self.garbage)
                elif self.mode == "truncated":
                    conn.sendall(answer[: len(answer) // 2])
                    conn.close()
                    return
                elif self.mode == "wrong-id":
                    conn.sendall(api_versions_answer(corr + 1, version))
                elif self.mode == "reset":
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    conn.close()
                    return
                elif self.mode == "oversize":
                    conn.sendall(struct.pack(">ii", 2**31 - 1, corr) + b"\x00" * 64)

    def close(self) -> None:
        self.stop.set()
        for c in self.conns:
            with contextlib.suppress(OSError):
                c.close()
        with contextlib.suppress(OSError):
            self.srv.close()
        if self.thread is not None:
            self.thread.join(2)


FUZZ = settings.get_profile(PROFILE)


class ScriptedPeer(HostilePeer):
    """A peer that answers the first request with ``script(api, version, correlation id)``: a list of
    (bytes, delay before them in seconds) chunks, then ``then`` (``close``, ``hang`` or ``reset``)."""

    def __init__(self, script: Callable[[int, int, int], list[tuple[bytes, float]]], then: str) -> None:
        self.script, self.then = script, then
        super().__init__("scripted")

    def _answer(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.settimeout(30)
            req = _read_request(conn)
            if req is None:
                return
            for data, delay in self.script(*req):
                if self.stop.wait(delay):
                    return
                conn.sendall(data)
            if self.then == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()
            elif self.then == "close":
                conn.close()
            else:
                self.stop.wait(60)


def blackhole() -> tuple[socket.socket, list[socket.socket], str]:
    """A listener whose backlog is full, so a further connect to it never completes (the SYN is
    dropped): (listener, the connections filling it, its address). Close them all when done."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    filler = socket.create_connection(srv.getsockname(), timeout=2)
    host, port = srv.getsockname()
    return srv, [filler], f"{host}:{port}"


def unforeseen(err: str) -> bool:
    """The CLI's last-resort line (`conformance.cli.arguments.unexpected`) or a traceback: either
    means an input got past the checks that should have named it."""
    return (
        "Traceback" in err
        or re.search(r"^groupcheck: error: [\w-]+: unexpected [A-Z]\w*", err, re.M) is not None
    )
