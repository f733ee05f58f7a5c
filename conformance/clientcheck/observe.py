"""What real clients asked the served coordinator, as a JSON-able log the client invariants read.

`Recorder` is the served `Server`'s observer: it sees every group request, the answer the model
gave it (also when the adversary then lost or delayed it) and every adversary action, inside the
server loop, and writes one entry each. Member ids are replaced by aliases (``m1``, ``m2``, ...) in
first-seen order, since KIP-848 member ids are random UUIDs made by the client: the same client
behaviour gives the same log. Embedded consumer-protocol bytes are decoded (ConsumerProtocol
Subscription and Assignment, ``model/embedded.py``); undecodable bytes are logged as such.
"""

from __future__ import annotations

from typing import Any

from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.consumer.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from model.embedded import EmbeddedDecodeError, decode_assignment, decode_subscription

#: a log stops growing past this many entries (the run is then inconclusive)
MAX_ENTRIES = 200_000
API = {
    JoinGroupRequest: "JoinGroup",
    SyncGroupRequest: "SyncGroup",
    HeartbeatRequest: "Heartbeat",
    LeaveGroupRequest: "LeaveGroup",
    OffsetCommitRequest: "OffsetCommit",
    ConsumerGroupHeartbeatRequest: "ConsumerGroupHeartbeat",
}


def _tps(pairs: Any) -> list[str]:
    return sorted(f"{t}:{p}" for t, p in pairs)


def _owned(topic_partitions: Any) -> list[str] | None:
    if topic_partitions is None:
        return None
    return sorted(f"{tp.topic}:{p}" for tp in topic_partitions for p in tp.partitions)


class Recorder:
    """Collects the log; call it as the server's observer (``server.observer = recorder``)."""

    def __init__(self) -> None:
        self.log: list[dict[str, Any]] = []
        self.aliases: dict[str, str] = {}
        self.asked: dict[int, dict[str, Any]] = {}  # ref -> the request entry, for its answer
        self.truncated = False

    def alias(self, member_id: str | None) -> str:
        if not member_id:
            return ""
        if member_id not in self.aliases:
            self.aliases[member_id] = f"m{len(self.aliases) + 1}"
        return self.aliases[member_id]

    def __call__(self, kind: str, **fields: Any) -> None:
        if len(self.log) >= MAX_ENTRIES:
            self.truncated = True
            return
        if kind == "request":
            entry = self._request(fields["request"], fields["state"])
            entry |= {"kind": "request", "ref": fields["ref"], "client": fields["client"]}
            self.asked[fields["ref"]] = entry
        elif kind == "response":
            asked = self.asked.pop(fields["ref"], None)
            if asked is None:
                return  # an injected request's answer
            entry = {
                "kind": "response",
                "ref": fields["ref"],
                "client": fields["client"],
                "api": asked["api"],
            }
            entry |= {"member": asked.get("member", "")} | self._response(fields["response"])
            if fields.get("fault"):
                entry["fault"] = fields["fault"]
        else:
            entry = {"kind": "action", "action": fields["action"], "group": fields["group"]}
            if fields["action"] == "fence" and fields["detail"] in self.aliases:
                entry["member"] = self.aliases[fields["detail"]]
        self.log.append({"seq": len(self.log) + 1, **entry})

    def _request(self, req: Any, state: Any) -> dict[str, Any]:
        api = API.get(type(req), type(req).__name__)
        out: dict[str, Any] = {"api": api, "group": getattr(req, "group_id", "")}
        if isinstance(req, ConsumerGroupHeartbeatRequest):
            group = state.consumer.groups.get(req.group_id)
            others = sorted(group.members) if group is not None else []
            out |= {
                "member": self.alias(req.member_id),
                "epoch": req.member_epoch,
                "owned": _owned(req.topic_partitions),
            }
            out["live"] = sorted(self.alias(m) for m in others if m in self.aliases)
            out["version"] = req.version
        elif isinstance(req, JoinGroupRequest):
            out |= {"member": self.alias(req.member_id), "protocols": [n for n, _ in req.protocols]}
            if req.protocols:
                sub = _subscription(req.protocols[0][1])
                out |= {"owned": sub.get("owned", []), "sub_generation": sub.get("generation", -1)}
        elif isinstance(req, SyncGroupRequest):
            out |= {"member": self.alias(req.member_id), "generation": req.generation_id}
            out["protocol"] = req.protocol_name
            if req.assignments:
                out["assignments"] = {self.alias(m): _assignment(b) for m, b in req.assignments}
        elif isinstance(req, HeartbeatRequest):
            out |= {"member": self.alias(req.member_id), "generation": req.generation_id}
        elif isinstance(req, LeaveGroupRequest):
            out |= {"member": self.alias(req.members[0].member_id) if req.members else ""}
            out["members"] = [self.alias(m.member_id) for m in req.members]
        elif isinstance(req, OffsetCommitRequest):
            out |= {"member": self.alias(req.member_id), "generation": req.generation_id}
            out["partitions"] = _tps((p.topic, p.partition) for p in req.partitions)
        return out

    def _response(self, resp: Any) -> dict[str, Any]:
        if isinstance(resp, ConsumerGroupHeartbeatResponse):
            out: dict[str, Any] = {"error": int(resp.error_code), "epoch": resp.member_epoch}
            out["assigned"] = _owned(resp.assignment)
            if resp.member_id:
                out["member"] = self.alias(resp.member_id)
            return out
        if isinstance(resp, JoinGroupResponse):
            out = {"error": int(resp.error), "generation": resp.generation_id, "protocol": resp.protocol_name}
            out |= {"member": self.alias(resp.member_id), "leader": self.alias(resp.leader)}
            out["subscriptions"] = {self.alias(m.member_id): _subscription(m.metadata) for m in resp.members}
            return out
        if isinstance(resp, SyncGroupResponse):
            out = {"error": int(resp.error), "protocol": resp.protocol_name}
            if int(resp.error) == 0:
                out["assignment"] = _assignment(resp.assignment).get("partitions", [])
            return out
        if isinstance(resp, HeartbeatResponse | LeaveGroupResponse):
            return {"error": int(resp.error)}
        if isinstance(resp, OffsetCommitResponse):
            return {"errors": sorted({int(e) for _t, _p, e in resp.partitions})}
        return {"error": -1}


def _subscription(data: bytes) -> dict[str, Any]:
    try:
        sub = decode_subscription(data)
    except EmbeddedDecodeError as e:
        return {"undecodable": str(e)}
    out: dict[str, Any] = {"topics": list(sub.topics), "owned": _tps(sub.owned_partitions)}
    out["generation"] = sub.generation_id
    if sub.user_data is not None:
        out["user_data"] = sub.user_data.hex()
    return out


def _assignment(data: bytes) -> dict[str, Any]:
    if not data:
        return {"partitions": []}
    try:
        return {"partitions": _tps(decode_assignment(data).partitions)}
    except EmbeddedDecodeError as e:
        return {"undecodable": str(e), "partitions": []}
