"""Classic-protocol requests and responses as plain data (docs/protocol-reference.md#d; MSG *.json).

Field names follow Kafka's message schemas in snake_case. `version` is the request version the
client would send; the model uses it where behaviour depends on it (KIP-394 v4+, KIP-814 v9,
LeaveGroup v3 batches, OffsetCommit v9).
"""

from __future__ import annotations

from dataclasses import dataclass

from model.errors import ErrorCode

Protocols = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class JoinGroupRequest:
    group_id: str
    member_id: str
    protocol_type: str
    protocols: Protocols
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = -1
    group_instance_id: str | None = None
    reason: str | None = None
    client_id: str = "consumer"
    version: int = 9

    @property
    def effective_rebalance_timeout_ms(self) -> int:
        """JoinGroup v0 has no rebalance timeout: the session timeout is used (REQ JoinGroupRequest L179)."""
        if self.version == 0 or self.rebalance_timeout_ms < 0:
            return self.session_timeout_ms
        return self.rebalance_timeout_ms


@dataclass(frozen=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinGroupResponse:
    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()


@dataclass(frozen=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[tuple[str, bytes], ...] = ()
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    version: int = 5


@dataclass(frozen=True)
class SyncGroupResponse:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    version: int = 4


@dataclass(frozen=True)
class HeartbeatResponse:
    error: ErrorCode


@dataclass(frozen=True)
class MemberIdentity:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class LeaveGroupRequest:
    group_id: str
    members: tuple[MemberIdentity, ...]
    version: int = 5


@dataclass(frozen=True)
class LeaveGroupMemberResponse:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True)
class LeaveGroupResponse:
    """v0-2 collapse to the top-level error of the single member (REQ LeaveGroupResponse L59)."""

    error: ErrorCode
    members: tuple[LeaveGroupMemberResponse, ...] = ()


@dataclass(frozen=True)
class OffsetCommitPartition:
    topic: str
    partition: int
    offset: int
    metadata: str | None = ""


@dataclass(frozen=True)
class OffsetCommitRequest:
    group_id: str
    generation_id: int
    member_id: str
    partitions: tuple[OffsetCommitPartition, ...]
    group_instance_id: str | None = None
    version: int = 8


@dataclass(frozen=True)
class OffsetCommitResponse:
    partitions: tuple[tuple[str, int, ErrorCode], ...]


Request = JoinGroupRequest | SyncGroupRequest | HeartbeatRequest | LeaveGroupRequest | OffsetCommitRequest
Response = (
    JoinGroupResponse | SyncGroupResponse | HeartbeatResponse | LeaveGroupResponse | OffsetCommitResponse
)


def answer_errors(response: Response) -> tuple[int, ...]:
    """Every error code an answer carries, sorted: its own, and its members' or partitions'."""
    codes = (
        {int(e) for _, _, e in response.partitions} if isinstance(response, OffsetCommitResponse) else set()
    )
    if not isinstance(response, OffsetCommitResponse):
        codes.add(int(response.error))
    if isinstance(response, LeaveGroupResponse):
        codes.update(int(m.error) for m in response.members)
    return tuple(sorted(codes))
