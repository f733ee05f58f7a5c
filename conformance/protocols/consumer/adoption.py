"""Adopting the target's server-assignor choice into a KIP-848 hypothesis (docs/protocol-reference.md#b11, #f).

When the target's answer differs from the model only in the assignment, the oracle installs a
target assignment in which the member gets what the target gave and the other members' targets
are completed legally (`assignment.complete_assignment`). What the target's answers revealed of
members' targets since the assignment was computed is never changed by a later adoption
(`pin_revealed`, `adoption_constraints`); if no legal completion exists the target's choice is
illegal, a protocol finding. The model coordinator runs the adopted assignment through a hook
(`Adopting`, `adopting`). The functions are shared by the consumer and the mixed oracle;
`AssignmentAdoption` is the consumer port's part. The member id a coordinator makes for a v0 join
is taken too (`generated_member_id`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from conformance.engine.oracle.adoption import derive
from conformance.protocols.consumer.assignment import Pin, complete_assignment
from conformance.protocols.consumer.hypo import CHypo
from conformance.protocols.consumer.judge import compare, short, tps
from model.consumer.assignors import GroupAssignment
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartition,
)
from model.consumer.records import TargetAssignmentMemberRecord, apply
from model.consumer.state import ConsumerCoordinatorState, ConsumerGroup, MemberState
from model.errors import ErrorCode


class Adopting:
    """Mixed into the model coordinator: `run_assignor` returns the adopted assignment when one is set."""

    adopt: dict[str, frozenset[TopicPartition]] | None = None
    adopt_pins: Mapping[str, Pin] = {}

    def run_assignor(  # type: ignore[no-untyped-def]
        self, name, members, topics, homogeneous
    ) -> GroupAssignment:
        base = super().run_assignor(name, members, topics, homogeneous)  # type: ignore[misc]
        if self.adopt is None:
            return base  # type: ignore[no-any-return]
        done = complete_assignment(base, self.adopt, members, topics, name, homogeneous, self.adopt_pins)
        if done is None:
            raise NoLegal(f"no legal {name} assignment gives {sorted(self.adopt)} what the target gave")
        return done


class NoLegal(Exception):
    """No legal completion gives the adopted members what the target gave them."""


def adopting(coordinator: ConsumerCoordinator, initial_group_epoch: int) -> ConsumerCoordinator:
    """A copy of ``coordinator`` (mutants included) with the adoption hook and the epoch origin."""
    out: Any = derive(coordinator, Adopting, "Adopting")
    out.config = dataclasses.replace(coordinator.config, initial_group_epoch=initial_group_epoch)
    out.adopt = None
    return out  # type: ignore[no-any-return]


class AssignmentAdoption:
    """Mixed into `ConsumerOraclePort`: the request applied to a candidate and, when the answer
    differs only in the assignment, the target's choice adopted (module docstring)."""

    coords: dict[int, Any]

    def _apply(
        self, c: CHypo, request: Any, ref: int, at: int, target: Any, prior: frozenset[TopicPartition] | None
    ) -> list[tuple[CHypo, str | None]]:
        before = c.state.copy()
        request, refused = generated_member_id(c.state, request, target)
        answer = self._run(c, request, ref, at)
        c._answer = answer  # type: ignore[attr-defined]
        if target is None:
            return [(c, None)]
        if refused is not None:
            return [(c, refused)]
        why, _notes = compare(answer, target, prior)
        if why is None:
            self._freeze(c, request, target)
            return [(c, None)]
        why = f"{short(target)} vs model {short(answer)}: {why}"
        if (
            not isinstance(request, ConsumerGroupHeartbeatRequest)
            or target.error_code != ErrorCode.NONE
            or answer.error_code != ErrorCode.NONE
        ):
            return [(c, why)]
        got = revealed_assignment(before, request, target)
        if got is None:
            return [(c, why)]
        out: list[tuple[CHypo, str | None]] = []
        for adopted, why2 in self._adopt(c, before, request, ref, at, target, prior, got):
            out.append((adopted, why2))
        if not any(w is None for _, w in out):
            out.append((c, why))
        return out

    def _adopt(
        self,
        c: CHypo,
        before: ConsumerCoordinatorState,
        request: ConsumerGroupHeartbeatRequest,
        ref: int,
        at: int,
        target: ConsumerGroupHeartbeatResponse,
        prior: frozenset[TopicPartition] | None,
        got: frozenset[TopicPartition],
    ) -> list[tuple[CHypo, str | None]]:
        """The target's assignment choice (``got``: what the member holds as assigned after the
        answer, `revealed_assignment`), installed in the model when it is legal (module docstring)."""
        coord = self.coords[c.origin]
        gid = request.group_id
        after_group = c.state.groups.get(gid)
        member_after = None if after_group is None else after_group.members.get(request.member_id)
        model_target = frozenset() if after_group is None else after_group.target_of(request.member_id)
        held_by_others: frozenset[TopicPartition] = frozenset()
        if after_group is not None:
            for mid, m in after_group.members.items():
                if mid != request.member_id:
                    held_by_others |= m.held
        options = [got]
        if member_after is not None and member_after.state != MemberState.STABLE:
            options.append(got | (model_target - got))
        options.append(got | (held_by_others & model_target))
        options = list(dict.fromkeys(options))
        recomputed = after_group is not None and (
            before.groups.get(gid) is None
            or before.groups[gid].assignment_epoch != after_group.assignment_epoch
        )
        # last: the member's target only bounded (it holds ``got``; a free partition it lacks is not
        # in it), when its target is still held by others: what it will get is not revealed yet
        free = free_partitions(before, after_group, gid, request.member_id)
        tries: list[tuple[frozenset[TopicPartition], bool]] = [(w, False) for w in options] + [(got, True)]
        out: list[tuple[CHypo, str | None]] = []
        for want, bounded in tries:
            if bounded and any(w is None for _, w in out):
                break
            d = CHypo(before.copy(), c.origin, c.now, c.pins, c.pin_epoch, c.adoptions + 1, c.fired, c.notes)
            g = d.state.groups.get(gid)
            key = adoption_key(g, request.member_id, request.instance_id)
            fixed, pins = adoption_constraints(d.pins, d.pin_epoch, g, key, want, recomputed)
            if bounded:
                del fixed[key]
                pins = {**pins, key: Pin(want, free - want, False)}
            try:
                if recomputed:
                    coord.adopt, coord.adopt_pins = fixed, (pins if bounded else {})  # type: ignore[attr-defined]
                    try:
                        answer = self._run(d, request, ref, at)
                    finally:
                        coord.adopt = None  # type: ignore[attr-defined]
                else:
                    if g is None or key not in g.members:
                        continue
                    if not self._install(d, gid, fixed, pins):
                        out.append((d, f"adopting {tps(want)} for {request.member_id}: no legal completion"))
                        continue
                    answer = self._run(d, request, ref, at)
            except NoLegal as e:
                out.append((d, str(e)))
                continue
            why, _ = compare(answer, target, prior)
            d._answer = answer  # type: ignore[attr-defined]
            if why is None:
                self._freeze(d, request, target)
                g_after = d.state.groups.get(gid)
                name = (g_after.last_assignor if g_after is not None else None) or "uniform"
                why_free = (
                    "uniform tie-breaking follows Java hash-map order, docs/protocol-reference.md#f"
                    if name == "uniform"
                    else "Kafka's range assignor is deterministic (RA L243): a kafka-compat deviation"
                )
                d.notes = d.notes + (
                    f"the target's {name} assignor targeted {tps(want)} to {request.member_id} where the "
                    f"model's chose {tps(model_target)}; both legal ({why_free}), adopted",
                )
            out.append((d, None if why is None else f"adopted {tps(want)}: {why}"))
        return out

    def _install(
        self, d: CHypo, gid: str, fixed: dict[str, frozenset[TopicPartition]], pins: Mapping[str, Pin]
    ) -> bool:
        """Replace the current target assignment by a legal one with ``fixed`` members' sets."""
        return install_target(self.coords[d.origin], d.state, gid, fixed, pins) is not None

    def _freeze(self, c: CHypo, request: Any, target: Any) -> None:
        """Pin what the member's (matched) answer revealed of its target; later adoptions keep it."""
        if not isinstance(request, ConsumerGroupHeartbeatRequest) or target.error_code != ErrorCode.NONE:
            return
        g = c.state.groups.get(request.group_id)
        if g is not None:
            c.pins, c.pin_epoch = pin_revealed(c.pins, c.pin_epoch, g, request.member_id)


def generated_member_id(state: ConsumerCoordinatorState, request: Any, target: Any) -> tuple[Any, str | None]:
    """The request to run on a hypothesis, and why the target's answer is refused (None: it is not).

    A v0 join without a member id has the coordinator make one (KIP-848; from v1 the client must
    send its own, KIP-1082): Kafka draws a random Uuid and goes on as for a join under it
    (GroupMetadataManager ``consumerGroupHeartbeat``, apache/kafka@1eb7644 L1744). So the hypothesis
    runs the join under the target's id; an id a member already has, or a blank one, is no fresh id."""
    if (
        not isinstance(request, ConsumerGroupHeartbeatRequest)
        or request.version != 0
        or request.member_epoch != 0
        or request.member_id != ""
        or not isinstance(target, ConsumerGroupHeartbeatResponse)
        or target.error_code != ErrorCode.NONE
        or not (target.member_id or "").strip()
    ):
        return request, None
    g = state.groups.get(request.group_id)
    if g is not None and target.member_id in g.members:
        return (
            request,
            f"the target generated member id {target.member_id!r}, which a member of the group has",
        )
    return dataclasses.replace(request, member_id=target.member_id), None


def free_partitions(
    before: ConsumerCoordinatorState, after_group: ConsumerGroup | None, gid: str, member_id: str
) -> frozenset[TopicPartition]:
    """The group's subscribed partitions no other member holds before the request: one in the
    member's target would have been given to it at once."""
    if after_group is None:
        return frozenset()
    g = before.groups.get(gid)
    held: set[TopicPartition] = set()
    for mid, m in g.members.items() if g is not None else ():
        if mid != member_id:
            held |= m.held
    every = {(t, p) for t, n in after_group.subscription_metadata.items() for p in range(n)}
    return frozenset(every - held)


def install_target(
    coord: ConsumerCoordinator,
    state: ConsumerCoordinatorState,
    gid: str,
    fixed: Mapping[str, frozenset[TopicPartition]],
    pins: Mapping[str, Pin],
) -> set[str] | None:
    """Replace group ``gid``'s current target assignment in ``state`` by a legal one giving ``fixed``
    members exactly their sets and ``pins`` members their floor and none of their exclusions
    (`complete_assignment`, the group's assignor and subscriptions); the members whose target
    changed, or None when no legal completion exists (nothing changed). Shared by the consumer and
    the mixed oracle."""
    from model.consumer.assignors import is_homogeneous

    g = state.groups.get(gid)
    if g is None:
        return None
    specs = coord.assignment_specs(state, g)
    homogeneous = is_homogeneous(coord.subscribed_topics(state, g, m) for m in g.members.values())
    name = g.last_assignor or coord.config.assignors[0]
    done = complete_assignment(
        dict(g.target), fixed, specs, dict(g.subscription_metadata), name, homogeneous, pins
    )
    if done is None:
        return None
    changed: set[str] = set()
    for member_id, parts in sorted(done.items()):
        if parts != g.target_of(member_id):
            changed.add(member_id)
            apply(state, TargetAssignmentMemberRecord(gid, member_id, tuple(sorted(parts))))
    return changed


def pin_revealed(
    pins: Mapping[str, Pin], pin_epoch: int, group: ConsumerGroup, member_id: str
) -> tuple[Mapping[str, Pin], int]:
    """``(pins, pin_epoch)`` once an answer to ``member_id`` matched: what the member is assigned and
    revokes now is what the target told it, so a later adoption keeps it (its floor and exclusions;
    all of it when the member is reconciled to the assignment epoch). Pins of an older assignment
    epoch are dropped: a new target may move anything. Shared by the consumer and the mixed oracle
    (there a classic member's SyncGroup answer reveals its assigned partitions, GMM
    ``classicGroupSyncToConsumerGroup`` -> ``prepareAssignment``, apache/kafka@1eb7644 L5361-5407)."""
    if pin_epoch != group.assignment_epoch:
        pins, pin_epoch = {}, group.assignment_epoch
    m = group.members.get(member_id)
    if m is None:
        return pins, pin_epoch
    exact = m.state == MemberState.STABLE and m.member_epoch == group.assignment_epoch
    return {**pins, member_id: Pin(m.assigned, m.pending_revocation, exact)}, pin_epoch


def adoption_key(group: ConsumerGroup | None, member_id: str, instance_id: str | None) -> str:
    """The member id under which the target's choice for ``member_id`` is adopted: a static member's
    replacement (a new member id with a known instance id) copies the departing member's target
    assignment (docs/protocol-reference.md#b7, GMM L2204-2290), so Kafka's choice is that member's."""
    if group is not None and member_id not in group.members and instance_id is not None:
        static = group.static_member(instance_id)
        if static is not None:
            return static.member_id
    return member_id


def adoption_constraints(
    pins: Mapping[str, Pin],
    pin_epoch: int,
    group: ConsumerGroup | None,
    key: str,
    want: frozenset[TopicPartition],
    recomputed: bool,
) -> tuple[dict[str, frozenset[TopicPartition]], dict[str, Pin]]:
    """(members whose target is fixed, members pinned to a floor) for adopting ``want`` as ``key``'s
    target: ``key`` gets ``want``, members the target has shown reconciled keep exactly their sets,
    others their floor and exclusions. Pins hold only while the assignment epoch they were taken at
    is the group's and the adoption does not recompute the target."""
    kept: dict[str, Pin] = {}
    if group is not None and pin_epoch == group.assignment_epoch and not recomputed:
        kept = {m: p for m, p in pins.items() if m in group.members and m != key}
    fixed = {m: p.floor for m, p in kept.items() if p.exact}
    fixed[key] = want
    return fixed, {m: p for m, p in kept.items() if not p.exact}


def revealed_assignment(
    before: ConsumerCoordinatorState, request: Any, target: Any
) -> frozenset[TopicPartition] | None:
    """What a matched-in-all-but-assignment heartbeat answer says the member is assigned now.

    An answer without an assignment says "unchanged" (docs/protocol-reference.md#b10): Kafka sets it only for a join,
    a full request or when the member's assigned partitions changed (group-coordinator
    GroupMetadataManager ``consumerGroupHeartbeat``: ``isFullRequest ||
    hasAssignedPartitionsChanged(member, updatedMember)``, apache/kafka mirror 1eb7644). So an
    omitted assignment reveals as much as an explicit one: the member still holds what it held before
    the request (in this hypothesis). That is how a target whose uniform assignor gave the freed
    partition to another member (hash-map order, docs/protocol-reference.md#f) answers a member that gets nothing
    new. None when the hypothesis does not know the member (nothing to adopt against)."""
    got: frozenset[TopicPartition] | None = target.assigned()
    if got is not None:
        return got
    g = before.groups.get(request.group_id)
    m = None if g is None else g.members.get(request.member_id)
    return None if m is None else m.assigned
