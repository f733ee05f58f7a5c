"""Classic invariants on responses and durability, added by the kill matrix (docs/mutants.md#added-invariants).

Each one closes a gap a mutant survived through: a parked request dropped without an answer, a
request answered twice, a Stable group whose in-memory membership differs from what a failover would
load (KAFKA-10284), a request from a replaced static member that is not fenced (KAFKA-8225), and a
leader's SyncGroup that leaves out a member of the generation (KAFKA-9801).
"""

from __future__ import annotations

from collections.abc import Iterator

from model.classic.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
)
from model.classic.produced import produced, responded
from model.classic.sim import Send
from model.classic.state import GroupState
from model.classic.stray_invariants import join_refusal
from model.classic.world import ClassicWorld
from model.errors import ErrorCode
from model.invariant_gates import on, sent
from model.invariant_reads import changed
from model.invariants import invariant
from model.observation import Observation

Obs = Observation[ClassicWorld]
S = GroupState
E = ErrorCode


@invariant("classic.parked_requests_answered", "transition", "classic", when=changed("group"))
def parked_requests_answered(obs: Obs) -> Iterator[str]:
    """A parked JoinGroup or SyncGroup is answered in the step that un-parks it (docs/protocol-reference.md#a3, #a4; GMM L4887, L5684)."""
    b, a = obs.before, obs.after
    if b is None or b.group is None:
        return
    answered = {d.ref for d in produced(obs)} | a.unseen  # an answer nobody can see is not judged
    after = {m.member_id: m for m in a.group.members} if a.group is not None else {}
    for m in b.group.members:
        for kind, ref in (("JoinGroup", m.awaiting_join), ("SyncGroup", m.awaiting_sync)):
            if ref is None or ref in answered:
                continue
            still = after.get(m.member_id)
            parked = (
                None
                if still is None
                else (still.awaiting_join if kind == "JoinGroup" else still.awaiting_sync)
            )
            if parked is not None:  # still parked, or superseded by the member's newer request (CG L1189)
                continue
            yield f"{m.member_id}'s parked {kind} (ref {ref}) was dropped without a response"


@invariant("classic.one_response_per_request", "transition", "classic", when=responded)
def one_response_per_request(obs: Obs) -> Iterator[str]:
    """No request is answered twice (Kafka protocol: exactly one response per request)."""
    seen: set[int] = set()
    for d in produced(obs):
        if d.ref in seen:
            yield f"request ref {d.ref} answered twice ({type(d.response).__name__})"
        seen.add(d.ref)


@invariant("classic.stable_state_persisted", "safety", "classic", reads=("after.group", "after.persisted"))
def stable_state_persisted(obs: Obs) -> Iterator[str]:
    """A Stable group's generation, member ids and assignments are those of its last persisted GroupMetadata ("Handling Coordinator Failures", docs/protocol-reference.md#client-side-assignment; KAFKA-10284)."""
    g, p = obs.after.group, obs.after.persisted
    if g is None or g.state != S.STABLE:
        return
    if p is None:
        yield f"Stable group at generation {g.generation} has no persisted metadata"
        return
    if p.generation != g.generation:
        yield f"Stable at generation {g.generation}, persisted generation {p.generation}"
    live = {m.member_id: m.assignment for m in g.members}
    stored = dict(p.assignments)
    if set(live) != set(stored):
        yield f"Stable members {sorted(live)} but persisted members {sorted(stored)}"
        return
    for mid in sorted(live):
        if live[mid] != stored[mid]:
            yield f"{mid}'s assignment differs from the persisted one"


@invariant("classic.instance_fencing", "transition", "classic", when=on(Send))
def instance_fencing(obs: Obs) -> Iterator[str]:
    """A request naming a group.instance.id that the group maps to another member id is answered FENCED_INSTANCE_ID (KIP-345; CG L790; KAFKA-8225).

    A JoinGroup's group id, session timeout and the group's capacity are checked before its member
    id, and so are its protocols (GroupMetadataManager.classicGroupJoin: INVALID_GROUP_ID,
    INVALID_SESSION_TIMEOUT, then GROUP_MAX_SIZE_REACHED via acceptJoiningMember, then
    INCONSISTENT_GROUP_PROTOCOL on the new/existing member paths; model/classic/coordinator.py). A
    request for another group id (an empty one included) does not ask this group at all."""
    ev, b = obs.event, obs.before
    if not isinstance(ev, Send) or b is None or b.group is None or ev.request.group_id != b.group.group_id:
        return
    req = ev.request
    if not isinstance(req, HeartbeatRequest | SyncGroupRequest | OffsetCommitRequest | JoinGroupRequest):
        return
    if req.group_instance_id is None or not req.member_id:
        return
    holder = dict(b.group.static_members).get(req.group_instance_id)
    if holder is None or holder == req.member_id:
        return
    for d in produced(obs):
        if d.ref != ev.ref:
            continue
        r = d.response
        if isinstance(r, OffsetCommitResponse):
            errors: set[object] = {e for _, _, e in r.partitions if e != E.UNKNOWN_TOPIC_OR_PARTITION}
        else:
            errors = {getattr(r, "error", None)}
        allowed = {E.FENCED_INSTANCE_ID}
        if isinstance(req, JoinGroupRequest):
            allowed |= {E.INVALID_SESSION_TIMEOUT, E.GROUP_MAX_SIZE_REACHED}
            if join_refusal(req, b) is not None:
                allowed.add(E.INCONSISTENT_GROUP_PROTOCOL)
        if errors - allowed:
            names = sorted(getattr(e, "name", str(e)) for e in errors)
            yield f"{type(req).__name__} from {req.member_id} for instance {req.group_instance_id} (held by {holder}) answered {names}"


@invariant("classic.leader_sync_covers_members", "transition", "classic", when=sent(Send, SyncGroupRequest))
def leader_sync_covers_members(obs: Obs) -> Iterator[str]:
    """The leader's SyncGroup that completes a rebalance assigns to every member of the generation (KAFKA-9801; CG L1302)."""
    ev, b, a = obs.event, obs.before, obs.after
    if (
        not isinstance(ev, Send)
        or not isinstance(ev.request, SyncGroupRequest)
        or b is None
        or a.group is None
    ):
        return
    if b.group is None or b.group.state != S.COMPLETING_REBALANCE or ev.request.member_id != b.group.leader:
        return
    if (S.COMPLETING_REBALANCE, S.STABLE) not in a.transitions or not ev.request.assignments:
        return
    listed = {mid for mid, _ in ev.request.assignments}
    # the generation's members were there before the SyncGroup: an oracle's observation may also
    # hold a join the target took after it, a member the leader could not have known
    generation = {m.member_id for m in b.group.members} & {m.member_id for m in a.group.members}
    missing = sorted(generation - listed)
    if missing:
        yield f"generation {b.group.generation} went Stable; the leader's assignment leaves out members {missing}"
