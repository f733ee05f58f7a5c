"""Coordinator failover of a mixed group on a real target, whatever type the group has (docs/protocol-reference.md#b13).

A mixed group is a consumer group (classic members included) or, after a downgrade, a classic
group; a restart replays what each type persisted:

* a consumer group: its KIP-848 records, rebuilt from the hypothesis' state
  (`model.consumer.records.durable_view`) and re-armed by ``on_loaded`` (`consumer_failover`);
* a classic group: its last GroupMetadata record, unless a later tombstone deleted it (the upgrade
  writes one). Kafka rebuilds the group Empty when the record lists no member and Stable otherwise,
  with the record's generation, protocol and leader, and ``onLoaded`` arms every loaded member's
  heartbeat expiry afresh (apache/kafka@1eb7644 group-coordinator GroupMetadataManager.java
  ``replay(GroupMetadataKey, GroupMetadataValue)`` L3924-3970, ``onLoaded`` L3828-3843). The model's
  `model.classic.records.load` does the same, so each hypothesis keeps its classic group's last
  GroupMetadata record or tombstone (`MHypo.durable`, `track_durable`) beside its live state.

The hypothesis' state after a restart is therefore the coordinator's own ``failover`` of those
classic records (`model.mixed.state.rebuild`, tombstones honoured; so a coordinator variant
that loads otherwise is judged by it) with the consumer half replaced by its durable view; the
moments it may have loaded are those of `consumer_failover.load_times` plus, for a classic group,
just early enough for a classic member's session to have expired by the time the target serves.

The recovered group is read with ConsumerGroupDescribe (api key 69); a classic group answers
GROUP_ID_NOT_FOUND there (GMM ``consumerGroupDescribe`` L654-675: "not a consumer group"), and is
then read with DescribeGroups (state, member ids; assignments only when Stable, GMM
``describeGroups`` L716-760 describes members of other states without metadata). A group neither
shows is absent. The hypotheses whose loaded group equals it are kept; none -> ``oracle.Failover``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from model.classic.records import GroupMetadataRecord
from model.mixed.state import ClassicGroupTombstone

GROUP_ID_NOT_FOUND = 69


def track_durable(durable: tuple[object, ...], records: Any) -> tuple[object, ...]:
    """``durable`` with the GroupMetadata records and classic tombstones of ``records`` (only each
    group's last one matters to a load, so earlier ones of the same group are dropped)."""
    out = durable
    for rec in records:
        if isinstance(rec, GroupMetadataRecord | ClassicGroupTombstone):
            out = tuple(r for r in out if getattr(r, "group_id", None) != rec.group_id) + (rec,)
    return out


def restart_allowed(port: Any) -> str | None:
    """Why the mixed group cannot fail over now, or None. Any group type can: a consumer group
    reloads its records, a classic group its last GroupMetadata (module docstring)."""
    for h in port.hypos:
        if not h.state.classic.groups and not h.state.consumer.groups:
            return "no group yet"
    return None


def loaded(port: Any, h0: Any, at: int, t_load: int, last: str | None = None) -> Any:
    """Hypothesis ``h0`` after a new coordinator loaded its durable state at ``at`` and ran its timers
    up to ``t_load`` (``last``: that consumer member's session timer fires after the others due with
    it, `consumer_failover.loaded_all`)."""
    from conformance.protocols.consumer.failover import session_last
    from model.consumer.records import durable_view
    from model.mixed.state import MixedState

    h = h0.copy()
    coord = port.coords[h.origin]
    # the classic half through the coordinator's own failover of those records (no consumer records)
    classic = coord.failover(list(h0.durable), at)[0].classic
    classic.topics = dict(h0.state.classic.topics)
    classic.offsets = dict(h0.state.classic.offsets)
    h.state = MixedState(classic=classic, consumer=durable_view(h0.state.consumer))
    h.track(coord.consumer.on_loaded(h.state.consumer, at))
    h.now = at
    session_last(h.state.consumer.groups.get(port.group_id), last)
    if at < t_load:
        h.track(coord.advance(h.state, t_load))
        h.now = t_load
    return h


def load_times(port: Any, h: Any, t_stop: int, t_load: int) -> list[int]:
    """`consumer_failover.load_times`, plus the moments a classic member's session (armed at the
    load) has just expired by ``t_load``."""
    from conformance.protocols.consumer.failover import load_times as consumer_times
    from conformance.protocols.consumer.failover import session_ms

    out = consumer_times(h, t_stop, t_load, session_ms(port))
    g = h.state.classic.groups.get(port.group_id)
    for length in sorted({m.session_timeout_ms for m in g.members.values()} if g is not None else ()):
        at = t_load - length - 1
        if t_stop < at:
            out.append(at)
    return list(dict.fromkeys(out))


def loaded_all(port: Any, h0: Any, at: int, t_load: int) -> list[Any]:
    """`loaded`, and once more for each consumer member whose session timer fires last among equal
    deadlines when timers fire while the target is down (`consumer_failover.loaded_all`)."""
    from conformance.protocols.consumer.failover import loaded_all as consumer_loaded_all

    return consumer_loaded_all(port, h0, at, t_load, loaded)


@dataclass(frozen=True)
class MixedRecovered:
    """The group after a restart: ConsumerGroupDescribe's (a consumer group) or DescribeGroups' (a
    classic group); both None: the target has no group."""

    error: int
    consumer: Any = None  # consumer_failover.RecoveredGroup
    classic: Any = None  # faults.Recovered


def describe(port: Any) -> MixedRecovered | None:
    """The group as the restarted target shows it (None: no answer yet)."""
    from conformance.engine.oracle.restart import NOT_READY
    from conformance.protocols.classic.faults import describe_group
    from conformance.protocols.consumer.failover import describe as consumer_describe

    seen = consumer_describe(port)
    if seen is None or seen.error in NOT_READY:
        return None if seen is None else MixedRecovered(seen.error)
    if seen.error != GROUP_ID_NOT_FOUND:
        return MixedRecovered(seen.error, consumer=seen)
    classic = describe_group(port.adapter, port.real_group)
    if classic is None or classic.error in NOT_READY:
        return None if classic is None else MixedRecovered(classic.error)
    if classic.state == "Dead":
        return MixedRecovered(0)
    return MixedRecovered(classic.error, classic=classic)


def matches(port: Any, h: Any, seen: MixedRecovered) -> str | None:
    """None when ``seen`` equals hypothesis ``h``'s group (consumer or classic), else the differences."""
    from conformance.protocols.consumer.failover import recovered_matches

    gid = port.group_id
    g = h.state.classic.groups.get(gid)
    if g is None:
        if seen.classic is not None:
            return f"the target recovered a classic group ({seen.classic.state}); the model " + (
                "a consumer group" if gid in h.state.consumer.groups else "no group"
            )
        return recovered_matches(port, h.state.consumer, seen.consumer)
    if seen.classic is None:
        what = "a consumer group" if seen.consumer is not None else "no group"
        return f"the target recovered {what}; the model a classic group ({g.state.value})"
    return classic_matches(port, g, seen.classic)


def classic_matches(port: Any, g: Any, seen: Any) -> str | None:
    """A recovered classic group against the model's: state, member ids, and (Stable) each member's
    partitions (assignment bytes name real topics and may be another encoding version)."""
    from conformance.protocols.mixed.codec import map_assignment
    from conformance.protocols.mixed.judge import sync_partitions
    from model.classic.messages import SyncGroupResponse
    from model.errors import ErrorCode

    diffs = []
    if seen.state != g.state.value:
        diffs.append(f"state {seen.state}, model {g.state.value}")
    if set(seen.members) != set(g.members):
        diffs.append(f"members {sorted(seen.members)}, model {sorted(g.members)}")
    elif seen.state == "Stable":
        for mid in sorted(g.members):
            data = map_assignment(seen.members[mid], port.topics.model_of_name)
            theirs = sync_partitions(SyncGroupResponse(ErrorCode.NONE, data))
            mine = sync_partitions(SyncGroupResponse(ErrorCode.NONE, g.members[mid].assignment))
            if theirs != mine:
                diffs.append(f"{mid} assignment {sorted(theirs or ())}, model {sorted(mine or ())}")
    return "; ".join(diffs) or None


def restart(port: Any) -> Any:
    """The mixed machine's Failover rule on a real target: restart, reload every hypothesis (either
    group type), compare with what the target recovered (module docstring); the step's Result."""
    from conformance.engine.oracle.restart import reload, restart_served
    from model.result import Result

    served = restart_served(port, lambda: describe(port))
    if served is None:
        return Result()
    t, t_load, t_serving, seen = served
    kind = "consumer" if seen.consumer is not None else "classic" if seen.classic is not None else "no"
    port.session.__dict__.setdefault("mixed_restart_kinds", []).append(kind)  # for `faults.summary`
    port.log.append(
        f"t={t} restart; group served again at t={t_serving} ({kind} group), loaded after t={t_load}"
    )
    reload(
        port,
        t,
        lambda h0: load_times(port, h0, t, t_load),
        lambda h0, at: loaded_all(port, h0, at, t_load),
        lambda h: matches(port, h, seen),
    )
    return Result()
