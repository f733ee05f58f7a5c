"""Classic-protocol client mutants of the second (held-out) bug catalogue, docs/bug-catalogue-heldout.md.

Each class overrides one rule of the virtual classic consumer, `model.classic.client.ClassicClient`:
how it handles an error of the group APIs, or how its leader assigns partitions (the assignor the
leader runs). Each reproduces one real bug of a classic-protocol client (the Java consumer,
librdkafka, franz-go, sarama); ``specs/bugs-heldout.yaml`` names the source of each.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from conformance.mutants.base import Mutant
from model.assignors.base import check_partition_counts, sorted_topics, to_assignments
from model.assignors.cooperative_sticky import (
    CooperativeStickyAssignor,
    cooperative_claim,
    held_back,
)
from model.assignors.range import RangeAssignor
from model.assignors.roundrobin import RoundRobinAssignor
from model.assignors.sticky import Claim, sticky_core
from model.classic.client import RETRIABLE, ClassicClient, Phase
from model.classic.messages import JoinGroupResponse, OffsetCommitResponse, Response
from model.embedded import Assignment, Subscription, TopicPartition, java_string_key
from model.errors import ErrorCode

E = ErrorCode

# ---------------------------------------------------------------------------------- error handling


class RetriableRebalanceErrorResets(ClassicClient):
    """KAFKA-13214: a retriable failure of the JoinGroup or SyncGroup (a disconnect or request
    timeout, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) resets the
    member id and the generation, so the consumer rejoins as a new member (a cooperative one loses
    its partitions) while the coordinator waits for the old member id until its session expires."""

    def _on_error(self, error: ErrorCode) -> None:
        if error in RETRIABLE and self.phase in (Phase.JOINING, Phase.SYNCING):
            self.last_error = error
            self._reset(member_id=True)
            return
        super()._on_error(error)

    def on_timeout(self) -> None:
        if self.inflight in ("join", "sync"):
            self.inflight = None
            self._reset(member_id=True)
            return
        super().on_timeout()


class CommitMemberErrorIgnored(ClassicClient):
    """franz-go #1326: an OffsetCommit answered UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION is only
    reported; the consumer stays in the group with its partitions and rejoins only once a later
    heartbeat gets the same error."""

    def on_response(self, response: Response, topics: dict[str, int]) -> None:
        if self.inflight == "commit" and isinstance(response, OffsetCommitResponse):
            errors = {e for _, _, e in response.partitions} & {E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION}
            if errors:
                self.inflight = None
                self.last_error = min(errors)
                return
        super().on_response(response, topics)


# ---------------------------------------------------------------------------------- assignors


class OldestClaimantSticky(ClassicClient):
    """librdkafka PR #4252 (fix in PR #4274): the leader's cooperative-sticky assignor (librdkafka
    has no eager sticky one) takes, among several members claiming one partition, the claimant of
    the lowest generation as its current owner (and of two claims at one generation keeps the first),
    so a member that missed rebalances gets its stale partitions back from their current owner."""

    def _assignor(self, name: str):  # type: ignore[no-untyped-def]
        assignor = super()._assignor(name)
        if name == "cooperative-sticky":
            return _OldestFirstCooperative(assignor.adjust)
        return assignor


def oldest_claim_wins(
    claims: Mapping[str, Claim],
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
) -> dict[str, Claim]:
    """The valid claims (an existing partition of a subscribed topic), each partition left only in
    the claim of its first lowest-generation claimant."""
    valid = {
        m: tuple(
            tp
            for tp in dict.fromkeys(ps)
            if tp[0] in subscriptions[m].topics and 0 <= tp[1] < partitions_per_topic.get(tp[0], 0)
        )
        for m, (ps, _) in claims.items()
    }
    winner: dict[TopicPartition, tuple[int, str]] = {}
    for member, (_, generation) in claims.items():
        for tp in valid[member]:
            if tp not in winner or generation < winner[tp][0]:
                winner[tp] = (generation, member)
    return {m: (tuple(tp for tp in valid[m] if winner[tp][1] == m), g) for m, (_, g) in claims.items()}


class _OldestFirstCooperative(CooperativeStickyAssignor):
    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        claims = {m: cooperative_claim(sub) for m, sub in subscriptions.items()}
        claims = oldest_claim_wins(claims, partitions_per_topic, subscriptions)
        result = sticky_core(partitions_per_topic, subscriptions, claims)
        if self.adjust:
            withheld = held_back(result, subscriptions)
            result = {m: [tp for tp in ps if tp not in withheld[m]] for m, ps in result.items()}
        return to_assignments(result, subscriptions)


class HashOrderRange(ClassicClient):
    """sarama #2243 (PR #2245): the leader's range assignor orders a topic's members by a hash of
    topic and member id, not by member id, and cuts the partitions at rounded multiples of
    partitions/members; same-numbered partitions of co-partitioned topics go to different members
    and the extra partitions to members in the middle of that order."""

    def _assignor(self, name: str):  # type: ignore[no-untyped-def]
        return _HashOrderRange() if name == "range" else super()._assignor(name)


def member_hash(topic: str, member: str) -> int:
    """sarama's 32-bit FNV-1a-style hash of the topic and member id, one character at a time."""
    h = 2166136261
    for text in (topic, member):
        for ch in text:
            h = ((h ^ ord(ch)) * 16777619) & 0xFFFFFFFF
    return h


class _HashOrderRange(RangeAssignor):
    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        check_partition_counts(partitions_per_topic)
        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        wanted = sorted_topics(
            t for s in subscriptions.values() for t in s.topics if t in partitions_per_topic
        )
        for topic in wanted:
            members = [m for m, s in subscriptions.items() if topic in s.topics]
            members.sort(key=lambda m: (member_hash(topic, m), java_string_key(m)))
            step = partitions_per_topic[topic] / len(members)
            for i, member in enumerate(members):
                low, high = math.floor(i * step + 0.5), math.floor((i + 1) * step + 0.5)
                result[member].extend((topic, p) for p in range(low, high))
        return to_assignments(result, subscriptions)


class TopicCountRoundRobin(ClassicClient):
    """librdkafka #3159 (PR #3161): the leader's roundrobin assignor steps its member cursor modulo
    the number of members subscribed to the current topic while indexing all members sorted by id;
    with unequal subscriptions the members at the end of that order never get the topic (uneven
    assignment), and when none of the first ones subscribes to it the leader spins for ever: it
    never sends its SyncGroup nor another request."""

    def _assignor(self, name: str):  # type: ignore[no-untyped-def]
        return _TopicCountRoundRobin() if name == "roundrobin" else super()._assignor(name)

    def _run_assignor(self, resp: JoinGroupResponse, topics: dict[str, int]) -> None:
        try:
            super()._run_assignor(resp, topics)
        except _AssignorSpins:
            self.inflight = "assignor"  # the thread that would send anything never returns

    def unsubscribe(self) -> bool:
        return False if self.inflight == "assignor" else super().unsubscribe()


class _AssignorSpins(Exception):
    """The pre-fix cursor loop found no subscriber among the members it cycles through."""


class _TopicCountRoundRobin(RoundRobinAssignor):
    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        check_partition_counts(partitions_per_topic)
        result: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        members = sorted(subscriptions, key=java_string_key)
        wanted = sorted_topics(
            t for s in subscriptions.values() for t in s.topics if t in partitions_per_topic
        )
        cursor = -1
        for topic in wanted:
            k = sum(1 for m in members if topic in subscriptions[m].topics)
            if partitions_per_topic[topic] and not any(topic in subscriptions[m].topics for m in members[:k]):
                raise _AssignorSpins(topic)
            for partition in range(partitions_per_topic[topic]):
                cursor = (cursor + 1) % k
                while topic not in subscriptions[members[cursor]].topics:
                    cursor = (cursor + 1) % k
                result[members[cursor]].append((topic, partition))
        return to_assignments(result, subscriptions)


def _m(name: str, fault: str, source: str, **parts: Any) -> Mutant:
    return Mutant(name, "classic", "heldout", fault, source, (), **parts)


HELDOUT2_CLIENT_MUTANTS: tuple[Mutant, ...] = (
    _m(
        "kafka-13214",
        "a retriable JoinGroup/SyncGroup failure resets the member id and generation",
        "KAFKA-13214 / apache/kafka PR #11231",
        client=RetriableRebalanceErrorResets,
    ),
    _m(
        "franz-go-1326",
        "OffsetCommit UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION does not make the consumer rejoin",
        "twmb/franz-go PR #1326 / PR #1340",
        client=CommitMemberErrorIgnored,
    ),
    _m(
        "librdkafka-4252",
        "the cooperative-sticky assignor takes the lowest-generation claimant as a partition's owner",
        "confluentinc/librdkafka PR #4252 / PR #4274",
        client=OldestClaimantSticky,
    ),
    _m(
        "sarama-2245",
        "the range assignor orders members by a hash and rounds its cuts",
        "IBM/sarama #2243 / PR #2245",
        client=HashOrderRange,
    ),
    _m(
        "librdkafka-3159",
        "the roundrobin cursor wraps at the topic's subscriber count",
        "confluentinc/librdkafka #3159 / PR #3161",
        client=TopicCountRoundRobin,
    ),
)
