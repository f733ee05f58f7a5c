"""Audit a coordinator's history (decoded `__consumer_offsets` records) with the registry's predicates.

The records are folded in log order into the model's own snapshot types, and the same predicates
the Hypothesis suite uses are evaluated on each state the log reaches (one definition, docs/invariants.md):

* classic groups: every GroupMetadata value becomes a `ClassicWorld` whose group is the stored
  generation (Stable with its members' stored assignments; Empty without members) and whose
  `persisted` is the record itself. A log holds no timers, parked requests or client views, so only
  the predicates over stored state apply (`CLASSIC_APPLICABLE`); the leader's stored assignment is
  also checked with the `client.*` assignor predicates, its subscriptions decoded from the stored
  member metadata (model.embedded).
* consumer (KIP-848) groups: group epoch, member metadata, target assignment and current member
  assignments fold into a `GroupView` (partition epochs derived from the current assignments as
  Kafka's loader does, state derived by `derive_group_state`), evaluated at the end of each append:
  records of one append share their timestamp (CoordinatorRuntime writes a batch at one time), and a
  state in the middle of an append is never visible to anyone.

Predicates that need what a log cannot hold (timers, responses, client views) are listed as not
applicable in the report rather than silently passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from conformance.pipeline.coordlog import (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    CONSUMER_GROUP_MEMBER_METADATA,
    CONSUMER_GROUP_METADATA,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
    GROUP_METADATA,
    CoordinatorRecord,
)
from model.invariants import REGISTRY, load_all
from model.observation import Observation

CLASSIC_APPLICABLE = (
    "classic.generation_monotonic",
    "classic.leader_is_member",
    "classic.single_owner_coordinator",
    "classic.static_instance_unique",
    "client.assignment_only_subscribed",
    "client.assignment_single_owner",
    "client.assignment_complete",
)
CONSUMER_APPLICABLE = (
    "consumer.single_partition_holder",
    "consumer.legal_target_assignment",
    "consumer.valid_member_epoch",
    "consumer.valid_stable_group_state",
    "consumer.member_epoch_monotonic",
)


@dataclass
class CoordAudit:
    records: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    states_checked: dict[str, int] = field(default_factory=dict)  # group id -> states evaluated
    checks: dict[str, int] = field(default_factory=dict)  # invariant -> evaluations
    violations: list[tuple[str, int, str, str]] = field(default_factory=list)  # (group, offset, inv, msg)
    quarantined: list[tuple[int, str]] = field(default_factory=list)
    not_applicable: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        if self.violations:
            return "FAILED"
        return "PASSED" if sum(self.checks.values()) else "INCONCLUSIVE"


def _classic_world(value: Mapping[str, Any], group_id: str, topics: Mapping[str, int]) -> Any:
    from model.classic.state import GroupState
    from model.classic.world import ClassicWorld, GroupSnap, MemberSnap, PersistedSnap

    members = tuple(
        MemberSnap(
            m["member_id"],
            m["instance_id"],
            value["protocol_type"] or "",
            (value["protocol"],) if value["protocol"] else (),
            m["assignment"],
            None,
            None,
            False,
            m["session_timeout_ms"],
            m["rebalance_timeout_ms"],
        )  # fmt: skip
        for m in value["members"]
    )
    state = GroupState.STABLE if members else GroupState.EMPTY
    group = GroupSnap(
        group_id, state, None, value["generation"], value["protocol_type"], value["protocol"], value["leader"],
        members, tuple(sorted((m.instance_id, m.member_id) for m in members if m.instance_id)),
        frozenset(), frozenset(), (),
    )  # fmt: skip
    persisted = PersistedSnap(value["generation"], tuple((m.member_id, m.assignment) for m in members))
    return ClassicWorld(
        group, (), persisted, (), (), False, 2**31 - 1, 0, tuple(sorted(topics.items())), None
    )


def _assignment_observation(value: Mapping[str, Any], topics: Mapping[str, int]) -> Any:
    from model.assignors import get_assignor
    from model.assignors.invariants import AssignmentObservation
    from model.embedded import decode_assignment, decode_subscription

    protocol = value["protocol"]
    try:
        rebalance = get_assignor(protocol).rebalance_protocols[0]
    except Exception:  # an assignor the model does not know: the eager rules are the weaker claim
        rebalance = "EAGER"
    subs = {m["member_id"]: decode_subscription(m["subscription"]) for m in value["members"]}
    assignments = {m["member_id"]: decode_assignment(m["assignment"]) for m in value["members"]}
    wanted = {t for s in subs.values() for t in s.topics}
    return AssignmentObservation(
        {t: n for t, n in topics.items() if t in wanted}, subs, assignments, rebalance
    )


@dataclass
class _ConsumerGroupFold:
    epoch: int = 0
    assignment_epoch: int = 0
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)
    current: dict[str, dict[str, Any]] = field(default_factory=dict)
    target: dict[str, frozenset[tuple[str, int]]] = field(default_factory=dict)


def _parts(tps: Iterable[Mapping[str, Any]], names: Mapping[str, str]) -> frozenset[tuple[str, int]]:
    return frozenset((names.get(tp["topic_id"], tp["topic_id"]), p) for tp in tps for p in tp["partitions"])


def _consumer_world(
    gid: str, f: _ConsumerGroupFold, names: Mapping[str, str], topics: Mapping[str, int]
) -> Any:
    from model.consumer.state import ConsumerMember, MemberState, derive_group_state
    from model.consumer.world import ConsumerWorld, GroupView

    members: dict[str, ConsumerMember] = {}
    for mid, md in f.metadata.items():
        cur = f.current.get(mid, {})
        members[mid] = ConsumerMember(
            mid, md["instance_id"], md["rack_id"], md["rebalance_timeout_ms"],
            frozenset(md["subscribed_topic_names"]), md["subscribed_topic_regex"], md["server_assignor"],
            cur.get("member_epoch", 0), cur.get("previous_member_epoch", -1),
            MemberState(cur.get("state", 0)) if cur.get("state", 0) in (0, 1, 2) else MemberState.UNKNOWN,
            _parts(cur.get("assigned", ()), names), _parts(cur.get("pending_revocation", ()), names),
        )  # fmt: skip
    partition_epochs = {tp: m.member_epoch for m in members.values() for tp in m.held}
    subscribed = {t for m in members.values() for t in m.subscribed_topic_names}
    view = GroupView(
        gid, f.epoch, f.assignment_epoch, derive_group_state(members, f.epoch, f.assignment_epoch),
        MappingProxyType(members), MappingProxyType(dict(f.target)), MappingProxyType(partition_epochs),
        MappingProxyType({t: n for t, n in topics.items() if t in subscribed}),
        MappingProxyType({m.instance_id: mid for mid, m in members.items() if m.instance_id}),
        MappingProxyType({}),
    )  # fmt: skip
    return ConsumerWorld(MappingProxyType({gid: view}), (), MappingProxyType(dict(topics)))


def audit_records(
    records: Iterable[CoordinatorRecord],
    topic_names: Mapping[str, str],
    topics: Mapping[str, int],
    groups: Iterable[str] | None = None,
) -> CoordAudit:
    """`topic_names`: topic id -> name; `topics`: name -> partition count (from the broker's metadata)."""
    load_all()
    wanted = set(groups) if groups is not None else None
    out = CoordAudit()
    out.not_applicable = tuple(
        sorted(
            i for i, inv in REGISTRY.items()
            if inv.protocol in ("classic", "consumer", "client") and inv.kind != "sometimes"
            and i not in CLASSIC_APPLICABLE + CONSUMER_APPLICABLE
        )
    )  # fmt: skip
    classic_before: dict[str, Any] = {}
    folds: dict[str, _ConsumerGroupFold] = {}
    consumer_before: dict[str, Any] = {}
    dirty: set[str] = set()
    last_ts: int | None = None
    last_offset = -1

    def check(gid: str, inv_id: str, obs: Any, offset: int) -> None:
        out.checks[inv_id] = out.checks.get(inv_id, 0) + 1
        for msg in REGISTRY[inv_id].check(obs):
            out.violations.append((gid, offset, inv_id, msg))

    def flush(offset: int) -> None:
        for gid in sorted(dirty):
            world = _consumer_world(gid, folds[gid], topic_names, topics)
            obs = Observation(consumer_before.get(gid), None, (), world, 0)
            for inv_id in CONSUMER_APPLICABLE:
                check(gid, inv_id, obs, offset)
            consumer_before[gid] = world
            out.states_checked[gid] = out.states_checked.get(gid, 0) + 1
        dirty.clear()

    for rec in records:
        out.records += 1
        out.by_type[rec.name] = out.by_type.get(rec.name, 0) + 1
        if last_ts is not None and rec.timestamp != last_ts:
            flush(last_offset)
        last_ts, last_offset = rec.timestamp, rec.offset
        gid = rec.key.get("group")
        if gid is None or (wanted is not None and gid not in wanted):
            continue
        v = rec.value
        if rec.record_type == GROUP_METADATA:
            if v is None:
                classic_before.pop(gid, None)
                continue
            if v.get("protocol_type") != "consumer":
                continue
            world = _classic_world(v, gid, topics)
            obs = Observation(classic_before.get(gid), None, (), world, 0)
            for inv_id in CLASSIC_APPLICABLE:
                if inv_id.startswith("client."):
                    if v["members"] and v["protocol"]:
                        try:
                            aobs = _assignment_observation(v, topics)
                        except ValueError as exc:
                            out.quarantined.append((rec.offset, f"member metadata does not decode: {exc}"))
                            break
                        check(gid, inv_id, aobs, rec.offset)
                else:
                    check(gid, inv_id, obs, rec.offset)
            classic_before[gid] = world
            out.states_checked[gid] = out.states_checked.get(gid, 0) + 1
            continue
        f = folds.setdefault(gid, _ConsumerGroupFold())
        mid = rec.key.get("member_id")
        if rec.record_type == CONSUMER_GROUP_METADATA:
            if v is None:
                folds.pop(gid, None)
                consumer_before.pop(gid, None)
                dirty.discard(gid)
                continue
            f.epoch = v["epoch"]
        elif rec.record_type == CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
            f.assignment_epoch = v["assignment_epoch"] if v else 0
        elif rec.record_type == CONSUMER_GROUP_MEMBER_METADATA:
            if v is None:
                f.metadata.pop(mid, None)
            else:
                f.metadata[mid] = v
        elif rec.record_type == CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
            if v is None:
                f.target.pop(mid, None)
            else:
                f.target[mid] = _parts(v["topic_partitions"], topic_names)
        elif rec.record_type == CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            if v is None:
                f.current.pop(mid, None)
            else:
                f.current[mid] = v
        else:
            continue
        dirty.add(gid)
    flush(last_offset)
    return out
