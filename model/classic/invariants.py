"""Classic-protocol invariants (docs/protocol-reference.md#e 1-14 and the single-owner family), one predicate each.

Every predicate reads an `Observation[ClassicWorld]` and yields violation messages. Liveness items
are bounded on the virtual clock: the timer that must end a phase is armed no later than its
bound, so a missed completion shows up as a concrete step, not as a hang.
"""

from __future__ import annotations

from collections.abc import Iterator

from model.classic.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.classic.produced import produced, responded_with
from model.classic.sim import Send, Unsubscribe
from model.classic.state import VALID_PREVIOUS, GroupState
from model.classic.timer_invariants import armed_session
from model.classic.world import ClassicWorld
from model.embedded import TopicPartition, decode_assignment
from model.errors import ErrorCode
from model.invariant_gates import on, sent
from model.invariant_reads import changed
from model.invariants import invariant
from model.observation import Observation

Obs = Observation[ClassicWorld]
#: the group before and after a step (`model.invariant_reads`)
STEP = ("before", "before.group", "after.group")
#: gates of the invariants that judge one kind of answer
JOIN_ANSWERED, SYNC_ANSWERED = responded_with(JoinGroupResponse), responded_with(SyncGroupResponse)
S = GroupState
E = ErrorCode


def _responses(obs: Obs, ref: int) -> list[object]:
    return [d.response for d in produced(obs) if d.ref == ref]


def _partitions(data: bytes) -> frozenset[TopicPartition] | None:
    if not data:
        return frozenset()
    try:
        return frozenset(decode_assignment(data).partitions)
    except ValueError:
        return None


@invariant("classic.state_transitions_legal", "transition", "classic", reads=("after.transitions",))
def state_transitions_legal(obs: Obs) -> Iterator[str]:
    """The group state changes only along the edges of Kafka's state machine (docs/protocol-reference.md#e1; CGS L112-116, CG L1457)."""
    for prev, nxt in obs.after.transitions:
        if prev not in VALID_PREVIOUS[nxt]:
            yield f"illegal transition {prev.value} -> {nxt.value}"


@invariant(
    "classic.generation_bump_once",
    "transition",
    "classic",
    reads=(*STEP, "after.failover", "after.transitions"),
)
def generation_bump_once(obs: Obs) -> Iterator[str]:
    """The generation rises by exactly 1 per completed join phase and never otherwise (docs/protocol-reference.md#e2; CG L1283)."""
    b, a = obs.before, obs.after
    if b is None or b.group is None or a.group is None or a.failover:
        return
    completed = sum(
        1 for prev, nxt in a.transitions if prev == S.PREPARING_REBALANCE and nxt != S.PREPARING_REBALANCE
    )
    delta = a.group.generation - b.group.generation
    if delta != completed:
        yield f"generation {b.group.generation} -> {a.group.generation} with {completed} completed join phase(s)"


@invariant(
    "classic.generation_monotonic",
    "transition",
    "classic",
    reads=(*STEP, "after.failover", "after.persisted", "before.persisted"),
)
def generation_monotonic(obs: Obs) -> Iterator[str]:
    """Generations never go back; a failover may only fall back to the persisted generation ("Handling Coordinator Failures", docs/protocol-reference.md#client-side-assignment)."""
    b, a = obs.before, obs.after
    if b is None or b.group is None or a.group is None:
        return
    if a.failover:
        floor = b.persisted.generation if b.persisted is not None else 0
        if a.group.generation < floor:
            yield f"failover loaded generation {a.group.generation} below persisted {floor}"
    elif a.group.generation < b.group.generation:
        yield f"generation went back {b.group.generation} -> {a.group.generation}"
    if b.persisted and a.persisted and a.persisted.generation < b.persisted.generation:
        yield f"persisted generation went back {b.persisted.generation} -> {a.persisted.generation}"


@invariant("classic.leader_is_member", "safety", "classic", reads=("after.group",))
def leader_is_member(obs: Obs) -> Iterator[str]:
    """A non-empty group's leader is one of its members; a group without members has no leader (docs/protocol-reference.md#e3; CG L428, L470)."""
    g = obs.after.group
    if g is None or g.state == S.DEAD:
        return
    ids = {m.member_id for m in g.members}
    if ids and g.leader not in ids:
        yield f"leader {g.leader!r} is not a member of {sorted(ids)}"
    if not ids and g.leader is not None:
        yield f"group without members has leader {g.leader!r}"


@invariant("classic.protocol_supported", "safety", "classic", reads=("after.group",))
def protocol_supported(obs: Obs) -> Iterator[str]:
    """The selected protocol is supported by every member and all members share one protocol type (docs/protocol-reference.md#e4; CG L1053, L1103)."""
    g = obs.after.group
    if g is None or g.state not in (S.COMPLETING_REBALANCE, S.STABLE):
        return
    for m in g.members:
        if g.protocol is not None and g.protocol not in m.protocols:
            yield f"member {m.member_id} does not support selected protocol {g.protocol}"
        if m.protocol_type != g.protocol_type:
            yield f"member {m.member_id} protocol type {m.protocol_type!r} != group's {g.protocol_type!r}"


@invariant("classic.static_instance_unique", "safety", "classic", reads=("after.group",))
def static_instance_unique(obs: Obs) -> Iterator[str]:
    """group.instance.id and member id map one-to-one: at most one live member per instance (docs/protocol-reference.md#e5; KIP-345, CG L542)."""
    g = obs.after.group
    if g is None:
        return
    seen: dict[str, str] = {}
    for m in g.members:
        if m.instance_id is None:
            continue
        if m.instance_id in seen:
            yield f"instance {m.instance_id} held by {seen[m.instance_id]} and {m.member_id}"
        seen[m.instance_id] = m.member_id
    if dict(g.static_members) != seen:
        yield f"static member map {dict(g.static_members)} disagrees with members {seen}"


@invariant("classic.max_size", "safety", "classic", when=sent(Send, JoinGroupRequest))
def max_size(obs: Obs) -> Iterator[str]:
    """A group never grows beyond group.max.size through JoinGroup (docs/protocol-reference.md#e6; GMM L5480)."""
    g = obs.after.group
    b = obs.before
    if g is None or not isinstance(obs.event, Send) or not isinstance(obs.event.request, JoinGroupRequest):
        return
    before = len(b.group.members) if b is not None and b.group is not None else 0
    # while PreparingRebalance Kafka counts the members awaiting a join response: the others leave
    # when the join phase completes (acceptJoiningMember, GMM L5480)
    joining = g.state == S.PREPARING_REBALANCE
    size = sum(m.awaiting_join is not None for m in g.members) if joining else len(g.members)
    if size > obs.after.max_size and len(g.members) > before:
        yield f"{size} {'joining ' if joining else ''}members exceed group.max.size {obs.after.max_size}"


@invariant("classic.leader_sync_installs", "transition", "classic", when=changed("group"))
def leader_sync_installs(obs: Obs) -> Iterator[str]:
    """Only the current leader's SyncGroup for the current generation in CompletingRebalance installs assignments (docs/protocol-reference.md#e7; GMM L5684)."""
    b, a = obs.before, obs.after
    if b is None or b.group is None or a.group is None or a.failover:
        return
    old = {m.member_id: m.assignment for m in b.group.members}
    # a static replacement carries its predecessor's assignment over to the new member id (docs/protocol-reference.md#a3-1)
    inherited = {m.instance_id: m.assignment for m in b.group.members if m.instance_id is not None}
    changed = [
        m.member_id
        for m in a.group.members
        if m.assignment
        and old.get(m.member_id, b"") != m.assignment
        and not (
            m.member_id not in old
            and m.instance_id is not None
            and inherited.get(m.instance_id) == m.assignment
        )
    ]
    if not changed:
        return
    ev = obs.event
    ok = (
        isinstance(ev, Send)
        and isinstance(ev.request, SyncGroupRequest)
        and b.group.state == S.COMPLETING_REBALANCE
        and ev.request.member_id == b.group.leader
        and ev.request.generation_id == b.group.generation
    )
    if not ok:
        yield f"assignment of {sorted(changed)} changed by {type(ev).__name__} outside the leader's sync"


@invariant("classic.assignment_visible_after_persist", "transition", "classic", when=SYNC_ANSWERED)
def assignment_visible_after_persist(obs: Obs) -> Iterator[str]:
    """A member receives an assignment only after the group metadata holding it was persisted (docs/protocol-reference.md#e7; GMM L5684)."""
    a = obs.after
    for d in produced(obs):
        r = d.response
        if isinstance(r, SyncGroupResponse) and r.error == E.NONE and r.assignment:
            stored = dict(a.persisted.assignments) if a.persisted else {}
            if r.assignment not in stored.values():
                yield f"sync response ref {d.ref} carries an assignment that was never persisted"


@invariant(
    "classic.stale_generation_rejected",
    "transition",
    "classic",
    when=sent(Send, HeartbeatRequest, SyncGroupRequest, OffsetCommitRequest),
)
def stale_generation_rejected(obs: Obs) -> Iterator[str]:
    """Heartbeat, SyncGroup and OffsetCommit with another generation than the group's never succeed (docs/protocol-reference.md#e8; GMM L6005, L5859; CG L822)."""
    ev, b = obs.event, obs.before
    if not isinstance(ev, Send) or b is None or b.group is None:
        return
    req = ev.request
    if not isinstance(req, HeartbeatRequest | SyncGroupRequest | OffsetCommitRequest):
        return
    if req.generation_id == b.group.generation or (
        isinstance(req, OffsetCommitRequest) and req.generation_id < 0
    ):
        return
    a = obs.after.group
    if a is not None and req.generation_id == a.generation != b.group.generation:
        # against a real coordinator a timer can complete the join phase between the snapshot the
        # request was built from and its arrival (none of these requests completes one by itself)
        return
    for r in _responses(obs, ev.ref):
        if isinstance(r, OffsetCommitResponse):
            if any(e == E.NONE for _, _, e in r.partitions):
                yield f"commit with generation {req.generation_id} accepted at generation {b.group.generation}"
        elif getattr(r, "error", None) == E.NONE:
            yield f"{type(req).__name__} with generation {req.generation_id} succeeded at generation {b.group.generation}"
    after_group = obs.after.group
    if (
        isinstance(req, SyncGroupRequest)
        and after_group
        and any(m.awaiting_sync == ev.ref for m in after_group.members)
    ):
        yield f"SyncGroup with stale generation {req.generation_id} was parked"


@invariant(
    "classic.no_commit_while_completing", "transition", "classic", when=sent(Send, OffsetCommitRequest)
)
def no_commit_while_completing(obs: Obs) -> Iterator[str]:
    """No offset commit from a group member is accepted while the group is CompletingRebalance (docs/protocol-reference.md#e9; CG L822)."""
    ev, b = obs.event, obs.before
    if (
        not isinstance(ev, Send)
        or not isinstance(ev.request, OffsetCommitRequest)
        or b is None
        or b.group is None
    ):
        return
    if b.group.state != S.COMPLETING_REBALANCE or ev.request.generation_id < 0:
        return
    for r in _responses(obs, ev.ref):
        if isinstance(r, OffsetCommitResponse) and any(e == E.NONE for _, _, e in r.partitions):
            yield "offset commit accepted during CompletingRebalance"


@invariant("classic.replaced_static_fenced", "transition", "classic", when=changed("group"))
def replaced_static_fenced(obs: Obs) -> Iterator[str]:
    """A replaced static member's parked JoinGroup and SyncGroup are answered FENCED_INSTANCE_ID (docs/protocol-reference.md#e10; CG L542)."""
    b, a = obs.before, obs.after
    if b is None or b.group is None or a.group is None or a.failover:
        return
    now_ids = {m.member_id for m in a.group.members}
    new_by_instance = {m.instance_id: m.member_id for m in a.group.members if m.instance_id}
    for m in b.group.members:
        if m.instance_id is None or m.member_id in now_ids:
            continue
        if new_by_instance.get(m.instance_id) in (None, m.member_id):
            continue
        for ref in (m.awaiting_join, m.awaiting_sync):
            if ref is None:
                continue
            errors = [getattr(r, "error", None) for r in _responses(obs, ref)]
            if errors != [E.FENCED_INSTANCE_ID]:
                yield f"replaced member {m.member_id} parked ref {ref} answered {errors}, not FENCED_INSTANCE_ID"


@invariant("classic.join_completes_when_all_joined", "safety", "classic", reads=("after.group",))
def join_completes_when_all_joined(obs: Obs) -> Iterator[str]:
    """Outside the initial rebalance, the join phase completes as soon as every member has rejoined (docs/protocol-reference.md#e11; GMM L4528; KAFKA-7909).

    Vacuously so when the last member left: `hasAllMembersJoined` holds for no members and no pending
    ones, so Kafka completes the phase and the group becomes Empty (GMM removeMemberAndUpdateClassicGroup)."""
    g = obs.after.group
    if g is None or g.state != S.PREPARING_REBALANCE or g.previous_state == S.EMPTY:
        return
    if all(m.awaiting_join is not None for m in g.members) and not g.pending_members:
        yield "every member joined but the join phase did not complete"


@invariant("classic.join_phase_bounded", "liveness", "classic", reads=(*STEP, "now"))
def join_phase_bounded(obs: Obs) -> Iterator[str]:
    """A rebalance in PreparingRebalance has its completion timer armed within the group rebalance timeout (docs/protocol-reference.md#e11; GMM L5250)."""
    g = obs.after.group
    if g is None or g.state != S.PREPARING_REBALANCE or g.previous_state == S.EMPTY:
        return
    deadline = g.timer("join")
    if deadline is None:
        yield "PreparingRebalance without a join timer"
        return
    before = obs.before.group if obs.before is not None else None
    if before is not None and before.state == S.PREPARING_REBALANCE and before.timer("join") == deadline:
        return  # bounded when it was armed; members leaving since then do not move it (GMM L5250)
    # Armed during this observation: by then the group held members of the state before or after it
    # (one Advance can arm the timer and then expire the members it was armed for).
    timeout = max(g.rebalance_timeout_ms(), before.rebalance_timeout_ms() if before is not None else 0)
    if deadline > obs.now + timeout:
        yield f"join timer at {deadline} beyond now + rebalance timeout {obs.now + timeout}"


@invariant(
    "classic.initial_rebalance_bounded",
    "liveness",
    "classic",
    reads=(*STEP, "now", "after.initial_rebalance_delay_ms"),
)
def initial_rebalance_bounded(obs: Obs) -> Iterator[str]:
    """An initial rebalance waits the whole initial delay first and ends within max(initial delay, rebalance timeout) (docs/protocol-reference.md#e12; GMM L5208, L5277)."""
    g = obs.after.group
    if g is None or g.state != S.PREPARING_REBALANCE or g.previous_state != S.EMPTY:
        return
    deadline = g.timer("initial")
    delay = obs.after.initial_rebalance_delay_ms
    bound = obs.now + max(delay, g.rebalance_timeout_ms())
    was_empty = obs.before is None or obs.before.group is None or obs.before.group.state == S.EMPTY
    if deadline is None:
        yield "initial rebalance without its delay timer"
    elif deadline > bound:
        yield f"initial delay timer at {deadline} beyond {bound}"
    elif was_empty and delay > 0 and deadline <= obs.now:
        # armed by this join: Kafka waits the whole delay first (InitialDelayedJoin, GMM L5208)
        yield f"initial delay timer at {deadline}: the {delay} ms initial rebalance delay is not waited"


@invariant("classic.unsynced_members_removed", "liveness", "classic", reads=(*STEP, "now"))
def unsynced_members_removed(obs: Obs) -> Iterator[str]:
    """Members that joined but never sync are removed one rebalance timeout after join completion (docs/protocol-reference.md#e13; GMM L5435)."""
    g = obs.after.group
    if g is None or g.state not in (S.COMPLETING_REBALANCE, S.STABLE) or not g.pending_sync:
        return
    deadline = g.timer("sync")
    if deadline is None:
        yield f"members {sorted(g.pending_sync)} never synced and no sync timer is armed"
        return
    before = obs.before.group if obs.before is not None else None
    if before is not None and before.timer("sync") == deadline:
        return  # armed earlier and checked then: a member's later, shorter timeout leaves it be
    if deadline > obs.now + g.rebalance_timeout_ms():
        yield f"sync timer at {deadline} beyond the rebalance timeout"


@invariant("classic.session_expiry_armed", "liveness", "classic", reads=(*STEP, "now"))
def session_expiry_armed(obs: Obs) -> Iterator[str]:
    """Every member not parked in Join/Sync has an expiry timer within its session timeout (300 s while new); pending ids expire too (docs/protocol-reference.md#e14; GMM L5004)."""
    g = obs.after.group
    if g is None or g.state == S.DEAD:
        return
    for m in g.members:
        deadline = g.timer(f"expire:{m.member_id}")
        parked = m.awaiting_join is not None or m.awaiting_sync is not None
        # while PreparingRebalance the join timer removes dynamic members that do not rejoin (docs/protocol-reference.md#a8)
        covered = g.state == S.PREPARING_REBALANCE and (g.timer("join") or g.timer("initial")) is not None
        if deadline is None:
            if (not parked and not covered) or m.is_new:
                yield f"member {m.member_id} has no expiry timer"
            continue
        session = armed_session(obs, m)
        if session is None:
            continue  # armed earlier, and checked then: a fixed deadline only moves closer
        bound = obs.now + (300_000 if m.is_new else session)
        if deadline > max(bound, obs.now + session):
            yield f"member {m.member_id} expiry at {deadline} beyond {bound}"
    for pid in g.pending_members:
        if g.timer(f"pending:{pid}") is None:
            yield f"pending member {pid} has no expiry timer"


@invariant("classic.single_owner_coordinator", "safety", "classic", reads=("after.group",))
def single_owner_coordinator(obs: Obs) -> Iterator[str]:
    """In the coordinator's stored assignments of a generation no partition belongs to two members."""
    g = obs.after.group
    if g is None or g.protocol_type != "consumer" or g.state not in (S.STABLE, S.COMPLETING_REBALANCE):
        return
    owner: dict[TopicPartition, str] = {}
    for m in g.members:
        parts = _partitions(m.assignment)
        for tp in parts or ():
            if tp in owner:
                yield f"{tp[0]}-{tp[1]} stored for {owner[tp]} and {m.member_id} in generation {g.generation}"
            owner[tp] = m.member_id


@invariant("classic.single_owner_consumer", "safety", "classic", reads=("after.delivered",))
def single_owner_consumer(obs: Obs) -> Iterator[str]:
    """No partition is delivered to two consumers for the same generation (consumer view; KAFKA-7026)."""
    for generation, rows in obs.after.delivered:
        owner: dict[TopicPartition, str] = {}
        for client, parts in rows:
            for tp in sorted(parts):
                if tp in owner:
                    yield f"{tp[0]}-{tp[1]} delivered to {owner[tp]} and {client} in generation {generation}"
                owner[tp] = client


@invariant("classic.leader_list_complete", "transition", "classic", when=JOIN_ANSWERED)
def leader_list_complete(obs: Obs) -> Iterator[str]:
    """The leader's JoinGroup member list holds every member of the new generation (KAFKA-9801; CG L1302).

    Judged while the group still is in that generation's sync or stable phase: an answer a real
    target delivers late can share an observation with a later join that already began the next
    rebalance (same generation number, one more member), which says nothing about the list."""
    g = obs.after.group
    if g is None or g.state not in (S.COMPLETING_REBALANCE, S.STABLE):
        return
    ids = {m.member_id for m in g.members}
    for d in produced(obs):
        r = d.response
        if (
            isinstance(r, JoinGroupResponse)
            and r.error == E.NONE
            and r.members
            and r.generation_id == g.generation
        ):
            listed = {m.member_id for m in r.members}
            if listed != ids:
                yield f"leader list {sorted(listed)} != members {sorted(ids)} of generation {r.generation_id}"


@invariant("classic.lost_generation_rejoins", "liveness", "classic", when=on(Send))
def lost_generation_rejoins(obs: Obs) -> Iterator[str]:
    """A consumer that has lost its generation sends only JoinGroup (or LeaveGroup) until it has a new one: it can always rejoin.

    docs/bug-catalogue.md#row-21, KAFKA-8104 (apache/kafka PR #7460): the heartbeat thread cleared the
    generation while the consumer thread completed a join, which then went on with no generation
    and never rejoined; the fix (AbstractCoordinator `joinGroupIfNeeded`: "Generation data was
    cleared by heartbeat thread. Initiating rejoin.") rejoins instead. The virtual client is
    single-threaded, so the bound is the race's observable outcome: the first request a client
    sends with generation -1 (after `resetStateAndGeneration`, docs/protocol-reference.md#c1) is a JoinGroup.
    """
    event = obs.event
    if not isinstance(event, Send) or event.how != "client" or obs.before is None:
        return
    if isinstance(event.request, (JoinGroupRequest, LeaveGroupRequest)):
        return
    snap = next((c for c in obs.before.clients if c.name == event.client), None)
    if snap is not None and snap.generation == -1:
        yield f"{event.client} lost its generation but sent {type(event.request).__name__} instead of rejoining"


@invariant("classic.static_rejoin_keeps_member_id", "transition", "classic", when=on(Unsubscribe))
def static_rejoin_keeps_member_id(obs: Obs) -> Iterator[str]:
    """A static member that unsubscribes with its LeaveGroup suppressed keeps its member id, so its rejoin is the same member's.

    docs/bug-catalogue.md#row-15, KAFKA-20983 / KAFKA-20985 (apache/kafka PRs #23265, #23266): the classic
    consumer skipped the LeaveGroup of a static member (KIP-345) but `resetGenerationOnLeaveGroup`
    still wiped the member id, so the rejoin was a blind one (unknown member id, same
    group.instance.id) that the coordinator, still holding the member, must treat as a new process
    replacing it: the consumer's own pending join or sync is fenced (FENCED_INSTANCE_ID, fatal for
    Kafka Streams). Judged on the `Unsubscribe` event: the client's member id before and after.
    """
    event = obs.event
    if not isinstance(event, Unsubscribe) or obs.before is None:
        return
    before = next((c for c in obs.before.clients if c.name == event.client), None)
    after = next((c for c in obs.after.clients if c.name == event.client), None)
    if before is None or after is None or before.instance_id is None or not before.member_id:
        return
    if after.member_id != before.member_id:
        shown = after.member_id or "the unknown member id"
        yield (
            f"{event.client} (group.instance.id {before.instance_id}) unsubscribed without a LeaveGroup "
            f"but went from member id {before.member_id} to {shown}: its rejoin would replace its own member"
        )


@invariant("classic.followers_get_no_member_list", "transition", "classic", when=JOIN_ANSWERED)
def followers_get_no_member_list(obs: Obs) -> Iterator[str]:
    """Only the leader receives the member list in JoinGroup ("Phase 1", docs/protocol-reference.md#client-side-assignment; CG L1302)."""
    for d in produced(obs):
        r = d.response
        if isinstance(r, JoinGroupResponse) and r.error == E.NONE and r.members and r.leader != r.member_id:
            if not r.skip_assignment:
                yield f"follower {r.member_id} received the member list"


# The kill matrix's response and durability invariants (docs/mutants.md#added-invariants) register too.
from model.classic import promise_invariants as _promise_invariants  # noqa: E402, F401
from model.classic import response_invariants as _response_invariants  # noqa: E402, F401
from model.classic import sometimes_invariants as _sometimes_invariants  # noqa: E402, F401
from model.classic.timer_invariants import timers_not_early  # noqa: E402, F401
