"""A loopback fault proxy between the adapter and a real coordinator (docs/faults.md).

The proxy listens on 127.0.0.1 (one listener per upstream address), opens one upstream connection
for every client connection it accepts, and forwards whole Kafka frames (4-byte big-endian size,
then the body; Kafka protocol guide, "Common Request and Response Structure"). It reads just enough
of each frame to know its correlation id: a request header starts with api key (int16), api
version (int16) and correlation id (int32); a response header starts with the correlation id. On
command it can, for one client connection (named by the client socket's own address):

* ``drop_response(client, corr)``: forward the request, swallow its answer (the target applied it,
  the client never hears: a lost response);
* ``duplicate_request(client, corr)``: forward the request twice, the copy under a correlation id of
  the proxy's own, and swallow the copy's answer (a retried request the target sees twice);
* ``delay_request(client, corr, ms)``: hold that request, and everything the client sends after it
  on that connection (Kafka keeps a connection's requests in order), for ``ms`` milliseconds;
* ``release(client)``: end a hold now (the caller picks the moment; ``ms`` is then the upper bound;
  ``held(client)`` waits until the delayed request has reached the proxy);
* ``cut(client)``: close both sides of the connection now.

Commands are registered before the client writes the request, so a fault never races the traffic.
One thread runs a selector loop; every wait in it and in the commands has a deadline, and `close`
stops and joins the thread (a proxy that cannot stop raises). Nothing here knows about a target.
"""

from __future__ import annotations

import contextlib
import queue
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.wire import dial

Address = tuple[str, int]
#: correlation ids the proxy gives to duplicated requests (clients count up from 1; this is far away)
COPY_CORRELATION_BASE = 0x7E000000
MAX_FRAME = 100 * 1024 * 1024


class ProxyError(Exception):
    """The proxy could not do what it was asked within its deadline (a tool error, not a finding)."""


@dataclass
class _Held:
    due: float
    data: bytes


@dataclass
class _Link:
    """One client connection and its upstream connection."""

    client: socket.socket
    upstream: socket.socket
    peer: Address
    c_in: bytearray = field(default_factory=bytearray)  # client -> proxy, not yet framed
    u_in: bytearray = field(default_factory=bytearray)  # upstream -> proxy, not yet framed
    to_client: bytearray = field(default_factory=bytearray)
    to_upstream: bytearray = field(default_factory=bytearray)
    held: list[_Held] = field(default_factory=list)
    swallow: set[int] = field(default_factory=set)  # response correlation ids nobody will hear
    answered: set[int] = field(default_factory=set)  # response correlation ids already forwarded
    closed: bool = False
    connecting: float = 0.0  # deadline of the upstream connect under way (0: connected)


@dataclass(frozen=True)
class ProxyEvent:
    """What the proxy did on command (kept for reports and tests)."""

    kind: str  # drop | duplicate | delay | release | cut | upstream-refused
    peer: Address
    correlation_id: int = -1
    detail: str = ""


class FaultProxy(dial.Dialer):
    """See the module docstring. ``route(upstream)`` gives the address the adapter should dial."""

    def __init__(self, *, connect_timeout_s: float = 5.0, name: str = "groupcheck-proxy") -> None:
        self.connect_timeout_s = connect_timeout_s
        self.sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self.sel.register(self._wake_r, selectors.EVENT_READ, ("wake", None))
        self._lock = threading.Lock()
        self._calls: queue.Queue[tuple[Callable[[], Any], queue.Queue[Any]]] = queue.Queue()
        self._listeners: dict[Address, tuple[socket.socket, Address]] = {}
        self._links: dict[Address, _Link] = {}
        self._drop: dict[tuple[Address, int], int] = {}
        self._dup: dict[tuple[Address, int], int] = {}
        self._delay: dict[tuple[Address, int], int] = {}
        self._next_copy = COPY_CORRELATION_BASE
        self.events: list[ProxyEvent] = []
        #: answers swallowed on command, for the observer (the oracle): (client, corr, frame, arrived)
        self.captured: list[tuple[Address, int, bytes, float]] = []
        self.forwarded = 0
        self._stop = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ commands (any thread)
    def route(self, upstream: Address, timeout_s: float = 5.0) -> Address:
        """The loopback address that forwards to ``upstream`` (a listener is opened on first use)."""
        with self._lock:
            known = self._listeners.get(upstream)
        if known is not None:
            return known[1]

        try:
            numeric = dial.resolve(upstream)  # a lookup blocks: never on the proxy's thread
        except OSError as e:
            raise ProxyError(f"upstream {upstream[0]}:{upstream[1]} does not resolve: {e}") from e

        def listen() -> Address:
            if upstream in self._listeners:
                return self._listeners[upstream][1]
            srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            srv.bind(("127.0.0.1", 0))
            srv.listen(64)
            srv.setblocking(False)
            addr: Address = srv.getsockname()
            self.sel.register(srv, selectors.EVENT_READ, ("listen", numeric))
            with self._lock:
                self._listeners[upstream] = (srv, addr)
            return addr

        out: Address = self._call(listen, timeout_s)
        return out

    def drop_response(self, client: Address, correlation_id: int) -> None:
        with self._lock:
            self._drop[(tuple(client), correlation_id)] = 1  # type: ignore[index]

    def drop_pending_response(self, client: Address, correlation_id: int, timeout_s: float = 2.0) -> bool:
        """Swallow the answer to a request already sent; False when that answer has already passed."""
        key: Address = tuple(client)  # type: ignore[assignment]

        def run() -> bool:
            link = self._links.get(key)
            if link is None or correlation_id in link.answered:
                return False
            link.swallow.add(correlation_id)
            self._event(ProxyEvent("drop", key, correlation_id, "after the request was forwarded"))
            return True

        out: bool = self._call(run, timeout_s)
        return out

    def duplicate_request(self, client: Address, correlation_id: int) -> None:
        with self._lock:
            self._dup[(tuple(client), correlation_id)] = 1  # type: ignore[index]

    def delay_request(self, client: Address, correlation_id: int, ms: int) -> None:
        if ms < 0:
            raise ValueError(f"delay {ms} ms is negative")
        with self._lock:
            self._delay[(tuple(client), correlation_id)] = ms  # type: ignore[index]

    def held(self, client: Address, timeout_s: float = 2.0) -> int:
        """How many requests the proxy holds for ``client`` now, waiting (within the deadline) for a
        delayed request the client has written to arrive at the proxy first; 0 when none did."""
        end = time.monotonic() + timeout_s
        key: Address = tuple(client)  # type: ignore[assignment]

        def run() -> int:
            link = self._links.get(key)
            return 0 if link is None else len(link.held)

        while True:
            n: int = self._call(run, max(0.05, end - time.monotonic()))
            if n or time.monotonic() >= end:
                return n
            time.sleep(0.005)

    def release(self, client: Address, timeout_s: float = 2.0) -> int:
        """End the hold on ``client``'s delayed requests now (the caller chose the moment; the hold's
        own time is the upper bound); how many requests went on to the target."""
        key: Address = tuple(client)  # type: ignore[assignment]

        def run() -> int:
            link = self._links.get(key)
            if link is None or not link.held:
                return 0
            now = time.monotonic()
            n = len(link.held)
            for h in link.held:
                h.due = min(h.due, now)
            self._event(ProxyEvent("release", key, detail=f"{n} held request(s)"))
            self._release_held()
            return n

        out: int = self._call(run, timeout_s)
        return out

    def cut(self, client: Address, timeout_s: float = 2.0) -> bool:
        """Close both sides of the client's connection; False when the proxy has no such connection.

        Waits (within the deadline) for the proxy to have accepted the connection first."""
        end = time.monotonic() + timeout_s
        key: Address = tuple(client)  # type: ignore[assignment]
        while True:
            done: bool = self._call(
                lambda: self._cut(key, "cut on command"), max(0.05, end - time.monotonic())
            )
            if done or time.monotonic() >= end:
                return done
            time.sleep(0.01)

    def cut_all(self, timeout_s: float = 2.0) -> int:
        """Close every connection (the target went away); how many were open."""

        def run() -> int:
            peers = list(self._links)
            for p in peers:
                self._cut(p, "cut all")
            return len(peers)

        out: int = self._call(run, timeout_s)
        return out

    def links(self) -> int:
        with self._lock:
            return len(self._links)

    def take_captured(self) -> list[tuple[Address, int, bytes, float]]:
        """The answers the proxy swallowed since the last call: the client never heard them, but
        whoever checks the target may (the frame without its size prefix, the arrival time)."""
        with self._lock:
            taken, self.captured = self.captured, []
        return taken

    def take_events(self) -> list[ProxyEvent]:
        with self._lock:
            taken, self.events = self.events, []
        return taken

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def close(self, timeout_s: float = 2.0) -> None:
        """Stop the loop, close every socket, join the thread (ProxyError if it does not stop)."""
        self._stop = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise ProxyError(f"fault proxy thread did not stop within {timeout_s:g}s")
        for link in list(self._links.values()):
            self._close_link(link)
        for srv, _ in self._listeners.values():
            with contextlib.suppress(OSError):
                srv.close()
        self._listeners.clear()
        with contextlib.suppress(OSError):
            self.sel.close()
        self._wake_r.close()
        self._wake_w.close()
        if self._error is not None:
            raise ProxyError(f"fault proxy loop failed: {self._error!r}") from self._error

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the loop (proxy thread)
    def _call(self, fn: Callable[[], Any], timeout_s: float) -> Any:
        """Run ``fn`` on the proxy thread and wait for its result, within ``timeout_s``."""
        if not self._thread.is_alive():
            raise ProxyError("fault proxy is not running")
        box: queue.Queue[Any] = queue.Queue(1)
        self._calls.put((fn, box))
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        try:
            ok, value = box.get(timeout=timeout_s)
        except queue.Empty:
            raise ProxyError(f"fault proxy did not answer a command within {timeout_s:g}s") from None
        if not ok:
            raise ProxyError(f"fault proxy command failed: {value!r}") from value
        return value

    def _loop(self) -> None:
        try:
            while not self._stop:
                timeout = self._next_due()
                for key, mask in self.sel.select(timeout):
                    kind, data = key.data
                    if kind == "wake":
                        with contextlib.suppress(BlockingIOError):
                            self._wake_r.recv(4096)
                    elif kind == "listen":
                        self._accept(key.fileobj, data)  # type: ignore[arg-type]
                    else:
                        self._io(data, kind, mask)
                self._run_calls()
                self._release_held()
                self._expire_connects(time.monotonic())
        except BaseException as e:  # noqa: BLE001 - reported by close()
            self._error = e
            self._run_calls()

    def _run_calls(self) -> None:
        while True:
            try:
                fn, box = self._calls.get_nowait()
            except queue.Empty:
                return
            try:
                box.put((True, fn()))
            except Exception as e:  # noqa: BLE001 - handed back to the caller
                box.put((False, e))

    def _next_due(self) -> float | None:
        dues = [h.due for link in self._links.values() for h in link.held[:1]]
        dues += [link.connecting for link in self._links.values() if link.connecting]
        if not dues:
            return None
        return max(0.0, min(dues) - time.monotonic())

    def _io(self, link: _Link, side: str, mask: int) -> None:
        if link.closed:
            return
        if side == "upstream" and link.connecting:
            self._connected(link, None)
            return
        sock = link.client if side == "client" else link.upstream
        if mask & selectors.EVENT_READ:
            try:
                chunk = sock.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                chunk = None
            except OSError:
                chunk = b""
            if chunk == b"":
                # one side closed: close the other too (what a TCP peer sees when the target goes away)
                self._cut(link.peer, f"{side} closed")
                return
            if chunk:
                if side == "client":
                    link.c_in += chunk
                    self._requests(link)
                else:
                    link.u_in += chunk
                    self._responses(link)
        if mask & selectors.EVENT_WRITE:
            self._flush(link)

    def _frames(self, buf: bytearray) -> list[bytes]:
        out = []
        while len(buf) >= 4:
            (size,) = struct.unpack_from(">i", buf, 0)
            if size < 0 or size > MAX_FRAME:
                # not Kafka framing: pass the bytes through untouched, the adapter's guards report them
                out.append(bytes(buf))
                buf.clear()
                return out
            if len(buf) < 4 + size:
                break
            out.append(bytes(buf[: 4 + size]))
            del buf[: 4 + size]
        return out

    def _requests(self, link: _Link) -> None:
        for frame in self._frames(link.c_in):
            corr = struct.unpack_from(">i", frame, 8)[0] if len(frame) >= 12 else -1
            key = (link.peer, corr)
            with self._lock:
                drop = self._drop.pop(key, None)
                dup = self._dup.pop(key, None)
                delay = self._delay.pop(key, None)
            if drop is not None:
                link.swallow.add(corr)
                self._event(ProxyEvent("drop", link.peer, corr))
            copies = [frame]
            if dup is not None:
                copy_corr = self._next_copy
                self._next_copy += 1
                link.swallow.add(copy_corr)
                copies.append(frame[:8] + struct.pack(">i", copy_corr) + frame[12:])
                self._event(ProxyEvent("duplicate", link.peer, corr, f"copy as correlation id {copy_corr}"))
            due = time.monotonic() + (delay or 0) / 1000
            if delay is not None:
                self._event(ProxyEvent("delay", link.peer, corr, f"{delay} ms"))
            for data in copies:
                if delay is not None or link.held:
                    last = link.held[-1].due if link.held else 0.0
                    link.held.append(_Held(max(last, due if delay is not None else last), data))
                else:
                    link.to_upstream += data
                    self.forwarded += 1
        self._flush(link)

    def _responses(self, link: _Link) -> None:
        for frame in self._frames(link.u_in):
            corr = struct.unpack_from(">i", frame, 4)[0] if len(frame) >= 8 else -1
            if corr in link.swallow:
                link.swallow.discard(corr)
                with self._lock:
                    self.captured.append((link.peer, corr, frame[4:], time.monotonic()))
                continue
            link.answered.add(corr)
            link.to_client += frame
        self._flush(link)

    def _release_held(self) -> None:
        now = time.monotonic()
        for link in list(self._links.values()):
            released = False
            while link.held and link.held[0].due <= now:
                link.to_upstream += link.held.pop(0).data
                self.forwarded += 1
                released = True
            if released:
                self._flush(link)

    def _flush(self, link: _Link) -> None:
        if link.closed:
            return
        for sock, buf, side in (
            (link.client, link.to_client, "client"),
            (link.upstream, link.to_upstream, "upstream"),
        ):
            waiting = side == "upstream" and bool(link.connecting)  # nothing goes out before the connect
            if buf and not waiting:
                try:
                    sent = sock.send(buf)
                    del buf[:sent]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    self._cut(link.peer, f"{side} write failed")
                    return
            events = (
                selectors.EVENT_WRITE
                if waiting
                else selectors.EVENT_READ | (selectors.EVENT_WRITE if buf else 0)
            )
            with contextlib.suppress(KeyError, ValueError):
                self.sel.modify(sock, events, (side, link))

    def _cut(self, peer: Address, why: str) -> bool:
        with self._lock:
            link = self._links.pop(peer, None)
        if link is None:
            return False
        if why == "cut on command":
            self._event(ProxyEvent("cut", peer, detail=why))
        self._close_link(link)
        return True

    def _close_link(self, link: _Link) -> None:
        link.closed = True
        for s in (link.client, link.upstream):
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.sel.unregister(s)
            with contextlib.suppress(OSError):
                s.close()

    def _event(self, ev: ProxyEvent) -> None:
        with self._lock:
            self.events.append(ev)
