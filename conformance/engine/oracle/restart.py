"""Coordinator failover on a real target, the part every protocol's Failover rule shares.

The machine's Failover rule restarts the target process on its own state (`Target.restart`:
SIGKILL by default, or a clean SIGTERM; the same log folders and ports), waits until the group's
coordinator serves the group again, and compares what the target recovered with each model
hypothesis loaded from its durable records (docs/faults.md). When the target loaded the group is not
observable (somewhere between the stop and the first good answer: after a crash a KRaft broker
may load it long before it serves), so each protocol loads its hypotheses at several moments;
`reload` keeps those equal to the recovered group. None -> an ``oracle.Failover`` protocol finding.

Every wait has a deadline (`RESTART_DEADLINE_S`). The protocols' describe requests
(DescribeGroups, ConsumerGroupDescribe) go to the group's coordinator on a fresh connection
(`describe_on_coordinator`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from conformance.errors import TargetError

#: how long a restart (stop, start, the group loaded again) may take
RESTART_DEADLINE_S = 120.0
#: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: the group is not served yet.
NOT_READY = frozenset({14, 15, 16})


def unexplained_recovery(port: Any, t: int, reasons: list[str]) -> None:
    """The protocol finding of every Failover rule when no hypothesis explains what the target
    recovered after a restart; ``reasons`` says why each loaded hypothesis did not."""
    port._finding(
        "protocol",
        "oracle.Failover",
        f"at t={t}, after a restart of the target no model hypothesis explains the recovered group: "
        + " | ".join(dict.fromkeys(reasons)),
    )


def restart_process(port: Any, t: int) -> bool:
    """Close every member connection (ours, so not findings) and restart the target process, for the
    Failover rule of every protocol; a target that cannot come back is a crash finding at ``t``."""
    port.adapter.drop_all()
    if port.adapter.proxy is not None:
        port.adapter.proxy.cut_all()
    port.adapter.take_findings()
    try:
        port.session.launcher.restart(RESTART_DEADLINE_S, signal_name=port.session.restart_signal)
    except Exception as e:  # noqa: BLE001 - a target that cannot come back is a finding, with its log
        port._crash(t, f"restart failed: {e}")
        return False
    return True


def describe_on_coordinator(
    adapter: Any, group_id: str, api_key: int, version: int, fields: dict[str, Any], timeout: float
) -> Any:
    """Send a describe request (DescribeGroups, ConsumerGroupDescribe) to the group's coordinator and
    return the first group of the answer; None when the coordinator is unknown, unreachable or
    answers no group."""
    from conformance.wire.codec import build, payload_class
    from conformance.wire.connection import _blocking_exchange
    from conformance.wire.framing import decode_frame

    coord = adapter.coordinators.get(group_id)
    if coord is None:
        return None
    req = build(payload_class(api_key, version, True), {**fields, "include_authorized_operations": False})
    try:
        frame = _blocking_exchange(coord[0], coord[1], req, timeout, adapter.client_id)
    except (OSError, ConnectionError):
        return None
    value, _ = decode_frame(api_key, version, frame)
    if value is None or not value.groups:
        return None
    return value.groups[0]


def poll_served(port: Any, deadline_s: float, look: Callable[[], Any]) -> tuple[int, Any]:
    """Poll a restarted target until its coordinator serves the group; (the last "not ready" ms, what
    `look` saw). `look` describes the group (DescribeGroups or ConsumerGroupDescribe) and returns an
    object with an `error` code, or None while there is no answer yet."""
    adapter = port.adapter
    end = time.monotonic() + deadline_s
    not_ready = port.clock()
    while time.monotonic() < end:
        asked = port.clock()
        try:
            adapter.coordinators.pop(port.real_group, None)
            adapter.find_coordinator(port.real_group, deadline_s=max(0.5, end - time.monotonic()))
        except Exception:  # noqa: BLE001 - not ready yet: try again until the deadline
            not_ready = asked
            time.sleep(0.02)
            continue
        seen = look()
        if seen is None or seen.error in NOT_READY:
            not_ready = asked
            time.sleep(0.01)
            continue
        return not_ready, seen
    raise TargetError(f"{port.session.launcher.name}: the group was not served again within {deadline_s:g}s")


def restart_served(port: Any, look: Callable[[], Any]) -> tuple[int, int, int, Any] | None:
    """Spend one restart of the port's protocol budget, restart the target and wait until it serves
    the group: (stopped, loaded after, serving again, what `look` saw), in port ms; None when the
    target did not come back (a crash finding)."""
    done = port.session.__dict__.setdefault("restarts_by_protocol", {})
    done[port.protocol_name] = done.get(port.protocol_name, 0) + 1
    port.session.restarts_done += 1
    t = port.clock()
    if not restart_process(port, t):
        return None
    try:
        t_load, seen = poll_served(port, RESTART_DEADLINE_S, look)
    except TargetError as e:
        port._crash(t, str(e))
        return None
    t_serving = port.clock()
    port.session.restart_times.append((t, t_load, t_serving))
    return t, t_load, t_serving, seen


def reload(
    port: Any,
    t: int,
    load_times: Callable[[Any], list[int]],
    loads: Callable[[Any, int], list[Any]],
    matches: Callable[[Any], str | None],
) -> None:
    """Keep the hypotheses that, loaded at one of their ``load_times`` (``loads``: one hypothesis per
    order of equal deadlines), equal the recovered group (``matches``: None, else how they differ);
    none -> `unexplained_recovery`. What had surely fired before the stop at ``t`` fires first."""
    keep, reasons = [], []
    for h0 in port.hypos:
        port._fire_certain(h0, t)  # what had surely fired before the stop
        for at in load_times(h0):
            for h in loads(h0, at):
                why = matches(h)
                if why is None:
                    keep.append(h)
                else:
                    reasons.append(f"loaded at t={at}: {why}")
    if keep:
        port.hypos = port._dedupe(keep)
    else:
        unexplained_recovery(port, t, reasons)
