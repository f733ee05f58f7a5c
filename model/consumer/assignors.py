"""Server-side assignors of the KIP-848 coordinator: ``uniform`` and ``range`` (docs/protocol-reference.md#b11).

* uniform, homogeneous subscriptions (UA L71, UHom L156-253): quota ⌊P/N⌋, P mod N members get one
  more; each member keeps its current target partitions up to its quota (sticky), the rest and the
  never-assigned partitions go to members below quota. Every partition is assigned exactly once and
  sizes differ by at most one. Which members get the extra partition and which partitions an
  over-quota member keeps follow Kafka's hash-map iteration order, i.e. are arbitrary (docs/protocol-reference.md#f); the model
  fixes them: members with the most retained partitions get the extra slots first (ties by member
  id), kept partitions are the lowest ones, unassigned partitions are handed out topic by topic in
  name order, revoked ones after them.
* uniform, heterogeneous subscriptions (UHet): a partition goes only to members subscribed to its
  topic; current targets are kept where still valid; free partitions go to the least-loaded eligible
  member; then single-partition moves are made while some eligible member has at least two fewer
  partitions than the owner. This is *not* Kafka's exact UHet algorithm (whose results are listed as
  a variance point in docs/protocol-reference.md#f); it satisfies the same contract (valid, sticky, best-effort balance) and
  reaches a state where no single move improves balance.
* range (RA L243, L272): members ordered static first by instance id, then dynamic by member id;
  per topic the subscribers in that order get contiguous ranges, the first P mod n one extra. Not
  sticky.

No rack awareness (none in Kafka 4.0). An assignor signals failure (docs/protocol-reference.md#b6 row 14) by raising
`AssignorError`; the coordinator turns it into UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from model.choice import Chooser
from model.consumer.messages import TopicPartition


class AssignorError(Exception):
    """The assignor could not compute an assignment (Kafka: PartitionAssignorException)."""


@dataclass(frozen=True)
class AssignmentMember:
    """What an assignor knows of a member (Kafka `MemberSubscription` + current target)."""

    member_id: str
    subscribed: frozenset[str]
    """Subscribed topics that exist in the subscription metadata."""
    current: frozenset[TopicPartition] = frozenset()
    """The member's current target assignment (the sticky input)."""
    instance_id: str | None = None
    rack_id: str | None = None


GroupAssignment = dict[str, frozenset[TopicPartition]]
Assignor = Callable[[Mapping[str, AssignmentMember], Mapping[str, int], bool], GroupAssignment]
"""(members, topic -> partition count, homogeneous) -> member id -> target partitions."""


def is_homogeneous(subscriptions: Iterable[frozenset[str]]) -> bool:
    """Subscription type HOMOGENEOUS iff every member subscribes to the same topics (CoG L841)."""
    return len(set(subscriptions)) <= 1


def _partitions(topics: Mapping[str, int], names: Iterable[str]) -> list[TopicPartition]:
    return [(t, p) for t in sorted(set(names)) if t in topics for p in range(topics[t])]


def uniform_homogeneous(
    members: Mapping[str, AssignmentMember], topics: Mapping[str, int], extra_to_retained: bool = True
) -> GroupAssignment:
    """UHom: balanced, sticky up to quota (see module docstring for the fixed arbitrary choices).

    ``extra_to_retained=False`` is the rule before KAFKA-18688 (apache/kafka PR #19677): the P mod N
    extra slots go to the first members in iteration order (here: member id order) whatever they
    retain, so a balanced assignment can be reshuffled."""
    if not members:
        return {}
    subscribed = next(iter(members.values())).subscribed
    every = _partitions(topics, subscribed)
    if not every:
        return {m: frozenset() for m in members}
    valid = set(every)
    minimum, extra = divmod(len(every), len(members))

    # A partition counts as previously assigned to the first member (in id order) claiming it.
    retained: dict[str, list[TopicPartition]] = {}
    claimed: set[TopicPartition] = set()
    for member_id in sorted(members):
        mine = sorted(tp for tp in members[member_id].current if tp in valid and tp not in claimed)
        claimed.update(mine)
        retained[member_id] = mine

    unassigned = [tp for tp in every if tp not in claimed]
    result: dict[str, list[TopicPartition]] = {}
    unfilled: list[tuple[str, int]] = []
    order = sorted(members, key=lambda m: (-len(retained[m]), m)) if extra_to_retained else sorted(members)
    for member_id in order:
        quota = minimum
        if extra > 0:
            quota += 1
            extra -= 1
        kept = retained[member_id][:quota]
        unassigned.extend(retained[member_id][quota:])
        result[member_id] = kept
        if quota > len(kept):
            unfilled.append((member_id, quota - len(kept)))

    cursor = 0
    for member_id, room in unfilled:
        take = unassigned[cursor : cursor + room]
        cursor += len(take)
        result[member_id].extend(take)
    if cursor < len(unassigned):
        raise AssignorError("partitions were left unassigned")
    return {m: frozenset(ps) for m, ps in result.items()}


def uniform_heterogeneous(
    members: Mapping[str, AssignmentMember], topics: Mapping[str, int]
) -> GroupAssignment:
    """UHet contract: valid, sticky where still valid, then balanced by single moves (see module doc)."""
    subscribers: dict[str, list[str]] = {
        t: sorted(m for m, spec in members.items() if t in spec.subscribed) for t in sorted(topics)
    }
    result: dict[str, set[TopicPartition]] = {m: set() for m in members}
    taken: set[TopicPartition] = set()
    for member_id in sorted(members):
        spec = members[member_id]
        for tp in sorted(spec.current):
            topic, index = tp
            if topic in spec.subscribed and topic in topics and index < topics[topic] and tp not in taken:
                result[member_id].add(tp)
                taken.add(tp)

    free = [
        (t, p)
        for t in sorted(subscribers, key=lambda t: (len(subscribers[t]), t))
        if subscribers[t]
        for p in range(topics[t])
        if (t, p) not in taken
    ]
    for tp in free:
        owner = min(subscribers[tp[0]], key=lambda m: (len(result[m]), m))
        result[owner].add(tp)

    while True:
        move = _improving_move(result, subscribers)
        if move is None:
            break
        source, tp, destination = move
        result[source].discard(tp)
        result[destination].add(tp)
    return {m: frozenset(ps) for m, ps in result.items()}


def _improving_move(
    result: Mapping[str, set[TopicPartition]], subscribers: Mapping[str, list[str]]
) -> tuple[str, TopicPartition, str] | None:
    """A move of one partition to an eligible member with at least two fewer partitions, if any."""
    for source in sorted(result, key=lambda m: (-len(result[m]), m)):
        for tp in sorted(result[source], reverse=True):
            candidates = [m for m in subscribers.get(tp[0], ()) if len(result[m]) + 1 < len(result[source])]
            if candidates:
                return source, tp, min(candidates, key=lambda m: (len(result[m]), m))
    return None


def uniform(
    members: Mapping[str, AssignmentMember], topics: Mapping[str, int], homogeneous: bool
) -> GroupAssignment:
    """The ``uniform`` assignor (UA L71): homogeneous or heterogeneous builder."""
    if not members:
        return {}
    if homogeneous:
        return uniform_homogeneous(members, topics)
    return uniform_heterogeneous(members, topics)


def range_member_order(members: Iterable[AssignmentMember]) -> list[str]:
    """RA L243: static members by instance id first, then dynamic members by member id."""
    static = sorted(
        (m for m in members if m.instance_id is not None), key=lambda m: (m.instance_id or "", m.member_id)
    )
    dynamic = sorted((m for m in members if m.instance_id is None), key=lambda m: m.member_id)
    return [m.member_id for m in static + dynamic]


def range_assignor(
    members: Mapping[str, AssignmentMember], topics: Mapping[str, int], homogeneous: bool
) -> GroupAssignment:
    """The ``range`` assignor (RA L272): contiguous per-topic ranges; the first P mod n get one more."""
    order = range_member_order(members.values())
    result: dict[str, set[TopicPartition]] = {m: set() for m in members}
    for topic in sorted(topics):
        subs = [m for m in order if topic in members[m].subscribed]
        if not subs:
            continue
        quota, extra = divmod(topics[topic], len(subs))
        start = 0
        for i, member_id in enumerate(subs):
            size = quota + (1 if i < extra else 0)
            result[member_id].update((topic, p) for p in range(start, start + size))
            start += size
    return {m: frozenset(ps) for m, ps in result.items()}


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform, "range": range_assignor}


def preferred_assignor(named: Iterable[str | None], configured: Sequence[str], chooser: Chooser) -> str:
    """CoG `computePreferredServerAssignor` L597: the assignor named by most members; none named ->
    the first configured. Ties (Kafka: hash-map order) go to the Chooser, options in configured order."""
    counts = Counter(a for a in named if a is not None)
    if not counts:
        return configured[0]
    best = max(counts.values())
    tied = [a for a in configured if counts.get(a) == best]
    tied += sorted(a for a, n in counts.items() if n == best and a not in configured)
    if len(tied) == 1:
        return tied[0]
    return chooser.pick("consumer.preferred_assignor", tied)
