"""What the design predicates read: one frozen snapshot of a group under any design.

Every design (and the shipped protocols, through their adapters) projects its state onto this
shape, so one predicate judges them all. ``token`` is the generation (or epoch, or marker) under
which a member holds its partitions; designs whose ownership carries no such number report None and
are judged on physical ownership, since nothing lets their commit path tell a stale owner from a
current one.
"""

from __future__ import annotations

from dataclasses import dataclass

from model.embedded import TopicPartition


@dataclass(frozen=True)
class MemberView:
    name: str
    #: the process: bumped by a restart (Join after Crash, Upgrade); tokens compare within one
    incarnation: int
    alive: bool
    paused: bool
    token: int | None
    holds: frozenset[TopicPartition]
    #: topics the member subscribes to, regex subscriptions resolved against the brokers' metadata
    topics: frozenset[str]
    version: int = 1
    #: stopped on an error the design calls fatal (it will not rejoin by itself)
    fatal: bool = False
    #: the assignment strategy this process would have the group use ("" = the design has no choice)
    prefers: str = ""


@dataclass(frozen=True)
class DesignView:
    design: str
    now: int
    topics: tuple[tuple[str, int], ...]
    members: tuple[MemberView, ...]
    #: the authority's current generation (coordinator, or the group-wide marker); None if none
    generation: int | None = None
    #: the coordinator moved at this step (a generation may fall back to the persisted one)
    failover: bool = False
    #: the strategy the group assigns with now ("" when no group has formed)
    strategy: str = ""
    #: this snapshot ends a `Settle`: the liveness predicates judge it
    checkpoint: bool = False
    #: completed rebalances so far (assignments handed out)
    rebalances: int = 0
    #: per-member entries the coordinator keeps (members, provisional ids, id maps); -1 = not modelled
    coordinator_entries: int = -1
    #: members whose leave, sent with the id their coordinator gave them, was refused at this step
    leaves_refused: tuple[str, ...] = ()

    def member(self, name: str) -> MemberView | None:
        for m in self.members:
            if m.name == name:
                return m
        return None

    def running(self) -> tuple[MemberView, ...]:
        """Members whose process runs and wants to be in the group."""
        return tuple(m for m in self.members if m.alive and not m.fatal)
