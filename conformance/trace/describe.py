"""One-line human descriptions of requests, responses and events for `groupcheck show`.

Member ids are shown as the virtual client's name when the trace's states name it; embedded
protocol bytes are decoded (subscriptions with owned partitions and sticky claims, assignments),
so a reviewer reads "claims t-0 (gen 1)" instead of hex.
"""

from __future__ import annotations

from typing import Any

from model.embedded import (
    EmbeddedDecodeError,
    decode_assignment,
    decode_sticky_user_data,
    decode_subscription,
)


def parts(tps: Any) -> str:
    items = sorted(f"{t}-{p}" for t, p in tps)
    return ",".join(items) if items else "-"


class Names:
    """Member id -> client name, learnt from the trace's state lines (and events)."""

    def __init__(self, steps: list[Any]) -> None:
        self.by_member: dict[str, str] = {}
        for step in steps:
            for name, view in ((step.state or {}).get("clients") or {}).items():
                if view.get("member_id"):
                    self.by_member[view["member_id"]] = name

    def text(self, message: str) -> str:
        """``message`` with every known member id replaced by its client's name."""
        for member_id, name in sorted(self.by_member.items(), key=lambda kv: -len(kv[0])):
            message = message.replace(member_id, name)
        return message

    def __call__(self, member_id: str | None) -> str:
        if not member_id:
            return '""'
        name = self.by_member.get(member_id)
        if name is not None:
            return name
        return member_id if len(member_id) <= 12 else member_id[:10] + "…"


def _subscription(data: bytes) -> str:
    try:
        sub = decode_subscription(data)
    except EmbeddedDecodeError:
        return "undecodable"
    out = f"topics {','.join(sub.topics)}"
    if sub.owned_partitions:
        out += f" owns {parts(sub.owned_partitions)}"
    if sub.user_data:
        try:
            claimed, generation = decode_sticky_user_data(sub.user_data)
            out += f" claims {parts(claimed)}" + (
                f" (gen {generation})" if generation is not None else " (no gen)"
            )
        except (EmbeddedDecodeError, ValueError):
            pass
    return out


def _assignment(data: bytes) -> str:
    if not data:
        return "-"
    try:
        return parts(decode_assignment(data).partitions)
    except EmbeddedDecodeError:
        return "undecodable"


def request(req: Any, names: Names) -> str:
    kind = type(req).__name__.removesuffix("Request")
    gen = getattr(req, "generation_id", None)
    if kind == "JoinGroup":
        protos = "; ".join(f"{n}: {_subscription(m)}" for n, m in req.protocols)
        inst = f" instance {req.group_instance_id}" if req.group_instance_id else ""
        return f"JoinGroup v{req.version} member {names(req.member_id)}{inst} [{protos}]"
    if kind == "SyncGroup":
        assigned = "; ".join(f"{names(m)}={_assignment(a)}" for m, a in req.assignments)
        return f"SyncGroup gen {gen} member {names(req.member_id)}" + (
            f" assigns {assigned}" if assigned else ""
        )
    if kind == "Heartbeat":
        return f"Heartbeat gen {gen} member {names(req.member_id)}"
    if kind == "LeaveGroup":
        return f"LeaveGroup {','.join(names(m.member_id) for m in req.members)}"
    if kind == "OffsetCommit" and hasattr(req, "partitions"):
        return f"OffsetCommit gen {gen} member {names(req.member_id)} {parts((p.topic, p.partition) for p in req.partitions)}"
    if kind == "ConsumerGroupHeartbeat":
        owned = req.owned()
        return f"ConsumerGroupHeartbeat member {names(req.member_id)} epoch {req.member_epoch}" + (
            f" owns {parts(owned)}" if owned is not None else ""
        )
    if kind == "OffsetCommit":
        return f"OffsetCommit epoch {req.generation_id_or_member_epoch} member {names(req.member_id)}"
    if kind == "DeleteGroups":
        return f"DeleteGroups v{req.version} {', '.join(req.groups_names)}"
    return kind


def response(resp: Any, names: Names) -> str:
    kind = type(resp).__name__.removesuffix("Response")
    error = getattr(resp, "error", None)
    if error is None:
        error = getattr(resp, "error_code", None)
    err = getattr(error, "name", str(error))
    if kind == "JoinGroup":
        if err == "MEMBER_ID_REQUIRED":
            return f"JoinGroup MEMBER_ID_REQUIRED member id {names(resp.member_id)}"
        if err != "NONE":
            return f"JoinGroup {err}"
        leader = " (leader)" if resp.leader == resp.member_id else ""
        members = f" members {','.join(names(m.member_id) for m in resp.members)}" if resp.members else ""
        return f"JoinGroup NONE gen {resp.generation_id} {resp.protocol_name}{leader}{members}"
    if kind == "SyncGroup":
        return f"SyncGroup {err}" + (f" assigned {_assignment(resp.assignment)}" if err == "NONE" else "")
    if kind == "OffsetCommit" and hasattr(resp, "partitions"):
        codes = sorted({e.name if hasattr(e, "name") else str(e) for _, _, e in resp.partitions})
        return f"OffsetCommit {','.join(codes) or 'NONE'}"
    if kind == "DeleteGroups":
        return "DeleteGroups " + ", ".join(f"{g}: {getattr(e, 'name', e)}" for g, e in resp.errors().items())
    if kind == "ConsumerGroupHeartbeat":
        assigned = resp.assigned()
        return f"ConsumerGroupHeartbeat {err} epoch {resp.member_epoch}" + (
            f" assigned {parts(assigned)}" if assigned is not None else ""
        )
    if kind == "LeaveGroup":
        return f"LeaveGroup {err}"
    return f"{kind} {err}"


def action(op: dict[str, Any]) -> str:
    """A client-only or fault op in words (for steps without a request)."""
    kind, client = op.get("op"), op.get("client") or op.get("name", "")  # consumer ops name it `name`
    words = {
        "advance": f"time +{op.get('ms')} ms",
        "failover": "coordinator failover",
        "append_failure": "next metadata append fails",
        "create_topic": f"topic {op.get('topic')} now has {op.get('partitions')} partitions",
        "stall": f"{client} stalls",
        "resume": f"{client} resumes",
        "lose_response": f"{client}'s next response is lost",
        "cut_connection": f"{client}'s connection is cut",
        "duplicate_request": f"{client}'s next request is duplicated",
        "delay_request": f"{client}'s next request is held on the wire",
        "release": f"{client}'s held request arrives",
        "restart": f"{client} restarts"
        + (
            f" with session {op['session_timeout_ms']} ms, rebalance {op.get('rebalance_timeout_ms')} ms"
            if "session_timeout_ms" in op
            else ""
        ),
        "unsubscribe": f"{client} unsubscribes (static: no LeaveGroup) and subscribes again",
        "subscribe": f"{client} subscribes to {','.join(op.get('topics', []))}",
        "protocols": f"{client} now offers {','.join(op.get('assignors', []))}",
        "rejoin": f"{client} asks to rejoin",
        "stale_subscription": f"{client} will keep its partitions when it next falls out (stale SubscriptionState)",
        # mixed-group runs (conformance.protocols.mixed.trace)
        "add_classic": f"{op.get('name')} starts (classic protocol, {','.join(op.get('assignors', []))})",
        "add_consumer": f"{op.get('name')} starts (consumer protocol)",
        "stop": f"{op.get('name')} shuts down",
        "crash": f"{op.get('name')} crashes",
        "run_for": f"clients run for {op.get('ms')} ms",
    }
    return words.get(str(kind), str(kind))


def event(ev: Any, op: dict[str, Any]) -> str:
    """An event without a request (time, faults, client-side happenings) in words."""
    kind = type(ev).__name__
    if kind == "AdvanceEvent":
        return f"time moves to {ev.now} ms"
    if kind == "ClientEvent":
        return f"{ev.client} {ev.action}"
    if kind == "TopicEvent":
        return f"topic {ev.topic}: {ev.action}" + (f" ({ev.partitions} partitions)" if ev.partitions else "")
    if kind in ("FailoverEvent", "Failover"):
        return "coordinator failover"
    return action(op) if op.get("op") != "cont" else kind
