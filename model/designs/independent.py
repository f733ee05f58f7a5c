"""Design 1 of seed 000: every member computes the whole assignment and checks a metadata hash.

Seed 000 'Consumer Embedded Protocol' (the first proposal): JoinGroup forwards every member's
subscription to every member; each computes the assignment for the whole group from its own topic
metadata and keeps its share. ``MetadataHash`` covers the topics of the member's subscription and
their partition counts, or every topic of the cluster for a regex subscription; on a disagreement
members refetch metadata and rejoin. Options: ``scope=subscription`` (the seed's hash; members can
only compare hashes with members of the same subscription) or ``scope=cluster`` (every member hashes
every topic, so all hashes compare, and any topic change anywhere makes the group rejoin).
"""

from __future__ import annotations

from model.assignors import get_assignor
from model.designs import joinall
from model.designs.engine import MemberActor, NetEngine, Timing
from model.designs.joinall import JoinAllCoordinator, JoinResp
from model.designs.joinall_member import JoinAllMember, Strategy
from model.designs.metadata import metadata_hash, topics_of
from model.designs.net import DesignError
from model.designs.ops import Join
from model.embedded import Subscription, TopicPartition, decode_subscription, encode_subscription

SCOPES = ("subscription", "cluster")


def _regex_and_hash(sub: Subscription) -> tuple[bool, bytes]:
    data = sub.user_data or b"\x00"
    return data[0] == 1, data[1:]


def share(member: JoinAllMember, resp: JoinResp) -> frozenset[TopicPartition]:
    """The member's own partitions of the assignment it computes for everyone from its own metadata."""
    subs = {mid: decode_subscription(meta) for mid, meta in resp.members}
    resolved = {}
    for mid, sub in subs.items():
        regex, _ = _regex_and_hash(sub)
        resolved[mid] = Subscription(topics_of(sub.topics, regex, member.view))
    wanted = {t for sub in resolved.values() for t in sub.topics}
    counts = {t: n for t, n in member.view.items() if t in wanted}
    result = get_assignor(resp.protocol).assign(counts, resolved)
    return frozenset(result[member.member_id].partitions)


class IndependentHash:
    def __init__(self, scope: str) -> None:
        if scope not in SCOPES:
            raise DesignError(f"independent-hash: scope must be one of {', '.join(SCOPES)}")
        self.scope = scope

    def covered(self, member: JoinAllMember) -> tuple[str, ...]:
        if member.regex or self.scope == "cluster":
            return tuple(sorted(member.view))
        return tuple(sorted(set(member.topics)))

    def metadata(self, member: JoinAllMember, protocol: str) -> bytes:
        user = bytes([1 if member.regex else 0]) + metadata_hash(member.view, self.covered(member))
        topics = () if member.regex else member.topics
        return encode_subscription(Subscription(topics, user_data=user))

    def decide(self, member: JoinAllMember, resp: JoinResp) -> frozenset[TopicPartition] | None:
        subs = {mid: decode_subscription(meta) for mid, meta in resp.members}
        mine = subs[member.member_id]
        my_regex, my_hash = _regex_and_hash(mine)
        for sub in subs.values():
            regex, digest = _regex_and_hash(sub)
            comparable = self.scope == "cluster" or (
                regex == my_regex and (regex or set(sub.topics) == set(mine.topics))
            )
            if comparable and digest != my_hash:
                return None
        return share(member, resp)

    def on_refresh(self, member: JoinAllMember, old: dict[str, int]) -> str:
        covered = self.covered(member)
        return "rejoin" if metadata_hash(old, covered) != metadata_hash(member.view, covered) else "none"


class JoinAllEngine(NetEngine):
    """The designs whose coordinator is `joinall` (1, 2, 3 of seed 000)."""

    rebalance_kinds = joinall.REBALANCE_KINDS

    def __init__(
        self, topics: dict[str, int], timing: Timing | None = None, options: dict[str, str] | None = None
    ) -> None:
        super().__init__(topics, timing, options)
        self.coordinator = JoinAllCoordinator()
        self.net.add(self.coordinator)
        self.past_rebalances = 0

    def strategy_object(self) -> Strategy:
        raise NotImplementedError

    def make_member(self, op: Join, incarnation: int) -> MemberActor:
        return JoinAllMember(
            op.member,
            op.topics,
            op.regex,
            op.version,
            self.strategy_object(),
            self.brokers.fetch,
            self.timing,
        )

    def generation(self) -> int | None:
        return self.coordinator.state.generation

    def strategy(self) -> str:
        return self.coordinator.state.protocol

    def rebalances(self) -> int:
        return self.past_rebalances + self.coordinator.state.rebalances

    def coordinator_entries(self) -> int:
        return len(self.coordinator.state.members)

    def failover(self) -> None:
        """The coordinator moves: its replacement loads the persisted generation; connections close."""
        old = self.coordinator
        self.past_rebalances += old.state.rebalances
        self.coordinator = JoinAllCoordinator(joinall.load(old.durable, self.net.now))
        self.coordinator.durable = list(old.durable)
        self.net.add(self.coordinator)
        self.net.drop_where(lambda m: joinall.COORDINATOR in (m.src, m.dst))
        for name in sorted(self.members):
            m = self.members[name]
            if self._alive(name) and isinstance(m, JoinAllMember):
                self.net.send(m.coordinator_lost(self.net.now))

    def lose_socket(self, member: str) -> None:
        """The coordinator drops the member's connection; what was in flight to it is lost and the
        member, hearing nothing, retries after its request timeout (responses only: the join-all
        coordinator keeps no per-connection state)."""
        self.net.drop_where(lambda m: m.dst == member)


class IndependentEngine(JoinAllEngine):
    design = "independent-hash"

    def strategy_object(self) -> Strategy:
        return IndependentHash(self.options.get("scope", "subscription"))
