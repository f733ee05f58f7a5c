"""Coordinator failover for KIP-848 groups on a real target (docs/faults.md#consumer-failover): restart, reload, compare.

The consumer machine's Failover rule restarts the target as the classic rule does
(`conformance.protocols.classic.faults.restart`: `Target.restart`, SIGKILL by default, the same log folder
and ports). What survives is what KIP-848 writes to ``__consumer_offsets``: the group epoch, the
subscription metadata, each member's subscription, the target assignment and its epoch, each
member's current assignment with its member epoch and partitions pending revocation, and committed
offsets (``GroupCoordinatorRecordHelpers``; replayed by ``GroupMetadataManager.replay``). Timers are
in memory only: ``GroupMetadataManager.onLoaded`` schedules every loaded member's session timeout
afresh, and the rebalance timeout of members in UNREVOKED_PARTITIONS
(group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupMetadataManager.java).
Each model hypothesis therefore keeps its durable view (`model.consumer.records.durable_view`, equal
to the model's own ``rebuild`` of its records) and runs ``on_loaded``. A mixed group (KIP-848, docs/protocol-reference.md#b13)
loads through `mixed_failover`: as a consumer group the same way (its classic-protocol members'
metadata is in their subscription records), as a classic group from its last GroupMetadata record.

When the target loaded the group is not observable: after a clean stop it loads as it starts
serving; after a crash the KRaft broker may load the group long before it answers (its old
registration must time out first), and the loaded members' session timers then expire unattended.
So each hypothesis loads at several moments between the stop and the first good answer (at the
end; just late enough for each timer length to have fired; at the stop) and runs its timers up to
the first good answer. ConsumerGroupDescribe (api key 69) then shows the recovered group (state,
epochs, members with their epochs, assignments and targets); the hypotheses that equal it are kept;
none -> an ``oracle.Failover`` protocol finding naming each difference.

The wait: FindCoordinator and ConsumerGroupDescribe until the group's coordinator answers it
without COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR (every wait with
a deadline, `engine.oracle.restart.RESTART_DEADLINE_S`). Requests the members send later and that still meet one of those
answers are resent after finding the coordinator again, as the Java consumer does
(``AbstractHeartbeatRequestManager.onErrorResponse``: coordinator errors mark the coordinator
unknown and the heartbeat is retried); see `ConsumerOperation._exchange`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from conformance.engine.oracle.restart import describe_on_coordinator, reload, restart_served
from conformance.errors import TargetError
from model.consumer.messages import TopicPartition
from model.consumer.records import durable_view
from model.consumer.state import REBALANCE, SESSION

API_CONSUMER_GROUP_DESCRIBE = 69
GROUP_ID_NOT_FOUND = 69


@dataclass(frozen=True)
class RecoveredMember:
    member_id: str
    instance_id: str | None
    member_epoch: int
    assigned: frozenset[TopicPartition]
    target: frozenset[TopicPartition]


@dataclass(frozen=True)
class RecoveredGroup:
    """A consumer group as ConsumerGroupDescribe shows it (None fields: the group does not exist)."""

    error: int
    state: str
    group_epoch: int
    assignment_epoch: int
    members: dict[str, RecoveredMember]


def can_restart(port: Any) -> bool:
    """The port's target restarts on its own state (`Target.restart`)."""
    launcher = port.session.launcher
    return launcher is not None and "restart" in getattr(launcher, "capabilities", ())


def restarts_left(port: Any) -> bool:
    """The target can restart and the run's budget (`check --restarts N`, per protocol) has a
    restart left."""
    if not can_restart(port):
        return False
    done = port.session.__dict__.setdefault("restarts_by_protocol", {})
    return bool(done.get(port.protocol_name, 0) < port.session.max_restarts)


def describe(port: Any, timeout: float = 2.0) -> RecoveredGroup | None:
    """ConsumerGroupDescribe of the port's group on its coordinator; None when it cannot be reached."""
    adapter = port.adapter
    lo, hi = adapter.connect().api_versions.get(API_CONSUMER_GROUP_DESCRIBE, (0, -1))
    if hi < 0:
        raise TargetError(f"{adapter.bootstrap}: the target offers no ConsumerGroupDescribe (api key 69)")
    fields = {"group_ids": (port.real_group,)}
    g = describe_on_coordinator(
        adapter, port.real_group, API_CONSUMER_GROUP_DESCRIBE, min(hi, 1), fields, timeout
    )
    if g is None:
        return None
    members = {}
    for m in g.members:
        members[str(m.member_id)] = RecoveredMember(
            str(m.member_id),
            None if m.instance_id is None else str(m.instance_id),
            int(m.member_epoch),
            _parts(port, m.assignment),
            _parts(port, m.target_assignment),
        )
    return RecoveredGroup(
        int(g.error_code.value), str(g.group_state), int(g.group_epoch), int(g.assignment_epoch), members
    )


def _parts(port: Any, assignment: Any) -> frozenset[TopicPartition]:
    out = set()
    for tp in assignment.topic_partitions:
        topic = port.topics.model_of_id(tp.topic_id)
        out |= {(topic, int(p)) for p in tp.partitions}
    return frozenset(out)


def load_times(h: Any, t_stop: int, t_load: int, session_ms: int) -> list[int]:
    """Moments the target may have loaded the group that lead to different recovered groups: at the
    end, just early enough for each kind of armed timer (rebalance timeouts of members revoking, the
    session timeout) to have fired by ``t_load``, and at the stop."""
    out = [t_load]
    lengths = {session_ms}
    for g in consumer_part(h.state).groups.values():
        for key, timer in g.timers.items():
            if key[0] == REBALANCE:
                m = g.members.get(timer.member_id)
                if m is not None and m.rebalance_timeout_ms > 0:
                    lengths.add(m.rebalance_timeout_ms)
    for length in sorted(lengths):
        at = t_load - length - 1
        if t_stop < at:
            out.append(at)
    out.append(t_stop)
    return list(dict.fromkeys(out))


def recovered_matches(port: Any, state: Any, seen: RecoveredGroup | None) -> str | None:
    """None when ``seen`` (the target's group after the restart) equals the model's loaded group."""
    g = state.groups.get(port.group_id)
    if seen is None:
        return None if g is None else f"the target has no group; the model recovered {g.state.value}"
    if g is None:
        return f"the target recovered {seen.state} with {len(seen.members)} members; the model has no group"
    diffs = []
    if seen.state.lower() != g.state.value.lower():
        diffs.append(f"state {seen.state}, model {g.state.value}")
    if (seen.group_epoch, seen.assignment_epoch) != (g.group_epoch, g.assignment_epoch):
        diffs.append(
            f"group/assignment epoch {seen.group_epoch}/{seen.assignment_epoch}, "
            f"model {g.group_epoch}/{g.assignment_epoch}"
        )
    if set(seen.members) != set(g.members):
        diffs.append(f"members {sorted(seen.members)}, model {sorted(g.members)}")
    for mid in sorted(set(seen.members) & set(g.members)):
        s, m = seen.members[mid], g.members[mid]
        if s.member_epoch != m.member_epoch:
            diffs.append(f"{mid} epoch {s.member_epoch}, model {m.member_epoch}")
        # ConsumerGroupDescribe lists assigned and pending-revocation partitions together (Kafka 4.4.0
        # ConsumerGroupMember.asConsumerGroupDescribeMember accumulates both)
        if s.assigned != m.assigned | m.pending_revocation:
            diffs.append(f"{mid} holds {_tps(s.assigned)}, model {_tps(m.assigned | m.pending_revocation)}")
        if s.target != g.target_of(mid):
            diffs.append(f"{mid} target {_tps(s.target)}, model {_tps(g.target_of(mid))}")
    return "; ".join(diffs) or None


def _tps(parts: frozenset[TopicPartition]) -> str:
    return "{" + ", ".join(f"{t}-{p}" for t, p in sorted(parts)) + "}"


def session_ms(port: Any) -> int:
    config = port.coordinator.config
    return int(getattr(config, "consumer", config).session_timeout_ms)


def consumer_part(state: Any) -> Any:
    """The consumer-group half of a hypothesis' state (a mixed state has a classic half too)."""
    return getattr(state, "consumer", state)


def loaded_all(port: Any, h0: Any, at: int, t_load: int, load: Any = None) -> list[Any]:
    """`loaded` (or ``load``, the mixed group's: `mixed_failover.loaded`), and when timers fire while
    the target is down, once more for each member whose session timer fires last among the equal
    deadlines ``on_loaded`` arms (Kafka's order among equal deadlines is unspecified; in a mixed
    group it decides whether the group is downgraded)."""
    load = load or loaded
    out = [load(port, h0, at, t_load)]
    if at < t_load:
        group = consumer_part(h0.state).groups.get(port.group_id)
        for member_id in sorted(group.members) if group is not None else ():
            out.append(load(port, h0, at, t_load, last=member_id))
    return out


def session_last(group: Any, last: str | None) -> None:
    """Member ``last``'s session timer fires after the others due with it (`loaded_all`)."""
    if last is not None and group is not None:
        for key, timer in list(group.timers.items()):
            if key == (SESSION, last):
                group.timers[key] = replace(timer, deadline=timer.deadline + 1)


def loaded(port: Any, h0: Any, at: int, t_load: int, last: str | None = None) -> Any:
    """Hypothesis ``h0`` after a new coordinator loaded its durable state at ``at`` and ran its timers
    up to ``t_load`` (``last``: that member's session timer fires after the others due with it). A
    mixed group loads through `mixed_failover.loaded` (either group type)."""
    h = h0.copy()
    coord = port.coords[h.origin]
    h.state = durable_view(h0.state)
    coord.on_loaded(h.state, at)
    h.now = at
    session_last(consumer_part(h.state).groups.get(port.group_id), last)
    if at < t_load:
        coord.advance(h.state, t_load)
        h.now = t_load
    return h


def restart(port: Any) -> Any:
    """The consumer machine's Failover rule on a real target (module docstring); the step's Result."""
    from model.result import Result

    served = restart_served(port, lambda: describe(port))
    if served is None:
        return Result()
    t, t_load, t_serving, seen = served
    seen = None if seen.error == GROUP_ID_NOT_FOUND else seen
    port.log.append(f"t={t} restart; group served again at t={t_serving}, loaded after t={t_load}")
    reload(
        port,
        t,
        lambda h0: load_times(h0, t, t_load, session_ms(port)),
        lambda h0, at: loaded_all(port, h0, at, t_load),
        lambda h: recovered_matches(port, consumer_part(h.state), seen),
    )
    return Result()
