"""Design 2 of seed 000: consistent hashing, no agreement on metadata needed.

Seed 000 'Metadata' (last paragraphs): each partition maps deterministically to one member, so two
members that see different partition counts still never claim the same partition; the price is
balance. The mapping here is rendezvous hashing (the member with the highest hash of partition and
member id wins) over the members that subscribe to the topic, read from the JoinGroup member list
all members share. A member that learns new partitions on a metadata refresh takes its own at once,
without a rebalance.
"""

from __future__ import annotations

import hashlib

from model.designs.independent import JoinAllEngine
from model.designs.joinall import JoinResp
from model.designs.joinall_member import JoinAllMember, Strategy
from model.designs.metadata import topics_of
from model.embedded import Subscription, TopicPartition, decode_subscription, encode_subscription


def weight(topic: str, partition: int, member_id: str) -> bytes:
    return hashlib.sha256(f"{topic}\x00{partition}\x00{member_id}".encode()).digest()[:8]


def owner(topic: str, partition: int, candidates: list[str]) -> str:
    return max(candidates, key=lambda mid: (weight(topic, partition, mid), mid))


class ConsistentHashing:
    def metadata(self, member: JoinAllMember, protocol: str) -> bytes:
        topics = () if member.regex else member.topics
        return encode_subscription(Subscription(topics, user_data=bytes([1 if member.regex else 0])))

    def decide(self, member: JoinAllMember, resp: JoinResp) -> frozenset[TopicPartition] | None:
        subs = {mid: decode_subscription(meta) for mid, meta in resp.members}
        mine: set[TopicPartition] = set()
        for topic in topics_of(member.topics, member.regex, member.view):
            candidates = [
                mid for mid, sub in subs.items() if (sub.user_data or b"\x00")[0] == 1 or topic in sub.topics
            ]
            for p in range(member.view.get(topic, 0)):
                if owner(topic, p, candidates) == member.member_id:
                    mine.add((topic, p))
        return frozenset(mine)

    def on_refresh(self, member: JoinAllMember, old: dict[str, int]) -> str:
        return "recompute"


class ConsistentHashEngine(JoinAllEngine):
    design = "consistent-hash"

    def strategy_object(self) -> Strategy:
        return ConsistentHashing()
