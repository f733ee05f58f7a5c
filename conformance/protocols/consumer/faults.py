"""Wire faults of the consumer machine against a real coordinator, through the fault proxy (docs/faults.md).

The KIP-848 oracle (`consumer/oracle.py`) sends one request and waits for its answer; these helpers
let the fault proxy (`proxy.py`) stand between, so the target sees what the model sees
(`model/consumer/sim.py`, the `faults` profile):

* ``drop`` (the machine's ``lose_response``) and ``cut``: the proxy forwards the heartbeat and
  swallows its answer, so the target applies it and the member never hears it; the oracle takes
  the swallowed answer from the proxy and judges it like any other. ``cut`` then closes the
  member's connection (both sides): the member's next request goes on a new one, as the Java
  client reconnects after a disconnect (NetworkClient; the heartbeat request manager's onFailure
  resets its HeartbeatState, so every field is sent again).
* ``duplicate``: the proxy writes the heartbeat twice, the copy under a correlation id of its own,
  and swallows the copy's answer. The target serves one connection's requests in order, so it
  applies the copy right after answering the original; `heartbeat_copy` takes the copy's answer
  from the proxy and the oracle judges it against the model's answer to the same request.
* ``hold`` / ``release`` (the machine's ``delay_request``): the proxy holds the heartbeat
  (`FaultProxy.delay_request`, with `MAX_HOLD_MS` as the bound) until the simulator releases it;
  the oracle waits until the proxy has it, so other members' requests sent meanwhile certainly
  reach the target first, and judges the answer at the release. The order the target sees is the
  order the model applies (the release is a moment we choose, not a race), so no hypothesis has
  to guess it; timers near the release are covered by the oracle's tolerance window as usual.

Without the proxy (``GROUPCHECK_PROXY=off``) the faults degrade to what the adapter can do on its
own: a dropped or cut answer is read and not given to the member, a duplicate is sent again after
the original was answered, a held request is sent at the release.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from conformance.wire.framing import decode_frame

#: the longest the proxy holds a delayed request if nobody releases it (an example ends meanwhile)
MAX_HOLD_MS = 60_000
#: how long the oracle waits for the proxy to have taken a held request
PROXY_WAIT_S = 5.0


@dataclass
class Held:
    """A request held for the simulator: written (through the proxy) or, without one, not yet."""

    member: str
    payload: Any
    conn: Any  # the connection it was written on; None: not written yet (no proxy)


@dataclass(frozen=True)
class Swallowed:
    """An answer the proxy swallows for the oracle: whose, and how to decode it."""

    client: tuple[Any, ...]
    corr: int  # the correlation id; COPY: the first copy answer from that client
    api_key: int
    version: int


COPY = -1


def faulty_port_class(base: type[Any] | None = None) -> type[Any]:
    """`ConsumerOraclePort` (or ``base``, the mixed oracle's port: `mixed_faults`) with the wire
    faults (imported late: no import cycle with the oracle). ``base`` provides ``_submit`` /
    ``_await(ref, t)`` around its one exchange, and the hooks ``_resend``, ``_hold_payload``,
    ``_decode_value`` where its requests are not heartbeats."""
    from conformance.protocols.consumer.oracle import ConsumerOraclePort

    class WireFaultConsumerPort(base or ConsumerOraclePort):  # type: ignore[misc]
        """The consumer oracle port the simulator can tell a wire fault (`wire_fault`), hand a
        heartbeat to hold (`hold` / `release`) and ask for a duplicate's copy (`heartbeat_copy`).
        Without a fault it is the plain `ConsumerOraclePort`."""

        def __post_init__(self) -> None:
            super().__post_init__()
            self.fault_next: str | None = None
            self.mode: str | None = None  # "copy" | "release" while the simulator asks for one
            self.expect: Swallowed | None = None  # the next `_await` reads this from the proxy
            self.copy_of: Swallowed | None = None  # a duplicate's copy still to be judged
            self.cut_after: tuple[int, Any, Any] | None = None  # (ref, connection, client address)
            self.captured: dict[tuple[Any, int], tuple[bytes, float]] = {}
            self.held: dict[int, Held] = {}

        @property
        def wire_faults(self) -> bool:
            return self.adapter.proxy is not None

        # -------------------------------------------------------------- what the simulator calls
        def wire_fault(self, kind: str) -> None:
            self.fault_next = kind

        def heartbeat_copy(self, request: Any, ref: int, now: int) -> Any:
            """A duplicate's copy, applied by the target right after the original: judge its answer
            (without the proxy the adapter sends the copy itself now)."""
            self.mode = "copy" if self.copy_of is not None else None
            try:
                return self._resend(request, ref, now)
            finally:
                self.mode, self.copy_of = None, None

        def hold(self, request: Any, ref: int, now: int) -> None:
            member = self.current_member
            self.members.add(member)
            payload = self._hold_payload(request)
            proxy = self.adapter.proxy
            if proxy is None:
                self.held[ref] = Held(member, payload, None)
                return
            conn = self.adapter.connection(member, self.real_group)
            client = conn.sock.getsockname()
            proxy.delay_request(client, conn.next_corr, MAX_HOLD_MS)
            self.adapter.net.send(conn, payload, ref, member)
            if proxy.held(client, timeout_s=PROXY_WAIT_S) == 0:
                self.log.append(
                    f"ref {ref}: the proxy did not take the delayed request within {PROXY_WAIT_S:g}s"
                )
            self.held[ref] = Held(member, payload, conn)
            self.session.wire_delays += 1
            self.log.append(f"t={self.clock()} ref {ref} {member} {type(request).__name__} held by the proxy")

        def release(self, request: Any, ref: int, now: int) -> Any:
            self.mode = "release"
            try:
                return self._resend(request, ref, now)
            finally:
                self.mode = None

        # -------------------------------------------------------------- what another base changes
        def _resend(self, request: Any, ref: int, now: int) -> Any:
            """The exchange a copy or a release goes through (the heartbeat's, for this port)."""
            return self.heartbeat(request, ref, now)

        def _hold_payload(self, request: Any) -> Any:
            from conformance.protocols.consumer.codec import encode_heartbeat

            return encode_heartbeat(request, request.version, self.real_group, self.topics)

        def _decode_value(self, want: Swallowed, value: Any) -> Any:
            from conformance.protocols.consumer.codec import (
                API_CONSUMER_GROUP_HEARTBEAT,
                decode_heartbeat,
                decode_offset_commit,
            )

            if want.api_key == API_CONSUMER_GROUP_HEARTBEAT:
                return decode_heartbeat(value, self.topics)
            return decode_offset_commit(value, self.topics)

        # -------------------------------------------------------------- the oracle's two hooks
        def _submit(self, member: str, payload: Any, ref: int) -> None:
            mode, fault, self.fault_next = self.mode, self.fault_next, None
            adapter, proxy = self.adapter, self.adapter.proxy
            if mode == "copy":
                self.expect = self.copy_of  # the proxy wrote the copy behind the original
                return
            if mode == "release" and ref in self.held:
                held = self.held.pop(ref)
                if held.conn is None:
                    adapter.submit(member, self.real_group, payload, ref, member)
                else:
                    proxy.release(held.conn.sock.getsockname(), timeout_s=PROXY_WAIT_S)
                self.log.append(f"ref {ref} released")
                return
            conn = adapter.connection(member, self.real_group)
            client = tuple(conn.sock.getsockname())
            api, version = payload.__api_key__, payload.__version__
            if proxy is not None and fault in ("drop", "cut"):
                proxy.drop_response(client, conn.next_corr)
                self.expect = Swallowed(client, conn.next_corr, api, version)
                if fault == "drop":
                    self.session.wire_drops += 1
                self.log.append(f"proxy drops the answer to ref {ref}")
            elif proxy is not None and fault == "duplicate":
                proxy.duplicate_request(client, conn.next_corr)
                self.copy_of = Swallowed(client, COPY, api, version)
                self.session.wire_duplicates += 1
                self.log.append(f"proxy duplicates ref {ref}")
            adapter.net.send(conn, payload, ref, member)
            if proxy is not None and fault in ("drop", "cut"):
                adapter.retire(conn)  # its answer never comes back on it: the next request takes a new one
            if fault == "cut":
                self.cut_after = (ref, conn, client)

        def _await(self, ref: int, t: int) -> tuple[Any, int]:
            want, self.expect = self.expect, None
            target = super()._await(ref, t) if want is None else self._take_swallowed(want, t)
            if self.cut_after is not None and self.cut_after[0] == ref:
                _ref, conn, client = self.cut_after
                self.cut_after = None
                self._cut(conn, client, ref)
            return target

        # -------------------------------------------------------------- plumbing
        def _take_swallowed(self, want: Swallowed, t: int) -> tuple[Any, int]:
            """The answer the proxy swallowed (`want`), decoded as `_await` decodes an arrival;
            (None, now) if it does not come within the oracle's answer deadline."""
            from conformance.wire.proxy import COPY_CORRELATION_BASE

            proxy = self.adapter.proxy
            end = time.monotonic() + self.timing.answer_deadline_ms / 1000
            while time.monotonic() < end:
                for client, corr, frame, at in proxy.take_captured():
                    self.captured[(tuple(client), corr)] = (frame, at)
                key = (
                    next(
                        (
                            k
                            for k in sorted(self.captured)
                            if k[0] == want.client and k[1] >= COPY_CORRELATION_BASE
                        ),
                        None,
                    )
                    if want.corr == COPY
                    else ((want.client, want.corr) if (want.client, want.corr) in self.captured else None)
                )
                if key is not None:
                    frame, at = self.captured.pop(key)
                    return self._decode_frame(want, frame, at, t)
                time.sleep(0.005)
            return None, self.clock()

        def _decode_frame(self, want: Swallowed, frame: bytes, at: float, t: int) -> tuple[Any, int]:
            value, findings = decode_frame(want.api_key, want.version, frame)
            self.adapter.net.findings.extend(findings)
            t_ans = int((at - self.t0) * 1000)
            self.session.rtt_ms.append(t_ans - t)
            if value is None:
                return None, t_ans
            try:
                return self._decode_value(want, value), t_ans
            except Exception as e:  # noqa: BLE001 - a value we cannot map is a finding
                self._finding("protocol", "wire.undecodable", f"a swallowed answer: {e}")
                return None, t_ans

        def _cut(self, conn: Any, client: Any, ref: int) -> None:
            """Close the member's connection (both sides through the proxy; ours in any case)."""
            proxy = self.adapter.proxy
            if proxy is not None:
                proxy.cut(client, timeout_s=0.5)
            self.adapter.retire(conn)
            self.adapter.net.close(conn)
            self.adapter.take_findings()  # a connection we closed ourselves is not a finding
            self.session.wire_cuts += 1
            self.log.append(f"connection of ref {ref} cut")

    return WireFaultConsumerPort
