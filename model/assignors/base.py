"""What a client-side assignor is to the model, plus the name registry (docs/protocol-reference.md#c3 to #c5).

Mirrors Kafka's `ConsumerPartitionAssignor` (`clients/.../consumer/ConsumerPartitionAssignor.java`):
each member sends, per configured assignor, a Subscription built by `subscription`; the leader
elected in JoinGroup decodes every member's metadata and runs `assign` (AbstractCoordinator
`onLeaderElected`, CC `onLeaderElected`). The Java `onAssignment` state (the last assignment and
its generation) is passed in explicitly, so assignors here are stateless and pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from model.embedded import (
    Assignment,
    Subscription,
    TopicPartition,
    java_string_key,
)

EAGER = "EAGER"
COOPERATIVE = "COOPERATIVE"
REBALANCE_PROTOCOLS = (EAGER, COOPERATIVE)

ASSIGNOR_NAMES = ("range", "roundrobin", "sticky", "cooperative-sticky")


class Assignor(Protocol):
    """A client-side assignor (ConsumerPartitionAssignor), pure and deterministic.

    `name` is the JoinGroup protocol name; `rebalance_protocols` what it supports, preferred first
    (`supportedProtocols()`: ("EAGER",) or ("COOPERATIVE", "EAGER")). Both are read-only attributes.
    """

    @property
    def name(self) -> str: ...

    @property
    def rebalance_protocols(self) -> tuple[str, ...]: ...

    def subscription(
        self, topics: Sequence[str], owned: Sequence[TopicPartition], generation: int
    ) -> Subscription:
        """The JoinGroup metadata a member sends for this assignor.

        `owned` is the member's last received assignment and `generation` the generation it came
        with (-1 if none). EAGER members have revoked everything before rejoining (CC
        `onJoinPrepare`), so their `owned_partitions` are empty; the sticky assignor carries the
        claim in its user data instead.
        """
        ...

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        """The leader's assignment: one entry per member of `subscriptions`, possibly empty.

        `subscriptions` is iterated in its own order, which callers set to the leader's JoinGroup
        member list order; only topics present in `partitions_per_topic` (the leader's metadata)
        are assigned. Each member's partitions are returned sorted by (topic, partition).
        """
        ...


def tp_key(tp: TopicPartition) -> tuple[bytes, int]:
    """Java's (topic, partition) order."""
    return java_string_key(tp[0]), tp[1]


def sorted_topics(topics: Iterable[str]) -> tuple[str, ...]:
    """Distinct topics in Java string order (the order the Java client writes them)."""
    return tuple(sorted(set(topics), key=java_string_key))


def check_partition_counts(partitions_per_topic: Mapping[str, int]) -> None:
    for topic, count in partitions_per_topic.items():
        if count < 0:
            raise ValueError(f"topic {topic!r} has a negative partition count {count}")


def eager_subscription(
    topics: Sequence[str], generation: int, user_data: bytes | None = None
) -> Subscription:
    """Subscription of an EAGER member: nothing owned at join time (CC `onJoinPrepare` revoked it all)."""
    return Subscription(topics=sorted_topics(topics), user_data=user_data, generation_id=generation)


def to_assignments(
    result: Mapping[str, Iterable[TopicPartition]], subscriptions: Mapping[str, Subscription]
) -> dict[str, Assignment]:
    """One sorted Assignment per member, in the subscriptions' order."""
    return {m: Assignment(tuple(sorted(result.get(m, ()), key=tp_key))) for m in subscriptions}


def get_assignor(name: str, **options: object) -> Assignor:
    """The assignor registered under `name` (range, roundrobin, sticky, cooperative-sticky).

    Options: sticky `user_data_version` (1 = KIP-341 V1, default; 0 = pre-KIP-341 leader and
    client), cooperative-sticky `adjust` (True, default; False = KAFKA-14639 mutant).
    Raises ValueError naming an unknown assignor, option or option value.
    """
    from model.assignors.cooperative_sticky import CooperativeStickyAssignor
    from model.assignors.range import RangeAssignor
    from model.assignors.roundrobin import RoundRobinAssignor
    from model.assignors.sticky import StickyAssignor

    allowed: dict[str, tuple[str, ...]] = {
        "range": (),
        "roundrobin": (),
        "sticky": ("user_data_version",),
        "cooperative-sticky": ("adjust",),
    }
    if name not in allowed:
        raise ValueError(f"unknown assignor {name!r}; known: {', '.join(ASSIGNOR_NAMES)}")
    unknown = sorted(set(options) - set(allowed[name]))
    if unknown:
        accepted = ", ".join(allowed[name]) or "none"
        raise ValueError(f"assignor {name!r}: unknown option(s) {', '.join(unknown)}; accepted: {accepted}")
    if name == "range":
        return RangeAssignor()
    if name == "roundrobin":
        return RoundRobinAssignor()
    if name == "sticky":
        version = options.get("user_data_version", 1)
        if version not in (0, 1) or isinstance(version, bool) or not isinstance(version, int):
            raise ValueError(f"assignor 'sticky': option user_data_version must be 0 or 1, got {version!r}")
        return StickyAssignor(user_data_version=version)
    adjust = options.get("adjust", True)
    if not isinstance(adjust, bool):
        raise ValueError(f"assignor 'cooperative-sticky': option adjust must be a bool, got {adjust!r}")
    return CooperativeStickyAssignor(adjust=adjust)


class EagerAssignor:
    """Shared part of the eager-only assignors (range, roundrobin): no user data, nothing owned at join."""

    rebalance_protocols: tuple[str, ...] = (EAGER,)

    def subscription(
        self, topics: Sequence[str], owned: Sequence[TopicPartition], generation: int
    ) -> Subscription:
        """Topics and generation only: no user data, nothing owned at join time (EAGER)."""
        return eager_subscription(topics, generation)
