"""KIP-848 invariants over time: timers that fence, targets that get computed, reconciliation that
progresses, assignments clients see, epochs, ghosts and eventual convergence. Registered right after
`model.consumer.invariants`, so the registry's order is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping

from model.consumer import client_invariants as _client_invariants  # noqa: E402, F401
from model.consumer.client import ClientView
from model.consumer.messages import TopicPartition
from model.consumer.observe import (
    _EMPTY,
    CLIENTS,
    GROUPS,
    PAIRS,
    SUBSCRIBES,
    Obs,
    _active_clients,
    _groups,
    _heartbeat_request,
    _pairs,
)
from model.consumer.state import (
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    REBALANCE,
    SESSION,
    ConsumerMember,
    GroupState,
    MemberState,
    ResolvedRegex,
    member_subscribes,
)
from model.consumer.world import AdvanceEvent, HeartbeatEvent, heartbeat_response
from model.errors import ErrorCode
from model.invariant_gates import on
from model.invariant_reads import changed
from model.invariants import invariant


@invariant("consumer.session_timeout_removes", "liveness", "consumer")
def session_timeout_removes(obs: Obs) -> list[str]:
    """Every member has a session timer, no member outlives its session deadline, and a member removed when time advances bumps the group epoch.

    docs/protocol-reference.md#e25 (GMM L3281, L1797; #b8).
    """
    out: list[str] = []
    for gid, gb, ga in _pairs(obs):
        for mid in sorted(ga.members):
            timer = ga.timers.get((SESSION, mid))
            if timer is None:
                out.append(f"{gid}: {mid} has no session timer")
            elif timer.deadline < obs.now:
                out.append(f"{gid}: {mid} still a member at {obs.now}, session deadline {timer.deadline}")
        if isinstance(obs.event, AdvanceEvent) and gb is not None:
            removed = set(gb.members) - set(ga.members)
            if removed and ga.group_epoch <= gb.group_epoch:
                out.append(f"{gid}: {sorted(removed)} expired without a group epoch bump")
    return out


@invariant("consumer.rebalance_timeout_fences", "liveness", "consumer", reads=(*GROUPS, "now"))
def rebalance_timeout_fences(obs: Obs) -> list[str]:
    """A member waiting to revoke has a rebalance timer armed with its epoch, and none stays past that deadline.

    docs/protocol-reference.md#e26 (GMM L2681ff, L3429-3470; #b8).
    """
    out: list[str] = []
    for gid, g in _groups(obs):
        for mid in sorted(g.members):
            m = g.members[mid]
            if m.state != MemberState.UNREVOKED_PARTITIONS or m.member_epoch < 0 or m.classic is not None:
                continue  # docs/protocol-reference.md#b13: classic-protocol members have join and sync timers instead
            timer = g.timers.get((REBALANCE, mid))
            if timer is None or timer.epoch != m.member_epoch:
                out.append(
                    f"{gid}: {mid} revoking at epoch {m.member_epoch} without a rebalance timer for it"
                )
            elif timer.deadline < obs.now:
                out.append(f"{gid}: {mid} still revoking at {obs.now}, rebalance deadline {timer.deadline}")
    return out


@invariant("consumer.static_leave_expires", "liveness", "consumer", reads=(*GROUPS, "now"))
def static_leave_expires(obs: Obs) -> list[str]:
    """A static member parked with epoch -2 keeps a session timer and is gone once it expires.

    docs/protocol-reference.md#e27 (GMM L3018; #b7: timers are not cancelled on a -2 leave).
    """
    out: list[str] = []
    for gid, g in _groups(obs):
        for mid in sorted(g.members):
            if g.members[mid].member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                continue
            timer = g.timers.get((SESSION, mid))
            if timer is None:
                out.append(f"{gid}: parked static member {mid} has no session timer")
            elif timer.deadline < obs.now:
                out.append(
                    f"{gid}: parked static member {mid} still present at {obs.now}, deadline {timer.deadline}"
                )
    return out


@invariant("consumer.target_computed_on_next_heartbeat", "liveness", "consumer", when=on(HeartbeatEvent))
def target_computed_on_next_heartbeat(obs: Obs) -> list[str]:
    """After a successful heartbeat the target is computed for the current group epoch, unless a batching coordinator's assignment interval still runs (then it is not).

    The interval runs for ``group.consumer.assignment.interval.ms`` after the last computation.

    docs/protocol-reference.md#e28 (GMM L1769; #b1: the target is recomputed lazily on the next
    heartbeat of any member). Kafka 4.2+ batching: ``group.consumer.assignment.interval.ms``
    (KAFKA-20291, apache/kafka PR #21720; `ConsumerWorld.assignment_interval_ms`).
    """
    request = _heartbeat_request(obs)
    response = heartbeat_response(obs)
    if (
        request is None
        or response is None
        or response.error_code != ErrorCode.NONE
        or request.member_epoch < 0
    ):
        return []
    g = obs.after.groups.get(request.group_id)
    if g is None:
        return []
    interval = obs.after.assignment_interval_ms
    gb = None if obs.before is None else obs.before.groups.get(request.group_id)
    last = None if gb is None else gb.assignment_timestamp
    batching = interval > 0 and last is not None and obs.now < last + interval
    if g.assignment_epoch != g.group_epoch and not batching:
        return [
            f"{request.group_id}: heartbeat answered with assignment epoch {g.assignment_epoch} < {g.group_epoch}"
            + (
                f" ({obs.now - last} ms after the last target, interval {interval} ms)"
                if interval > 0 and last is not None
                else ""
            )
        ]
    if batching and gb is not None and g.assignment_epoch > gb.assignment_epoch:
        return [
            f"{request.group_id}: target computed {obs.now - last} ms after the last one "  # type: ignore[operator]
            f"(group.consumer.assignment.interval.ms={interval})"
        ]
    return []


@invariant("consumer.reconciliation_progress", "liveness", "consumer", when=on(HeartbeatEvent))
def reconciliation_progress(obs: Obs) -> list[str]:
    """A member's own accepted heartbeat leaves it waiting (UNRELEASED_PARTITIONS) only for a partition another member still holds.

    Bounded liveness of reconciliation (docs/bug-catalogue.md#row-6): the partitions a member waits for
    are those of its target it lacks that another member has assigned or pending revocation
    (CurrentAssignmentBuilder `computeNextAssignment`; docs/protocol-reference.md#b5). KAFKA-19449 (apache/kafka
    PR #20781): Kafka 4.0/4.1 also counted the member's own pending revocations, so a member whose
    target gave back a partition it was revoking waited one more heartbeat for itself; Kafka 4.4.0
    does not (probed by `conformance/power/probe848.py`).
    """
    request = _heartbeat_request(obs)
    response = heartbeat_response(obs)
    if (
        request is None
        or response is None
        or response.error_code != ErrorCode.NONE
        or request.member_epoch < 0
    ):
        return []  # a leave (-1, -2) does not reconcile
    g = obs.after.groups.get(request.group_id)
    member = None if g is None else g.members.get(request.member_id)
    if g is None or member is None or member.state != MemberState.UNRELEASED_PARTITIONS:
        return []
    wanted = g.target.get(member.member_id, _EMPTY) - member.assigned
    held = {tp for o in g.members.values() if o.member_id != member.member_id for tp in o.held}
    if wanted & held:
        return []
    return [
        f"{request.group_id}: {member.member_id} left UNRELEASED_PARTITIONS although no other member holds "
        f"any of {sorted(wanted)}"
    ]


@invariant("consumer.rejoin_always_possible", "liveness", "consumer", when=on(HeartbeatEvent))
def rejoin_always_possible(obs: Obs) -> list[str]:
    """A dynamic member that rejoins with epoch 0 is not fenced for its epoch: a fenced member can rejoin at once.

    KIP-848: a member fenced with FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID abandons its partitions
    and rejoins with epoch 0 (docs/bug-catalogue.md#row-7; row 21 is the classic protocol's form). KAFKA-19233
    (apache/kafka PR #21305): Kafka 4.0 epoch-checked that rejoin against the epoch the coordinator
    still held, so the member was fenced again until its session expired; Kafka 4.4.0 accepts it
    (probed by `conformance/power/probe848.py`). The bound is zero extra heartbeats. docs/protocol-reference.md#b6
    row 12 (GMM `throwIfConsumerGroupMemberEpochIsInvalid`).
    """
    request = _heartbeat_request(obs)
    response = heartbeat_response(obs)
    if (
        request is None
        or response is None
        or request.member_epoch != 0
        or request.instance_id is not None
        or obs.before is None
        or response.error_code not in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID)
    ):
        return []
    gb = obs.before.groups.get(request.group_id)
    member = None if gb is None else gb.members.get(request.member_id)
    if member is None:
        return []
    return [
        f"{request.group_id}: epoch-0 rejoin of {member.member_id} answered {response.error_code.name} "
        f"(the coordinator held it at epoch {member.member_epoch})"
    ]


@invariant("consumer.no_double_client_assignment", "safety", "consumer", reads=("after.clients", *GROUPS))
def no_double_client_assignment(obs: Obs) -> list[str]:
    """No partition is owned at the same time by two clients that are both current members of the group (consumer view).

    Vanlightly TLA+ NoDoubleClientAssignment (kafka-tlaplus groupprotocol/). A client is current when
    the coordinator would accept its next heartbeat: its member exists and the client's epoch is the
    member's epoch, or the previous one while everything the client owns is still assigned to the
    member (docs/protocol-reference.md#b6 row 12; GMM `throwIfConsumerGroupMemberEpochIsInvalid`: previous epoch
    only with owned ⊆ assigned). A zombie whose member was fenced and re-created by a duplicated
    join is not current: its next heartbeat is fenced. Neither is a client whose revocation a
    duplicated epoch-0 join (owned = []) acknowledged in its name: it still owns the revoked
    partitions at the previous epoch, so its next heartbeat is fenced too (reports/pipeline, 2000-run
    consumer swarm).
    """
    out: list[str] = []
    world = obs.after
    by_group: dict[str, list[ClientView]] = {}
    for c in world.clients:
        g = world.groups.get(c.group_id)
        m = None if g is None else g.members.get(c.member_id)
        if m is not None and (
            c.member_epoch == m.member_epoch
            or (c.member_epoch == m.previous_member_epoch and c.owned <= m.assigned)
        ):
            by_group.setdefault(c.group_id, []).append(c)
    for gid, clients in sorted(by_group.items()):
        seen: dict[TopicPartition, str] = {}
        for c in sorted(clients, key=lambda c: c.name):
            for tp in sorted(c.owned):
                if tp in seen:
                    out.append(f"{gid}: clients {seen[tp]} and {c.name} both own {tp}")
                else:
                    seen[tp] = c.name
    return out


@invariant("consumer.legal_target_assignment", "safety", "consumer", reads=(*GROUPS, *SUBSCRIBES))
def legal_target_assignment(obs: Obs) -> list[str]:
    """No partition is in two members' targets; once computed for the current epoch, the target covers every partition some member subscribes to and only such partitions.

    Vanlightly TLA+ LegalTargetAssignment; docs/protocol-reference.md#b11 (TAB), CoG subscription metadata.
    """
    out: list[str] = []
    denied = obs.after.topic_describe_denied
    for gid, g in _groups(obs):
        view = obs.after.regex_view(g)
        seen: dict[TopicPartition, str] = {}
        for mid in sorted(g.target):
            for tp in sorted(g.target[mid]):
                if tp in seen:
                    out.append(f"{gid}: {tp} in the targets of {seen[tp]} and {mid}")
                seen[tp] = mid
        for mid in sorted(set(g.target) - set(g.members)):
            if g.target[mid]:
                out.append(f"{gid}: target for {mid}, not a member")
        if g.group_epoch != g.assignment_epoch:
            continue
        for mid in sorted(g.members):
            m = g.members[mid]
            for topic, p in sorted(g.target_of(mid)):
                if topic not in g.subscription_metadata or p >= g.subscription_metadata[topic]:
                    out.append(f"{gid}: target of {mid} has ({topic}, {p}) outside the subscription metadata")
                elif not member_subscribes(m, topic, denied, view) and not _awaits_regex(m, view):
                    out.append(f"{gid}: target of {mid} has ({topic}, {p}) of an unsubscribed topic")
        for topic, count in sorted(g.subscription_metadata.items()):
            if any(member_subscribes(m, topic, denied, view) for m in g.members.values()):
                missing = [p for p in range(count) if (topic, p) not in seen]
                if missing:
                    out.append(f"{gid}: partitions {missing} of {topic} in no target")
    return out


def _awaits_regex(m: ConsumerMember, view: Mapping[str, ResolvedRegex] | None) -> bool:
    """A member whose new regex is not resolved yet keeps its old target until the resolution
    lands (asynchronous resolution, `model.consumer.regex_rules`)."""
    return view is not None and bool(m.subscribed_topic_regex) and m.subscribed_topic_regex not in view


@invariant("consumer.valid_member_epoch", "safety", "consumer", reads=("after.clients", *GROUPS))
def valid_member_epoch(obs: Obs) -> list[str]:
    """A member (server side) or client (consumer side) at the assignment epoch holds no partition that is in another member's target.

    Vanlightly TLA+ ValidMemberEpoch: reaching the target epoch implies every partition moving away
    has been given up. A client is judged at its member's epoch only: after DeleteGroups epochs start
    over, and a client can hold the new target epoch's number from the group's previous life.
    """
    out: list[str] = []
    world = obs.after
    for gid, g in _groups(obs):
        others: dict[TopicPartition, str] = {tp: mid for mid, ps in g.target.items() for tp in ps}
        for mid in sorted(g.members):
            m = g.members[mid]
            if m.member_epoch != g.assignment_epoch:
                continue
            for tp in sorted(m.held):
                if others.get(tp, mid) != mid:
                    out.append(f"{gid}: {mid} at epoch {m.member_epoch} holds {tp} targeted to {others[tp]}")
        for c in sorted(world.clients, key=lambda c: c.name):
            cm = g.members.get(c.member_id) if c.group_id == gid else None
            if cm is None or c.member_epoch != g.assignment_epoch or cm.member_epoch != c.member_epoch:
                continue  # an epoch its member is not at (after a deletion) is fenced at the next heartbeat
            for tp in sorted(c.owned):
                if others.get(tp, c.member_id) != c.member_id:
                    out.append(
                        f"{gid}: client {c.name} at epoch {c.member_epoch} owns {tp} targeted to {others[tp]}"
                    )
    return out


@invariant(
    "consumer.valid_stable_group_state", "safety", "consumer", reads=(*GROUPS, *SUBSCRIBES, "after.topics")
)
def valid_stable_group_state(obs: Obs) -> list[str]:
    """In a STABLE group every member is STABLE at the group epoch with nothing pending and its assigned set equal to its target (less, since KAFKA-19431, the partitions of topics it no longer subscribes to or that no longer exist).

    Vanlightly TLA+ ValidStableGroupState; docs/protocol-reference.md#b1, #b5; KAFKA-19431 (apache/kafka
    PR #20055: reconciliation filters the target by the member's subscription, which a batched or
    regex-pending target may not follow yet).
    """
    out: list[str] = []
    denied, topics = obs.after.topic_describe_denied, obs.after.topics
    for gid, g in _groups(obs):
        if g.state != GroupState.STABLE:
            continue
        view = obs.after.regex_view(g)
        for mid in sorted(g.members):
            m = g.members[mid]
            target = g.target_of(mid)
            due = frozenset(
                tp for tp in target if tp[0] in topics and member_subscribes(m, tp[0], denied, view)
            )
            if m.state != MemberState.STABLE or m.member_epoch != g.group_epoch:
                out.append(f"{gid}: stable group but {mid} is {m.state.name} at epoch {m.member_epoch}")
            if m.pending_revocation:
                out.append(f"{gid}: stable group but {mid} revokes {sorted(m.pending_revocation)}")
            if not due <= m.assigned <= target:
                out.append(f"{gid}: stable group but {mid} assigned {sorted(m.assigned)} != target")
    return out


@invariant("consumer.valid_partition_epoch", "safety", "consumer", reads=GROUPS)
def valid_partition_epoch(obs: Obs) -> list[str]:
    """The partition-epoch map records exactly the held partitions, each with its holder's member epoch; free partitions have none.

    Vanlightly TLA+ ValidPartitionEpoch; docs/protocol-reference.md#b1 (CoG L1014-1110); KAFKA-16147 (epoch lost).
    """
    out: list[str] = []
    for gid, g in _groups(obs):
        held: set[TopicPartition] = set()
        for mid in sorted(g.members):
            m = g.members[mid]
            for tp in sorted(m.held):
                held.add(tp)
                epoch = g.partition_epochs.get(tp)
                if epoch != m.member_epoch:
                    out.append(
                        f"{gid}: {tp} held by {mid} at epoch {m.member_epoch} has partition epoch {epoch}"
                    )
        for tp in sorted(set(g.partition_epochs) - held):
            out.append(f"{gid}: free partition {tp} has partition epoch {g.partition_epochs[tp]}")
    return out


@invariant("consumer.member_epoch_monotonic", "transition", "consumer", reads=(*PAIRS, *CLIENTS))
def member_epoch_monotonic(obs: Obs) -> list[str]:
    """A member's epoch never decreases, on the coordinator or on its client, except when it leaves (-1/-2) or rejoins (0).

    Vanlightly TLA+ GcSideMemberEpochIsMonotonic and ClientSideMemberEpochIsMonotonic.
    """
    out: list[str] = []
    if obs.before is None:
        return out
    for gid, gb, ga in _pairs(obs):
        if gb is None:
            continue
        for mid, m in ga.members.items():
            prev: ConsumerMember | None = gb.members.get(mid)
            if prev is not None and m.member_epoch < prev.member_epoch and m.member_epoch > 0:
                out.append(f"{gid}: {mid} epoch went back {prev.member_epoch}->{m.member_epoch}")
    before_clients = {c.name: c for c in obs.before.clients}
    for c in obs.after.clients:
        old = before_clients.get(c.name)
        if old is not None and old.member_id == c.member_id and 0 < c.member_epoch < old.member_epoch:
            out.append(f"client {c.name}: epoch went back {old.member_epoch}->{c.member_epoch}")
    return out


@invariant("consumer.no_ghost_member", "safety", "consumer", reads=(*GROUPS, "after.known_member_ids"))
def no_ghost_member(obs: Obs) -> list[str]:
    """Every member of a group has a member id that some consumer process has known: the coordinator holds no ghost member that no client can heartbeat for or leave with.

    docs/protocol-reference.md#b9; KIP-1082 motivation (#kip-1082; docs/bug-catalogue.md#row-8, KAFKA-17116): with v0 the
    coordinator generated the id, so a lost join response left a member (holding partitions until its
    session timeout) that no client knew. Checked only when the world tracks the known ids.
    """
    known = obs.after.known_member_ids
    if known is None:
        return []
    out: list[str] = []
    for gid, g in _groups(obs):
        for mid in sorted(set(g.members) - known):
            held = sorted(g.members[mid].assigned)
            out.append(f"{gid}: member {mid} is known to no client" + (f" and holds {held}" if held else ""))
    return out


@invariant(
    "consumer.eventual_convergence",
    "liveness",
    "consumer",
    reads=("after.clients", "after.convergence_bound_ms", "after.groups", "after.quiet_since", "now"),
)
def eventual_convergence(obs: Obs) -> list[str]:
    """Once perturbations stop for the convergence bound, every active client is a STABLE member at the assignment epoch owning exactly its assigned partitions, and the group has no other members.

    Vanlightly TLA+ EventuallyConverges, bounded on the virtual clock (the world says when the last
    perturbation happened and what the bound is; unknown = not checked).
    """
    world = obs.after
    if world.quiet_since is None or world.convergence_bound_ms is None:
        return []
    if obs.now - world.quiet_since < world.convergence_bound_ms:
        return []
    out: list[str] = []
    group_ids = sorted(set(world.groups) | {c.group_id for c in world.clients if c.active})
    for gid in group_ids:
        g = world.groups.get(gid)
        active = _active_clients(world, gid)
        if g is None:
            if active:
                out.append(f"{gid}: active clients but no group")
            continue
        ids = {c.member_id for c in active}
        if set(g.members) != ids:
            out.append(f"{gid}: members {sorted(g.members)} != active clients {sorted(ids)}")
        if g.members and g.state != GroupState.STABLE:
            out.append(f"{gid}: not stable ({g.state.value}) after the bound")
        for c in sorted(active, key=lambda c: c.name):
            m = g.members.get(c.member_id)
            if m is None:
                continue
            if not (c.member_epoch == m.member_epoch == g.assignment_epoch):
                out.append(
                    f"{gid}: client {c.name} epoch {c.member_epoch}, member {m.member_epoch}, target {g.assignment_epoch}"
                )
            if c.owned != m.assigned:
                out.append(
                    f"{gid}: client {c.name} owns {sorted(c.owned)} but is assigned {sorted(m.assigned)}"
                )
    return out


@invariant("consumer.sometimes_revocation", "sometimes", "consumer", reads=PAIRS, when=changed("groups"))
def sometimes_revocation(obs: Obs) -> list[str]:
    """A member was asked to revoke partitions (a rebalance with revocation happened).

    A "sometimes" check (docs/invariants.md#kinds); docs/protocol-reference.md#b5 (UNREVOKED_PARTITIONS).
    """
    out: list[str] = []
    for gid, gb, ga in _pairs(obs):
        for mid in sorted(ga.members):
            m = ga.members[mid]
            prev = None if gb is None else gb.members.get(mid)
            if m.pending_revocation and (prev is None or m.pending_revocation - prev.pending_revocation):
                out.append(f"{gid}: {mid} revokes {sorted(m.pending_revocation)}")
    return out


@invariant("consumer.sometimes_static_rejoin", "sometimes", "consumer", reads=PAIRS, when=changed("groups"))
def sometimes_static_rejoin(obs: Obs) -> list[str]:
    """A static member that left with epoch -2 came back under its instance id.

    A "sometimes" check (docs/invariants.md#kinds); docs/protocol-reference.md#b7 (static rejoin, GMM L2204-2290).
    """
    out: list[str] = []
    for gid, gb, ga in _pairs(obs):
        if gb is None:
            continue
        for inst, mid in sorted(ga.static_members.items()):
            old_id = gb.static_members.get(inst)
            old = None if old_id is None else gb.members.get(old_id)
            new = ga.members.get(mid)
            if old is not None and new is not None:
                if old.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and new.member_epoch >= 0:
                    out.append(f"{gid}: instance {inst} rejoined as {mid} (was {old_id})")
    return out
