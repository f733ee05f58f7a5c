"""Design 3 of seed 000: hashed subscriptions; the largest matching sub-group assigns, the rest idle.

Seed 000 'Reducing the Join Payload / Dropping Topic Lists': members send only a SubscriptionHash
and a MetadataHash; on the JoinGroup answer each member finds the largest group of members with its
subscription hash; members of that sub-group split the partitions of their (shared) subscription,
the others assign themselves nothing until the next rebalance. The seed asks for a tie-breaker when
two sub-groups are equally large. Options: ``tie=hash`` (the smallest subscription hash wins, a
rule every member computes the same way) or ``tie=own`` (a member in a tied sub-group prefers its
own: the rule that needs no agreement, and breaks single ownership).
"""

from __future__ import annotations

from model.assignors import get_assignor
from model.designs.independent import JoinAllEngine
from model.designs.joinall import JoinResp
from model.designs.joinall_member import JoinAllMember, Strategy
from model.designs.metadata import HASH_BYTES, metadata_hash, subscription_hash, topics_of
from model.designs.net import DesignError
from model.embedded import Subscription, TopicPartition

TIES = ("hash", "own")


class HashedSubgroups:
    def __init__(self, tie: str) -> None:
        if tie not in TIES:
            raise DesignError(f"hashed-subgroups: tie must be one of {', '.join(TIES)}")
        self.tie = tie

    def _covered(self, member: JoinAllMember) -> tuple[str, ...]:
        return (
            topics_of(member.topics, member.regex, member.view)
            if member.regex
            else tuple(sorted(member.topics))
        )

    def metadata(self, member: JoinAllMember, protocol: str) -> bytes:
        return subscription_hash(member.topics, member.regex) + metadata_hash(
            member.view, self._covered(member)
        )

    def decide(self, member: JoinAllMember, resp: JoinResp) -> frozenset[TopicPartition] | None:
        hashes = {mid: (meta[:HASH_BYTES], meta[HASH_BYTES:]) for mid, meta in resp.members}
        sizes: dict[bytes, int] = {}
        for sub_hash, _ in hashes.values():
            sizes[sub_hash] = sizes.get(sub_hash, 0) + 1
        largest = max(sizes.values())
        tied = sorted(h for h, n in sizes.items() if n == largest)
        mine, my_meta = hashes[member.member_id]
        chosen = mine if self.tie == "own" and mine in tied else tied[0]
        if mine != chosen:
            return frozenset()  # inactive until the next rebalance
        group = [mid for mid, (h, _) in hashes.items() if h == chosen]
        if any(hashes[mid][1] != my_meta for mid in group):
            return None  # metadata disagreement inside the sub-group: refetch and rejoin
        topics = topics_of(member.topics, member.regex, member.view)
        counts = {t: member.view[t] for t in topics}
        subs = {mid: Subscription(topics) for mid in group}
        return frozenset(get_assignor(resp.protocol).assign(counts, subs)[member.member_id].partitions)

    def on_refresh(self, member: JoinAllMember, old: dict[str, int]) -> str:
        covered = self._covered(member)
        return "rejoin" if metadata_hash(old, covered) != metadata_hash(member.view, covered) else "none"


class SubgroupsEngine(JoinAllEngine):
    design = "hashed-subgroups"

    def strategy_object(self) -> Strategy:
        return HashedSubgroups(self.options.get("tie", "hash"))
