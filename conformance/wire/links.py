"""What the fault proxy records and links: its events and one client-to-coordinator link."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

Address = tuple[str, int]


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
