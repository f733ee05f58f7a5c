"""Known deviation of Apache Kafka in the classic protocol: a returning static leader's KIP-814
snapshot hides a metadata change (reports/findings/static-leader-missed-growth.md; model.deviations).

A static leader rejoining a Stable group is told it leads with ``SkipAssignment`` (KIP-814,
JoinGroup v9; KAFKA-13435, apache/kafka PR #11688). The Java consumer then takes its current
metadata as the metadata of the group's assignment (`ConsumerCoordinator.onLeaderElected`), so a
partition increase that happened while it was away is never assigned until something else
rebalances the group. The simulator tags the leader when it is told to skip the assignment while
the topics differ from those the group's assignment was computed on (`skipped_with_new_metadata`);
a leader that runs the assignor again clears the tags.
"""

from __future__ import annotations

from dataclasses import replace

from model.classic.messages import JoinGroupResponse
from model.classic.world import ClassicWorld
from model.deviations import known_deviation
from model.errors import ErrorCode
from model.observation import Observation

KIP_814_SNAPSHOT = "kip-814-leader-snapshot"

Topics = tuple[tuple[str, int], ...]


def skipped_with_new_metadata(
    tags: set[tuple[str, str]], name: str, response: object, assigned_on: Topics | None, topics: Topics
) -> None:
    """Tag ``name`` if ``response`` tells it to lead without assigning while the metadata moved on."""
    if (
        isinstance(response, JoinGroupResponse)
        and response.error == ErrorCode.NONE
        and response.skip_assignment
        and response.leader == response.member_id
        and assigned_on is not None
        and assigned_on != topics
    ):
        tags.add((KIP_814_SNAPSHOT, name))


def assigned(tags: set[tuple[str, str]]) -> None:
    """A leader ran the assignor on the current metadata: no skipped change is left."""
    for tag in [t for t in tags if t[0] == KIP_814_SNAPSHOT]:
        tags.discard(tag)


@known_deviation(
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
)
def snapshot_explains(obs: Observation[ClassicWorld]) -> bool:
    """The group converged on the metadata its assignment was computed on."""
    from model.classic.progress_invariants import eventual_convergence

    world = obs.after
    if world.assignment_topics is None:
        return False
    seen = replace(world, topics=world.assignment_topics)
    return not eventual_convergence(replace(obs, after=seen))
