"""Server-made requests that fence a member or force a rebalance, sent to the model like any other.

They go through the coordinator's own handlers (so the state still changes only by its records);
their answers go to nobody. Sources of the rules they rely on: a classic leader's JoinGroup in a
Stable group starts a rebalance (Kafka ``GroupMetadataManager.classicGroupJoinExistingMember``;
model/classic/coordinator.py); a LeaveGroup removes a classic member (KIP-345 batch form, v3+);
a ConsumerGroupHeartbeat with member epoch -1 is a KIP-848 member's leave, and a new member's join
bumps the group epoch (KIP-848).
"""

from __future__ import annotations

from model.classic.messages import JoinGroupRequest, LeaveGroupRequest, MemberIdentity
from model.classic.state import GroupState
from model.consumer.messages import ConsumerGroupHeartbeatRequest

PHANTOM_PREFIX = "groupcheck-phantom-"


def fence_request(port: object, group_id: str) -> tuple[object | None, str]:
    """A request removing the first (by id) real member of ``group_id``; (None, why) when none."""
    state = port.state  # type: ignore[attr-defined]
    consumer = state.consumer.groups.get(group_id)
    if consumer is not None:
        real = sorted(m for m in consumer.members if not m.startswith(PHANTOM_PREFIX))
        for mid in real:
            member = consumer.members[mid]
            if member.classic is None:
                return ConsumerGroupHeartbeatRequest(group_id, mid, -1, instance_id=member.instance_id), mid
        return None, "no KIP-848 member to fence"
    classic = state.classic.groups.get(group_id)
    if classic is None or not classic.members:
        return None, "no member to fence"
    mid = sorted(classic.members)[0]
    member = classic.members[mid]
    return LeaveGroupRequest(group_id, (MemberIdentity(mid, member.instance_id, "groupcheck fence"),)), mid


def rebalance_requests(port: object, group_id: str, serial: int) -> tuple[list[object], str]:
    """The requests that force a rebalance of ``group_id`` now, and a description."""
    state = port.state  # type: ignore[attr-defined]
    consumer = state.consumer.groups.get(group_id)
    if consumer is not None:
        topics: set[str] = set()
        for m in consumer.members.values():
            topics |= set(m.subscribed_topic_names)
        if not topics:
            return [], "no subscription to join with"
        mid = f"{PHANTOM_PREFIX}{serial}"
        join = ConsumerGroupHeartbeatRequest(
            group_id,
            mid,
            0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=tuple(sorted(topics)),
            topic_partitions=(),
        )
        return [join], mid
    classic = state.classic.groups.get(group_id)
    if classic is None or classic.state != GroupState.STABLE or classic.leader is None:
        return [], "classic group not stable"
    leader = classic.members[classic.leader]
    rejoin = JoinGroupRequest(
        group_id=group_id,
        member_id=leader.member_id,
        protocol_type=classic.protocol_type or "consumer",
        protocols=leader.protocols,
        session_timeout_ms=leader.session_timeout_ms,
        rebalance_timeout_ms=leader.rebalance_timeout_ms,
        group_instance_id=leader.instance_id,
        client_id=leader.client_id,
    )
    return [rejoin], leader.member_id


def phantom_leave(group_id: str, member_id: str) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(group_id, member_id, -1)
