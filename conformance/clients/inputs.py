"""Hypothesis-generated assignor inputs: a group's members with their prior assignments and claims.

A group is drawn around a current generation G. Partitions have at most one current owner (a member
whose prior assignment came in G); other members are new (no prior assignment), stale (their claim
is from an older generation and may name partitions a current member now owns: the KAFKA-7026
rejoin, docs/protocol-reference.md#c4) or twins (a second claim in G on a partition a current member also claims:
KAFKA-12984 / apache/kafka PR #10985). A member's user data is made by its own assignor (`own`) or
written with the model's encoders as a member of another version would send it: sticky V1 (KIP-341,
with the subscription's GenerationId set, or absent as from a Kafka 2.3 client whose subscription is
version 0) or V0 (pre-KIP-341), cooperative-sticky's int32 generation (KIP-429).

Subscription fields follow the Java client (CC `onJoinPrepare`, `metadata()`): EAGER members have
revoked everything, so OwnedPartitions is empty; COOPERATIVE members keep the partitions of topics
they still subscribe to. GenerationId is the generation of the prior assignment, -1 without one.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from model.assignors.base import COOPERATIVE, EAGER, tp_key
from model.embedded import TopicPartition, encode_cooperative_user_data, encode_sticky_user_data

TOPICS = ("t0", "t1", "t2")
MISSING_TOPIC = "gone"
"""A topic members may subscribe to or claim that is not in the leader's metadata."""
MEMBER_IDS = ("m-a", "m-b", "m-c", "m-d", "m-e")
KINDS = ("current", "stale", "new", "twin")


def rebalance_protocol(assignor: str) -> str:
    """The protocol a group of this assignor's members runs (supportedProtocols(), preferred first)."""
    return COOPERATIVE if assignor == "cooperative-sticky" else EAGER


@dataclass(frozen=True)
class Member:
    """One member as the leader will see it, and how its user data is made."""

    member_id: str
    kind: str
    topics: tuple[str, ...]
    prior: tuple[TopicPartition, ...] | None
    prior_generation: int
    user_data: str
    """"own" (the library's own assignor writes it), "v1", "v1-nogen", "v0", "coop" or "none"."""

    def request(self, assignor: str) -> dict[str, Any]:
        """This member's entry in a harness request (conformance/clients/protocol.md)."""
        protocol = rebalance_protocol(assignor)
        prior = list(self.prior or ())
        owned = (
            sorted((tp for tp in prior if tp[0] in self.topics), key=tp_key)
            if protocol == COOPERATIVE and self.prior is not None
            else []
        )
        generation = self.prior_generation if self.prior is not None else -1
        entry: dict[str, Any] = {
            "member_id": self.member_id,
            "topics": list(self.topics),
            "owned": [list(tp) for tp in owned],
            "generation": generation,
            "user_data": None,
            "prior": None,
        }
        if self.prior is None or self.user_data == "none":
            return entry
        if self.user_data == "own":
            entry["prior"] = {"partitions": [list(tp) for tp in prior], "generation": generation}
            return entry
        if self.user_data == "coop":
            raw = encode_cooperative_user_data(generation)
        elif self.user_data == "v0":
            raw = encode_sticky_user_data(prior, None)
            entry["generation"] = -1  # a pre-KIP-341 client sends a version-0 subscription
        else:
            raw = encode_sticky_user_data(prior, generation)
            if self.user_data == "v1-nogen":
                entry["generation"] = -1  # Kafka 2.3: V1 user data, version-0 subscription
        entry["user_data"] = base64.b64encode(raw).decode("ascii")
        return entry


@dataclass(frozen=True)
class Group:
    """A leader's input: partition counts of the topics in its metadata, members in JoinGroup order."""

    assignor: str
    partitions: dict[str, int]
    members: tuple[Member, ...]

    def request(self, request_id: int) -> dict[str, Any]:
        return {
            "id": request_id,
            "assignor": self.assignor,
            "partitions": dict(self.partitions),
            "members": [m.request(self.assignor) for m in self.members],
        }


def _user_data_sources(assignor: str) -> tuple[str, ...]:
    if assignor == "sticky":
        return ("own", "own", "v1", "v1-nogen", "v0")
    if assignor == "cooperative-sticky":
        return ("own", "own", "coop")
    return ("own",)


INPUTS = ("all", "steady", "churn")
"""Input families: `steady` keeps every claim on an existing partition of a topic its claimant still
subscribes to (generations and duplicates are all that vary: the KAFKA-7026 / KAFKA-12984 family);
`churn` adds what topic and subscription changes leave behind: claims on topics the claimant dropped,
on deleted topics or past a recreated topic's partition count, and subscriptions to topics missing
from the leader's metadata; `all` draws either per example."""


@st.composite
def groups(draw: st.DrawFn, assignor: str, inputs: str = "all") -> Group:
    """One leader input for `assignor` (range, roundrobin, sticky, cooperative-sticky)."""
    if inputs not in INPUTS:
        raise ValueError(f"inputs must be one of {INPUTS}, got {inputs!r}")
    churn = draw(st.booleans()) if inputs == "all" else inputs == "churn"
    names = draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=3, unique=True))
    partitions = {t: draw(st.integers(1, 6)) for t in sorted(names)}
    existing = [(t, p) for t in sorted(partitions) for p in range(partitions[t])]
    ids = draw(st.permutations(MEMBER_IDS))[: draw(st.integers(1, 5))]
    current = draw(st.integers(1, 9))
    subscribed = []
    for _ in ids:
        topics = set(draw(st.lists(st.sampled_from(sorted(partitions)), min_size=1, max_size=3, unique=True)))
        if churn and draw(st.integers(0, 9)) == 9:
            topics.add(MISSING_TOPIC)
        subscribed.append(tuple(sorted(topics)))
    owner = {}
    for tp in existing:  # the current owner subscribes to the topic unless subscriptions changed
        can = [i for i in range(len(ids)) if churn or tp[0] in subscribed[i]]
        pick = draw(st.integers(-1, len(can) - 1))
        owner[tp] = can[pick] if pick >= 0 else -1
    members = []
    for i, member_id in enumerate(ids):
        kind = draw(st.sampled_from(KINDS if current > 1 else ("current", "new", "twin")))
        held = [tp for tp in existing if owner[tp] == i]
        prior: tuple[TopicPartition, ...] | None = None
        generation = -1
        if kind == "current":
            prior, generation = tuple(held), current
        elif kind in ("stale", "twin"):
            universe = [tp for tp in existing if churn or tp[0] in subscribed[i]]
            if churn:  # a deleted topic; a partition past a recreated topic's count
                universe += [(MISSING_TOPIC, 0), (sorted(partitions)[0], 6)]
            extra = draw(st.lists(st.sampled_from(universe), min_size=1, max_size=4, unique=True))
            prior = tuple(sorted(dict.fromkeys(held + extra), key=tp_key))
            generation = draw(st.integers(1, current - 1)) if kind == "stale" else current
        source = draw(st.sampled_from(_user_data_sources(assignor))) if prior is not None else "none"
        members.append(Member(member_id, kind, subscribed[i], prior, generation, source))
    return Group(assignor, partitions, tuple(members))
