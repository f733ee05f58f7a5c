"""Faults against a real coordinator: the machine's fault rules mapped onto the proxy and the launcher.

* ``LoseResponse`` (`model/classic/sim.py`): on the model the client drops the answer. Against a real
  target the fault proxy (`proxy.py`) forwards the request and swallows the answer, so the target
  applies it and nobody hears it, the oracle included. The oracle then accepts whatever the model
  answered for that request (``OraclePort.lost``) and keeps every hypothesis: a lost JoinGroup
  answer leaves a member the client does not know (its generated id stays provisional in the model
  until a later answer names it, or its session expires in both). The client waits until its
  request timeout, exactly as on the model.
* ``Failover``: the target process is crashed (SIGKILL, the default; ``--restart-signal term`` for a
  clean SIGTERM shutdown) and started again on the same log directories (`Target.restart`, only
  for launchers with the ``restart`` capability). After a SIGKILL the broker recovers its logs
  without a clean-shutdown marker and must wait until the controller has timed out its old
  registration (`broker.session.timeout.ms`) before it serves again; the coordinator may have
  loaded the group and expired its members by then (seen on 4.4.0: the group comes back Empty,
  its generation kept). The oracle therefore loads each hypothesis both when the target served
  again and at the stop with the timers run up to then, and keeps what the recovered group shows. The model's hypotheses
  unload and load their durable records (`model.classic.records.load`, GMM onLoaded) at the moment
  the target has finished loading; the group the target recovered (DescribeGroups: state, members,
  assignments) must match one of them (rule ``oracle.Failover``). Requests in flight when the
  target went away are answered to the clients as the model's unload answers them
  (NOT_COORDINATOR): the real client sees a disconnect, which it treats the same way.
* ``CutConnection``: the member's connection is closed under a request the target has already
  taken (the proxy closes both sides; without the proxy the adapter closes its own). The target
  keeps what it applied; its answer goes nowhere, so the oracle accepts the model's (``lost``) and
  the client takes Java's disconnect path (`model/classic/sim.py`).
* ``DuplicateRequest``: the proxy writes the member's next request twice, the copy under a
  correlation id of its own, and hands the copy's answer to the oracle. Kafka serves a
  connection's requests one at a time, so the target applies the copy right after it answered the
  original; the simulator applies it to the model at the same point (`send_copy`) and the oracle
  compares the copy's answer like any other (a duplicated LeaveGroup: UNKNOWN_MEMBER_ID). The
  connection carrying a copy takes no further request (`Connection.blocked`): a copy the target
  parks (a JoinGroup) mutes it until answered, which would hold the member's next request back
  where the model does not.
* ``DelayRequest``: the request goes on the wire and the proxy holds it (`FaultProxy.delay_request`
  with `MAX_HOLD_MS` as the bound, then `held` until the proxy has it) until the simulator's
  ``release``; then the proxy lets it through and the model applies it at that moment. Other
  members' requests sent meanwhile certainly reach the target first, so the order is the one the
  model applies; when the client gives up on it (request timeout) or restarts, its connection is
  closed and the held request never reaches the target, in both (`ClassicSim.drop_held`).
* NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS mid-run (after a
  restart, or a coordinator moving): the oracle finds the coordinator again and resends the same
  request, within `RETRY_DEADLINE_S`; only then is the answer judged.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

from conformance.engine.oracle.choosers import PROVISIONAL
from conformance.engine.oracle.restart import (
    RESTART_DEADLINE_S,
    describe_on_coordinator,
    poll_served,
    restart_process,
    unexplained_recovery,
)
from model.classic.messages import LeaveGroupResponse, OffsetCommitResponse
from model.errors import ErrorCode

#: the longest the proxy holds a delayed request nobody releases (DelayRequest)
MAX_HOLD_MS = 60_000
#: how long a request is retried while the coordinator moves or loads (a restart included)
RETRY_DEADLINE_S = 30.0
TRANSIENT = (
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
)


def submit(port: Any, payload: Any, ref: int, client_id: str) -> None:
    """Write the request for ``ref`` on the member's connection, with the fault the port was told."""
    adapter = port.adapter
    fault, port.fault_next = port.fault_next, None
    conn = adapter.connection(port.current_member, port.real_group)
    if fault == "drop" and adapter.proxy is not None:
        client = conn.sock.getsockname()
        adapter.proxy.drop_response(client, conn.next_corr)
        port.swallowed[(client, conn.next_corr)] = ref
        adapter.net.send(conn, payload, ref, client_id)
        adapter.retire(conn)
        port.log.append(f"proxy drops the answer to ref {ref}")
        port.session.wire_drops += 1
        return
    if fault == "hold":  # DelayRequest: held by the proxy until `release` (without one: not sent yet)
        port.held[ref] = None
        port.sent[ref] = (payload, client_id, conn)
        if adapter.proxy is None:
            return
        client = conn.sock.getsockname()
        adapter.proxy.delay_request(client, conn.next_corr, MAX_HOLD_MS)
        adapter.net.send(conn, payload, ref, client_id)
        adapter.proxy.held(client, timeout_s=5.0)
        port.held[ref] = conn
        port.session.wire_delays += 1
        port.log.append(f"proxy holds ref {ref}")
        return
    if fault == "duplicate" and adapter.proxy is not None:
        client = conn.sock.getsockname()
        adapter.proxy.duplicate_request(client, conn.next_corr)
        # The target reads the copy once the original is answered; a copy it parks (a JoinGroup)
        # mutes this connection until its own answer, so the member's later requests take another
        # connection, as the model has them (seen on Kafka 4.4.0: a SyncGroup queued behind a
        # parked copy was read 1.4 s late, after the copy's join phase had removed its sender)
        conn.blocked = True
        port.duplicated[ref] = tuple(client)
        port.log.append(f"proxy duplicates ref {ref}")
        port.session.wire_duplicates += 1
    adapter.net.send(conn, payload, ref, client_id)
    port.sent[ref] = (payload, client_id, conn)


def cut(port: Any, ref: int) -> bool:
    """Close the connection that carries ``ref`` (the machine's CutConnection); True if it was open."""
    if ref not in port.sent:
        return False
    conn = port.sent[ref][2]
    port.held.pop(ref, None)  # a held request goes with its connection (never reaches the target)
    if conn.closed:
        return False
    adapter = port.adapter
    client = conn.sock.getsockname()
    if adapter.proxy is not None:  # both sides closed by the proxy; ours before anyone polls it
        adapter.proxy.cut(client, timeout_s=0.5)
    adapter.retire(conn)
    adapter.net.close(conn)  # without the proxy this is the cut (the target sees the disconnect)
    if ref not in port.answers:
        port.lost.add(ref)  # the target's answer goes nowhere: the model's is accepted as is
    port.session.wire_cuts += 1
    port.log.append(f"connection of ref {ref} cut")
    return True


def release(port: Any, ref: int) -> list[Any]:
    """The held request ``ref`` reaches the target now: the proxy ends its hold (or, without the
    proxy, it is sent now) and the model applies it at this moment, as the simulator did."""
    if ref not in port.held:
        return []
    conn = port.held.pop(ref)
    member, request, _version, _t = port.requests[ref]
    payload, client_id, sent_conn = port.sent[ref]
    t = port.clock()
    if conn is None:
        port.adapter.net.send(sent_conn, payload, ref, client_id)
    elif not conn.closed:
        port.adapter.proxy.release(conn.sock.getsockname(), timeout_s=5.0)
    port.requests[ref] = (member, request, _version, t)  # the target takes it now
    port.log.append(f"t={t} ref {ref} released")
    from model.classic.messages import JoinGroupRequest

    out: list[Any] = port._operate(t, ("send", ref, request))
    if isinstance(request, JoinGroupRequest) and ref not in port.answers:
        port._barrier()
    return out


def copy_answer(
    port: Any, client: Any, corr: int, frame: bytes, at: float
) -> tuple[int, bytes, float] | None:
    """A duplicated request's copy answered (the proxy swallowed it): (copy ref, frame, arrival),
    or None while the simulator has not applied the copy to the model yet (kept until it does)."""
    key = tuple(client)
    ref = port.copy_ref.pop(key, None)
    if ref is None:
        port.copy_early[key] = (corr, frame, at)
        return None
    return ref, frame, at


def lose_in_flight(port: Any, ref: int) -> bool:
    """Swallow the answer to ``ref`` if it has not passed the proxy yet (a parked JoinGroup)."""
    adapter = port.adapter
    if adapter.proxy is None or ref in port.answers or ref not in port.sent:
        return False
    conn = port.sent[ref][2]
    corr = next((c for c, p in conn.pending.items() if p.tag == ref), None)
    if corr is None or conn.closed:
        return False
    client = conn.sock.getsockname()
    port.swallowed[(client, corr)] = ref
    if not adapter.proxy.drop_pending_response(client, corr):
        del port.swallowed[(client, corr)]
        return False
    adapter.retire(conn)
    port.session.wire_drops += 1
    port.log.append(f"proxy drops the answer to ref {ref} (in flight)")
    return True


def captured(port: Any) -> list[Any]:
    """The target's answers the proxy swallowed, as arrivals for the oracle: the client never hears
    them (the simulator drops them, as on the model), but the oracle checks them like any other."""
    from conformance.protocols.classic.codec import api_key_of
    from conformance.wire.framing import Arrival, decode_frame

    proxy = port.adapter.proxy
    if proxy is None:
        return []
    from conformance.wire.proxy import COPY_CORRELATION_BASE

    out = []
    captured = proxy.take_captured() + port.copy_ready
    port.copy_ready = []
    for client, corr, frame, at in captured:
        ref = port.swallowed.pop((client, corr), None)
        if ref is None and corr >= COPY_CORRELATION_BASE:
            got = copy_answer(port, client, corr, frame, at)
            if got is None:
                continue
            ref = got[0]
        if ref is None or ref not in port.requests:
            continue
        _member, request, version, _sent = port.requests[ref]
        key = api_key_of(request)
        value, findings = decode_frame(key, version, frame)
        port.adapter.net.findings.extend(findings)
        out.append(Arrival(ref, key, version, value, at, frame))
    return out


def transient(resp: Any) -> bool:
    """Is this answer 'ask the coordinator again' (the coordinator moved, or is loading)?"""
    if isinstance(resp, OffsetCommitResponse):
        return bool(resp.partitions) and all(e in TRANSIENT for _t, _p, e in resp.partitions)
    if isinstance(resp, LeaveGroupResponse):
        return resp.error in TRANSIENT
    return getattr(resp, "error", None) in TRANSIENT


def retry(port: Any, ref: int, resp: Any) -> bool:
    """Resend ``ref`` after a transient coordinator error; False once its retry deadline passed."""
    if ref not in port.sent:
        return False
    first = port.retry_since.setdefault(ref, time.monotonic())
    if time.monotonic() - first > RETRY_DEADLINE_S:
        return False
    payload, client_id, _conn = port.sent[ref]
    adapter = port.adapter
    adapter.coordinators.pop(port.real_group, None)
    try:
        adapter.find_coordinator(
            port.real_group, deadline_s=max(1.0, RETRY_DEADLINE_S - (time.monotonic() - first))
        )
    except Exception:  # noqa: BLE001 - no coordinator within the deadline: the answer is judged as is
        return False
    member = port.requests[ref][0]
    time.sleep(0.05)
    conn = adapter.connection(member, port.real_group)
    adapter.net.send(conn, payload, ref, client_id)
    port.sent[ref] = (payload, client_id, conn)
    port.retries += 1
    port.session.resends += 1
    code = getattr(resp, "error", None)
    port.log.append(f"ref {ref} answered {getattr(code, 'name', code)}: found the coordinator again, resent")
    return True


_COUNTS = ("wire_drops", "wire_duplicates", "wire_cuts", "wire_delays", "restarts_done", "resends")


def snapshot(session: Any) -> dict[str, Any]:
    """The session's fault counters now, so `summary` can say what one run of several injected."""
    snap: dict[str, Any] = {k: getattr(session, k, 0) for k in _COUNTS}
    snap["restart_times"] = len(session.restart_times)
    snap["mixed_restart_kinds"] = len(session.__dict__.get("mixed_restart_kinds", []))
    return snap


def summary(session: Any, since: dict[str, Any] | None = None) -> str:
    """One line on the faults a run injected into a real target (for `check` and benchmarks);
    ``since`` (a `snapshot`) limits it to what came after, when runs of several protocols share
    one session."""
    base = since or {}
    n = {k: getattr(session, k, 0) - base.get(k, 0) for k in _COUNTS}
    times = session.restart_times[base.get("restart_times", 0) :]
    took = [round((serving - stopped) / 1000, 1) for stopped, _loaded, serving in times]
    kinds = session.__dict__.get("mixed_restart_kinds", [])[base.get("mixed_restart_kinds", 0) :]
    how = "SIGKILL" if session.restart_signal == "kill" else "SIGTERM"
    return (
        f"faults: {n['wire_drops']} answer(s) lost on the wire, {n['wire_duplicates']} request(s) "
        f"duplicated, {n['wire_cuts']} connection(s) cut, {n['wire_delays']} request(s) "
        f"held, {n['restarts_done']} restart(s) ({how})"
        + (f" ({', '.join(f'{t:g}' for t in took)} s)" if took else "")
        + (f" (mixed group: {', '.join(kinds)})" if kinds else "")
        + f", {n['resends']} resend(s) after a coordinator error"
    )


# ---------------------------------------------------------------------- restart (coordinator failover)
@dataclass(frozen=True)
class Recovered:
    """The group as the target shows it after a restart (DescribeGroups)."""

    error: int
    state: str
    members: dict[str, bytes]  # member id -> assignment


def describe_group(adapter: Any, group_id: str, timeout: float = 2.0) -> Recovered | None:
    """DescribeGroups on the group's coordinator; None when the coordinator cannot be reached."""
    from conformance.protocols.classic.codec import API_DESCRIBE_GROUPS

    version = adapter.connect().version(API_DESCRIBE_GROUPS, 5)
    if version is None:
        return None
    g = describe_on_coordinator(
        adapter, group_id, API_DESCRIBE_GROUPS, version, {"groups": (group_id,)}, timeout
    )
    if g is None:
        return None
    members = {str(m.member_id): bytes(m.member_assignment) for m in g.members}
    return Recovered(int(g.error_code.value), str(g.group_state), members)


def wait_loaded(port: Any, deadline_s: float) -> tuple[int, Recovered]:
    """Poll until the restarted coordinator serves the group; (load time lower bound ms, the group).

    The target loads the group somewhere between the last answer that said it was not ready
    (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, no coordinator yet) and the first good one; the
    model loads at the lower bound, so the target's timers fire no earlier than the model's and at
    most the polling gap later (inside the oracle's late tolerance)."""
    return poll_served(port, deadline_s, lambda: describe_group(port.adapter, port.real_group))


def recovered_matches(h: Any, seen: Recovered) -> str | None:
    """None when the recovered group equals hypothesis ``h``'s loaded group, else how it differs."""
    g = h.state.groups.get("g")
    if g is None or not g.members:
        if seen.members or seen.state not in ("Empty", "Dead"):
            return f"target recovered {seen.state} with {len(seen.members)} members, model an empty group"
        return None
    if seen.state != g.state.value:
        return f"target recovered the group {seen.state}, model {g.state.value}"
    model = {mid: m.assignment for mid, m in g.members.items()}
    if len(model) != len(seen.members):
        return f"target recovered {len(seen.members)} members, model {len(model)}"
    known = {mid: a for mid, a in model.items() if PROVISIONAL not in mid}
    for mid, a in known.items():
        if mid not in seen.members:
            return f"member {mid} is not in the recovered group {sorted(seen.members)}"
        if seen.members[mid] != a:
            return f"member {mid} recovered assignment {seen.members[mid].hex()}, model {a.hex()}"
    rest_model = sorted(a for mid, a in model.items() if mid not in known)
    rest_target = sorted(a for mid, a in seen.members.items() if mid not in known)
    if rest_model != rest_target:
        return "the recovered assignments of members the client never heard of differ"
    return None


def restart(port: Any) -> list[Any]:
    """The machine's Failover rule on a real target: restart it, reload the model, compare."""
    from model.classic.records import load

    port.session.restarts_done += 1
    port._collect(0)
    t = port.clock()
    in_flight = [r for r in port.requests if r not in port.answers and r not in port.lost]
    if not restart_process(port, t):
        return []
    t_load, seen = wait_loaded(port, RESTART_DEADLINE_S)
    port.restarts.append((t, t_load, port.clock()))
    port.session.restart_times.append((t, t_load, port.clock()))
    port.log.append(f"t={t} restart; group served again, loaded after t={t_load}")
    deliveries: list[Any] | None = None
    keep, reasons = [], []
    for h0 in port.hypos:
        answered = port.coordinator.unload(h0.state).deliveries
        if deliveries is None:
            deliveries = answered
        # When did the target load the group? Somewhere between the stop and the first good answer.
        # After a clean stop it loads as it starts serving (t_load); after a crash a KRaft broker
        # is back as a process long before it may serve (its old registration must time out first,
        # broker.session.timeout.ms), and the coordinator may load the group, arm its timers and
        # expire the members nobody heartbeats meanwhile. Both are Kafka; the recovered group says
        # which (a model loading at the stop and running its timers up to t_load).
        for at in dict.fromkeys((t_load, t)):
            h = copy.deepcopy(h0)
            h.state = load(h.durable, at)
            h.outstanding = {}
            h.now = max(h.now, at)
            if at < t_load:
                port._apply(h, lambda h=h: port.coordinator.advance(h.state, t_load), t_load)
                h.outstanding = {}
                h.now = max(h.now, t_load)
            h.reported = len(h.transitions)
            why = recovered_matches(h, seen)
            if why is None:
                keep.append(h)
            else:
                reasons.append(why)
    port.lost.update(in_flight)
    for d in deliveries or []:
        port.delivered.add(d.ref)
    if keep:
        port.hypos = keep
    else:
        unexplained_recovery(port, t, reasons)
    return list(deliveries or [])
