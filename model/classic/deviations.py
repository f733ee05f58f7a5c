"""Known deviations of Apache Kafka in the classic protocol: a returning static leader misses a
metadata change (reports/findings/static-leader-missed-growth.md; model.deviations).

A static leader rejoining a Stable group is replaced without a rebalance (KIP-345).

* JoinGroup v9+: it is told it leads with ``SkipAssignment`` (KIP-814; KAFKA-13435, apache/kafka
  PR #11688). The Java consumer then takes its current metadata as the metadata of the group's
  assignment (`ConsumerCoordinator.onLeaderElected`), so a partition increase that happened while
  it was away is never assigned until something else rebalances the group. Tagged when the topics
  differ from those the group's assignment was computed on.
* JoinGroup v<9: the answer names the previous leader id (docs/protocol-reference.md#a3-1), so the
  new process does not know it leads and acts on no metadata change at all, the one it missed
  included (the behaviour KIP-814 fixed, kept for older versions). Tagged at that answer.

A leader that runs the assignor again clears the tags (`assigned`).
"""

from __future__ import annotations

from dataclasses import replace

from model.classic.messages import JoinGroupResponse
from model.classic.world import ClassicWorld, GroupSnap
from model.deviations import known_deviation
from model.errors import ErrorCode
from model.observation import Observation

KIP_814_SNAPSHOT = "kip-814-leader-snapshot"
UNAWARE_LEADER = "static-leader-unaware"

Topics = tuple[tuple[str, int], ...]


def returning_leader(
    tags: set[tuple[str, str]],
    name: str,
    response: object,
    group: GroupSnap | None,
    assigned_on: Topics | None,
    topics: Topics,
    join_version: int,
) -> None:
    """Tag ``name`` if ``response`` (to its JoinGroup at ``join_version``) lets a returning static
    leader miss a metadata change. A v9+ answer naming another leader is not Kafka's behaviour and
    is not tagged."""
    if not isinstance(response, JoinGroupResponse) or response.error != ErrorCode.NONE:
        return
    if response.skip_assignment and response.leader == response.member_id:
        if assigned_on is not None and assigned_on != topics:
            tags.add((KIP_814_SNAPSHOT, name))
    elif (
        join_version < 9
        and group is not None
        and group.leader == response.member_id
        and response.leader != response.member_id
    ):
        tags.add((UNAWARE_LEADER, name))


def assigned(tags: set[tuple[str, str]]) -> None:
    """A leader ran the assignor on the current metadata: no skipped change is left."""
    for tag in [t for t in tags if t[0] in (KIP_814_SNAPSHOT, UNAWARE_LEADER)]:
        tags.discard(tag)


def _converged_on_assigned_metadata(obs: Observation[ClassicWorld]) -> bool:
    """The group converged on the metadata its assignment was computed on."""
    from model.classic.progress_invariants import eventual_convergence

    world = obs.after
    if world.assignment_topics is None:
        return False
    seen = replace(world, topics=world.assignment_topics)
    return not eventual_convergence(replace(obs, after=seen))


known_deviation(
    KIP_814_SNAPSHOT,
    "classic.eventual_convergence",
    "a static leader that rejoins after a partition increase is told to skip the assignment and "
    "never assigns the new partitions",
    (
        "KIP-814",
        "KAFKA-13435 / apache/kafka PR #11688",
        "ConsumerCoordinator.onLeaderElected (skipAssignment), Apache Kafka clients 3.2+",
    ),
    "reports/findings/static-leader-missed-growth.md",
)(_converged_on_assigned_metadata)

known_deviation(
    UNAWARE_LEADER,
    "classic.eventual_convergence",
    "a static leader that rejoins with JoinGroup below v9 is told another leader id and acts on no "
    "metadata change",
    (
        "KIP-814 (SkipAssignment only from JoinGroup v9)",
        "KAFKA-13435",
        "docs/protocol-reference.md#a3-1 (a v<9 answer names the previous leader id)",
    ),
    "reports/findings/static-leader-missed-growth.md",
)(_converged_on_assigned_metadata)
