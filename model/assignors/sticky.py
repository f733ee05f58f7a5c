"""StickyAssignor with KIP-341 user data V1, and the pre-KIP-341 V0 variant (docs/protocol-reference.md#c2 to #c4, #kip-341).

Kafka: `clients/.../consumer/StickyAssignor.java` (SA) over `consumer/internals/AbstractStickyAssignor.java`
(ASA). Each member's user data claims its last assignment; V1 adds the generation it was received
in, so the leader can drop stale claims (KAFKA-7026). Version 0 models the pre-KIP-341 leader that
takes every claim as current ownership. The balancing core (`sticky_core`, shared with
cooperative-sticky) is the model's own algorithm: legal, balanced and sticky, not Java's exact output.
Ties are broken by the order of the subscriptions mapping (the leader's JoinGroup member list).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

from model.assignors.base import (
    EAGER,
    check_partition_counts,
    eager_subscription,
    to_assignments,
    tp_key,
)
from model.embedded import (
    DEFAULT_GENERATION,
    Assignment,
    EmbeddedDecodeError,
    Subscription,
    TopicPartition,
    decode_sticky_user_data,
    decode_sticky_user_data_v0,
    encode_sticky_user_data,
    java_string_key,
)

Claim = tuple[tuple[TopicPartition, ...], int]
"""A member's claimed partitions and the generation of that claim."""


def sticky_claim(sub: Subscription) -> Claim:
    """The claim a KIP-341 (V1) leader reads from a sticky member's subscription.

    Partitions come from the user data (SA `memberData`: eager members own nothing at join time);
    the generation from the subscription GenerationId when set, else from V1 user data, else -1.
    Java's StickyAssignor reads the generation from the user data only; a Java client writes the
    same generation in both, or -1 in the field after a generation reset, where this falls back too.
    """
    partitions, generation = decode_sticky_user_data(sub.user_data)
    if sub.generation_id >= 0:
        return partitions, sub.generation_id
    return partitions, DEFAULT_GENERATION if generation is None else generation


def sticky_claim_v0(sub: Subscription) -> Claim:
    """The claim a pre-KIP-341 leader reads: the V0 partition list only, no generation.

    Trailing V1 bytes are ignored (KIP-341 "forward compatibility"); user data that does not parse
    claims nothing.
    """
    if not sub.user_data:
        return (), DEFAULT_GENERATION
    try:
        return decode_sticky_user_data_v0(sub.user_data), DEFAULT_GENERATION
    except EmbeddedDecodeError:
        return (), DEFAULT_GENERATION


def resolve_claims(claims: Mapping[str, Claim]) -> dict[TopicPartition, str]:
    """Owner of each claimed partition: the unique claimant of the highest generation (docs/protocol-reference.md#c3).

    Partitions whose highest generation is claimed by two or more members are left out (voided).
    `claims` must already be restricted to valid (subscribed, existing) partitions.
    """
    best: dict[TopicPartition, tuple[int, list[str]]] = {}
    for member, (partitions, generation) in claims.items():
        for tp in dict.fromkeys(partitions):
            top = best.get(tp)
            if top is None or generation > top[0]:
                best[tp] = (generation, [member])
            elif generation == top[0]:
                top[1].append(member)
    return {tp: members[0] for tp, (_, members) in best.items() if len(members) == 1}


class _Core:
    """Mutable working state of one sticky assignment run."""

    def __init__(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        claims: Mapping[str, Claim],
        resolve: bool,
    ) -> None:
        check_partition_counts(partitions_per_topic)
        self.order = list(subscriptions)
        self.index = {m: i for i, m in enumerate(self.order)}
        self.topics = {
            m: frozenset(t for t in sub.topics if t in partitions_per_topic)
            for m, sub in subscriptions.items()
        }
        self.counts = partitions_per_topic
        valid: dict[str, Claim] = {}
        for m in self.order:
            partitions, generation = claims.get(m, ((), DEFAULT_GENERATION))
            kept = [tp for tp in dict.fromkeys(partitions) if self.valid(m, tp)]
            valid[m] = (tuple(kept), generation)
        self.owner: dict[TopicPartition, str] = resolve_claims(valid) if resolve else {}
        self.resolve = resolve
        if resolve:
            self.current = {m: [tp for tp in valid[m][0] if self.owner.get(tp) == m] for m in self.order}
        else:
            self.current = {m: list(valid[m][0]) for m in self.order}

    def eligible(self, member: str, tp: TopicPartition) -> bool:
        """`member` subscribes to the topic of `tp` (and the topic exists)."""
        return tp[0] in self.topics[member]

    def valid(self, member: str, tp: TopicPartition) -> bool:
        """`tp` exists and `member` subscribes to its topic: only such claims count."""
        return self.eligible(member, tp) and 0 <= tp[1] < self.counts[tp[0]]

    def load(self, member: str) -> int:
        return len(self.current[member])

    def move(self, tp: TopicPartition, src: str, dst: str) -> None:
        self.current[src].remove(tp)
        self.current[dst].append(tp)

    # -- step 2: every partition gets an owner
    def fill(self) -> None:
        held = {tp for m in self.order for tp in self.current[m]}
        subscribed = {t for m in self.order for t in self.topics[m]}
        every = sorted(((t, p) for t in subscribed for p in range(self.counts[t])), key=tp_key)
        for tp in every:
            if tp in held:
                continue
            candidates = [m for m in self.order if tp[0] in self.topics[m]]
            target = min(candidates, key=lambda m: (self.load(m), self.index[m]))
            self.current[target].append(tp)

    # -- step 3: balance by augmenting paths
    def _edge_choice(self, src: str, dst: str) -> TopicPartition | None:
        """The partition `src` would hand to `dst`.

        Preference: one `dst` owns, then one `src` does not own, then the highest (partition, topic),
        so an owner keeps its lowest-numbered partitions as the Java constrained builder does
        (ASA `assignOwnedPartitions` keeps the first ones in (partition, topic) order).
        """
        options = [tp for tp in self.current[src] if self.eligible(dst, tp) and tp not in self.current[dst]]
        if not options:
            return None
        rank = min((self.owner.get(tp) != dst, self.owner.get(tp) == src) for tp in options)
        best = [tp for tp in options if (self.owner.get(tp) != dst, self.owner.get(tp) == src) == rank]
        return max(best, key=lambda tp: (tp[1], java_string_key(tp[0])))

    def _can_give(self, src: str, dst: str, src_topics: set[str]) -> bool:
        if self.resolve:  # single ownership: no partition of src is already on dst
            return not src_topics.isdisjoint(self.topics[dst])
        return any(self.eligible(dst, tp) and tp not in self.current[dst] for tp in self.current[src])

    def _find_path(self) -> list[tuple[str, str, TopicPartition]] | None:
        """A shortest chain of moves from a most-loaded member to one with at least 2 fewer partitions."""
        lowest = min(self.load(m) for m in self.order)
        for source in sorted(self.order, key=lambda m: (-self.load(m), self.index[m])):
            limit = self.load(source) - 2
            if limit < lowest:
                return None
            parent: dict[str, str] = {}
            seen = {source}
            queue = deque([source])
            target: str | None = None
            while queue and target is None:
                u = queue.popleft()
                u_topics = {tp[0] for tp in self.current[u]}
                for v in self.order:
                    if v in seen or not self._can_give(u, v, u_topics):
                        continue
                    parent[v] = u
                    seen.add(v)
                    if self.load(v) <= limit:
                        target = v
                        break
                    queue.append(v)
            if target is None:
                continue
            chain = [target]
            while chain[-1] != source:
                chain.append(parent[chain[-1]])
            chain.reverse()
            path: list[tuple[str, str, TopicPartition]] = []
            for src, dst in zip(chain, chain[1:], strict=False):
                tp = self._edge_choice(src, dst)
                assert tp is not None
                path.append((src, dst, tp))
            return path
        return None

    def balance(self) -> None:
        while (path := self._find_path()) is not None:
            for src, dst, tp in path:
                self.move(tp, src, dst)

    # -- step 4: give owners back what balance did not need to take
    def improve(self) -> bool:
        """One pass of sticky repairs that keep every load multiset; True if anything changed."""
        changed = False
        for x in self.order:
            for tp in sorted(self.current[x], key=tp_key):
                owner = self.owner.get(tp)
                if owner is None or owner == x or tp not in self.current[x]:
                    continue
                if self.load(x) > self.load(owner):
                    self.move(tp, x, owner)
                    changed = True
                    continue
                swap = [
                    q
                    for q in self.current[owner]
                    if self.owner.get(q) != owner and self.eligible(x, q) and q not in self.current[x]
                ]
                if swap:
                    q = min(swap, key=tp_key)
                    self.move(tp, x, owner)
                    self.move(q, owner, x)
                    changed = True
        return changed

    def run(self) -> dict[str, list[TopicPartition]]:
        self.fill()
        while True:
            self.balance()
            if not self.resolve or not self.improve():
                break
        return {m: sorted(self.current[m], key=tp_key) for m in self.order}


def sticky_core(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    claims: Mapping[str, Claim],
    *,
    resolve: bool = True,
) -> dict[str, list[TopicPartition]]:
    """Balanced, sticky assignment from per-member claims (valid = existing and subscribed).

    1. Ownership. `resolve=True` applies `resolve_claims` (ASA `allSubscriptionsEqual` L132-215):
       the unique highest-generation claimant owns a partition; a tie at the top voids it (PR #10985).
       Java compares the newcomer's member-data generation with the earlier claimant's subscription
       GenerationId (docs/protocol-reference.md#c3 quirk) and, with three or more claimants, can void a partition whose unique
       top claimant came last; the model's rule is order-independent. `resolve=False` keeps every
       claim, duplicates included (pre-KIP-341: a partition can stay on two members, docs/protocol-reference.md#c4).
    2. Completeness: each unowned partition goes to the least-loaded eligible member.
    3. Balance: while a chain of single-partition moves between eligible members leads from a member
       with n partitions to one with n-2 or fewer, apply it (ASA `isBalanced` is the one-move form).
    4. Stickiness: a partition on a non-owner goes back to its owner when that keeps the loads, and
       an owner that gave up a partition takes no unowned partition the receiver could have taken
       instead (a swap), so a stale claimant never gets a current owner's partition for nothing (docs/protocol-reference.md#e30).
    """
    if not subscriptions:
        return {}
    return _Core(partitions_per_topic, subscriptions, claims, resolve).run()


class StickyAssignor:
    """Kafka's `sticky` assignor (EAGER); `user_data_version` 1 = KIP-341, 0 = pre-KIP-341."""

    name = "sticky"
    rebalance_protocols: tuple[str, ...] = (EAGER,)

    def __init__(self, user_data_version: int = 1) -> None:
        if user_data_version not in (0, 1):
            raise ValueError(f"sticky user_data_version must be 0 or 1, got {user_data_version!r}")
        self.user_data_version = user_data_version

    def __repr__(self) -> str:
        return f"StickyAssignor(user_data_version={self.user_data_version})"

    def subscription(
        self, topics: Sequence[str], owned: Sequence[TopicPartition], generation: int
    ) -> Subscription:
        """Claim `owned` in user data; none before a first assignment (SA `subscriptionUserData`).

        V1 writes the generation into the user data and the GenerationId field; V0 models a
        pre-KIP-341 client, which had neither.
        """
        if generation < 0 and not owned:
            return eager_subscription(topics, generation)
        if self.user_data_version == 0:
            return eager_subscription(topics, DEFAULT_GENERATION, encode_sticky_user_data(owned, None))
        return eager_subscription(topics, generation, encode_sticky_user_data(owned, generation))

    def claim(self, sub: Subscription) -> Claim:
        """How this variant's leader reads one member's claim."""
        return sticky_claim(sub) if self.user_data_version == 1 else sticky_claim_v0(sub)

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        """Resolve claims (V1) or take them all (V0), then fill, balance and keep what is owned."""
        claims = {m: self.claim(sub) for m, sub in subscriptions.items()}
        result = sticky_core(partitions_per_topic, subscriptions, claims, resolve=self.user_data_version == 1)
        return to_assignments(result, subscriptions)
