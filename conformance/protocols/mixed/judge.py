"""The mixed oracle's comparison: a model answer against the target's, for either protocol's member.

A ConsumerGroupHeartbeat is compared as the KIP-848 oracle does (`consumer.judge.compare`); a
classic member's answers field by field at the protocol level, its SyncGroup assignment by the
partitions its bytes give (the consumer embedded protocol, docs/protocol-reference.md#c1), other bytes being a
kafka-compat note.
"""

from __future__ import annotations

from typing import Any

from conformance.protocols.classic.codec import API_NAMES, api_key_of
from conformance.protocols.consumer.judge import compare as compare_heartbeat
from model.classic.messages import HeartbeatResponse, JoinGroupResponse, LeaveGroupResponse, SyncGroupResponse
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartition,
)
from model.embedded import EmbeddedDecodeError, decode_assignment
from model.errors import ErrorCode


def tps(parts: frozenset[TopicPartition] | None) -> str:
    if parts is None:
        return "none"
    return "{" + ", ".join(f"{t}-{p}" for t, p in sorted(parts)) + "}"


def _e(code: Any) -> str:
    return code.name if isinstance(code, ErrorCode) else str(code)


def sync_partitions(resp: SyncGroupResponse) -> frozenset[TopicPartition] | None:
    """The partitions a SyncGroup answer's assignment bytes give (None: not decodable)."""
    if not resp.assignment:
        return frozenset()
    try:
        return frozenset(decode_assignment(resp.assignment).partitions)
    except EmbeddedDecodeError:
        return None


def short(resp: Any) -> str:
    if resp is None:
        return "nothing"
    name = type(resp).__name__.removesuffix("Response")
    err = getattr(resp, "error_code", getattr(resp, "error", None))
    if err is not None and err != ErrorCode.NONE:
        return f"{name} {_e(err)}"
    if isinstance(resp, ConsumerGroupHeartbeatResponse):
        return f"{name} NONE epoch {resp.member_epoch} assignment {tps(resp.assigned())}"
    if isinstance(resp, JoinGroupResponse):
        return f"{name} NONE generation {resp.generation_id} member {resp.member_id}"
    if isinstance(resp, SyncGroupResponse):
        return f"{name} NONE assignment {tps(sync_partitions(resp))}"
    return f"{name} NONE"


def compare(model: Any, target: Any, prior: frozenset[TopicPartition] | None) -> tuple[str | None, list[str]]:
    """(protocol mismatch or None, kafka-compat notes) between the model's answer and the target's."""
    if model is None:
        return "the model parks the request (no answer yet)", []
    if type(model) is not type(target):
        return f"{type(target).__name__}, model {type(model).__name__}", []
    if isinstance(target, ConsumerGroupHeartbeatResponse):
        return compare_heartbeat(model, target, prior)
    notes: list[str] = []
    if isinstance(target, HeartbeatResponse):
        return (
            None if model.error == target.error else f"error {_e(target.error)}, model {_e(model.error)}"
        ), notes
    if isinstance(target, LeaveGroupResponse):
        if model.error != target.error:
            return f"error {_e(target.error)}, model {_e(model.error)}", notes
        mine = sorted((m.member_id, _e(m.error)) for m in model.members)
        theirs = sorted((m.member_id, _e(m.error)) for m in target.members)
        return (None if mine == theirs else f"members {theirs}, model {mine}"), notes
    if isinstance(target, JoinGroupResponse):
        if model.error != target.error:
            return f"error {_e(target.error)}, model {_e(model.error)}", notes
        if model.member_id != target.member_id:
            return f"member id {target.member_id!r}, model {model.member_id!r}", notes
        if target.error != ErrorCode.NONE:
            return None, notes
        for what in ("generation_id", "protocol_type", "protocol_name", "leader"):
            if getattr(model, what) != getattr(target, what):
                return f"{what} {getattr(target, what)!r}, model {getattr(model, what)!r}", notes
        mine = sorted(m.member_id for m in model.members)
        theirs = sorted(m.member_id for m in target.members)
        return (None if mine == theirs else f"member list {theirs}, model {mine}"), notes
    if isinstance(target, SyncGroupResponse):
        if model.error != target.error:
            return f"error {_e(target.error)}, model {_e(model.error)}", notes
        if target.error != ErrorCode.NONE:
            return None, notes
        for what in ("protocol_type", "protocol_name"):
            if getattr(model, what) != getattr(target, what):
                return f"{what} {getattr(target, what)!r}, model {getattr(model, what)!r}", notes
        mine, theirs = sync_partitions(model), sync_partitions(target)
        if theirs is None:
            return (
                "assignment bytes the consumer embedded protocol cannot read (docs/protocol-reference.md#c1)",
                notes,
            )
        if mine != theirs:
            return f"assignment {tps(theirs)}, model {tps(mine)}", notes
        if model.assignment != target.assignment:
            notes.append("SyncGroup assignment bytes differ from the model's encoding (same partitions)")
        return None, notes
    return (None if model == target else f"{target!r}, model {model!r}"), notes


def given(answer: Any) -> frozenset[TopicPartition] | None:
    if isinstance(answer, ConsumerGroupHeartbeatResponse):
        return answer.assigned()
    if isinstance(answer, SyncGroupResponse):
        return sync_partitions(answer)
    return None


def api_name(request: Any) -> str:
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        return "ConsumerGroupHeartbeat"
    return API_NAMES[api_key_of(request)]
