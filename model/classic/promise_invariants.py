"""Classic promises a consumer relies on, stated from the protocol documents (docs/invariants.md#nature).

Each one reads only what a client or an operator can observe (the requests, the responses, the
group's members and their session deadlines, the consumer's own generation and partitions); none
consults the coordinator's rules for how it got there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitResponse,
    SyncGroupResponse,
)
from model.classic.produced import produced, responded_with
from model.classic.sim import Advance, Send
from model.classic.state import GroupState
from model.classic.world import ClassicWorld, ClientSnap
from model.errors import ErrorCode
from model.invariant_gates import on, sent
from model.invariants import invariant
from model.observation import Observation

Obs = Observation[ClassicWorld]
S = GroupState
E = ErrorCode


def _rebalance_only(response: object) -> bool:
    """A SyncGroup or OffsetCommit answer whose only error is REBALANCE_IN_PROGRESS."""
    if isinstance(response, SyncGroupResponse):
        return response.error == E.REBALANCE_IN_PROGRESS
    if isinstance(response, OffsetCommitResponse):
        errors = {e for _, _, e in response.partitions if e != E.NONE}
        return errors == {E.REBALANCE_IN_PROGRESS}
    return False


@invariant(
    "classic.rebalance_in_progress_keeps_membership",
    "transition",
    "classic",
    when=responded_with(SyncGroupResponse, OffsetCommitResponse),
)
def rebalance_in_progress_keeps_membership(obs: Obs) -> Iterator[str]:
    """REBALANCE_IN_PROGRESS on SyncGroup or OffsetCommit only asks for a rejoin: the consumer keeps its member id, generation and partitions (KIP-429; Kafka protocol guide error codes; KAFKA-14016)."""
    ev, b, a = obs.event, obs.before, obs.after
    if b is None or b.group is None:
        return
    recipient: dict[int, str] = {}  # ref -> member id the answer is addressed to
    for m in b.group.members:
        if m.awaiting_sync is not None:
            recipient[m.awaiting_sync] = m.member_id
    by_member = {c.member_id: c.name for c in b.clients if c.member_id}
    names: dict[int, str] = {r: by_member[mid] for r, mid in recipient.items() if mid in by_member}
    if isinstance(ev, Send) and ev.how == "client":
        names[ev.ref] = ev.client
    before: dict[str, ClientSnap] = {c.name: c for c in b.clients}
    after: dict[str, ClientSnap] = {c.name: c for c in a.clients}
    for d in produced(obs):
        name = names.get(d.ref)
        if name is None or not _rebalance_only(d.response) or name not in before or name not in after:
            continue
        old, new = before[name], after[name]
        if old.generation < 0 or not old.member_id:
            continue
        kind = type(d.response).__name__.removesuffix("Response")
        if (new.member_id, new.generation) != (old.member_id, old.generation):
            yield (
                f"{name} answered REBALANCE_IN_PROGRESS on {kind} went from member {old.member_id} "
                f"generation {old.generation} to member {new.member_id or '-'} generation {new.generation}"
            )
        elif not old.owned <= new.owned:
            lost = sorted(f"{t}-{p}" for t, p in old.owned - new.owned)
            yield f"{name} answered REBALANCE_IN_PROGRESS on {kind} gave up {lost}"


def _answered_as_is(before: ClassicWorld | None, generation: int, member_id: str) -> bool:
    """A JoinGroup from a known member with unchanged protocols, in CompletingRebalance or from a
    follower in Stable, is answered with the current generation and changes nothing, its timeouts
    included: it only repeats the answer a client may have missed (apache/kafka
    GroupMetadataManager `classicGroupJoinExistingMember`). The promise covers joins that admit or
    update a member."""
    if before is None or before.group is None or generation != before.group.generation:
        return False
    return (
        before.group.state in (S.COMPLETING_REBALANCE, S.STABLE)
        and before.group.member(member_id) is not None
    )


@invariant("classic.join_sets_member_timeouts", "transition", "classic", when=sent(Send, JoinGroupRequest))
def join_sets_member_timeouts(obs: Obs) -> Iterator[str]:
    """A JoinGroup that admits or updates a member gives it the session and rebalance timeouts of that request, a static replacement included (KIP-345; Kafka protocol guide JoinGroup; KAFKA-14009)."""
    ev, b, a = obs.event, obs.before, obs.after
    if not isinstance(ev, Send) or not isinstance(ev.request, JoinGroupRequest) or a.group is None:
        return
    req = ev.request
    member_id = req.member_id
    for d in produced(obs):
        if d.ref != ev.ref:
            continue
        if getattr(d.response, "error", None) != E.NONE:
            return  # refused: the member (if any) keeps what it had
        member_id = d.response.member_id
        if _answered_as_is(b, d.response.generation_id, member_id):
            return
    if not member_id and req.group_instance_id is not None:
        member_id = dict(a.group.static_members).get(req.group_instance_id, "")
    m = a.group.member(member_id) if member_id else None
    if m is None:
        return
    # as the wire carried it: JoinGroup v0 has no rebalance timeout, and a real target's port may
    # have sent v0 for a member that drew a later version (Kafka 0.9 speaks v0 only)
    want = (req.session_timeout_ms, replace(req, version=m.join_version).effective_rebalance_timeout_ms)
    if (m.session_timeout_ms, m.rebalance_timeout_ms) != want:
        yield (
            f"{m.member_id} joined with session/rebalance timeouts {want} but holds "
            f"{(m.session_timeout_ms, m.rebalance_timeout_ms)}"
        )


@invariant("classic.live_session_not_expired", "transition", "classic", when=on(Advance))
def live_session_not_expired(obs: Obs) -> Iterator[str]:
    """While time passes, a member of a Stable group is removed only once its session deadline has passed: a member that keeps heartbeating stays (KIP-62; KIP-394; Kafka consumer config session.timeout.ms; KAFKA-9232)."""
    ev, b, a = obs.event, obs.before, obs.after
    if not isinstance(ev, Advance) or b is None or b.group is None or b.group.state != S.STABLE:
        return
    if b.group.generation != (a.group.generation if a.group is not None else -1) and a.group is not None:
        return  # a whole join phase ran inside this step: its own timers may remove members
    kept = {m.member_id for m in a.group.members} if a.group is not None else set()
    for m in b.group.members:
        if m.member_id in kept or m.member_id in b.group.pending_sync:
            continue  # a member that never synced this generation goes at the rebalance timeout (KAFKA-12890)
        deadline = b.group.timer(f"expire:{m.member_id}")
        if deadline is not None and deadline > obs.now:
            yield f"{m.member_id} removed at {obs.now} though its session runs until {deadline}"


@invariant(
    "classic.lost_member_id_releases_partitions",
    "transition",
    "classic",
    reads=("after.clients", "before", "before.clients"),
)
def lost_member_id_releases_partitions(obs: Obs) -> Iterator[str]:
    """A cooperative consumer that loses its member id gives up its partitions at once (onPartitionsLost), whatever it was doing, so it never claims them again as a new member (KIP-429; KAFKA-12983)."""
    b, a = obs.before, obs.after
    if b is None:
        return
    before = {c.name: c for c in b.clients}
    for c in a.clients:
        old = before.get(c.name)
        if old is None or not old.member_id or c.member_id or not c.cooperative or old.stale_subscription:
            continue  # the stale_subscription fault keeps them on purpose (KAFKA-12984's input)
        if c.owned:
            kept = sorted(f"{t}-{p}" for t, p in c.owned)
            yield f"{c.name} lost member id {old.member_id} but still owns {kept}"


@invariant(
    "classic.leader_gets_metadata_as_sent", "transition", "classic", when=responded_with(JoinGroupResponse)
)
def leader_gets_metadata_as_sent(obs: Obs) -> Iterator[str]:
    """The member list a JoinGroup answer gives the leader carries, for each member answered in the same step, the metadata of the chosen protocol exactly as that member's JoinGroup sent it: the coordinator relays subscriptions, it does not keep older ones (Kafka protocol guide JoinGroup; JoinGroupResponse.json Members.Metadata).

    A promise a client relies on (docs/invariants.md#nature): the leader's assignor sees what each
    consumer subscribes to and owns now. The requests are the harness's record
    (`model.classic.wire_record`), not the coordinator's stored copy.
    """
    sent = dict(obs.after.joins)
    answered: dict[str, dict[str, bytes]] = {}  # member id -> the protocols of the join it answers
    for d in produced(obs):
        r = d.response
        if isinstance(r, JoinGroupResponse) and r.error == E.NONE and d.ref in sent:
            answered[r.member_id] = dict(sent[d.ref])
    for d in produced(obs):
        r = d.response
        if not isinstance(r, JoinGroupResponse) or r.error != E.NONE or not r.members:
            continue
        for m in r.members:
            own = answered.get(m.member_id, {}).get(r.protocol_name or "")
            if own is not None and own != m.metadata:
                yield (
                    f"generation {r.generation_id}: the leader is given {m.member_id}'s {r.protocol_name} "
                    f"metadata {m.metadata.hex()}, but its JoinGroup sent {own.hex()}"
                )


@invariant(
    "classic.sync_gives_leader_assignment", "transition", "classic", when=responded_with(SyncGroupResponse)
)
def sync_gives_leader_assignment(obs: Obs) -> Iterator[str]:
    """A successful SyncGroup answer comes after the generation's leader sent its SyncGroup and carries the assignment it sent for that member: the bytes listed for its member id, or none if it was not listed, or, for a static member that replaced one listed, its predecessor's (Kafka protocol guide SyncGroup; SyncGroupRequest.json Assignments; KIP-345 static replacement).

    A promise a client relies on (docs/invariants.md#nature): the coordinator relays the leader's
    assignment, it neither computes nor mixes one up. The leader's requests are the harness's record
    (`model.classic.wire_record`); a generation whose leader no JoinGroup answer named is not judged.
    """
    asked = {s.ref: s for s in obs.after.syncs}
    for d in produced(obs):
        r, s = d.response, asked.get(d.ref)
        if s is None or not isinstance(r, SyncGroupResponse) or r.error != E.NONE:
            continue
        if not s.listings:
            if s.leader_known:
                yield f"generation {s.generation}: {s.member_id} is answered before its leader's SyncGroup was sent"
            continue
        allowed: set[bytes] = set()
        for listing in s.listings:
            mine = [a for mid, _, a in listing if mid == s.member_id]
            allowed.update(mine or [b""])
            if not mine and s.instance_id is not None:
                allowed.update(a for _, instance, a in listing if instance == s.instance_id)
        if r.assignment not in allowed:
            yield (
                f"generation {s.generation}: {s.member_id} is given assignment {r.assignment.hex()}, "
                f"not the {len(allowed)} the leader's SyncGroup sent for it"
            )


@invariant("classic.no_partition_held_twice", "safety", "classic", reads=("after.clients", "after.group"))
def no_partition_held_twice(obs: Obs) -> Iterator[str]:
    """No partition is held at once by two consumers that are both members of the group's current generation, across generations too (KIP-429: a partition is revoked by its owner before anyone else is assigned it; the eager protocol revokes everything before joining; Vanlightly kafka-tlaplus NoDoubleClientAssignment).

    A promise a client relies on (docs/invariants.md#nature): the consumer view of
    `classic.single_owner_consumer`, which compares the assignments handed out within one
    generation, here the partitions the consumers hold now. A consumer whose member id left the group
    or whose generation is not the group's is a zombie: its next request is refused. A consumer
    holding what the `stale_subscription` fault kept breaks the promise itself, until its next
    assignment arrives, and so does every assignment that hands back what it claimed only through
    the fault, while it keeps holding it: the leader's assignor trusts the claim
    (docs/invariants.md#stale-claims).
    """
    g = obs.after.group
    if g is None:
        return
    current = {m.member_id for m in g.members}
    holder: dict[tuple[str, int], str] = {}
    for c in obs.after.clients:
        if c.member_id not in current or c.generation != g.generation or c.stale_kept:
            continue
        for tp in sorted(c.owned - c.stale_regained):
            if tp in holder:
                yield f"{tp[0]}-{tp[1]} held by {holder[tp]} and {c.name}, both in generation {g.generation}"
            holder[tp] = c.name


@invariant("classic.heartbeat_signals_rebalance", "transition", "classic", when=sent(Send, HeartbeatRequest))
def heartbeat_signals_rebalance(obs: Obs) -> Iterator[str]:
    """While the group is PreparingRebalance, a Heartbeat is never answered NONE: a member learns that it must rejoin from its heartbeat's answer, REBALANCE_IN_PROGRESS (Kafka protocol guide, Heartbeat errors; docs/protocol-reference.md#a5; GMM L6005).

    A promise a client relies on (docs/invariants.md#nature): a member told all is well does not
    rejoin, and the join phase ends without it.
    """
    ev, b = obs.event, obs.before
    if (
        not isinstance(ev, Send)
        or not isinstance(ev.request, HeartbeatRequest)
        or b is None
        or b.group is None
    ):
        return
    a = obs.after.group
    if b.group.state != S.PREPARING_REBALANCE or a is None or a.state != S.PREPARING_REBALANCE:
        return  # judged only while the rebalance was under way before and after the request
    for d in produced(obs):
        if d.ref == ev.ref and isinstance(d.response, HeartbeatResponse) and d.response.error == E.NONE:
            yield f"{ev.request.member_id}'s Heartbeat answered NONE while the group prepares a rebalance"


#: answers that take a consumer's member id away or give it another (AbstractCoordinator: the id is
#: reset on UNKNOWN_MEMBER_ID, a static member is fenced by FENCED_INSTANCE_ID, a JoinGroup answer
#: names the id, a LeaveGroup ends the membership)
_ID_ENDING = frozenset({int(E.UNKNOWN_MEMBER_ID), int(E.FENCED_INSTANCE_ID)})
_ID_GIVING = frozenset({int(E.NONE), int(E.MEMBER_ID_REQUIRED)})


def _may_change_member_id(kind: str, errors: tuple[int, ...]) -> bool:
    if kind == "LeaveGroupResponse" or _ID_ENDING.intersection(errors):
        return True
    return kind == "JoinGroupResponse" and bool(_ID_GIVING.intersection(errors))


@invariant(
    "classic.member_id_kept_until_refused",
    "transition",
    "classic",
    reads=("after.clients", "after.handed", "before", "before.clients"),
)
def member_id_kept_until_refused(obs: Obs) -> Iterator[str]:
    """A consumer keeps its member id until the coordinator refuses it (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), names another in a JoinGroup answer, or the consumer leaves: a retriable error, REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, a request timeout or a lost connection keep it (KIP-394, KIP-345; Kafka protocol guide, JoinGroup MemberId).

    A promise the coordinator relies on (docs/invariants.md#nature): a consumer that drops a live
    member id and joins again as a new member leaves its old id in the group until that session
    expires, and every rebalance in between waits for it. What each consumer was answered at this
    step is the harness's record (`ClassicWorld.handed`); a restarted process is a new consumer.
    """
    b, a = obs.before, obs.after
    if b is None:
        return
    before = {c.name: c for c in b.clients}
    for c in a.clients:
        old = before.get(c.name)
        if old is None or not old.member_id or c.member_id == old.member_id:
            continue
        answers = [(kind, errors) for name, kind, errors in a.handed if name == c.name]
        if any(_may_change_member_id(kind, errors) for kind, errors in answers):
            continue
        said = ", ".join(f"{kind} {'/'.join(E(e).name for e in errors)}" for kind, errors in answers)
        yield f"{c.name} gave up member id {old.member_id} though no answer refused it ({said or 'no answer'})"


# The promises about requests a well-behaved consumer never sends register with these.
from model.classic import stray_invariants as _stray_invariants  # noqa: E402, F401
