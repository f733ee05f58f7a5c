"""The `kafka` adapter: any coordinator at ``host:port`` over the Kafka wire protocol (docs/real-targets.md#adapter).

Start-up: ApiVersions (v3, falling back to v0 on UNSUPPORTED_VERSION; a broker that closes the
connection instead, as 0.9 does, has no ApiVersions and gets the v0 APIs), then FindCoordinator
for each group before its first request, following NOT_COORDINATOR by finding it again. Each
virtual member gets its own connection; a member whose connection carries a request the target
has not answered (a parked JoinGroup blocks its connection, as Kafka mutes a channel until it
answers) gets another one. Requests are written without waiting; `poll` hands back answers as
they arrive. Capabilities come from ApiVersions (docs/protocol-reference.md#d) plus what the launcher knows.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from conformance.errors import TargetError
from conformance.wire import dial
from conformance.wire.codec import (
    API_API_VERSIONS,
    API_DESCRIBE_GROUPS,
    API_FIND_COORDINATOR,
    API_JOIN_GROUP,
    SUPPORTED,
    build,
    payload_class,
)
from conformance.wire.framing import Arrival, Connection, Network, WireFinding, decode_frame, encode_frame

#: The versions Kafka 0.9.0.1 serves for the group APIs (it has no ApiVersions; KIP-35 came in 0.10).
V0_APIS: dict[int, tuple[int, int]] = {
    8: (0, 2),
    10: (0, 0),
    11: (0, 0),
    12: (0, 0),
    13: (0, 0),
    14: (0, 0),
    15: (0, 0),
}

RETRY_COORDINATOR = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


@dataclass(frozen=True)
class Capabilities:
    """What a coordinator offers: API version ranges and protocol features (docs/real-targets.md#adapter)."""

    api_versions: dict[int, tuple[int, int]]
    has_api_versions: bool
    features: frozenset[str] = frozenset()

    def version(self, api_key: int, wanted: int) -> int | None:
        """The highest version <= wanted both sides speak, else None."""
        if api_key not in self.api_versions or api_key not in SUPPORTED:
            return None
        lo, hi = self.api_versions[api_key]
        slo, shi = SUPPORTED[api_key]
        best = min(wanted, hi, shi)
        return best if best >= max(lo, slo) else None

    def nearest(self, api_key: int, wanted: int) -> int | None:
        """The version both sides speak nearest to ``wanted``: a member drawn below the target's
        lowest version (KIP-896 lets Kafka 4.x drop old ones) sends the lowest, one above its
        highest the highest; None if none is common."""
        if api_key not in self.api_versions or api_key not in SUPPORTED:
            return None
        lo, hi = self.api_versions[api_key]
        slo, shi = SUPPORTED[api_key]
        low, high = max(lo, slo), min(hi, shi)
        return min(max(wanted, low), high) if low <= high else None

    def summary(self) -> str:
        parts = [
            f"{name} v{self.api_versions[k][0]}-{self.api_versions[k][1]}"
            for k, name in _SHOWN
            if k in self.api_versions
        ]
        return ", ".join(parts) + ("" if self.has_api_versions else " (no ApiVersions: v0 APIs)")


_SHOWN = (
    (11, "JoinGroup"),
    (14, "SyncGroup"),
    (12, "Heartbeat"),
    (13, "LeaveGroup"),
    (8, "OffsetCommit"),
    (68, "ConsumerGroupHeartbeat"),
)


def _blocking_exchange(host: str, port: int, payload: Any, timeout: float, client_id: str) -> bytes:
    """One request on a fresh connection; the raw response frame (without size).

    ``timeout`` bounds the whole exchange (connect, send and every byte of the answer), not each
    read: a peer that drips a valid frame one byte at a time still times out (TimeoutError). An
    answer under another correlation id than the request's is a TargetError."""
    deadline = time.monotonic() + timeout
    correlation_id = next(_CORRELATION)
    data = encode_frame(payload, correlation_id, client_id)
    with dial.connect((host, port), timeout) as s:
        s.settimeout(max(0.001, deadline - time.monotonic()))
        s.sendall(data)
        head = _recv(s, 4, deadline)
        (size,) = struct.unpack(">i", head)
        if size < 4 or size > 100 * 1024 * 1024:
            raise TargetError(f"{host}:{port}: response frame size {size} is not plausible")
        frame = _recv(s, size, deadline)
    (got,) = struct.unpack_from(">i", frame, 0)
    if got != correlation_id:
        raise TargetError(
            f"{host}:{port}: answer under correlation id {got}, the request had {correlation_id}"
        )
    return frame


_CORRELATION = itertools.count(1)


def _recv(s: socket.socket, n: int, deadline: float) -> bytes:
    out = bytearray()
    while len(out) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no complete answer before the deadline ({len(out)} of {n} bytes)")
        s.settimeout(left)
        chunk = s.recv(min(n - len(out), 1 << 16))
        if not chunk:
            raise ConnectionError("connection closed")
        out += chunk
    return bytes(out)


@dataclass
class KafkaAdapter:
    bootstrap: str
    client_id: str = "groupcheck"
    timeout_s: float = 10.0
    features: frozenset[str] = frozenset()
    capabilities: Capabilities | None = None
    net: Network = field(init=False)
    coordinators: dict[str, tuple[str, int]] = field(default_factory=dict)
    pools: dict[tuple[str, str], list[Connection]] = field(default_factory=dict)
    retired: list[Connection] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: a `conformance.wire.proxy.FaultProxy` the member connections go through (faults), or None
    proxy: Any = None

    def __post_init__(self) -> None:
        self.net = Network(self.client_id)
        host, _, port = self.bootstrap.split(",")[0].strip().rpartition(":")
        if not host or not port.isdigit():
            raise TargetError(f"bad target address {self.bootstrap!r} (want HOST:PORT)")
        self.host, self.port = host, int(port)

    # ------------------------------------------------------------------ start-up
    def connect(self) -> Capabilities:
        """ApiVersions negotiation; a target that hangs or answers garbage is a TargetError (exit 2)."""
        if self.capabilities is not None:
            return self.capabilities
        where = f"{self.host}:{self.port}"
        versions: dict[int, tuple[int, int]] | None = None
        for v in (3, 0):
            cls = payload_class(API_API_VERSIONS, v, True)
            req = build(cls, {"client_software_name": "groupcheck", "client_software_version": "0.1.0"})
            try:
                frame = _blocking_exchange(
                    self.host, self.port, req, min(3.0, self.timeout_s), self.client_id
                )
            except TimeoutError as e:
                # Kafka < 0.10 neither answers nor closes on an unknown API key: a v0 request it knows
                # (FindCoordinator v0) tells a broker without ApiVersions from one that hangs.
                probe = build(payload_class(API_FIND_COORDINATOR, 0, True), {"key": "groupcheck-probe"})
                wait = min(3.0, self.timeout_s)  # a 0.9 broker answers at once; a hung peer waits 2 x 3 s
                try:
                    _blocking_exchange(self.host, self.port, probe, wait, self.client_id)
                except (OSError, ConnectionError):
                    raise TargetError(
                        f"{where}: no answer to ApiVersions v{v} nor to FindCoordinator v0 within {wait:g} s each"
                    ) from e
                versions = None
                break
            except ConnectionRefusedError as e:
                raise TargetError(f"{where}: connection refused") from e
            except socket.gaierror as e:
                raise TargetError(f"{where}: cannot resolve host ({e.strerror or e})") from e
            except (ConnectionError, OSError):
                versions = None  # closes the connection: no ApiVersions (Kafka < 0.10)
                break
            code = struct.unpack_from(">h", frame, 4)[0] if len(frame) >= 6 else None
            if code == 35 and v != 0:
                self.notes.append("ApiVersions v3 answered UNSUPPORTED_VERSION; asked again at v0")
                continue
            value, findings = decode_frame(API_API_VERSIONS, v, frame)
            if value is None:
                raise TargetError(f"{where}: ApiVersions v{v} answer is garbage: {findings[0].message}")
            for f in findings:
                self.notes.append(f.describe())
            versions = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in value.api_keys}
            break
        has = versions is not None
        if versions is None:
            versions = dict(V0_APIS)
            self.notes.append("no ApiVersions: using the v0 group APIs of Kafka 0.9")
        features = set(self.features)
        if 68 in versions:
            features.add("consumer")
        if API_JOIN_GROUP in versions:
            features.add("classic")
            if versions[API_JOIN_GROUP][1] >= 5:
                features.add("static_members")
        self.capabilities = Capabilities(versions, has, frozenset(features))
        return self.capabilities

    def find_coordinator(self, group_id: str, deadline_s: float | None = None) -> tuple[str, int]:
        """FindCoordinator(group) until it names a node; retries the transient coordinator errors."""
        caps = self.connect()
        version = caps.version(API_FIND_COORDINATOR, 3)
        if version is None:
            raise TargetError(f"{self.bootstrap}: no FindCoordinator version in common")
        cls = payload_class(API_FIND_COORDINATOR, version, True)
        req = build(cls, {"key": group_id, "key_type": 0})
        end = time.monotonic() + (deadline_s or self.timeout_s * 3)
        last = ""
        while True:
            try:
                frame = _blocking_exchange(self.host, self.port, req, self.timeout_s, self.client_id)
                value, findings = decode_frame(API_FIND_COORDINATOR, version, frame)
            except (OSError, ConnectionError) as e:
                raise TargetError(f"{self.bootstrap}: FindCoordinator failed: {e}") from e
            if value is None:
                raise TargetError(
                    f"{self.bootstrap}: FindCoordinator answer is garbage: {findings[0].message}"
                )
            code = int(value.error_code.value)
            if code == 0:
                found = (str(value.host), int(value.port))
                self.coordinators[group_id] = found
                return found
            last = f"error {code}"
            if code not in RETRY_COORDINATOR or time.monotonic() > end:
                raise TargetError(f"{self.bootstrap}: FindCoordinator({group_id!r}) answered {last}")
            time.sleep(0.1)

    # ------------------------------------------------------------------ requests
    def connection(self, member: str, group_id: str) -> Connection:
        """A connection of ``member`` to the group's coordinator with nothing outstanding."""
        coord = self.coordinators.get(group_id) or self.find_coordinator(group_id)
        if self.proxy is not None:
            coord = self.proxy.route(coord)
        pool = self.pools.setdefault((member, group_id), [])
        pool[:] = [c for c in pool if not c.closed]
        for c in pool:
            if not c.busy and (c.host, c.port) == coord:
                return c
        try:
            conn = self.net.open(coord[0], coord[1], self.timeout_s, f"{member}#{len(pool) + 1}")
        except ConnectionError as e:
            raise TargetError(f"{self.bootstrap}: {e}") from e
        pool.append(conn)
        return conn

    def submit(
        self, member: str, group_id: str, payload: Any, tag: Any, client_id: str | None = None
    ) -> None:
        """Write a request on a free connection of ``member``; the header carries ``client_id``."""
        self.net.send(self.connection(member, group_id), payload, tag, client_id)

    def poll(self, timeout: float) -> list[Arrival]:
        return self.net.poll(timeout)

    def take_findings(self) -> list[WireFinding]:
        return self.net.take_findings()

    def outstanding(self) -> int:
        return sum(len(c.pending) for c in self.net.conns)

    def retire(self, conn: Connection) -> None:
        """Never reuse ``conn`` and expect nothing more on it (its answer was lost on purpose)."""
        conn.pending.clear()
        for pool in self.pools.values():
            if conn in pool:
                pool.remove(conn)
        self.retired.append(conn)

    def drop_all(self) -> None:
        """Close every member connection, expecting no answers (the target is being restarted)."""
        for key in list(self.pools):
            self.drop_member(key[0])
        for c in self.retired:
            self.net.close(c)
        self.retired.clear()
        self.coordinators.clear()

    def drop_member(self, member: str) -> None:
        """Close a member's connections (a consumer process that went away)."""
        for key in [k for k in self.pools if k[0] == member]:
            for c in self.pools.pop(key):
                c.pending.clear()
                self.net.close(c)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.net.close_all()
        proxy, self.proxy = self.proxy, None
        if proxy is not None:
            from conformance.wire.proxy import ProxyError

            try:
                proxy.close()
            except ProxyError as e:
                raise TargetError(str(e)) from e

    def describe(self, group_id: str, timeout: float = 2.0) -> tuple[str, list[str]] | None:
        """(state, member ids) of a group by DescribeGroups, or None when it cannot be asked.

        Used as a barrier: a request the target parks has no answer, so the oracle asks the group's
        state to learn that the target has processed it (requests on different connections are
        not ordered by the target).
        """
        caps = self.connect()
        version = caps.version(API_DESCRIBE_GROUPS, 5)
        coord = self.coordinators.get(group_id)
        if version is None or coord is None:
            return None
        cls = payload_class(API_DESCRIBE_GROUPS, version, True)
        req = build(cls, {"groups": (group_id,), "include_authorized_operations": False})
        try:
            frame = _blocking_exchange(coord[0], coord[1], req, timeout, self.client_id)
        except (OSError, ConnectionError, TargetError):
            return None
        value, _findings = decode_frame(API_DESCRIBE_GROUPS, version, frame)
        if value is None or not value.groups:
            return None
        g = value.groups[0]
        return str(g.group_state), sorted(str(m.member_id) for m in g.members)

    def alive(self, timeout: float = 2.0) -> bool:
        """Does the target still answer ApiVersions (or Metadata-less v0 FindCoordinator) on a fresh connection?"""
        caps = self.connect()
        try:
            if caps.has_api_versions:
                cls = payload_class(API_API_VERSIONS, 0, True)
                _blocking_exchange(self.host, self.port, build(cls, {}), timeout, self.client_id)
            else:
                cls = payload_class(API_FIND_COORDINATOR, 0, True)
                _blocking_exchange(
                    self.host, self.port, build(cls, {"key": "groupcheck-probe"}), timeout, self.client_id
                )
            return True
        except (OSError, ConnectionError, TargetError):
            return False
