"""Timer lower bounds: a classic session or rebalance timer never fires before its timeout.

The liveness invariants (`classic.session_expiry_armed`, `classic.join_timer_armed`) bound timers
from above; these bound them from below. The promise is in Kafka's field descriptions
(``clients/src/main/resources/common/message/JoinGroupRequest.json``): the coordinator considers a
member dead only once it heard nothing for ``SessionTimeoutMs``, and waits up to
``RebalanceTimeoutMs`` for each member to rejoin (KIP-62 split the two). A timer armed closer than
its timeout, or a member removed by time while no timer that could remove it was due, breaks it.
"""

from __future__ import annotations

from collections.abc import Iterator

from model.classic.sim import Advance
from model.classic.world import ClassicWorld, GroupSnap, MemberSnap
from model.invariant_reads import changed
from model.invariants import invariant
from model.observation import Observation

Obs = Observation[ClassicWorld]


def _armed(before: GroupSnap | None, after: GroupSnap, key: str) -> int | None:
    """The deadline of timer ``key`` if this step armed or moved it, else None."""
    deadline = after.timer(key)
    if deadline is None or (before is not None and before.timer(key) == deadline):
        return None
    return deadline


@invariant("classic.timers_not_early", "transition", "classic", when=changed("group"))
def timers_not_early(obs: Obs) -> Iterator[str]:
    """A session timer is armed at least the member's session timeout ahead, a join or sync timer
    at least the group's rebalance timeout ahead, and time removes a member only when one of the
    timers that can remove it is due, or was armed by a timer that fired in the same step early
    enough to fire too (JoinGroupRequest.json SessionTimeoutMs, RebalanceTimeoutMs)."""
    a = obs.after.group
    b = obs.before.group if obs.before is not None else None
    if a is None:
        return
    # time ran from now - ms to now: a timer fired in between arms its successors from its deadline
    # (on a real target a timer the oracle saw fire late is still dated at its deadline)
    armed_at = obs.now - obs.event.ms if isinstance(obs.event, Advance) else obs.now
    slack = obs.after.stamp_slack_ms  # a real coordinator's clock: checked this loosely
    if b is not None:
        fired = [d for k, d in b.timers if d <= obs.now + slack and a.timer(k) != d]
        armed_at = min([armed_at, *fired])
    sessions = {m.member_id: m.session_timeout_ms for m in a.members}
    if b is not None:  # a static member replaced in this step keeps its predecessor's session
        prior = {m.instance_id: m.session_timeout_ms for m in b.members if m.instance_id is not None}
        for m in a.members:
            if m.instance_id in prior:
                sessions[m.member_id] = min(sessions[m.member_id], prior[m.instance_id])
    for m in a.members:
        deadline = _armed(b, a, f"expire:{m.member_id}")
        if deadline is not None and deadline - armed_at + slack < sessions[m.member_id]:
            yield (
                f"{m.member_id}'s session timer fires at {deadline}, {deadline - armed_at} ms after t={armed_at},"
                f" before its session timeout {sessions[m.member_id]} ms"
            )
    for key in ("join", "sync"):
        deadline = _armed(b, a, key)
        if deadline is not None and deadline - armed_at + slack < a.rebalance_timeout_ms():
            yield (
                f"the {key} timer fires at {deadline}, {deadline - armed_at} ms after t={armed_at},"
                f" before the rebalance timeout {a.rebalance_timeout_ms()} ms"
            )
    if b is None or not isinstance(obs.event, Advance):
        return
    due = {k for k, deadline in b.timers if deadline <= obs.now + slack}
    group_due = bool(due & {"join", "sync", "initial"})
    # a timer that fired in this step may have armed another one that fired too: a join phase it
    # completed re-arms every session at its deadline, a rebalance it started arms the join timer
    first = min((deadline for _k, deadline in b.timers if deadline <= obs.now + slack), default=None)
    kept = {m.member_id for m in a.members}
    for m in b.members:
        if m.member_id in kept or group_due or f"expire:{m.member_id}" in due:
            continue
        # the rebalance a fired timer starts runs on the timeout of the members left, which can
        # be shorter than the whole group's (the member that expired had the longest)
        shortest = min((x.rebalance_timeout_ms for x in b.members), default=b.rebalance_timeout_ms())
        chain = min(m.session_timeout_ms, shortest)
        if first is not None and first + chain <= obs.now + slack:
            continue
        yield f"{m.member_id} was removed at t={obs.now} with none of its timers due"


def armed_session(obs: Observation[ClassicWorld], m: MemberSnap) -> int | None:
    """The session timeout ``m``'s expiry timer may have been armed with in this observation, or
    None if the timer did not change. A static replacement's new member
    id is armed with the replaced member's session timeout before the new one is stored
    (GMM updateStaticMemberThenRebalanceOrCompleteJoin, rescheduleClassicGroupMemberHeartbeat)."""
    b = obs.before.group if obs.before is not None else None
    if b is None:
        return m.session_timeout_ms
    old = b.member(m.member_id)
    key = f"expire:{m.member_id}"
    if old is not None:
        # a JoinGroup that changes a member's session timeout leaves an armed deadline as it is
        # (the next heartbeat or completed join arms the new one), so an unchanged timer was
        # checked when it was armed
        now = obs.after.group.timer(key) if obs.after.group is not None else None
        return None if b.timer(key) == now else m.session_timeout_ms
    replaced = [
        x.session_timeout_ms
        for x in b.members
        if m.instance_id is not None and x.instance_id == m.instance_id
    ]
    return max([m.session_timeout_ms, *replaced])
