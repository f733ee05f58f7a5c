"""Client-side assignment invariants (docs/protocol-reference.md#e29, #e30 and the assignment legality family).

Each predicate reads one `AssignmentObservation`: what the leader saw (partition counts, every
member's Subscription) and what it handed out (one Assignment per member), with the rebalance
protocol in force and the selected assignor's name. Claims and generations are read the way the
named assignor's leader reads them (`sticky_claim`, `cooperative_claim`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from model.assignors.base import COOPERATIVE, REBALANCE_PROTOCOLS, tp_key
from model.assignors.cooperative_sticky import cooperative_claim
from model.assignors.sticky import Claim, sticky_claim
from model.embedded import Assignment, Subscription, TopicPartition
from model.invariants import invariant

STICKY_ASSIGNORS = ("sticky", "cooperative-sticky")


@dataclass(frozen=True)
class AssignmentObservation:
    """One leader assignment: inputs, output, rebalance protocol and assignor name.

    `protocol` is the rebalance protocol ("EAGER" or "COOPERATIVE"); `assignor` the selected
    JoinGroup protocol name ("range", "sticky", ...), used to read sticky claims; "" = unknown.
    """

    partitions_per_topic: Mapping[str, int]
    subscriptions: Mapping[str, Subscription]
    assignments: Mapping[str, Assignment]
    protocol: str
    assignor: str = ""

    def __post_init__(self) -> None:
        if self.protocol not in REBALANCE_PROTOCOLS:
            raise ValueError(f"protocol must be one of {REBALANCE_PROTOCOLS}, got {self.protocol!r}")


def _exists(obs: AssignmentObservation, tp: TopicPartition) -> bool:
    return tp[0] in obs.partitions_per_topic and 0 <= tp[1] < obs.partitions_per_topic[tp[0]]


def _assigned(obs: AssignmentObservation, member: str) -> tuple[TopicPartition, ...]:
    a = obs.assignments.get(member)
    return a.partitions if a is not None else ()


def _fmt(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


@invariant("client.assignment_single_owner", "safety", "client")
def assignment_single_owner(obs: AssignmentObservation) -> Iterator[str]:
    """No partition appears more than once across the members' assignments.

    The consumer-group guarantee KIP-341 restores (docs/protocol-reference.md#c4 step 4, KAFKA-7026); a partition
    listed twice for one member is reported too.
    """
    holders: dict[TopicPartition, list[str]] = {}
    for member, a in obs.assignments.items():
        for tp in a.partitions:
            holders.setdefault(tp, []).append(member)
    for tp in sorted(holders, key=tp_key):
        if len(holders[tp]) > 1:
            yield f"{_fmt(tp)} assigned to {', '.join(holders[tp])}"


@invariant("client.assignment_only_subscribed", "safety", "client")
def assignment_only_subscribed(obs: AssignmentObservation) -> Iterator[str]:
    """A member is assigned only existing partitions of topics it subscribed to, and only members that joined.

    Built-in assignors assign from the subscribed topics in the leader's metadata
    (AbstractPartitionAssignor `assignPartitions`); a member given anything else rejoins
    (CC `onJoinComplete`, `checkAssignmentMatchedSubscription`).
    """
    for member, a in obs.assignments.items():
        sub = obs.subscriptions.get(member)
        if sub is None:
            if a.partitions:
                yield f"{member} is not a member of this rebalance but was assigned {len(a.partitions)} partition(s)"
            continue
        for tp in a.partitions:
            if not _exists(obs, tp):
                yield f"{member} assigned {_fmt(tp)}, which does not exist"
            elif tp[0] not in sub.topics:
                yield f"{member} assigned {_fmt(tp)} but did not subscribe to {tp[0]}"


@invariant("client.assignment_complete", "safety", "client")
def assignment_complete(obs: AssignmentObservation) -> Iterator[str]:
    """Every existing partition of a subscribed topic is assigned, save under COOPERATIVE one its reporting owner must first revoke.

    Kafka's assignors cover every partition of the subscribed topics (AbstractPartitionAssignor;
    docs/protocol-reference.md#e24 for the broker-side analogue); KIP-429 holds back a partition that another member
    still reports as owned until the next rebalance (CSA `adjustAssignment` L123, docs/protocol-reference.md#c5).
    """
    assigned = {tp for a in obs.assignments.values() for tp in a.partitions}
    reported = {
        tp
        for member, sub in obs.subscriptions.items()
        for tp in sub.owned_partitions
        if tp not in _assigned(obs, member)
    }
    subscribed = {
        t for sub in obs.subscriptions.values() for t in sub.topics if t in obs.partitions_per_topic
    }
    for topic in sorted(subscribed):
        for p in range(obs.partitions_per_topic[topic]):
            tp = (topic, p)
            if tp in assigned:
                continue
            if obs.protocol == COOPERATIVE and tp in reported:
                continue
            yield f"{_fmt(tp)} is subscribed but assigned to no member"


@invariant("client.cooperative_no_direct_transfer", "safety", "client")
def cooperative_no_direct_transfer(obs: AssignmentObservation) -> Iterator[str]:
    """Under COOPERATIVE no partition is added to one member while another member that still owns it loses it.

    docs/protocol-reference.md#e29 and #c5 (KIP-429): revoke in one rebalance, assign in the next; the Java leader
    checks exactly this (CC `validateCooperativeAssignment` L683-708: added ∩ revoked = ∅, with
    "owned" the OwnedPartitions each member reported). Vacuous under EAGER.
    """
    if obs.protocol != COOPERATIVE:
        return
    added: dict[TopicPartition, list[str]] = {}
    revoked: dict[TopicPartition, list[str]] = {}
    for member, sub in obs.subscriptions.items():
        owned = set(sub.owned_partitions)
        assigned = set(_assigned(obs, member))
        for tp in assigned - owned:
            added.setdefault(tp, []).append(member)
        for tp in owned - assigned:
            revoked.setdefault(tp, []).append(member)
    for tp in sorted(set(added) & set(revoked), key=tp_key):
        yield (
            f"{_fmt(tp)} added to {', '.join(added[tp])} while still owned by "
            f"{', '.join(revoked[tp])}, who must revoke it first"
        )


def _claims(obs: AssignmentObservation) -> dict[str, Claim]:
    read = sticky_claim if obs.assignor == "sticky" else cooperative_claim
    out: dict[str, Claim] = {}
    for member, sub in obs.subscriptions.items():
        partitions, generation = read(sub)
        valid = tuple(tp for tp in dict.fromkeys(partitions) if _exists(obs, tp) and tp[0] in sub.topics)
        out[member] = (valid, generation)
    return out


@invariant("client.sticky_stale_claim_loses", "safety", "client")
def sticky_stale_claim_loses(obs: AssignmentObservation) -> Iterator[str]:
    """A stale claim never beats a current one: a lower-generation claimant gets a partition only if the unique top-generation claimant neither keeps it nor takes instead an unclaimed partition the other could have had.

    docs/protocol-reference.md#e30 and #c3, #c4 (KIP-341; ASA `allSubscriptionsEqual` L132-215). Precisely, for the
    sticky assignors ("sticky", "cooperative-sticky"; vacuous for others): take the claims each member
    makes on existing partitions of topics it subscribes to, read as that assignor's leader reads
    them, with their generations. If partition p has exactly one claimant W of the highest
    generation and p is assigned to a claimant L of a lower generation, then W must not also be
    assigned p (the KAFKA-7026 double assignment), and W must not be assigned a partition q that W
    did not claim and L subscribes to: handing q to L and keeping p on W would have been as balanced
    and stickier, so L got p only because its stale claim counted. Equal-generation claims at the
    top are voided (PR #10985) and not constrained here.
    """
    if obs.assignor not in STICKY_ASSIGNORS:
        return
    claims = _claims(obs)
    top: dict[TopicPartition, tuple[int, list[str]]] = {}
    for member, (partitions, generation) in claims.items():
        for tp in partitions:
            best = top.get(tp)
            if best is None or generation > best[0]:
                top[tp] = (generation, [member])
            elif generation == best[0]:
                best[1].append(member)
    for tp in sorted(top, key=tp_key):
        generation, winners = top[tp]
        if len(winners) != 1:
            continue
        winner = winners[0]
        winner_has = _assigned(obs, winner)
        for member, (partitions, gen) in claims.items():
            if member == winner or tp not in partitions or gen >= generation:
                continue
            if tp not in _assigned(obs, member):
                continue
            if tp in winner_has:
                yield (
                    f"{_fmt(tp)} kept by {member} on its stale generation-{gen} claim and by "
                    f"{winner} (generation {generation})"
                )
                continue
            topics = obs.subscriptions[member].topics
            instead = [q for q in winner_has if q not in claims[winner][0] and q[0] in topics]
            if instead:
                yield (
                    f"{_fmt(tp)} went to {member} on its stale generation-{gen} claim while its "
                    f"generation-{generation} owner {winner} took unclaimed {_fmt(min(instead, key=tp_key))}"
                )


@invariant("client.sticky_balanced", "safety", "client")
def sticky_balanced(obs: AssignmentObservation) -> Iterator[str]:
    """A sticky assignor's output is balanced: no member holds two or more partitions more than a member that could take one of them.

    docs/protocol-reference.md#c3 step 3 and #c5; Kafka ASA `isBalanced` (the one-move form of the balance the
    sticky assignors promise); KAFKA-15106 / PR #13920 (a wrong balance predicate left groups
    unbalanced). For "sticky" and "cooperative-sticky" (vacuous for others): for members S and D,
    if S holds a partition of a topic D subscribes to and D does not hold it, then
    load(S) - load(D) <= 1 + k, where k is the number of subscribed partitions assigned to nobody
    (under COOPERATIVE a partition still reported by its owner is held back for one rebalance,
    which may lower its receiver's load by one each; under EAGER k is 0 for a complete assignment).
    """
    if obs.assignor not in STICKY_ASSIGNORS:
        return
    members = [m for m in obs.subscriptions if m in obs.assignments]
    held = {m: set(_assigned(obs, m)) for m in members}
    assigned = set().union(*held.values()) if held else set()
    subscribed = {t for m in members for t in obs.subscriptions[m].topics if t in obs.partitions_per_topic}
    missing = sum(1 for t in subscribed for p in range(obs.partitions_per_topic[t]) if (t, p) not in assigned)
    slack = 1 + missing
    for src in members:
        for dst in members:
            gap = len(held[src]) - len(held[dst])
            if gap <= slack:
                continue
            topics = obs.subscriptions[dst].topics
            movable = sorted((tp for tp in held[src] if tp[0] in topics and tp not in held[dst]), key=tp_key)
            if movable:
                yield (
                    f"{src} holds {len(held[src])} partitions and {dst} {len(held[dst])}; "
                    f"{_fmt(movable[0])} could move ({missing} partition(s) unassigned)"
                )
