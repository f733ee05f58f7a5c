"""Classic promises about requests a well-behaved consumer never sends (docs/invariants.md#stray-requests).

A broker meets them anyway, from older or buggy clients and from administrative tools: a commit from
a process that is not (or no longer) a member, a commit without any identity, a partition that does
not exist, a JoinGroup whose group id, session timeout or protocols the broker must refuse, a
SyncGroup naming another protocol, a LeaveGroup that names a static member by its group.instance.id
alone. Each promise is stated from the protocol's documents (the error codes' meanings in Kafka's
protocol guide, the Admin API, KIP-345, KIP-559) and reads only what was sent, what was answered and
the group's members: never the coordinator's order of checks.
"""

from __future__ import annotations

from collections.abc import Iterator

from model.classic.messages import (
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.classic.produced import produced
from model.classic.sim import Send
from model.classic.world import ClassicWorld, GroupSnap
from model.errors import ErrorCode
from model.invariant_gates import sent
from model.invariants import invariant
from model.observation import Observation

Obs = Observation[ClassicWorld]
E = ErrorCode


def _answers(obs: Obs, ref: int) -> list[object]:
    return [d.response for d in produced(obs) if d.ref == ref]


def _member_ids(group: GroupSnap | None) -> set[str]:
    return {m.member_id for m in group.members} if group is not None else set()


def _accepted(obs: Obs, ref: int) -> list[tuple[str, int]]:
    """The partitions this step's answer to commit ``ref`` accepted."""
    return [
        (t, p)
        for r in _answers(obs, ref)
        if isinstance(r, OffsetCommitResponse)
        for t, p, e in r.partitions
        if e == E.NONE
    ]


@invariant("classic.commit_needs_membership", "transition", "classic", when=sent(Send, OffsetCommitRequest))
def commit_needs_membership(obs: Obs) -> Iterator[str]:
    """Offsets are accepted only from a member of the group or, carrying no member identity and no
    generation (a consumer without group management, the Admin API), by a group without members;
    a commit carrying a generation to a group that does not exist is refused (Kafka protocol guide,
    OffsetCommit and ILLEGAL_GENERATION / GROUP_ID_NOT_FOUND / UNKNOWN_MEMBER_ID; Admin
    `alterConsumerGroupOffsets`: the group must be empty; ClassicGroup.java `validateOffsetCommit`
    at apache/kafka 1eb7644)."""
    ev, b, a = obs.event, obs.before, obs.after
    if not isinstance(ev, Send) or b is None or not isinstance(ev.request, OffsetCommitRequest):
        return
    req = ev.request
    accepted = _accepted(obs, ev.ref)
    if not accepted:
        return
    if b.group is None:
        if req.generation_id >= 0:
            yield f"a commit with generation {req.generation_id} to group {req.group_id}, which does not exist, was accepted"
        return
    anonymous = req.generation_id < 0 and not req.member_id and req.group_instance_id is None
    if anonymous:
        if b.group.members and (a.group is None or a.group.members):
            yield (
                f"a commit without member id or generation was accepted by group {req.group_id} "
                f"with {len(b.group.members)} member(s)"
            )
        return
    if req.member_id not in _member_ids(b.group) | _member_ids(a.group):
        yield f"a commit from {req.member_id or 'an empty member id'}, not a member of {req.group_id}, was accepted"


@invariant("classic.commit_partitions_checked", "transition", "classic", when=sent(Send, OffsetCommitRequest))
def commit_partitions_checked(obs: Obs) -> Iterator[str]:
    """An offset is accepted only for a partition that exists, with metadata no longer than
    offset.metadata.max.bytes (Kafka protocol guide, UNKNOWN_TOPIC_OR_PARTITION and
    OFFSET_METADATA_TOO_LARGE; broker configuration offset.metadata.max.bytes)."""
    ev, b, a = obs.event, obs.before, obs.after
    if not isinstance(ev, Send) or b is None or not isinstance(ev.request, OffsetCommitRequest):
        return
    counts = dict(b.topics)
    for topic, n in a.topics:
        counts[topic] = max(n, counts.get(topic, 0))
    sizes = {(p.topic, p.partition): len((p.metadata or "").encode()) for p in ev.request.partitions}
    for t, p in _accepted(obs, ev.ref):
        if not 0 <= p < counts.get(t, 0):
            yield f"a commit of {t}-{p}, which does not exist ({t} has {counts.get(t, 0)} partitions), was accepted"
        elif sizes.get((t, p), 0) > a.offset_metadata_max_bytes:
            yield (
                f"a commit of {t}-{p} with {sizes[(t, p)]} bytes of metadata was accepted "
                f"(offset.metadata.max.bytes {a.offset_metadata_max_bytes})"
            )


def join_refusal(req: JoinGroupRequest, b: ClassicWorld) -> str | None:
    """Why the broker must refuse ``req`` whatever its state, or None."""
    if not req.group_id:
        return "an empty group id"
    bounds = b.session_timeout_bounds
    if bounds is not None and not bounds[0] <= req.session_timeout_ms <= bounds[1]:
        return f"session timeout {req.session_timeout_ms} ms outside [{bounds[0]}, {bounds[1]}]"
    g = b.group
    if g is None or g.group_id != req.group_id or not g.members:
        return None
    types = {m.protocol_type for m in g.members}
    if req.protocol_type not in types:
        return f"protocol type {req.protocol_type!r} where the members use {sorted(types)}"
    shared = {p for m in g.members for p in m.protocols}
    if not shared & {name for name, _ in req.protocols}:
        return f"protocols {[n for n, _ in req.protocols]} that no member supports ({sorted(shared)})"
    return None


@invariant("classic.invalid_join_refused", "transition", "classic", when=sent(Send, JoinGroupRequest))
def invalid_join_refused(obs: Obs) -> Iterator[str]:
    """A JoinGroup with an empty group id, a session timeout outside the broker's
    group.min/max.session.timeout.ms, or a protocol type or protocol list the members of a non-empty
    group do not share is refused: never answered NONE or MEMBER_ID_REQUIRED, never parked, and it
    adds no member (Kafka protocol guide, INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT,
    INCONSISTENT_GROUP_PROTOCOL)."""
    ev, b, a = obs.event, obs.before, obs.after
    if not isinstance(ev, Send) or b is None or not isinstance(ev.request, JoinGroupRequest):
        return
    why = join_refusal(ev.request, b)
    if why is None:
        return
    for r in _answers(obs, ev.ref):
        if isinstance(r, JoinGroupResponse) and r.error in (E.NONE, E.MEMBER_ID_REQUIRED):
            yield f"a JoinGroup with {why} was answered {r.error.name}"
    if a.group is not None and a.group.group_id == ev.request.group_id:
        if any(m.awaiting_join == ev.ref for m in a.group.members):
            yield f"a JoinGroup with {why} was parked"
        added = _member_ids(a.group) - _member_ids(b.group)
        pending = a.group.pending_members - (b.group.pending_members if b.group is not None else frozenset())
        if added | pending:
            yield f"a JoinGroup with {why} added {sorted(added | pending)}"


@invariant("classic.sync_protocol_matches", "transition", "classic", when=sent(Send, SyncGroupRequest))
def sync_protocol_matches(obs: Obs) -> Iterator[str]:
    """A SyncGroup (v5+) naming a protocol type or protocol other than the ones the generation was
    formed with never succeeds and is never parked (KIP-559; Kafka protocol guide,
    INCONSISTENT_GROUP_PROTOCOL)."""
    ev, b, a = obs.event, obs.before, obs.after
    if (
        not isinstance(ev, Send)
        or b is None
        or b.group is None
        or not isinstance(ev.request, SyncGroupRequest)
    ):
        return
    req, g = ev.request, b.group
    if req.group_id != g.group_id or req.generation_id != g.generation:
        return
    wrong = []
    if req.protocol_type is not None and g.protocol_type is not None and req.protocol_type != g.protocol_type:
        wrong.append(f"protocol type {req.protocol_type!r} (the group's: {g.protocol_type!r})")
    if req.protocol_name is not None and g.protocol is not None and req.protocol_name != g.protocol:
        wrong.append(f"protocol {req.protocol_name!r} (the group's: {g.protocol!r})")
    if not wrong:
        return
    what = " and ".join(wrong)
    for r in _answers(obs, ev.ref):
        if isinstance(r, SyncGroupResponse) and r.error == E.NONE:
            yield f"a SyncGroup naming {what} succeeded"
    if a.group is not None and any(m.awaiting_sync == ev.ref for m in a.group.members):
        yield f"a SyncGroup naming {what} was parked"


@invariant("classic.leave_by_instance_id", "transition", "classic", when=sent(Send, LeaveGroupRequest))
def leave_by_instance_id(obs: Obs) -> Iterator[str]:
    """A LeaveGroup (v3+) naming a member by group.instance.id alone removes the static member that
    holds it, and one naming an instance id no member holds removes nobody and is answered with an
    error for it (KIP-345, administrative removal; GroupMetadataManager.java `classicGroupLeave` at
    apache/kafka 1eb7644)."""
    ev, b, a = obs.event, obs.before, obs.after
    if (
        not isinstance(ev, Send)
        or b is None
        or b.group is None
        or not isinstance(ev.request, LeaveGroupRequest)
    ):
        return
    req, g = ev.request, b.group
    if req.version < 3 or req.group_id != g.group_id:
        return
    answers = [r for r in _answers(obs, ev.ref) if isinstance(r, LeaveGroupResponse)]
    if not answers or answers[0].error != E.NONE:
        return
    held = dict(g.static_members)
    after = _member_ids(a.group) if a.group is not None and a.group.group_id == g.group_id else set()
    per_member = {m.group_instance_id: m.error for m in answers[0].members if m.group_instance_id is not None}
    for ident in req.members:
        if ident.member_id or ident.group_instance_id is None:
            continue
        iid = ident.group_instance_id
        holder = held.get(iid)
        if holder is not None and holder in after:
            yield f"a LeaveGroup naming instance {iid} alone left its member {holder} in the group"
        elif holder is None and per_member.get(iid) == E.NONE:
            yield f"a LeaveGroup naming instance {iid}, which no member holds, was answered NONE for it"
