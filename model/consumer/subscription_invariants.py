"""KAFKA-19431 (apache/kafka PR #20055, Kafka 4.1+) restated: reconciliation keeps a member to the
topics it subscribes to (docs/invariants.md#nature; `model.consumer.reconcile`).

The predicate reads the coordinator's rule from the world (`ConsumerWorld.reconcile_to_subscription`)
and the member's subscription as the coordinator resolves it after the step: names and regex topics
that exist, a regex only through its recorded resolution under asynchronous resolution.
"""

from __future__ import annotations

from collections.abc import Iterator

from model.consumer.messages import TopicPartition, from_topic_partitions
from model.consumer.state import ConsumerMember, member_subscribes
from model.consumer.world import ConsumerWorld, GroupView, HeartbeatEvent, heartbeat_response
from model.errors import ErrorCode
from model.invariant_gates import on
from model.invariants import invariant
from model.observation import Observation

Obs = Observation[ConsumerWorld]


def _current(m: ConsumerMember) -> tuple[object, ...]:
    """The member's current-assignment record: what reconciliation writes."""
    return (m.state, m.member_epoch, m.previous_member_epoch, m.assigned, m.pending_revocation)


def _subscription(m: ConsumerMember) -> tuple[frozenset[str], str | None]:
    return m.subscribed_topic_names, m.subscribed_topic_regex or None


def subscribed_topics(world: ConsumerWorld, group: GroupView, member: ConsumerMember) -> frozenset[str]:
    """CAB `subscribedTopicIds`: the member's topics in the metadata image (an unresolved regex
    matches nothing under asynchronous resolution)."""
    denied, resolved = world.topic_describe_denied, world.regex_view(group)
    return frozenset(t for t in world.topics if member_subscribes(member, t, denied, resolved))


@invariant("consumer.assignment_within_subscription", "transition", "consumer", when=on(HeartbeatEvent))
def assignment_within_subscription(obs: Obs) -> Iterator[str]:
    """Under KAFKA-19431's rule, a heartbeat that reconciles a member or changes its subscription leaves it, and the assignment its answer carries, no partition of a topic outside its subscription (KAFKA-19431; apache/kafka PR #20055).

    Restates a Kafka 4.1+ rule (docs/invariants.md#nature): CurrentAssignmentBuilder treats the
    target of an unsubscribed topic as empty and, when the heartbeat changed the subscription, moves
    such partitions to pending revocation at once. Pending revocation may still hold them. A member
    left alone (reconciled, same subscription) keeps what it has until it is reconciled again, even
    of a topic deleted or a regex resolved anew meanwhile. Not checked under Kafka 4.0's rule.
    """
    ev, b, a = obs.event, obs.before, obs.after
    response = heartbeat_response(obs)
    if (
        response is None
        or response.error_code != ErrorCode.NONE
        or b is None
        or not a.reconcile_to_subscription
    ):
        return
    assert isinstance(ev, HeartbeatEvent)
    if ev.request.member_epoch < 0:
        return  # a leave: a static member keeps its assignment at epoch -2
    gid, mid = ev.request.group_id, response.member_id or ev.request.member_id
    gb, ga = b.group(gid), a.group(gid)
    new = ga.members.get(mid) if ga is not None else None
    if ga is None or new is None:
        return
    old = gb.members.get(mid) if gb is not None else None
    if old is not None and _current(old) == _current(new) and _subscription(old) == _subscription(new):
        return
    topics = subscribed_topics(a, ga, new)
    answered: frozenset[TopicPartition] = (
        frozenset() if response.assignment is None else from_topic_partitions(response.assignment)
    )
    for where, held in (("is assigned", new.assigned), ("is answered", answered)):
        outside = sorted(tp for tp in held if tp[0] not in topics)
        if outside:
            yield (
                f"{gid}: {mid} {where} {', '.join(f'{t}-{p}' for t, p in outside)} outside its "
                f"subscription {sorted(topics)} at epoch {new.member_epoch}"
            )
