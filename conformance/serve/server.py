"""`groupcheck serve`: the reference model as a Kafka group coordinator on 127.0.0.1 (docs/serve.md).

One thread runs a selector loop over the listener and the client connections. A connection serves
one request at a time, as a Kafka broker does (it stops reading a connection until the request in
hand is answered): a JoinGroup or SyncGroup the model parks holds its connection until the model
delivers its answer (`model.result.Delivery`). The model's clock is the server's elapsed real
time in milliseconds; timers fire from the loop. Every wait is bounded: the select timeout, a
frame that must complete within ``frame_deadline_s``, a write that must drain within
``write_deadline_s``, an idle connection closed after ``idle_s``; frames over
`codec.MAX_REQUEST_FRAME` and undecodable frames close that connection only.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.protocols.consumer.codec import TopicMap
from conformance.serve import answers, translate
from conformance.serve.adversary import Adversary, Fault
from conformance.serve.codec import (
    API_API_VERSIONS,
    API_CONSUMER_GROUP_HEARTBEAT,
    API_DESCRIBE_GROUPS,
    API_FETCH,
    API_FIND_COORDINATOR,
    API_LIST_OFFSETS,
    API_METADATA,
    API_OFFSET_FETCH,
    MAX_REQUEST_FRAME,
    NAMES,
    BadFrame,
    Incoming,
    decode_request,
    encode_response,
)
from conformance.serve.inject import fence_request, phantom_leave, rebalance_requests
from conformance.serve.port import MixedModelPort
from conformance.serve.setup import coordinator_class, mixed_config
from conformance.serve.trace import Trace
from model.consumer.messages import ConsumerGroupHeartbeatRequest

#: how long a fetch of an empty log is held (Kafka holds it up to the request's max wait)
FETCH_HOLD_CAP_MS = 500
MAX_CONNECTIONS = 256


@dataclass
class Conn:
    ident: int
    sock: socket.socket
    inbuf: bytearray = field(default_factory=bytearray)
    outbuf: bytearray = field(default_factory=bytearray)
    busy: bool = False  # a request is in hand (parked, held or being answered)
    frame_started: float | None = None
    write_started: float | None = None
    last_active: float = 0.0
    client_id: str = ""
    closed: bool = False


@dataclass
class Parked:
    conn: Conn
    incoming: Incoming
    fault: Fault | None


@dataclass
class ServeConfig:
    topics: dict[str, int]
    port: int = 0
    seed: int = 0
    adversary: tuple[str, ...] = ()
    every: tuple[int, int] = (8, 20)
    initial_rebalance_delay_ms: int = 3_000  # group.initial.rebalance.delay.ms (Kafka default)
    heartbeat_interval_ms: int = 5_000  # group.consumer.heartbeat.interval.ms (Kafka default)
    settings: tuple[tuple[str, int | str], ...] = ()  # Kafka group settings (conformance/serve/setup.py)
    mutant: str | None = None  # a coordinator mutant served instead of the reference model
    phantom_stay_ms: int = 12_000  # how long the member of a forced KIP-848 rebalance stays
    frame_deadline_s: float = 10.0
    write_deadline_s: float = 10.0
    idle_s: float = 600.0


class Server:
    """See the module docstring. `start` listens and runs the loop in a thread; `stop` ends it."""

    def __init__(self, config: ServeConfig, trace: Trace | None = None) -> None:
        self.config = config
        self.trace = trace or Trace(None)
        settings = {
            "group.initial.rebalance.delay.ms": config.initial_rebalance_delay_ms,
            "group.consumer.heartbeat.interval.ms": config.heartbeat_interval_ms,
            **dict(config.settings),
        }
        self.port_model = MixedModelPort(
            config.seed, mixed_config(settings), coordinator_class(config.mutant)
        )
        self.adversary = Adversary(config.seed, config.adversary, *config.every)
        self.topics = TopicMap()
        for name in sorted(config.topics):
            self.topics.add(name, name, answers.topic_id(name))
        self.sel = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", config.port))
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.address = self.listener.getsockname()
        self.cluster = answers.Cluster("127.0.0.1", self.address[1], dict(config.topics))
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        self.conns: dict[int, Conn] = {}
        self.parked: dict[int, Parked] = {}
        self.held: list[tuple[float, Conn, bytes, Incoming]] = []  # (due, conn, frame, request)
        self.phantoms: list[tuple[int, str, str]] = []  # (leave at ms, group, member)
        self.next_conn = 1
        self.next_ref = 1
        self.started = time.monotonic()
        self.events: list[dict[str, Any]] = []  # adversary actions taken (also in the trace)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        #: called inside the loop with each group request, answer and action (conformance/clientcheck)
        self.observer: Callable[..., None] | None = None
        for name in sorted(config.topics):
            self.port_model.create_topic(name, config.topics[name])

    # ------------------------------------------------------------------ life cycle
    def now_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def start(self) -> Server:
        self._thread = threading.Thread(target=self._run, name="groupcheck-serve", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                raise RuntimeError("serve loop did not stop within its deadline")
        for conn in list(self.conns.values()):
            self._close(conn, "server stopped")
        with contextlib.suppress(OSError):
            self.sel.unregister(self.listener)
        self.listener.close()
        self.sel.close()
        self.trace.close()

    def serve_for(self, seconds: float) -> None:
        """Run the loop in this thread until ``seconds`` have passed or `stop` was called."""
        end = time.monotonic() + seconds
        while not self._stop.is_set() and time.monotonic() < end:
            self.step(min(0.05, max(0.0, end - time.monotonic())))

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.step(0.05)
        except BaseException as e:  # reported by the caller (tests, CLI), never swallowed
            self.error = e

    # ------------------------------------------------------------------ control (any thread)
    def force(self, kind: str, group_id: str) -> str:
        """Apply one adversary action now (``fence`` / ``rebalance`` / ``bump`` / ``failover``) to a group."""
        with self._lock:
            return self._inject(kind, group_id, "control")

    def group_type(self, group_id: str) -> str | None:
        """classic, consumer or None (no such group)."""
        with self._lock:
            return self.port_model.state.group_type(group_id)

    # ------------------------------------------------------------------ the loop
    def step(self, timeout_s: float) -> None:
        now = time.monotonic()
        wait = timeout_s
        if self.held:
            wait = max(0.0, min(wait, min(h[0] for h in self.held) - now))
        try:
            ready = self.sel.select(timeout=wait)
        except (OSError, ValueError):  # a socket closed by `force` from another thread meanwhile
            ready = []
        with self._lock:
            for key, mask in ready:
                if key.data is None:
                    self._accept()
                    continue
                conn: Conn = key.data
                if mask & selectors.EVENT_READ and not conn.closed:
                    self._read(conn)
                if mask & selectors.EVENT_WRITE and not conn.closed:
                    self._write(conn)
            self._timers()
            self._release_held()
            for conn in list(self.conns.values()):
                self._serve_next(conn)
            self._deadlines()

    def _accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        if len(self.conns) >= MAX_CONNECTIONS:
            sock.close()
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = Conn(self.next_conn, sock, last_active=time.monotonic())
        self.next_conn += 1
        self.conns[conn.ident] = conn
        self.sel.register(sock, selectors.EVENT_READ, conn)

    def _read(self, conn: Conn) -> None:
        if len(conn.inbuf) > MAX_REQUEST_FRAME + 4:  # far more than a pipelined request or two
            self._close(conn, "too much sent while a request was in hand")
            return
        try:
            chunk = conn.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._close(conn, f"recv: {e}")
            return
        if not chunk:
            self._close(conn, "EOF")
            return
        conn.inbuf += chunk
        conn.last_active = time.monotonic()
        if conn.frame_started is None:
            conn.frame_started = conn.last_active

    def _write(self, conn: Conn) -> None:
        try:
            sent = conn.sock.send(conn.outbuf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._close(conn, f"send: {e}")
            return
        del conn.outbuf[:sent]
        if not conn.outbuf:
            conn.write_started = None
            self.sel.modify(conn.sock, selectors.EVENT_READ, conn)

    def _queue(self, conn: Conn, frame: bytes) -> None:
        if conn.closed:
            return
        conn.outbuf += frame
        conn.busy = False
        if conn.write_started is None:
            conn.write_started = time.monotonic()
        self._write(conn)
        if conn.outbuf and not conn.closed:
            self.sel.modify(conn.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, conn)

    def _close(self, conn: Conn, why: str) -> None:
        if conn.closed:
            return
        conn.closed = True
        self.conns.pop(conn.ident, None)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.sel.unregister(conn.sock)
        conn.sock.close()
        for ref in [r for r, p in self.parked.items() if p.conn is conn]:
            del self.parked[ref]  # the model answers it later; nobody hears
        self.held = [h for h in self.held if h[1] is not conn]
        self.trace.connection(conn.ident, conn.client_id, why)

    def _deadlines(self) -> None:
        now = time.monotonic()
        cfg = self.config
        for conn in list(self.conns.values()):
            if (
                _partial(conn)
                and conn.frame_started is not None
                and now - conn.frame_started > cfg.frame_deadline_s
            ):
                self._close(conn, "frame not complete within its deadline")
            elif conn.write_started is not None and now - conn.write_started > cfg.write_deadline_s:
                self._close(conn, "answer not read within its deadline")
            elif not conn.busy and now - conn.last_active > cfg.idle_s:
                self._close(conn, "idle")

    # ------------------------------------------------------------------ requests
    def _serve_next(self, conn: Conn) -> None:
        if conn.closed or conn.busy or len(conn.inbuf) < 4:
            return
        (size,) = struct.unpack_from(">i", conn.inbuf, 0)
        if size < 8 or size > MAX_REQUEST_FRAME:
            self._close(conn, f"request frame size {size} refused")
            return
        if len(conn.inbuf) < 4 + size:
            return
        frame = bytes(conn.inbuf[4 : 4 + size])
        del conn.inbuf[: 4 + size]
        conn.frame_started = time.monotonic() if conn.inbuf else None
        try:
            incoming = decode_request(frame)
        except BadFrame as e:
            self._close(conn, f"bad frame: {e}")
            return
        if incoming.client_id:
            conn.client_id = incoming.client_id
        conn.busy = True
        try:
            self._dispatch(conn, incoming)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            self._close(conn, f"request not served: {type(e).__name__}: {e}")

    def _dispatch(self, conn: Conn, req: Incoming) -> None:
        key, body, v = req.api_key, req.body, req.version
        if key == API_API_VERSIONS:
            if body is None:  # KAFKA-3652, KIP-511: a v0 answer, UNSUPPORTED_VERSION
                self._answer(conn, req, self.cluster.api_versions(False), {"error": 35}, version=0)
            else:
                self._answer(conn, req, self.cluster.api_versions(True), {"error": 0})
        elif key == API_METADATA:
            self._answer(conn, req, self.cluster.metadata(body), {"topics": self._names(body.topics)})
        elif key == API_FIND_COORDINATOR:
            self._answer(conn, req, self.cluster.find_coordinator(body, v), {"node": 0})
        elif key == API_OFFSET_FETCH:
            values = answers.offset_fetch(self.port_model, body, v)
            self._answer(conn, req, values, {"offsets": _offsets_summary(values, v)})
        elif key == API_LIST_OFFSETS:
            self._answer(conn, req, self.cluster.list_offsets(body), {"offset": 0})
        elif key == API_DESCRIBE_GROUPS:  # the state as of now: due timers fire first
            self._deliver(self.port_model.advance(self.now_ms()).deliveries)
            values = answers.describe_groups(self.port_model, body)
            self._answer(
                conn,
                req,
                values,
                {"groups": [(g["group_state"], len(g["members"])) for g in values["groups"]]},
            )
        elif key == API_FETCH:
            hold = min(FETCH_HOLD_CAP_MS, max(0, translate.ms(body.max_wait)))
            frame = encode_response(key, v, req.correlation_id, self.cluster.fetch(body))
            self.held.append((time.monotonic() + hold / 1000, conn, frame, req))
        else:
            self._group_request(conn, req)

    def _names(self, topics: Any) -> list[str] | None:
        return None if topics is None else [str(t.name) for t in topics[:1000]]

    def _answer(
        self, conn: Conn, req: Incoming, values: dict[str, Any], summary: dict[str, Any], version: int = -1
    ) -> None:
        version = req.version if version < 0 else version
        self.trace.exchange(conn.ident, conn.client_id, NAMES[req.api_key], req.version, summary)
        self._queue(conn, encode_response(req.api_key, version, req.correlation_id, values))

    def _group_request(self, conn: Conn, req: Incoming) -> None:
        model_req = translate.to_model(req.api_key, req.version, req.body, conn.client_id, self.topics)
        fault = self.adversary.on_group_request()
        ref = self.next_ref
        self.next_ref += 1
        self.parked[ref] = Parked(conn, req, fault)
        self.trace.request(conn.ident, conn.client_id, NAMES[req.api_key], req.version, ref, model_req)
        if self.observer is not None:
            self.observer(
                "request", ref=ref, client=conn.client_id, request=model_req, state=self.port_model.state
            )
        self._deliver(self.port_model.send(model_req, ref, self.now_ms()).deliveries)
        if fault is not None and fault.kind in ("fence", "rebalance", "bump", "failover"):
            self._inject(fault.kind, getattr(model_req, "group_id", ""), "adversary")

    def _deliver(self, deliveries: list[Any]) -> None:
        for d in deliveries:
            parked = self.parked.pop(d.ref, None)
            if parked is None:
                continue  # an injected request's answer, or the asker is gone
            conn, req, fault = parked.conn, parked.incoming, parked.fault
            summary = translate.summary(d.response)
            action = None if fault is None or fault.kind not in ("lose", "delay") else fault
            self.trace.response(
                conn.ident,
                conn.client_id,
                NAMES[req.api_key],
                d.ref,
                summary,
                None if action is None else action.kind,
            )
            if self.observer is not None:
                kind = None if action is None else action.kind
                self.observer("response", ref=d.ref, client=conn.client_id, response=d.response, fault=kind)
            values = translate.to_wire(d.response, req.version, self.topics)
            frame = encode_response(req.api_key, req.version, req.correlation_id, values)
            if action is not None and action.kind == "lose":
                self._close(conn, "adversary: response lost")
            elif action is not None and action.kind == "delay":
                self.held.append((time.monotonic() + action.delay_ms / 1000, conn, frame, req))
            else:
                self._queue(conn, frame)

    def _release_held(self) -> None:
        now = time.monotonic()
        due = [h for h in self.held if h[0] <= now]
        if not due:
            return
        self.held = [h for h in self.held if h[0] > now]
        for _at, conn, frame, req in sorted(due, key=lambda h: h[0]):
            if req.api_key == API_FETCH:
                self.trace.exchange(conn.ident, conn.client_id, "Fetch", req.version, {"records": 0})
            self._queue(conn, frame)

    def _timers(self) -> None:
        now = self.now_ms()
        self._deliver(self.port_model.advance(now).deliveries)
        for at, group, member in [p for p in self.phantoms if p[0] <= now]:
            self.phantoms.remove((at, group, member))
            self.trace.adversary("phantom-leave", group, member)
            self._deliver(self.port_model.send(phantom_leave(group, member), self._ref(), now).deliveries)

    def _ref(self) -> int:
        ref = self.next_ref
        self.next_ref += 1
        return ref

    def _inject(self, kind: str, group_id: str, source: str) -> str:
        now = self.now_ms()
        if kind == "failover":
            result = self.port_model.failover(now)
            self.parked.clear()
            self.held.clear()
            self.phantoms.clear()
            for conn in list(self.conns.values()):
                self._close(conn, "failover")
            self._deliver(result.deliveries)
            what = "reloaded from durable records"
        elif kind == "fence":
            request, what = fence_request(self.port_model, group_id)
            if request is not None:
                self._deliver(self.port_model.send(request, self._ref(), now).deliveries)
        elif kind in ("rebalance", "bump"):
            requests, what = rebalance_requests(self.port_model, group_id, self.next_ref)
            for request in requests:
                self._deliver(self.port_model.send(request, self._ref(), now).deliveries)
                if isinstance(request, ConsumerGroupHeartbeatRequest):
                    if kind == "bump":  # leaves at once: no member hears of the join in between
                        leave = phantom_leave(group_id, request.member_id)
                        self._deliver(self.port_model.send(leave, self._ref(), now).deliveries)
                    else:
                        self.phantoms.append((now + self.config.phantom_stay_ms, group_id, request.member_id))
        else:
            raise ValueError(f"unknown action {kind!r}")
        self.events.append({"kind": kind, "group": group_id, "detail": what, "source": source})
        if self.observer is not None:
            self.observer("action", action=kind, group=group_id, detail=what, state=self.port_model.state)
        self.trace.adversary(kind, group_id, what)
        return what


def _partial(conn: Conn) -> bool:
    """The connection holds the start of a frame, not yet whole (a whole one waits its turn)."""
    if not conn.inbuf:
        return False
    if len(conn.inbuf) < 4:
        return True
    size = int(struct.unpack_from(">i", conn.inbuf, 0)[0])
    return len(conn.inbuf) < 4 + size


def _offsets_summary(values: dict[str, Any], version: int) -> list[str]:
    topics = values["topics"] if version < 8 else [t for g in values["groups"] for t in g["topics"]]
    return sorted(
        f"{t['name']}:{p['partition_index']}={p['committed_offset']}" for t in topics for p in t["partitions"]
    )


__all__ = ["API_CONSUMER_GROUP_HEARTBEAT", "ServeConfig", "Server"]
