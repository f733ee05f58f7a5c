"""Kafka framing over non-blocking sockets, with guards against what ``kio`` tolerates.

One `Connection` per virtual member (more when a parked request blocks one): requests are written
at once and never waited for; `Network.poll` collects whole response frames as they arrive, each
stamped with its arrival time. Everything that is not a well-formed answer to a request we sent
becomes a `WireFinding` carrying the bytes (trailing bytes after a message, unknown tagged fields
or other undecodable bodies, a correlation id we did not send, a frame size that is not plausible,
a connection closed with requests outstanding or in the middle of a frame). Findings are data about
the target, never exceptions out of the suite. Framing: 4-byte big-endian size, then the response
header (correlation id; plus tagged fields for flexible versions) and the body (Kafka protocol
guide, "Common Request and Response Structure").
"""

from __future__ import annotations

import contextlib
import io
import selectors
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from conformance.wire import dial
from conformance.wire.codec import API_NAMES, payload_class

MAX_FRAME = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default is 100 MiB


@dataclass(frozen=True)
class WireFinding:
    """Something the target sent (or did) that is not a valid answer; ``data`` is the raw frame."""

    kind: str  # trailing-bytes | undecodable | correlation-id | frame-size | closed | truncated
    message: str
    api: str = ""
    version: int = -1
    data: bytes = b""

    def describe(self) -> str:
        shown = self.data[:64].hex()
        more = f" (+{len(self.data) - 64} bytes)" if len(self.data) > 64 else ""
        where = f" {self.api} v{self.version}" if self.api else ""
        return f"wire {self.kind}{where}: {self.message}" + (f"; bytes {shown}{more}" if self.data else "")


@dataclass
class Pending:
    api_key: int
    version: int
    tag: Any
    sent_at: float


@dataclass(frozen=True)
class Arrival:
    tag: Any
    api_key: int
    version: int
    value: Any  # the decoded kio response, None when undecodable (a finding says why)
    at: float
    frame: bytes


@dataclass
class Connection:
    host: str
    port: int
    client_id: str
    sock: socket.socket
    name: str = ""
    pending: dict[int, Pending] = field(default_factory=dict)
    buf: bytearray = field(default_factory=bytearray)
    next_corr: int = 1
    closed: bool = False
    #: never take a new request: a request we do not track may still hold it (a duplicate's copy
    #: that the target parks mutes the connection until it is answered: conformance/protocols/classic/faults.py)
    blocked: bool = False

    @property
    def busy(self) -> bool:
        return bool(self.pending) or self.blocked


def encode_frame(payload: Any, correlation_id: int, client_id: str) -> bytes:
    header_cls = payload.__header_schema__
    header = header_cls(
        request_api_key=payload.__api_key__,
        request_api_version=payload.__version__,
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    buf = io.BytesIO()
    entity_writer(header_cls)(buf, header)
    entity_writer(type(payload))(buf, payload)
    body = buf.getvalue()
    return struct.pack(">i", len(body)) + body


def decode_frame(api_key: int, version: int, frame: bytes) -> tuple[Any, list[WireFinding]]:
    """Decode a whole response frame; trailing bytes are a finding (the value is still returned)."""
    api = API_NAMES.get(api_key, str(api_key))
    cls = payload_class(api_key, version, False)
    try:
        _header, offset = entity_reader(cls.__header_schema__)(frame, 0)
        value, size = entity_reader(cls)(frame, offset)
    except Exception as e:  # kio raises assorted errors on malformed input or unknown tags
        return None, [WireFinding("undecodable", f"{type(e).__name__}: {e}", api, version, frame)]
    extra = len(frame) - offset - size
    if extra:
        return value, [WireFinding("trailing-bytes", f"{extra} bytes after the message", api, version, frame)]
    return value, []


class Network:
    """All connections of one run, polled together; every wait is bounded by the caller's deadline."""

    def __init__(self, client_id: str = "groupcheck") -> None:
        self.client_id = client_id
        self.sel = selectors.DefaultSelector()
        self.conns: list[Connection] = []
        self.findings: list[WireFinding] = []

    def open(self, host: str, port: int, timeout: float, name: str = "") -> Connection:
        try:
            sock = dial.connect((host, port), max(0.05, timeout))
        except OSError as e:
            raise ConnectionError(f"connect to {host}:{port} failed: {e.strerror or e}") from e
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        conn = Connection(host, port, self.client_id, sock, name)
        self.sel.register(sock, selectors.EVENT_READ, conn)
        self.conns.append(conn)
        return conn

    def send(self, conn: Connection, payload: Any, tag: Any, client_id: str | None = None) -> None:
        corr = conn.next_corr
        conn.next_corr += 1
        data = encode_frame(payload, corr, client_id or self.client_id)
        conn.pending[corr] = Pending(payload.__api_key__, payload.__version__, tag, time.monotonic())
        try:
            conn.sock.setblocking(True)
            conn.sock.settimeout(5.0)
            conn.sock.sendall(data)
        except OSError as e:
            self._closed(conn, f"send failed: {e}")
        finally:
            if not conn.closed:
                conn.sock.setblocking(False)

    def close(self, conn: Connection) -> None:
        if not conn.closed:
            conn.closed = True
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(conn.sock)
            conn.sock.close()
        if conn in self.conns:
            self.conns.remove(conn)

    def close_all(self) -> None:
        for c in list(self.conns):
            self.close(c)
        self.sel.close()

    def _closed(self, conn: Connection, why: str) -> None:
        if conn.pending:
            apis = sorted({API_NAMES.get(p.api_key, str(p.api_key)) for p in conn.pending.values()})
            self.findings.append(
                WireFinding(
                    "closed",
                    f"connection {conn.name or conn.port} closed by the target ({why}) with "
                    f"{len(conn.pending)} request(s) outstanding: {', '.join(apis)}",
                    data=bytes(conn.buf),
                )
            )
        elif conn.buf:
            self.findings.append(
                WireFinding(
                    "truncated", f"connection closed in the middle of a frame ({why})", data=bytes(conn.buf)
                )
            )
        conn.pending.clear()
        self.close(conn)

    def poll(self, timeout: float) -> list[Arrival]:
        """Whole frames that arrived within ``timeout`` seconds (returns early once any arrived)."""
        out: list[Arrival] = []
        if not self.conns:
            time.sleep(max(0.0, timeout))
            return out
        for key, _ in self.sel.select(timeout=max(0.0, timeout)):
            conn: Connection = key.data
            try:
                chunk = conn.sock.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as e:
                self._closed(conn, str(e))
                continue
            if not chunk:
                self._closed(conn, "EOF")
                continue
            conn.buf += chunk
            out.extend(self._frames(conn, time.monotonic()))
        return out

    def _frames(self, conn: Connection, now: float) -> list[Arrival]:
        out: list[Arrival] = []
        while len(conn.buf) >= 4:
            (size,) = struct.unpack_from(">i", conn.buf, 0)
            if size < 4 or size > MAX_FRAME:
                self.findings.append(
                    WireFinding(
                        "frame-size",
                        f"response frame size {size} is not plausible",
                        data=bytes(conn.buf[:64]),
                    )
                )
                conn.pending.clear()
                self.close(conn)
                return out
            if len(conn.buf) < 4 + size:
                return out
            frame = bytes(conn.buf[4 : 4 + size])
            del conn.buf[: 4 + size]
            (corr,) = struct.unpack_from(">i", frame, 0)
            pending = conn.pending.pop(corr, None)
            if pending is None:
                self.findings.append(
                    WireFinding(
                        "correlation-id",
                        f"response with correlation id {corr}, outstanding: {sorted(conn.pending)}",
                        data=frame,
                    )
                )
                continue
            value, findings = decode_frame(pending.api_key, pending.version, frame)
            self.findings.extend(findings)
            out.append(Arrival(pending.tag, pending.api_key, pending.version, value, now, frame))
        return out

    def take_findings(self) -> list[WireFinding]:
        taken, self.findings = self.findings, []
        return taken
