"""Which KIP-848 target assignments a server assignor may return, and completing one legally.

When the target's answer differs from the model only in a member's partitions, the oracle adopts
the target's choice (`adoption`) if a legal completion exists: each partition to at most one
member, only subscribed topics, every subscribed partition assigned, balanced as the assignor
promises (uniform: sizes differ by at most one on homogeneous subscriptions; range: per topic;
docs/protocol-reference.md#b11). Shared by the consumer and the mixed oracle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from model.consumer.assignors import AssignmentMember, GroupAssignment
from model.consumer.messages import TopicPartition


@dataclass(frozen=True)
class Pin:
    """What the target's answers revealed about a member's target since the assignment was computed:
    it contains ``floor`` (the member's assigned partitions), none of ``exclude`` (partitions it was
    told to revoke), and is exactly ``floor`` when the member is reconciled (``exact``)."""

    floor: frozenset[TopicPartition]
    exclude: frozenset[TopicPartition]
    exact: bool


def legal_assignment(
    assignment: Mapping[str, frozenset[TopicPartition]],
    members: Mapping[str, AssignmentMember],
    topics: Mapping[str, int],
    assignor: str,
    homogeneous: bool,
) -> str | None:
    """None when ``assignment`` is one the assignor may return (docs/protocol-reference.md#b11), else why not."""
    seen: dict[TopicPartition, str] = {}
    for member_id, parts in sorted(assignment.items()):
        spec = members.get(member_id)
        if spec is None:
            return f"partitions targeted to {member_id}, not a member"
        for tp in sorted(parts):
            topic, index = tp
            if topic not in spec.subscribed:
                return f"{topic}-{index} targeted to {member_id}, which does not subscribe to {topic}"
            if topic not in topics or not 0 <= index < topics[topic]:
                return f"{topic}-{index} targeted to {member_id} does not exist"
            if tp in seen:
                return f"{topic}-{index} targeted to both {seen[tp]} and {member_id}"
            seen[tp] = member_id
    for topic, count in sorted(topics.items()):
        subscribers = [m for m, spec in members.items() if topic in spec.subscribed]
        if not subscribers:
            continue
        for index in range(count):
            if (topic, index) not in seen:
                return f"{topic}-{index} is subscribed but targeted to nobody"
        if assignor == "range":
            sizes = [sum(1 for t, _ in assignment.get(m, ()) if t == topic) for m in subscribers]
            if max(sizes) - min(sizes) > 1:
                return f"range: {topic} split {sorted(sizes)} among its subscribers, not balanced"
    if assignor == "uniform" and homogeneous and members:
        sizes = [len(assignment.get(m, frozenset())) for m in members]
        if max(sizes) - min(sizes) > 1:
            return f"uniform: target sizes {sorted(sizes)} differ by more than one on a homogeneous group"
    return None


def _lift_under_quota(
    out: dict[str, set[TopicPartition]],
    free_members: list[str],
    floors: Mapping[str, frozenset[TopicPartition]],
    allowed: Callable[[str, TopicPartition], bool],
    quota_lo: int,
) -> None:
    """A member left under the uniform quota (its excluded partitions were all that was free) takes
    a spare partition of a member over it; at most one move per partition."""
    for _ in range(sum(len(ps) for ps in out.values())):
        low = sorted(m for m in free_members if len(out[m]) < quota_lo)
        if not low:
            return
        m = low[0]
        donors = sorted((d for d in free_members if len(out[d]) > quota_lo), key=lambda d: (-len(out[d]), d))
        for d in donors:
            spare = sorted(tp for tp in out[d] - floors.get(d, frozenset()) if allowed(m, tp))
            if spare:
                out[d].discard(spare[0])
                out[m].add(spare[0])
                break
        else:
            return


def complete_assignment(
    base: Mapping[str, frozenset[TopicPartition]],
    fixed: Mapping[str, frozenset[TopicPartition]],
    members: Mapping[str, AssignmentMember],
    topics: Mapping[str, int],
    assignor: str,
    homogeneous: bool,
    pins: Mapping[str, Pin] | None = None,
) -> GroupAssignment | None:
    """A legal assignment giving ``fixed`` members exactly their sets, ``pins`` members at least their
    floor and none of their excluded partitions, the others what they had in ``base`` as far as
    possible (sticky), filled least-loaded first; None when there is none."""
    pins = dict(pins or {})
    floors = {m: p.floor for m, p in pins.items() if m in members and m not in fixed}
    taken: set[TopicPartition] = set()
    for parts in list(fixed.values()) + list(floors.values()):
        if parts & taken:
            return None
        taken |= parts
    free_members = sorted(m for m in members if m not in fixed)
    out: dict[str, set[TopicPartition]] = {m: set(fixed[m]) for m in fixed if m in members}
    for m in free_members:
        out[m] = set(floors.get(m, frozenset()))

    def allowed(m: str, tp: TopicPartition) -> bool:
        pin = pins.get(m)
        return tp[0] in members[m].subscribed and (pin is None or tp not in pin.exclude)

    for m in free_members:
        keep = {tp for tp in base.get(m, frozenset()) if tp not in taken and allowed(m, tp)}
        out[m] |= keep
        taken |= keep
    every = [
        (t, p)
        for t in sorted(topics)
        for p in range(topics[t])
        if any(t in s.subscribed for s in members.values())
    ]
    if assignor == "uniform" and homogeneous and members:
        quota_lo, extra = divmod(len(every), len(members))
        quota_hi = quota_lo + (1 if extra else 0)
        for m in free_members:  # trim over-quota free members (never below their floor)
            for tp in sorted(out[m] - floors.get(m, frozenset()), reverse=True):
                if len(out[m]) <= quota_hi:
                    break
                out[m].discard(tp)
        for m in sorted(free_members, key=lambda m: len(out[m])):
            if sum(1 for x in members if len(out[x]) > quota_lo) <= extra:
                break
            spare = sorted(out[m] - floors.get(m, frozenset()))
            if len(out[m]) > quota_lo and spare:
                out[m].discard(spare[-1])
    taken = set().union(*out.values()) if out else set()
    for tp in every:
        if tp in taken:
            continue
        eligible = [m for m in free_members if allowed(m, tp)]
        if not eligible:
            return None
        owner = min(eligible, key=lambda m: (len(out[m]), m))
        out[owner].add(tp)
    if assignor == "uniform" and homogeneous and members:
        _lift_under_quota(out, free_members, floors, allowed, len(every) // len(members))
    result = {m: frozenset(ps) for m, ps in out.items()}
    if legal_assignment(result, members, topics, assignor, homogeneous) is not None:
        return None
    return result
