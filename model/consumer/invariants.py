"""KIP-848 invariants: pure predicates over `Observation[ConsumerWorld]`, registered once.

Sources: docs/protocol-reference.md#e15 to #e28 (Apache Kafka 4.0 code paths cited per predicate) and Jack Vanlightly's
TLA+ specification of KIP-848 (github.com/Vanlightly/kafka-tlaplus, groupprotocol/;
docs/bug-catalogue.md#prior-art): NoDoubleClientAssignment, LegalTargetAssignment, ValidMemberEpoch,
ValidStableGroupState, ValidPartitionEpoch, member-epoch monotonicity, EventuallyConverges.
Each predicate returns the list of violation messages (empty = holds); ``sometimes`` entries return
a non-empty list when the interesting thing happened. The first docstring line is the statement.
"""

from __future__ import annotations

from model.consumer.messages import TopicPartition
from model.consumer.observe import (
    _EMPTY,
    GROUPS,
    PAIRS,
    SUBSCRIBES,
    Obs,
    _groups,
    _heartbeat_request,
    _pairs,
    _reported_owned,
)
from model.consumer.state import (
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    derive_group_state,
    member_subscribes,
)
from model.consumer.world import (
    ConsumerWorld,
    HeartbeatEvent,
    OffsetCommitEvent,
    heartbeat_response,
    offset_commit_response,
)
from model.errors import ErrorCode
from model.invariant_gates import on
from model.invariant_reads import changed
from model.invariants import invariant

__all__ = ["ConsumerWorld"]


# ------------------------------------------------------------------------- safety: KIP-848 (docs/protocol-reference.md#e15 to #e24)


@invariant("consumer.single_partition_holder", "safety", "consumer", reads=GROUPS)
def single_partition_holder(obs: Obs) -> list[str]:
    """A partition has at most one holder (assigned or pending revocation) in a group at every point.

    docs/protocol-reference.md#e15 (CoG L1045-1105: adding an already-held partition throws); KAFKA-16147.
    """
    out: list[str] = []
    for gid, g in _groups(obs):
        seen: dict[TopicPartition, str] = {}
        for mid in sorted(g.members):
            m = g.members[mid]
            for tp in sorted(m.assigned & m.pending_revocation):
                out.append(f"{gid}: {mid} has {tp} both assigned and pending revocation")
            for tp in sorted(m.held):
                if tp in seen:
                    out.append(f"{gid}: {tp} held by both {seen[tp]} and {mid}")
                else:
                    seen[tp] = mid
    return out


@invariant("consumer.assign_only_free", "transition", "consumer", reads=PAIRS, when=changed("groups"))
def assign_only_free(obs: Obs) -> list[str]:
    """A member is given a partition only when no other remaining member holds it.

    docs/protocol-reference.md#e16 (CAB L256: pending assignment excludes partitions with a partition epoch).
    """
    out: list[str] = []
    if obs.before is None:
        return out
    for gid, gb, ga in _pairs(obs):
        if gb is None:
            continue
        for mid, m in ga.members.items():
            prev = gb.members.get(mid)
            gained = m.assigned - (prev.held if prev is not None else _EMPTY)
            for tp in sorted(gained):
                for oid, other in gb.members.items():
                    if oid != mid and oid in ga.members and tp in other.held:
                        out.append(f"{gid}: {tp} given to {mid} while {oid} held it")
    return out


@invariant("consumer.epoch_advance_after_revocation", "transition", "consumer", when=changed("groups"))
def epoch_advance_after_revocation(obs: Obs) -> list[str]:
    """A member's epoch advances past partitions it gave up only if its request reported an owned set without them.

    docs/protocol-reference.md#e17 (CAB L146-164, L273): revocation is acknowledged only by a non-null TopicPartitions
    list that no longer contains the revoked partitions.
    """
    out: list[str] = []
    if obs.before is None:
        return out
    request = _heartbeat_request(obs)
    for gid, gb, ga in _pairs(obs):
        if gb is None:
            continue
        for mid, m in ga.members.items():
            prev = gb.members.get(mid)
            if prev is None or m.member_epoch <= prev.member_epoch or prev.member_epoch < 0:
                continue
            released = prev.held - m.held
            if not released:
                continue
            owned = _reported_owned(obs, request, gid, mid)
            if owned is None or owned & released:
                out.append(
                    f"{gid}: {mid} moved epoch {prev.member_epoch}->{m.member_epoch} releasing {sorted(released)} "
                    f"without an acknowledging owned set"
                )
    return out


@invariant("consumer.epoch_order", "transition", "consumer", reads=PAIRS)
def epoch_order(obs: Obs) -> list[str]:
    """Assignment epoch <= group epoch, every member epoch <= assignment epoch, and neither group epoch nor assignment epoch ever decreases.

    docs/protocol-reference.md#e18 (GMM L1726-1769, L2777, L3087; TAB L508); with the monotonic checks, every change of
    the group epoch (a bump) is a strict increase.
    """
    out: list[str] = []
    for gid, gb, ga in _pairs(obs):
        if ga.assignment_epoch > ga.group_epoch:
            out.append(f"{gid}: assignment epoch {ga.assignment_epoch} > group epoch {ga.group_epoch}")
        for mid in sorted(ga.members):
            if ga.members[mid].member_epoch > ga.assignment_epoch:
                out.append(
                    f"{gid}: {mid} epoch {ga.members[mid].member_epoch} > assignment epoch {ga.assignment_epoch}"
                )
        if gb is not None:
            if ga.group_epoch < gb.group_epoch:
                out.append(f"{gid}: group epoch went back {gb.group_epoch}->{ga.group_epoch}")
            if ga.assignment_epoch < gb.assignment_epoch:
                out.append(f"{gid}: assignment epoch went back {gb.assignment_epoch}->{ga.assignment_epoch}")
    return out


@invariant("consumer.epoch_fencing", "transition", "consumer", when=on(HeartbeatEvent))
def epoch_fencing(obs: Obs) -> list[str]:
    """A heartbeat whose epoch is neither the member's epoch nor its previous epoch with owned ⊆ assigned is rejected and changes nothing.

    docs/protocol-reference.md#e19 (GMM L1362, `throwIfConsumerGroupMemberEpochIsInvalid`), #b6 row 12.
    """
    request = _heartbeat_request(obs)
    response = heartbeat_response(obs)
    if request is None or response is None or obs.before is None or request.member_epoch <= 0:
        return []
    gb = obs.before.groups.get(request.group_id)
    member = None if gb is None else gb.members.get(request.member_id)
    if gb is None or member is None:
        return []
    e = request.member_epoch
    owned = request.owned()
    accepted = e == member.member_epoch or (
        e == member.previous_member_epoch
        and owned is not None
        and owned <= member.assigned
        and e < member.member_epoch
    )
    if accepted:
        return []
    out: list[str] = []
    if response.error_code == ErrorCode.NONE:
        out.append(
            f"{request.group_id}: heartbeat of {member.member_id} with epoch {e} accepted "
            f"(member epoch {member.member_epoch}, previous {member.previous_member_epoch})"
        )
    ga = obs.after.groups.get(request.group_id)
    if ga is not None and ga.members.get(member.member_id) != member:
        out.append(f"{request.group_id}: fenced heartbeat of {member.member_id} changed the member")
    return out


@invariant("consumer.static_instance_unique", "transition", "consumer", reads=PAIRS)
def static_instance_unique(obs: Obs) -> list[str]:
    """At most one member per instance id; the static map matches the members; an instance id moves to a new member only after its holder left with epoch -2.

    docs/protocol-reference.md#e20 (GMM L1420, L2204; CoG `staticMembers`), #b7.
    """
    out: list[str] = []
    for gid, gb, ga in _pairs(obs):
        holders: dict[str, list[str]] = {}
        for mid in sorted(ga.members):
            inst = ga.members[mid].instance_id
            if inst is not None:
                holders.setdefault(inst, []).append(mid)
                if ga.static_members.get(inst) != mid:
                    out.append(f"{gid}: static map does not map {inst} to its member {mid}")
        for inst, mids in sorted(holders.items()):
            if len(mids) > 1:
                out.append(f"{gid}: instance {inst} held by {mids}")
        for inst, mid in sorted(ga.static_members.items()):
            if mid not in ga.members or ga.members[mid].instance_id != inst:
                out.append(f"{gid}: static map entry {inst}->{mid} has no such member")
        if gb is None:
            continue
        for inst, mid in sorted(ga.static_members.items()):
            old_id = gb.static_members.get(inst)
            old = None if old_id is None else gb.members.get(old_id)
            new = ga.members.get(mid)
            classic = old is not None and (
                old.classic is not None or (new is not None and new.classic is not None)
            )
            if (
                old is not None
                and old_id != mid
                and old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH
                and not classic  # docs/protocol-reference.md#b13: a classic holder or a classic joiner replaces without -2
            ):
                out.append(
                    f"{gid}: instance {inst} moved {old_id}->{mid} while {old_id} had epoch {old.member_epoch}"
                )
    return out


@invariant(
    "consumer.max_size", "transition", "consumer", reads=(*PAIRS, "after.max_size"), when=changed("groups")
)
def max_size(obs: Obs) -> list[str]:
    """A new member never takes a group beyond group.consumer.max.size.

    docs/protocol-reference.md#e21 (GMM L1319), #b6 row 9.
    """
    out: list[str] = []
    for gid, gb, ga in _pairs(obs):
        if len(ga.members) <= obs.after.max_size:
            continue
        before_ids = set() if gb is None else set(gb.members)
        before_instances = set() if gb is None else set(gb.static_members)
        new = [
            mid
            for mid, m in ga.members.items()
            if mid not in before_ids and m.instance_id not in before_instances
        ]
        if new:
            out.append(f"{gid}: {sorted(new)} joined, {len(ga.members)} members > max {obs.after.max_size}")
    return out


@invariant("consumer.offset_commit_exact_epoch", "transition", "consumer", when=on(OffsetCommitEvent))
def offset_commit_exact_epoch(obs: Obs) -> list[str]:
    """A consumer-group offset commit is accepted iff it comes from a member with exactly its current epoch (or with a negative epoch to a group without members; under KIP-1251 also an older epoch not below the partition's assignment epoch).

    docs/protocol-reference.md#e22 (CoG `validateOffsetCommit` L642-674, L816), #b12; both directions: stale epochs
    are rejected and the exact epoch is not (KAFKA-20066: not stricter than exact). Version-aware:
    the coordinator's rule is `ConsumerWorld.offset_commit_epochs` ("assignment": KIP-1251, Kafka 4.3+).
    """
    event = obs.event
    response = offset_commit_response(obs)
    if not isinstance(event, OffsetCommitEvent) or response is None or obs.before is None:
        return []
    request = event.request
    gb = obs.before.groups.get(request.group_id)
    if gb is None:
        return []
    epoch = request.generation_id_or_member_epoch
    member = gb.members.get(request.member_id)
    exact = (epoch < 0 and not gb.members) or (member is not None and epoch == member.member_epoch)
    older = (
        obs.after.offset_commit_epochs == "assignment"
        and request.version >= 9
        and member is not None
        and member.classic is None
        and 0 <= epoch < member.member_epoch
    )
    group_errors = {ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION}
    out: list[str] = []
    for tp, code in sorted(response.errors().items()):
        since = None if member is None or not older else member.assignment_epoch(tp)
        may_commit = exact or (since is not None and since <= epoch)
        if code == ErrorCode.NONE and not may_commit:
            out.append(f"{request.group_id}: commit of {tp} by {request.member_id} epoch {epoch} accepted")
        if may_commit and request.version >= 9 and code in group_errors:
            out.append(
                f"{request.group_id}: commit of {tp} with the "
                + ("exact epoch" if exact else f"epoch {epoch} (assigned since epoch {since}, KIP-1251)")
                + (f" {epoch}" if exact else "")
                + f" rejected with {code.name}"
            )
    return out


@invariant("consumer.group_state_derived", "safety", "consumer", reads=GROUPS)
def group_state_derived(obs: Obs) -> list[str]:
    """The group state is the function of (members, group epoch, assignment epoch) defined by CoG L887.

    docs/protocol-reference.md#e23, #b1: EMPTY iff no members; ASSIGNING iff group epoch > assignment epoch;
    RECONCILING iff some member is not STABLE at the assignment epoch; else STABLE.
    """
    out: list[str] = []
    for gid, g in _groups(obs):
        derived = derive_group_state(dict(g.members), g.group_epoch, g.assignment_epoch)
        if g.state != derived:
            out.append(f"{gid}: state {g.state.value} but members/epochs give {derived.value}")
    return out


@invariant("consumer.uniform_balanced", "safety", "consumer", reads=(*GROUPS, *SUBSCRIBES))
def uniform_balanced(obs: Obs) -> list[str]:
    """With the uniform assignor and homogeneous subscriptions, a current target assigns every subscribed partition exactly once and sizes differ by at most one.

    docs/protocol-reference.md#e24 (UHom L156-253), #b11. Checked when the target is current (assignment epoch =
    group epoch) and was computed by ``uniform``.
    """
    out: list[str] = []
    denied = obs.after.topic_describe_denied
    for gid, g in _groups(obs):
        if g.last_assignor != "uniform" or g.group_epoch != g.assignment_epoch or not g.members:
            continue
        view = obs.after.regex_view(g)
        subs = {
            frozenset(t for t in g.subscription_metadata if member_subscribes(m, t, denied, view))
            for m in g.members.values()
        }
        if len(subs) != 1:
            continue
        (topics,) = subs
        every = {(t, p) for t in topics for p in range(g.subscription_metadata[t])}
        sizes = {mid: len(g.target_of(mid)) for mid in g.members}
        assigned = [tp for mid in sorted(g.members) for tp in g.target_of(mid)]
        if len(assigned) != len(set(assigned)):
            out.append(f"{gid}: a partition is in two targets")
        if set(assigned) != every:
            missing = sorted(every - set(assigned))
            extra = sorted(set(assigned) - every)
            out.append(f"{gid}: uniform target misses {missing} / has unsubscribed {extra}")
        if sizes and max(sizes.values()) - min(sizes.values()) > 1:
            out.append(f"{gid}: uniform target sizes unbalanced {sizes}")
    return out


# ------------------------------------------------------------------------- liveness: KIP-848 (docs/protocol-reference.md#e25 to #e28)


# ------------------------------------------------------------------------- Vanlightly's TLA+ set


# ------------------------------------------------------------------------- sometimes


# Response-shape, virtual-consumer and over-time invariants register with the rest.
from model.consumer import client_invariants as _client_invariants  # noqa: E402, F401
from model.consumer import progress_invariants as _progress_invariants  # noqa: E402, F401
from model.consumer import promise_invariants as _promise_invariants  # noqa: E402, F401
from model.consumer import subscription_invariants as _subscription_invariants  # noqa: E402, F401
