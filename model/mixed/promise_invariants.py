"""Promises of a mixed group a client relies on, stated from the protocol documents (docs/invariants.md#nature).

In a consumer group that still has members speaking the classic protocol (KIP-848 online
migration) each member keeps the timers of the protocol it speaks, and a rolling upgrade of a
static group can replace each classic process by a consumer-protocol one.
"""

from __future__ import annotations

from collections.abc import Iterator

from model.consumer.state import SESSION
from model.consumer.world import AdvanceEvent, FailoverEvent, HeartbeatEvent, heartbeat_response
from model.errors import ErrorCode
from model.invariants import invariant
from model.mixed.world import MixedWorld
from model.observation import Observation

Obs = Observation[MixedWorld]


@invariant("mixed.classic_member_session_timeout", "transition", "mixed")
def classic_member_session_timeout(obs: Obs) -> Iterator[str]:
    """Outside a coordinator load, a classic-protocol member of a consumer group has its session deadline set from the session timeout of its own JoinGroup, not the consumer group's (KIP-848 online migration; apache/kafka PR #16290)."""
    b = obs.before
    if isinstance(obs.event, FailoverEvent):
        return  # a coordinator load re-arms every session timer by its own rule (GMM onLoaded)
    timed = isinstance(obs.event, AdvanceEvent)  # timers may be armed before `now`
    for gid in sorted(obs.after.groups):
        g = obs.after.groups[gid]
        gb = None if b is None else b.groups.get(gid)
        for mid in sorted(g.members):
            classic = g.members[mid].classic
            timer = g.timers.get((SESSION, mid))
            if classic is None or timer is None:
                continue
            if gb is not None and gb.timers.get((SESSION, mid)) == timer:
                continue
            want = obs.now + classic.session_timeout_ms
            slack = obs.after.stamp_slack_ms  # a real coordinator's clock: checked this loosely
            if timer.deadline > want + slack or (not timed and abs(timer.deadline - want) > slack):
                yield (
                    f"{gid}: classic member {mid} (session {classic.session_timeout_ms} ms) has its "
                    f"session deadline at {timer.deadline}, {timer.deadline - obs.now} ms from now"
                )


@invariant("mixed.static_replaces_classic_holder", "transition", "mixed")
def static_replaces_classic_holder(obs: Obs) -> Iterator[str]:
    """A consumer-protocol static member joining with the group.instance.id of a classic-protocol member is not refused UNRELEASED_INSTANCE_ID: a classic consumer never sends the epoch -2 leave that rule waits for (KIP-848; KIP-345; KAFKA-17228)."""
    ev, b = obs.event, obs.before
    if not isinstance(ev, HeartbeatEvent) or b is None or ev.request.instance_id is None:
        return
    if ev.request.member_epoch != 0:
        return
    g = b.groups.get(ev.request.group_id)
    if g is None:
        return
    holder = g.static_members.get(ev.request.instance_id)
    member = None if holder is None else g.members.get(holder)
    if member is None or member.classic is None:
        return
    r = heartbeat_response(obs)  # type: ignore[arg-type]  # reads only the event and its deliveries
    if r is not None and r.error_code == ErrorCode.UNRELEASED_INSTANCE_ID:
        yield (
            f"{ev.request.group_id}: instance {ev.request.instance_id} held by classic member {holder} "
            "refused UNRELEASED_INSTANCE_ID to a consumer-protocol join"
        )
