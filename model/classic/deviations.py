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

A static member, follower or leader, rejoining a Stable group with a changed subscription is
replaced without a rebalance as well: the coordinator compares only the selected protocol's name,
not the member's new metadata (GMM updateStaticMemberThenRebalanceOrCompleteJoin; KAFKA-12759,
apache/kafka PR #22593 open), and the Java consumer joined with the new subscription already, so
nobody asks for the rebalance that would assign its new topics
(reports/findings/static-follower-subscription-change.md). Tagged at that answer.

A leader that runs the assignor again clears the tags (`assigned`).

A member removed by a LeaveGroup while its SyncGroup is parked (its own LeaveGroup, or an
operator's naming its group.instance.id, KIP-345) is never answered that SyncGroup: Kafka completes
only the removed member's parked JoinGroup (GroupMetadataManager `removeCurrentMemberFromClassicGroup`
at apache/kafka 1eb7644; Apache Kafka 4.4.0 alike, reports/findings/removed-member-sync-unanswered.md),
so the client waits out its request timeout. Tagged at that LeaveGroup, cleared at the next step.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from model.classic.messages import JoinGroupResponse, LeaveGroupRequest
from model.classic.state import GroupState
from model.classic.world import ClassicWorld, GroupSnap
from model.deviations import known_deviation, tagged
from model.errors import ErrorCode
from model.observation import Observation

KIP_814_SNAPSHOT = "kip-814-leader-snapshot"
UNAWARE_LEADER = "static-leader-unaware"
STATIC_SUBSCRIPTION = "static-subscription-change"
REMOVED_SYNC = "removed-member-sync-unanswered"

Topics = tuple[tuple[str, int], ...]
Subscriptions = tuple[tuple[str, tuple[str, ...]], ...]


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


def static_subscriptions(group: GroupSnap | None, leader_input: tuple[tuple[str, Any], ...]) -> Subscriptions:
    """The subscription of each static member the leader's assignor was given, by instance id."""
    members = group.members if group is not None else ()
    instance = {m.member_id: m.instance_id for m in members if m.instance_id is not None}
    return tuple(
        sorted((instance[mid], tuple(sorted(sub.topics))) for mid, sub in leader_input if mid in instance)
    )


def returning_static(
    tags: set[tuple[str, str]],
    name: str,
    response: object,
    group: GroupSnap | None,
    assigned_on: Subscriptions,
    config: Any,
) -> None:
    """Tag ``name`` if ``response`` replaces it as a static member of a Stable group, without a
    rebalance, while its subscription differs from the one the group's assignment was computed on."""
    if not isinstance(response, JoinGroupResponse) or response.error != ErrorCode.NONE:
        return
    if config.instance_id is None or group is None or group.state != GroupState.STABLE:
        return
    before = dict(assigned_on).get(config.instance_id)
    if before is not None and before != tuple(sorted(config.topics)):
        tags.add((STATIC_SUBSCRIPTION, name))


def assigned(tags: set[tuple[str, str]]) -> None:
    """A leader ran the assignor on the current metadata and subscriptions: nothing skipped is left."""
    for tag in [t for t in tags if t[0] in (KIP_814_SNAPSHOT, UNAWARE_LEADER, STATIC_SUBSCRIPTION)]:
        tags.discard(tag)


def _converged_on_assigned_input(obs: Observation[ClassicWorld]) -> bool:
    """The group converged on what its assignment was computed on: the metadata, when a returning
    leader was tagged, and each tagged static member judged by the subscription the leader was
    given for it."""
    from model.classic.progress_invariants import eventual_convergence

    world = obs.after
    if tagged(world, KIP_814_SNAPSHOT) or tagged(world, UNAWARE_LEADER):
        if world.assignment_topics is None:
            return False
        world = replace(world, topics=world.assignment_topics)
    before = dict(world.assignment_subscriptions)
    names = tagged(world, STATIC_SUBSCRIPTION)
    clients = []
    for c in world.clients:
        if c.name in names:
            old = before.get(c.instance_id) if c.instance_id is not None else None
            if old is None:
                return False
            c = replace(c, subscribed=frozenset(old))
        clients.append(c)
    return not eventual_convergence(replace(obs, after=replace(world, clients=tuple(clients))))


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
)(_converged_on_assigned_input)

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
)(_converged_on_assigned_input)

known_deviation(
    STATIC_SUBSCRIPTION,
    "classic.eventual_convergence",
    "a static member that rejoins a Stable group with a new subscription is replaced without a "
    "rebalance and its new topics are never assigned",
    (
        "KIP-345",
        "KAFKA-12759 / apache/kafka PR #22593 (open)",
        "GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin, Apache Kafka 4.4.0 "
        "(only the selected protocol's name is compared)",
    ),
    "reports/findings/static-follower-subscription-change.md",
)(_converged_on_assigned_input)


def removed_unanswered(
    tags: set[tuple[str, str]],
    event: object,
    before: ClassicWorld | None,
    after: GroupSnap | None,
    refs: set[int],
) -> None:
    """Tag each member a LeaveGroup ``event`` removed while its SyncGroup was parked and left
    unanswered (``refs``: the refs this step answered); the previous step's tags go."""
    for tag in [t for t in tags if t[0] == REMOVED_SYNC]:
        tags.discard(tag)
    request = getattr(event, "request", None)
    if not isinstance(request, LeaveGroupRequest) or before is None or before.group is None:
        return
    still = {m.member_id for m in after.members} if after is not None else set()
    for m in before.group.members:
        if m.awaiting_sync is not None and m.awaiting_sync not in refs and m.member_id not in still:
            tags.add((REMOVED_SYNC, m.member_id))


def _only_removed_syncs(obs: Observation[ClassicWorld]) -> bool:
    """The promise holds once the parked SyncGroups of the members the LeaveGroup removed are set aside."""
    from model.classic.response_invariants import parked_requests_answered

    b = obs.before
    if b is None or b.group is None:
        return False
    removed = tagged(obs.after, REMOVED_SYNC)
    members = tuple(replace(m, awaiting_sync=None) if m.member_id in removed else m for m in b.group.members)
    return not list(
        parked_requests_answered(replace(obs, before=replace(b, group=replace(b.group, members=members))))
    )


known_deviation(
    REMOVED_SYNC,
    "classic.parked_requests_answered",
    "a member removed by a LeaveGroup while its SyncGroup is parked is never answered that SyncGroup",
    (
        "KIP-345 (LeaveGroup by group.instance.id)",
        "GroupMetadataManager.removeCurrentMemberFromClassicGroup at apache/kafka "
        "1eb7644349cb07139d6a3c1ad1986979647cac99 (only the join response is completed)",
        "Apache Kafka 4.4.0, checked by tests/test_stray_requests_kafka.py",
    ),
    "reports/findings/removed-member-sync-unanswered.md",
)(_only_removed_syncs)
