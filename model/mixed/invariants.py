"""Invariants of KIP-848 mixed groups (docs/protocol-reference.md#b13) over `Observation[MixedWorld]`.

The consumer invariants (`model.consumer.invariants`) run unchanged over a `MixedWorld` (classic
members are ordinary members with classic metadata; classic clients appear among the clients).
These add the rules that only exist when both protocols share a group id. Sources: Apache Kafka
``GroupMetadataManager.java`` (GMM) as cited in `model.mixed.coordinator`.
"""

from __future__ import annotations

from collections.abc import Iterator

from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.consumer.messages import ConsumerGroupHeartbeatResponse
from model.consumer.state import JOIN, LEAVE_GROUP_MEMBER_EPOCH, REBALANCE, SYNC, MemberState
from model.consumer.world import AdvanceEvent, FailoverEvent, GroupView, HeartbeatEvent
from model.embedded import EmbeddedDecodeError, decode_assignment
from model.errors import ErrorCode
from model.invariants import invariant
from model.mixed.world import ClassicRequestEvent, MixedWorld
from model.observation import Observation

Obs = Observation[MixedWorld]
CONSUMER = "consumer"


def _response(obs: Obs, ref: int) -> object | None:
    for d in obs.deliveries:
        if d.ref == ref:
            response: object = d.response
            return response
    return None


def heartbeat_response(obs: Obs) -> ConsumerGroupHeartbeatResponse | None:
    """The answer to the step's ConsumerGroupHeartbeat, if any."""
    if not isinstance(obs.event, HeartbeatEvent):
        return None
    response = _response(obs, obs.event.ref)
    return response if isinstance(response, ConsumerGroupHeartbeatResponse) else None


def _classic_event(obs: Obs) -> ClassicRequestEvent | None:
    return obs.event if isinstance(obs.event, ClassicRequestEvent) else None


def _group_ids(obs: Obs) -> Iterator[str]:
    ids = set(obs.after.groups) | set(obs.after.classic_groups)
    if obs.before is not None:
        ids |= set(obs.before.groups) | set(obs.before.classic_groups)
    yield from sorted(ids)


def waiting_on_unreleased(g: GroupView, member_id: str) -> bool:
    """CoG ``waitingOnUnreleasedPartition`` over a group view."""
    m = g.members[member_id]
    if m.state != MemberState.UNRELEASED_PARTITIONS:
        return False
    return any(tp not in m.assigned and g.partition_epochs.get(tp, -1) != -1 for tp in g.target_of(member_id))


# ------------------------------------------------------------------------------------- safety


@invariant("mixed.one_group_type", "safety", "mixed")
def one_group_type(obs: Obs) -> list[str]:
    """A group id names at most one group: classic or consumer, never both.

    GMM keeps one ``groups`` map keyed by group id; conversions tombstone the old type (docs/protocol-reference.md#b13).
    """
    both = sorted(set(obs.after.groups) & set(obs.after.classic_groups))
    return [f"{gid}: both a classic and a consumer group" for gid in both]


# ------------------------------------------------------------------------------------- transitions


@invariant("mixed.classic_generation_is_member_epoch", "transition", "mixed")
def classic_generation_is_member_epoch(obs: Obs) -> list[str]:
    """In a consumer group a classic member's generation is its member epoch: JoinGroup answers it, SyncGroup and Heartbeat with any other generation fail.

    docs/protocol-reference.md#b13; GMM ``classicGroupJoinToConsumerGroup`` (``setGenerationId(memberEpoch)``),
    ``throwIfGenerationIdUnmatched``.
    """
    event = _classic_event(obs)
    if event is None or obs.before is None:
        return []
    req = event.request
    response = _response(obs, event.ref)
    out: list[str] = []
    if isinstance(req, JoinGroupRequest) and isinstance(response, JoinGroupResponse):
        g = obs.after.groups.get(req.group_id)
        if response.error == ErrorCode.NONE and g is not None and req.group_id in obs.before.groups:
            m = g.members.get(response.member_id)
            if m is None:
                out.append(f"{req.group_id}: JoinGroup answered for {response.member_id}, not a member")
            elif response.generation_id != m.member_epoch:
                out.append(
                    f"{req.group_id}: JoinGroup generation {response.generation_id} != member epoch {m.member_epoch}"
                )
            if response.protocol_type != CONSUMER or response.leader != "" or response.members:
                out.append(
                    f"{req.group_id}: JoinGroup response must name type consumer, no leader, no members"
                )
    elif isinstance(req, SyncGroupRequest | HeartbeatRequest) and isinstance(
        response, SyncGroupResponse | HeartbeatResponse
    ):
        gb = obs.before.groups.get(req.group_id)
        m = None if gb is None else gb.members.get(req.member_id)
        if m is not None and m.classic is not None and req.generation_id != m.member_epoch:
            if response.error in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS):
                out.append(
                    f"{req.group_id}: {type(req).__name__} generation {req.generation_id} of {m.member_id} "
                    f"(epoch {m.member_epoch}) answered {response.error.name}"
                )
    return out


@invariant("mixed.classic_heartbeat_rule", "transition", "mixed")
def classic_heartbeat_rule(obs: Obs) -> list[str]:
    """A valid Heartbeat of a classic member in a consumer group is answered REBALANCE_IN_PROGRESS exactly when its epoch is behind the group epoch, it must revoke, or it is unreleased with nothing left to wait for.

    docs/protocol-reference.md#b13 (GMM ``classicGroupHeartbeatToConsumerGroup``, 4.0 L6038; CoG
    ``waitingOnUnreleasedPartition``). "Behind" is measured against the epoch the coordinator is
    configured to compare (`MixedConfig.classic_rejoin_epoch`: the group epoch, or the target
    assignment epoch as Apache Kafka 4.4.0 does).
    """
    event = _classic_event(obs)
    if event is None or obs.before is None or not isinstance(event.request, HeartbeatRequest):
        return []
    req = event.request
    response = _response(obs, event.ref)
    gb = obs.before.groups.get(req.group_id)
    m = None if gb is None else gb.members.get(req.member_id)
    if gb is None or m is None or m.classic is None or not isinstance(response, HeartbeatResponse):
        return []
    if req.generation_id != m.member_epoch or (
        req.group_instance_id is not None and gb.static_members.get(req.group_instance_id) != m.member_id
    ):
        return []
    # the epoch the configured coordinator compares with (MixedConfig.classic_rejoin_epoch)
    behind = gb.assignment_epoch if obs.after.classic_rejoin_epoch == "assignment" else gb.group_epoch
    rejoin = (
        m.member_epoch < behind
        or m.state == MemberState.UNREVOKED_PARTITIONS
        or (m.state == MemberState.UNRELEASED_PARTITIONS and not waiting_on_unreleased(gb, m.member_id))
    )
    expected = ErrorCode.REBALANCE_IN_PROGRESS if rejoin else ErrorCode.NONE
    if response.error != expected:
        return [
            f"{req.group_id}: heartbeat of {m.member_id} answered {response.error.name}, rule says {expected.name}"
        ]
    return []


@invariant("mixed.classic_sync_gives_assigned", "transition", "mixed")
def classic_sync_gives_assigned(obs: Obs) -> list[str]:
    """A successful SyncGroup in a consumer group hands a classic member exactly its assigned partitions, never ones pending revocation or held by another member.

    docs/protocol-reference.md#b13, #b5; GMM ``classicGroupSyncToConsumerGroup`` / ``prepareAssignment``.
    """
    event = _classic_event(obs)
    if event is None or not isinstance(event.request, SyncGroupRequest):
        return []
    req = event.request
    response = _response(obs, event.ref)
    g = obs.after.groups.get(req.group_id)
    if g is None or not isinstance(response, SyncGroupResponse) or response.error != ErrorCode.NONE:
        return []
    m = g.members.get(req.member_id)
    if m is None:
        return [f"{req.group_id}: SyncGroup answered for {req.member_id}, not a member"]
    try:
        given = frozenset(decode_assignment(response.assignment).partitions)
    except EmbeddedDecodeError as exc:
        return [f"{req.group_id}: SyncGroup assignment does not parse: {exc}"]
    if given != m.assigned:
        return [
            f"{req.group_id}: SyncGroup gave {m.member_id} {sorted(given)}, assigned {sorted(m.assigned)}"
        ]
    return []


@invariant("mixed.upgrade_rules", "transition", "mixed")
def upgrade_rules(obs: Obs) -> list[str]:
    """A non-empty classic group becomes a consumer group only on an epoch-0 ConsumerGroupHeartbeat, only when the policy allows upgrades, its protocol type is consumer and it fits group.consumer.max.size; members keep generation and assignment.

    docs/protocol-reference.md#b13 (GMM L1073 ``validateOnlineUpgrade``, ``convertToConsumerGroup``; CoG
    ``fromClassicGroup``).
    """
    if obs.before is None or isinstance(obs.event, FailoverEvent):
        # a failover reloads every group from the log: a classic group never written (members
        # still joining) is gone, and an empty consumer group its join dropped only in memory is
        # back; that is the durable state, not a conversion (tests/test_mixed_failover_reload.py)
        return []
    out: list[str] = []
    for gid in _group_ids(obs):
        cb = obs.before.classic_groups.get(gid)
        ga = obs.after.groups.get(gid)
        if cb is None or not cb.members or ga is None or gid in obs.after.classic_groups:
            continue
        event = obs.event
        if not isinstance(event, HeartbeatEvent) or event.request.member_epoch != 0:
            out.append(f"{gid}: classic group converted by {type(event).__name__}")
            continue
        if not obs.after.policy.upgrade_enabled:
            out.append(f"{gid}: upgraded although policy is {obs.after.policy.value}")
        if cb.protocol_type != CONSUMER:
            out.append(f"{gid}: upgraded a group of protocol type {cb.protocol_type}")
        if len(cb.members) > obs.after.max_size:
            out.append(f"{gid}: upgraded {len(cb.members)} members > group.consumer.max.size")
        kept = [mid for mid in sorted(cb.members) if mid in ga.members]
        if len(kept) < len(cb.members) - 1:
            out.append(f"{gid}: upgrade lost members {sorted(cb.members - set(kept))}")
        for mid in kept:
            m = ga.members[mid]
            if m.classic is None or m.member_epoch != cb.generation:
                out.append(
                    f"{gid}: upgraded member {mid} epoch {m.member_epoch}, generation was {cb.generation}"
                )
            data = cb.assignments.get(mid, b"")
            try:
                before = frozenset(decode_assignment(data).partitions) if data else frozenset()
            except EmbeddedDecodeError:
                continue
            if ga.target_of(mid) != before and ga.assignment_epoch == cb.generation:
                out.append(f"{gid}: upgraded member {mid} target is not its classic assignment")
    return out


@invariant("mixed.upgrade_refused", "transition", "mixed")
def upgrade_refused(obs: Obs) -> list[str]:
    """An epoch-0 ConsumerGroupHeartbeat to a non-empty classic group that may not be upgraded fails and leaves the classic group in place.

    docs/protocol-reference.md#b6 row 8, #b13 (GMM ``getOrMaybeCreateConsumerGroup`` → GROUP_ID_NOT_FOUND).
    """
    event = obs.event
    if obs.before is None or not isinstance(event, HeartbeatEvent) or event.request.member_epoch != 0:
        return []
    gid = event.request.group_id
    cb = obs.before.classic_groups.get(gid)
    if cb is None or not cb.members:
        return []
    allowed = (
        obs.after.policy.upgrade_enabled
        and cb.protocol_type == CONSUMER
        and len(cb.members) <= obs.after.max_size
    )
    response = heartbeat_response(obs)
    if allowed or response is None:
        return []
    out: list[str] = []
    if response.error_code == ErrorCode.NONE:
        out.append(f"{gid}: join accepted on a classic group that may not be upgraded")
    if gid not in obs.after.classic_groups or gid in obs.after.groups:
        out.append(f"{gid}: refused upgrade changed the group type")
    return out


def _replacing_join(obs: Obs, gb: GroupView, consumer_member: str) -> JoinGroupRequest | None:
    """The step's classic JoinGroup, if it takes over the static instance of ``consumer_member``."""
    event = _classic_event(obs)
    if event is None or not isinstance(event.request, JoinGroupRequest):
        return None
    req = event.request
    if req.group_id != gb.group_id or req.group_instance_id is None or req.member_id != "":
        return None
    return req if gb.static_members.get(req.group_instance_id) == consumer_member else None


@invariant("mixed.downgrade_rules", "transition", "mixed")
def downgrade_rules(obs: Obs) -> list[str]:
    """A consumer group becomes a classic group only when its last consumer-protocol member leaves, is fenced or is replaced by a classic static member, the policy allows downgrades and the classic members fit group.max.size; and a leave (-1) or a static replacement of that last member under those conditions does downgrade.

    docs/protocol-reference.md#b13 (GMM L960 ``validateOnlineDowngradeWithFencedMember``, @1eb7644 L1078
    ``validateOnlineDowngradeWithReplacedMemberId``, ``convertToClassicGroup``; CG
    ``fromConsumerGroup``: Stable, generation = group epoch).
    """
    if obs.before is None:
        return []
    out: list[str] = []
    world = obs.after
    for gid in _group_ids(obs):
        gb = obs.before.groups.get(gid)
        if gb is None or not gb.members:
            continue
        consumer_members = sorted(mid for mid, m in gb.members.items() if m.classic is None)
        classic_members = {mid for mid, m in gb.members.items() if m.classic is not None}
        replacing = None if len(consumer_members) != 1 else _replacing_join(obs, gb, consumer_members[0])
        if replacing is not None:
            eligible = world.policy.downgrade_enabled and len(gb.members) <= world.classic_max_size
        else:
            eligible = bool(
                len(consumer_members) == 1
                and classic_members
                and world.policy.downgrade_enabled
                and len(classic_members) <= world.classic_max_size
            )
        ca = world.classic_groups.get(gid)
        if ca is not None and gid not in world.groups:
            joined = ca.members - set(gb.members)
            if isinstance(obs.event, AdvanceEvent):
                # timers fire one after another in one step: several consumer-protocol members may
                # be fenced (the last one downgrades) and classic members may expire first
                eligible = (
                    world.policy.downgrade_enabled
                    and bool(ca.members)
                    and len(ca.members) <= world.classic_max_size
                )
                if not ca.members <= classic_members:
                    out.append(
                        f"{gid}: downgraded with members {sorted(ca.members - classic_members)} not classic"
                    )
            elif ca.members - joined != classic_members or len(joined) > (replacing is not None):
                out.append(
                    f"{gid}: downgraded members {sorted(ca.members)} != classic members {sorted(classic_members)}"
                )
            if not eligible:
                out.append(f"{gid}: downgraded although not allowed (policy {world.policy.value})")
            if ca.generation < gb.group_epoch or ca.protocol_type != CONSUMER:
                out.append(
                    f"{gid}: downgraded with generation {ca.generation} < group epoch {gb.group_epoch}"
                )
            continue
        if not eligible:
            continue
        event = obs.event
        if replacing is not None and isinstance(event, ClassicRequestEvent):
            answer = _response(obs, event.ref)
            if isinstance(answer, JoinGroupResponse) and answer.error == ErrorCode.NONE:
                out.append(f"{gid}: last consumer-protocol member replaced by a classic member, no downgrade")
            continue
        if not isinstance(event, HeartbeatEvent):
            continue
        req = event.request
        response = heartbeat_response(obs)
        if (
            req.group_id == gid
            and req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH
            and req.member_id == consumer_members[0]
            and response is not None
            and response.error_code == ErrorCode.NONE
        ):
            out.append(f"{gid}: last consumer-protocol member left but the group was not downgraded")
    return out


@invariant("mixed.empty_group_replaced", "transition", "mixed")
def empty_group_replaced(obs: Obs) -> list[str]:
    """An empty group of the other type never blocks a join: an epoch-0 ConsumerGroupHeartbeat replaces an empty classic group and a JoinGroup without member id replaces an empty consumer group, whatever the migration policy.

    docs/protocol-reference.md#b13, #a3 (GMM ``maybeDeleteEmptyClassicGroup`` / ``maybeDeleteEmptyConsumerGroup``).
    """
    if obs.before is None:
        return []
    event = obs.event
    if isinstance(event, HeartbeatEvent) and event.request.member_epoch == 0:
        gid = event.request.group_id
        cb = obs.before.classic_groups.get(gid)
        hb = heartbeat_response(obs)
        if cb is not None and not cb.members and hb is not None:
            if hb.error_code in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.INCONSISTENT_GROUP_PROTOCOL):
                return [f"{gid}: join refused by an empty classic group ({hb.error_code.name})"]
    if isinstance(event, ClassicRequestEvent) and isinstance(event.request, JoinGroupRequest):
        req = event.request
        gb = obs.before.groups.get(req.group_id)
        response = _response(obs, event.ref)
        if (
            gb is not None
            and not gb.members
            and req.member_id == ""
            and isinstance(response, JoinGroupResponse)
        ):
            if req.group_id in obs.after.groups:
                return [
                    f"{req.group_id}: JoinGroup left the empty consumer group in place ({response.error.name})"
                ]
    return []


# ------------------------------------------------------------------------------------- liveness


@invariant("mixed.classic_member_timers", "liveness", "mixed")
def classic_member_timers(obs: Obs) -> list[str]:
    """A classic member of a consumer group is given no rebalance timer except by a coordinator load, and is not kept past its join or sync deadline.

    docs/protocol-reference.md#b13 (GMM ``maybeReconcile``: classic members only have join and sync timers;
    ``onLoaded`` arms the rebalance timer of every UNREVOKED_PARTITIONS member;
    ``scheduleConsumerGroupJoinTimeoutIfAbsent``, ``scheduleConsumerGroupSyncTimeout`` fence).
    """
    out: list[str] = []
    loaded = isinstance(obs.event, FailoverEvent)
    for gid in sorted(obs.after.groups):
        g = obs.after.groups[gid]
        gb = None if obs.before is None else obs.before.groups.get(gid)
        for mid in sorted(g.members):
            if g.members[mid].classic is None:
                continue
            timer = g.timers.get((REBALANCE, mid))
            previous = None if gb is None else gb.timers.get((REBALANCE, mid))
            if timer is not None and timer != previous and not loaded:
                out.append(f"{gid}: classic member {mid} was given a rebalance timer")
            for kind in (JOIN, SYNC):
                t = g.timers.get((kind, mid))
                if t is not None and t.deadline < obs.now:
                    out.append(
                        f"{gid}: classic member {mid} still present at {obs.now}, {kind} deadline {t.deadline}"
                    )
    return out


# ------------------------------------------------------------------------------------- sometimes


@invariant("mixed.sometimes_upgrade", "sometimes", "mixed")
def sometimes_upgrade(obs: Obs) -> list[str]:
    """A classic group with members was upgraded to a consumer group.

    A "sometimes" check (docs/invariants.md#kinds); docs/protocol-reference.md#b13.
    """
    if obs.before is None:
        return []
    return [
        f"{gid}: upgraded"
        for gid, cb in sorted(obs.before.classic_groups.items())
        if cb.members and gid in obs.after.groups
    ]


@invariant("mixed.sometimes_downgrade", "sometimes", "mixed")
def sometimes_downgrade(obs: Obs) -> list[str]:
    """A consumer group with classic members was downgraded to a classic group.

    A "sometimes" check (docs/invariants.md#kinds); docs/protocol-reference.md#b13.
    """
    if obs.before is None:
        return []
    return [
        f"{gid}: downgraded"
        for gid, gb in sorted(obs.before.groups.items())
        if gb.members and gid in obs.after.classic_groups
    ]


@invariant("mixed.sometimes_classic_rejoin", "sometimes", "mixed")
def sometimes_classic_rejoin(obs: Obs) -> list[str]:
    """A classic member of a consumer group was told to rejoin (REBALANCE_IN_PROGRESS).

    A "sometimes" check (docs/invariants.md#kinds); docs/protocol-reference.md#b13 (GMM L6038).
    """
    event = _classic_event(obs)
    if event is None or obs.before is None or event.request.group_id not in obs.before.groups:
        return []
    response = _response(obs, event.ref)
    if (
        isinstance(response, HeartbeatResponse | SyncGroupResponse)
        and response.error == ErrorCode.REBALANCE_IN_PROGRESS
    ):
        return [f"{event.request.group_id}: classic member told to rejoin"]
    return []


# Promises a client of a mixed group relies on register with the rest.
from model.mixed import promise_invariants as _promise_invariants  # noqa: E402, F401
