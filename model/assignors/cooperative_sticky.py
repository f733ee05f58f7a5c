"""CooperativeStickyAssignor, KIP-429 (docs/protocol-reference.md#c5; Kafka `clients/.../consumer/CooperativeStickyAssignor.java`, CSA).

The sticky core of `model.assignors.sticky` with KIP-341-style claim resolution, where a member's
claim is its subscription's OwnedPartitions and its generation the GenerationId field (v2+), else
the int32 generation in its user data (CSA `memberData`, L88-105). Then the KIP-429 rule: a
partition that changes owner is revoked in one rebalance and assigned in the next, so the leader
removes from each member's new assignment every partition the member did not own but another member
still reported as owned (CSA `adjustAssignment` L123, `computePartitionsTransferringOwnership` L130;
the condition Java's leader then asserts in CC `validateCooperativeAssignment` L683-708).

Voided claims (KAFKA-12984, apache/kafka PR #10985): a partition claimed by two or more members at
the top generation is owned by nobody, and when every member subscribes to the same topics Java's
constrained builder records whoever receives it as "transferring ownership" (ASA `allSubscriptionsEqual`
L164-182 puts it in `partitionsWithMultiplePreviousOwners`; `assignNewPartition` L825-836, apache/kafka
1eb7644), so
`adjustAssignment` withholds it for one rebalance even from a claimant: nobody holds it until every
claimant has revoked it (`voided_claims`). With unequal subscriptions Java's general builder only
withholds partitions another member still reports (`computePartitionsTransferringOwnership`), as here.
`adjust=False` is the KAFKA-14639 mutant: the partition moves directly within one rebalance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from model.assignors.base import COOPERATIVE, EAGER, sorted_topics, to_assignments, tp_key
from model.assignors.sticky import Claim, sticky_core
from model.embedded import (
    DEFAULT_GENERATION,
    Assignment,
    Subscription,
    TopicPartition,
    decode_cooperative_user_data,
    encode_cooperative_user_data,
)


def cooperative_claim(sub: Subscription) -> Claim:
    """OwnedPartitions with the GenerationId (v2+) or, failing that, the user-data generation (CSA L88-105)."""
    if sub.generation_id >= 0:
        return sub.owned_partitions, sub.generation_id
    generation = decode_cooperative_user_data(sub.user_data)
    return sub.owned_partitions, DEFAULT_GENERATION if generation is None else generation


def held_back(
    assignment: Mapping[str, Sequence[TopicPartition]], subscriptions: Mapping[str, Subscription]
) -> dict[str, list[TopicPartition]]:
    """Per member, the assigned partitions it did not own that another member still reports as owned."""
    reporters: dict[TopicPartition, set[str]] = {}
    for member, sub in subscriptions.items():
        for tp in sub.owned_partitions:
            reporters.setdefault(tp, set()).add(member)
    out: dict[str, list[TopicPartition]] = {}
    for member, partitions in assignment.items():
        owned = set(subscriptions[member].owned_partitions) if member in subscriptions else set()
        out[member] = [tp for tp in partitions if tp not in owned and reporters.get(tp, set()) - {member}]
    return out


def voided_claims(claims: Mapping[str, Claim]) -> set[TopicPartition]:
    """Partitions claimed by two or more members at the highest generation claimed for them (PR #10985)."""
    top: dict[TopicPartition, tuple[int, int]] = {}
    for partitions, generation in claims.values():
        for tp in dict.fromkeys(partitions):
            best = top.get(tp)
            if best is None or generation > best[0]:
                top[tp] = (generation, 1)
            elif generation == best[0]:
                top[tp] = (generation, best[1] + 1)
    return {tp for tp, (_, n) in top.items() if n > 1}


def equal_subscriptions(subscriptions: Mapping[str, Subscription]) -> bool:
    """Every member subscribes to the same topics (ASA `allSubscriptionsEqual`, the constrained builder)."""
    return len({frozenset(sub.topics) for sub in subscriptions.values()}) <= 1


class CooperativeStickyAssignor:
    """Kafka's `cooperative-sticky` assignor; `adjust=False` gives the KAFKA-14639 direct-transfer mutant."""

    name = "cooperative-sticky"
    rebalance_protocols: tuple[str, ...] = (COOPERATIVE, EAGER)

    def __init__(self, adjust: bool = True) -> None:
        self.adjust = adjust

    def __repr__(self) -> str:
        return f"CooperativeStickyAssignor(adjust={self.adjust})"

    def subscription(
        self, topics: Sequence[str], owned: Sequence[TopicPartition], generation: int
    ) -> Subscription:
        """Owned partitions of still-subscribed topics, the generation, and the generation as user data.

        A cooperative member keeps what it owns across the join but first revokes partitions of
        topics it no longer subscribes to (CC `onJoinPrepare`, COOPERATIVE case).
        """
        subscribed = sorted_topics(topics)
        kept = sorted({tp for tp in owned if tp[0] in subscribed}, key=tp_key)
        return Subscription(
            topics=subscribed,
            user_data=encode_cooperative_user_data(generation),
            owned_partitions=tuple(kept),
            generation_id=generation,
        )

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        """Sticky core with resolved owned partitions, then withhold partitions still owned elsewhere."""
        claims = {m: cooperative_claim(sub) for m, sub in subscriptions.items()}
        result = sticky_core(partitions_per_topic, subscriptions, claims, resolve=True)
        if self.adjust:
            withheld = held_back(result, subscriptions)
            voided = voided_claims(claims) if equal_subscriptions(subscriptions) else set()
            result = {
                m: [tp for tp in ps if tp not in withheld[m] and tp not in voided] for m, ps in result.items()
            }
        return to_assignments(result, subscriptions)
