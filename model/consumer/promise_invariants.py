"""KIP-848 promises a consumer relies on, stated from the protocol documents (docs/invariants.md#nature).

Each one reads only the requests, the responses, the group's members and epochs and the
consumers' own views; none consults the coordinator's rules for how a step got there.
"""

from __future__ import annotations

from collections.abc import Iterator

from model.consumer.observe import PAIRS
from model.consumer.state import ConsumerMember, member_subscribes
from model.consumer.world import (
    ConsumerWorld,
    DeleteGroupsEvent,
    GroupView,
    HeartbeatEvent,
    delete_groups_response,
    heartbeat_response,
)
from model.errors import ErrorCode
from model.invariant_gates import on
from model.invariant_reads import changed
from model.invariants import invariant
from model.observation import Observation

Obs = Observation[ConsumerWorld]
E = ErrorCode

#: answers that end the membership the request named (KIP-848 "Errors"; the consumer rejoins with epoch 0)
MEMBERSHIP_ENDED = frozenset({E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID, E.GROUP_ID_NOT_FOUND})


@invariant("consumer.ended_membership_rejoins", "transition", "consumer", when=on(HeartbeatEvent))
def ended_membership_rejoins(obs: Obs) -> Iterator[str]:
    """A consumer told FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID or GROUP_ID_NOT_FOUND gives up its partitions and rejoins with epoch 0 or stops; it never goes on with the refused epoch (KIP-848; librdkafka PR #5488).

    A promise a client relies on (docs/invariants.md#nature).
    """
    ev, b = obs.event, obs.before
    if not isinstance(ev, HeartbeatEvent) or ev.client is None or not ev.heard or b is None:
        return
    r = heartbeat_response(obs)
    if r is None or r.error_code not in MEMBERSHIP_ENDED or ev.request.member_epoch <= 0:
        return
    old = next((c for c in b.clients if c.name == ev.client), None)
    new = next((c for c in obs.after.clients if c.name == ev.client), None)
    if old is None or new is None or not new.active:
        return
    if (old.member_id, old.member_epoch) != (ev.request.member_id, ev.request.member_epoch):
        return  # a copy or a zombie's request: not the membership the consumer holds
    if new.member_epoch == ev.request.member_epoch and new.member_id == ev.request.member_id:
        yield (
            f"{ev.client} answered {E(r.error_code).name} goes on as {new.member_id} "
            f"with the refused epoch {new.member_epoch}, owning {len(new.owned)} partitions"
        )


def _subscription(m: ConsumerMember) -> tuple[frozenset[str], str | None]:
    """What the member subscribed to; an empty regex is no regex (KIP-848 SubscribedTopicRegex)."""
    return m.subscribed_topic_names, m.subscribed_topic_regex or None


@invariant("consumer.subscription_change_bumps_epoch", "transition", "consumer", when=on(HeartbeatEvent))
def subscription_change_bumps_epoch(obs: Obs) -> Iterator[str]:
    """A heartbeat that changes a member's subscribed topic names or regex (to empty included) bumps the group epoch, so a new target follows (KIP-848; KAFKA-19899).

    A promise a client relies on (docs/invariants.md#nature).
    """
    ev, b, a = obs.event, obs.before, obs.after
    if not isinstance(ev, HeartbeatEvent) or b is None:
        return
    gid = ev.request.group_id
    gb, ga = b.group(gid), a.group(gid)
    if gb is None or ga is None:
        return
    mid = ev.request.member_id
    old, new = gb.members.get(mid), ga.members.get(mid)
    if old is None or new is None or _subscription(old) == _subscription(new):
        return
    if _awaits_resolution(a, gb, old, new):
        return
    if ga.group_epoch <= gb.group_epoch:
        yield (
            f"{mid}'s subscription changed from {_subscription(old)} to {_subscription(new)} "
            f"but the group epoch stayed {ga.group_epoch}"
        )


def _awaits_resolution(world: ConsumerWorld, gb: GroupView, old: ConsumerMember, new: ConsumerMember) -> bool:
    """Under asynchronous resolution a change to a regex the group has not resolved yet bumps only
    when its resolution lands (`model.consumer.regex_rules`), and only if it changes the topics."""
    regex = new.subscribed_topic_regex
    return (
        world.regex_resolution == "async"
        and old.subscribed_topic_names == new.subscribed_topic_names
        and bool(regex)
        and regex not in gb.resolved_regexes
    )


@invariant(
    "consumer.member_epoch_is_assignment_epoch", "transition", "consumer", reads=PAIRS, when=changed("groups")
)
def member_epoch_is_assignment_epoch(obs: Obs) -> Iterator[str]:
    """A member epoch that moves forward moves to the group's target assignment epoch: no epoch is ever handed out that no target assignment carries (KIP-848 member epoch; KAFKA-19974).

    A promise a client relies on (docs/invariants.md#nature).
    """
    b, a = obs.before, obs.after
    if b is None:
        return
    for gid, ga in a.groups.items():
        gb = b.group(gid)
        if gb is None:
            continue
        for mid, new in ga.members.items():
            old = gb.members.get(mid)
            if old is None or new.member_epoch <= old.member_epoch or new.member_epoch <= 0:
                continue
            if new.member_epoch != ga.assignment_epoch:
                yield (
                    f"{mid}'s member epoch went from {old.member_epoch} to {new.member_epoch}, "
                    f"not the assignment epoch {ga.assignment_epoch}"
                )


@invariant("consumer.regex_resolved_off_heartbeat", "transition", "consumer", when=on(HeartbeatEvent))
def regex_resolved_off_heartbeat(obs: Obs) -> Iterator[str]:
    """Under asynchronous resolution, a heartbeat that brings a regex new to the group neither bumps the group epoch for it nor puts its topics in the subscription metadata: its resolution lands later (KAFKA-17593).

    docs/protocol-reference.md#b4; GMM ``maybeUpdateRegularExpressions`` / ``handleRegularExpressionsResult``
    (Apache Kafka 4.0+, `model.consumer.regex_rules`). A bump the same heartbeat explains otherwise (the member's
    names changed, the subscription metadata changed) is allowed.
    """
    ev, b, a = obs.event, obs.before, obs.after
    response = heartbeat_response(obs)
    if (
        response is None
        or response.error_code != ErrorCode.NONE
        or b is None
        or a.regex_resolution != "async"
    ):
        return
    assert isinstance(ev, HeartbeatEvent)
    regex, gid = ev.request.subscribed_topic_regex, ev.request.group_id
    gb, ga = b.group(gid), a.group(gid)
    if not regex or ga is None:
        return
    if gb is not None and (
        regex in gb.resolved_regexes or any(m.subscribed_topic_regex == regex for m in gb.members.values())
    ):
        return
    for topic in sorted(ga.subscription_metadata):
        if not any(
            member_subscribes(m, topic, a.topic_describe_denied, ga.resolved_regexes)
            for m in ga.members.values()
        ):
            yield f"{gid}: {topic} entered the subscription metadata before {regex!r} was resolved"
    if gb is None or gb.group_epoch == 0:
        return  # a new group's first bump
    old, new = gb.members.get(response.member_id or ""), ga.members.get(response.member_id or "")
    if old is None and new is not None and new.instance_id is not None:  # a static member's new process
        old = next((m for m in gb.members.values() if m.instance_id == new.instance_id), None)
    names_changed = (
        new is not None and (old.subscribed_topic_names if old else frozenset()) != new.subscribed_topic_names
    )
    if (
        ga.group_epoch > gb.group_epoch
        and not names_changed
        and ga.subscription_metadata == gb.subscription_metadata
    ):
        yield f"{gid}: the heartbeat bringing {regex!r} bumped the group epoch to {ga.group_epoch} before its resolution"


#: answers that treat a heartbeat as one to a group that exists
AS_IF_GROUP_EXISTED = frozenset({E.NONE, E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH})


@invariant("consumer.deleted_group_is_gone", "transition", "consumer")
def deleted_group_is_gone(obs: Obs) -> Iterator[str]:
    """DeleteGroups deletes only an Empty group (else NON_EMPTY_GROUP; an unknown one is GROUP_ID_NOT_FOUND), and a deleted group is gone with its committed offsets: a heartbeat with member epoch > 0 to a group that does not exist is answered GROUP_ID_NOT_FOUND, never as if it still existed.

    A promise an operator and a client rely on (docs/invariants.md#nature).
    """
    ev, b, a = obs.event, obs.before, obs.after
    if b is None:
        return
    if isinstance(ev, HeartbeatEvent) and ev.request.member_epoch > 0:
        r = heartbeat_response(obs)
        gid = ev.request.group_id
        if r is not None and b.group(gid) is None and r.error_code in AS_IF_GROUP_EXISTED:
            yield f"{gid} does not exist, yet a heartbeat with epoch {ev.request.member_epoch} is answered {E(r.error_code).name}"
    answer = delete_groups_response(obs) if isinstance(ev, DeleteGroupsEvent) else None
    for gid, code in (answer.errors() if answer is not None else {}).items():
        old = b.group(gid)
        members = old is not None and bool(old.members)
        if code == E.NONE and (members or a.group(gid) is not None or gid in a.committed):
            yield f"{gid} deleted, but it had members, or it or its offsets are still there"
        elif code == E.NON_EMPTY_GROUP and not members:
            yield f"{gid} answered NON_EMPTY_GROUP without a member"
        elif code == E.GROUP_ID_NOT_FOUND and (old is not None or gid in b.committed):
            yield f"{gid} answered GROUP_ID_NOT_FOUND, but it exists"


@invariant("consumer.member_record_matches_client", "transition", "consumer", when=on(HeartbeatEvent))
def member_record_matches_client(obs: Obs) -> Iterator[str]:
    """After a heartbeat the coordinator accepts, the member it answers for holds the topic names, regex and rebalance timeout its consumer last sent: a field sent null ("unchanged since the last heartbeat") keeps what was sent before, and a consumer whose request failed or got lost sends every field again (ConsumerGroupHeartbeatRequest.json; KIP-848).

    A promise a client relies on (docs/invariants.md#nature): it judges the coordinator's handling of
    null fields and the consumer's resending of them together.
    """
    ev = obs.event
    if not isinstance(ev, HeartbeatEvent) or ev.client is None or not ev.heard or ev.request.member_epoch < 0:
        return
    r = heartbeat_response(obs)
    if r is None or r.error_code != E.NONE:
        return
    client = next((c for c in obs.after.clients if c.name == ev.client), None)
    group = obs.after.group(ev.request.group_id)
    member = None if group is None else group.members.get(r.member_id or ev.request.member_id)
    if client is None or member is None or member.classic is not None:
        return
    names, regex, timeout = client.declared
    held = (member.subscribed_topic_names, member.subscribed_topic_regex or "", member.rebalance_timeout_ms)
    for what, sent, kept in (
        ("topic names", names, held[0]),
        ("regex", regex, held[1]),
        ("rebalance timeout", timeout, held[2]),
    ):
        if sent is not None and sent != kept:
            shown = (sorted(v) if isinstance(v, frozenset) else v for v in (sent, kept))
            yield f"{ev.client} last sent {what} {next(shown)!r}, but its member {member.member_id} holds {next(shown)!r}"


@invariant("consumer.reports_what_it_holds", "transition", "consumer", reads=("after.reports",))
def reports_what_it_holds(obs: Obs) -> Iterator[str]:
    """A consumer's heartbeat never reports as released a partition the consumer still holds: the owned partitions it reports (a null field: those of its last report) include every partition it holds when it sends (KIP-848 ConsumerGroupHeartbeat TopicPartitions; a revocation is acknowledged once the partitions are revoked).

    A promise the coordinator and the other consumers rely on (docs/invariants.md#nature): a partition
    reported released is given to another member, so one still held is consumed twice. Judged against
    the harness's record of what went on the wire (`model.consumer.owned_reports`).
    """
    for name, held, reported in obs.after.reports:
        early = held - reported
        if early:
            yield f"{name} reports {sorted(map(str, early))} released while it still holds them"
