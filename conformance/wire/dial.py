"""Non-blocking TCP connects for the fault proxy's single thread (conformance/wire/proxy.py).

The proxy's loop serves every connection, so it must never wait on one: a connect to the upstream
is started here and finished when the socket becomes writable (its ``SO_ERROR`` says how it
ended), with a deadline the loop enforces. Names are resolved before, on the caller's thread
(`resolve`): a lookup cannot be made non-blocking, so it runs on a daemon thread the caller waits
for under a deadline (`getaddrinfo` itself has none). `connect` is the blocking connect every
exchange uses, its lookup bounded the same way.
"""

from __future__ import annotations

import errno
import ipaddress
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

Address = tuple[str, int]
IN_PROGRESS = (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY)


RESOLVE_DEADLINE_S = 5.0


def _numeric(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def resolve(address: Address, deadline_s: float = RESOLVE_DEADLINE_S) -> Address:
    """The numeric IPv4/IPv6 address of ``address``; socket.gaierror when it does not resolve in time."""
    host, port = address
    if _numeric(host):
        return host, port
    found: list[Any] = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as e:
            found.append(e)

    worker = threading.Thread(target=lookup, name="groupcheck-resolve", daemon=True)
    worker.start()
    worker.join(deadline_s)
    if not found:
        raise socket.gaierror(f"{host}:{port} did not resolve within {deadline_s:g} s")
    if isinstance(found[0], OSError):
        raise found[0]
    if not found[0]:
        raise socket.gaierror(f"{host}:{port} does not resolve")
    _family, _, _, _, sockaddr = found[0][0]
    return str(sockaddr[0]), int(sockaddr[1])


def connect(address: Address, timeout_s: float) -> socket.socket:
    """A connected blocking socket; the name lookup and the connect each bounded by ``timeout_s``."""
    numeric = resolve(address, min(timeout_s, RESOLVE_DEADLINE_S))
    return socket.create_connection(numeric, timeout=timeout_s)


def start(address: Address) -> socket.socket:
    """A non-blocking socket whose connect to a numeric ``address`` is under way (or done)."""
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setblocking(False)
    code = sock.connect_ex(address)
    if code not in IN_PROGRESS:
        sock.close()
        raise OSError(code, errno.errorcode.get(code, str(code)))
    return sock


def outcome(sock: socket.socket) -> int:
    """0 once the connect succeeded, else its errno (read when the socket turned writable)."""
    return sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)


class Dialer:
    """The fault proxy's accept and upstream connect, mixed into `FaultProxy` (its loop calls them):
    a connection is accepted at once, its upstream connect runs in the background, and bytes from
    the client wait in the link until it completes or fails (``upstream-refused``)."""

    sel: selectors.BaseSelector
    connect_timeout_s: float
    _links: dict[Address, Any]
    _lock: Any

    _event: Callable[[Any], None]
    _cut: Callable[[Address, str], bool]
    _flush: Callable[[Any], None]

    def _accept(self, srv: socket.socket, upstream: Address) -> None:
        from conformance.wire.links import ProxyEvent, _Link

        try:
            client, peer = srv.accept()
        except BlockingIOError:
            return
        try:
            up = start(upstream)
        except OSError as e:
            self._event(ProxyEvent("upstream-refused", peer, detail=f"{upstream[0]}:{upstream[1]}: {e}"))
            client.close()
            return
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client.setblocking(False)
        link = _Link(client, up, peer, connecting=time.monotonic() + self.connect_timeout_s)
        with self._lock:
            self._links[peer] = link
        self.sel.register(client, selectors.EVENT_READ, ("client", link))
        self.sel.register(up, selectors.EVENT_WRITE, ("upstream", link))

    def _expire_connects(self, now: float) -> None:
        for link in [x for x in self._links.values() if x.connecting and x.connecting <= now]:
            self._connected(link, "timed out")

    def _connected(self, link: Any, failure: str | None) -> None:
        """The upstream connect of ``link`` ended (its socket turned writable) or ran out of time."""
        from conformance.wire.links import ProxyEvent

        code = outcome(link.upstream) if failure is None else 0
        if failure is not None or code:
            why = failure or errno.errorcode.get(code, str(code))
            self._event(ProxyEvent("upstream-refused", link.peer, detail=f"upstream connect: {why}"))
            self._cut(link.peer, "upstream connect failed")
            return
        link.connecting = 0.0
        link.upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._flush(link)
