"""Adopting the target's legal choices into a mixed-group hypothesis (docs/protocol-reference.md#b11, #b13, #f).

Member ids the coordinator generates (a classic JoinGroup without one) are legal when no member of
the group has them; the model's fresh id is renamed to the target's (`_adopt_member_id`). The
server assignor's choices are adopted as in the KIP-848 oracle (`consumer.adoption`); for a
classic member the partitions are those of its SyncGroup assignment bytes. A classic member's
JoinGroup reconciles it to partitions its answer does not show (`Unrevealed`, `_reveal`); when an
adoption changes that member's target before its SyncGroup, its reconciliation is done again to
the new target (`_rereconcile`) and the request's observation starts from that state
(`SplitPort.rewritten`; `--protocol all --profile faults --seed 1` on Kafka 4.4.0).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from conformance.engine.oracle.adoption import rename
from conformance.protocols.consumer.adoption import (
    NoLegal,
    adoption_constraints,
    adoption_key,
    install_target,
    pin_revealed,
    revealed_assignment,
)
from conformance.protocols.mixed.hypo import MHypo, Unrevealed, member_ids
from conformance.protocols.mixed.judge import compare, given, sync_partitions, tps
from model.classic.messages import JoinGroupResponse, SyncGroupResponse
from model.consumer.messages import ConsumerGroupHeartbeatResponse, TopicPartition
from model.consumer.reconcile import CurrentAssignment, reconcile
from model.consumer.records import CurrentAssignmentRecord, apply
from model.consumer.state import NO_EPOCH, ConsumerMember, MemberState
from model.embedded import EmbeddedDecodeError, decode_subscription
from model.errors import ErrorCode
from model.mixed.coordinator import MixedCoordinator


class MixedAdoption:
    """Mixed into `MixedOraclePort`: what an explained answer reveals, and the target's choices
    adopted when the model's answer differs (module docstring)."""

    coords: dict[int, MixedCoordinator]
    _t_ans: int

    def _reveal(self, before: MHypo, c: MHypo, request: Any, target: Any) -> MHypo:
        """Record what an answer ``c`` explains reveals of the group's assignment: a heartbeat's or a
        SyncGroup's partitions pin the member's target (`consumer.adoption.pin_revealed`); a classic
        member's JoinGroup reconciles it without showing its partitions (`Unrevealed`), its SyncGroup
        shows them."""
        gid = getattr(request, "group_id", None)
        g = None if gid is None else c.state.consumer.groups.get(gid)
        ok = getattr(target, "error_code", getattr(target, "error", None)) == ErrorCode.NONE
        if g is None or not ok:
            return c
        if isinstance(target, ConsumerGroupHeartbeatResponse | SyncGroupResponse):
            c.pins, c.pin_epoch = pin_revealed(c.pins, c.pin_epoch, g, request.member_id)
            c.unrevealed = {m: u for m, u in c.unrevealed.items() if m != request.member_id}
        elif isinstance(target, JoinGroupResponse) and target.member_id in g.members:
            start = self._join_start(before, request, target.member_id)
            try:
                owned = frozenset(decode_subscription(request.protocols[0][1]).owned_partitions)
            except (EmbeddedDecodeError, IndexError):
                return c
            u = Unrevealed(start, owned, target.generation_id, g.assignment_epoch)
            c.unrevealed = {**c.unrevealed, target.member_id: u}
        return c

    @staticmethod
    def _join_start(before: MHypo, request: Any, member_id: str) -> CurrentAssignment:
        """The joining member's current assignment before its JoinGroup (a new member starts empty; a
        static member's replacement takes the replaced member's at epoch 0, GMM
        ``getOrMaybeSubscribeStaticConsumerGroupMember``, as `MixedCoordinator.resolve_classic_static_member`)."""
        g0 = before.state.consumer.groups.get(request.group_id)
        m0 = None if g0 is None else g0.members.get(member_id)
        if m0 is None and g0 is not None and request.group_instance_id is not None:
            static = g0.static_member(request.group_instance_id)
            if static is not None:
                m0 = dataclasses.replace(static, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        m0 = m0 or ConsumerMember(member_id)
        return CurrentAssignment(
            m0.state, m0.member_epoch, m0.previous_member_epoch, m0.assigned, m0.pending_revocation
        )

    def _adopt_member_id(
        self, c: MHypo, answer: Any, target: Any, prior: Any
    ) -> tuple[MHypo, str | None] | None:
        """The coordinator's generated member id (classic JoinGroup without one): legal when fresh."""
        if not isinstance(target, JoinGroupResponse) or not isinstance(answer, JoinGroupResponse):
            return None
        old, new = answer.member_id, target.member_id
        if not old or not new or old == new or new in member_ids(c.state):
            return None
        d = dataclasses.replace(c, state=rename(c.state, old, new), durable=rename(c.durable, old, new))
        d._answer = dataclasses.replace(answer, member_id=new)  # type: ignore[attr-defined]
        why, _ = compare(d._answer, target, prior)  # type: ignore[attr-defined]
        return (d, None) if why is None else None

    def _adopt_assignment(
        self, before: MHypo, request: Any, ref: int, at: int, answer: Any, target: Any, prior: Any
    ) -> tuple[MHypo, str | None] | None:
        """The target's partitions for this member, installed in the model's target assignment when a
        legal completion exists (`consumer.assignment.complete_assignment`), then the request run again."""
        if isinstance(target, ConsumerGroupHeartbeatResponse):
            if target.error_code != ErrorCode.NONE:
                return None
            # no assignment in the answer means "unchanged" (docs/protocol-reference.md#b10): what it had before, in
            # this hypothesis (`consumer.adoption.revealed_assignment`)
            got = revealed_assignment(before.state.consumer, request, target)
            if got is None:
                return None
            gid = request.group_id
            member_id = adoption_key(
                before.state.consumer.groups.get(gid), request.member_id, request.instance_id
            )
        elif isinstance(target, SyncGroupResponse):
            if target.error != ErrorCode.NONE or not isinstance(answer, SyncGroupResponse):
                return None
            got = sync_partitions(target)
            gid, member_id = request.group_id, request.member_id
            if got is None:
                return None
        elif isinstance(target, JoinGroupResponse):
            # a classic member's rejoin: its generation is its member epoch after reconciliation, so a
            # target that takes nothing from it advances it at once where the model's (another legal
            # choice) makes it revoke first; the partitions show at its SyncGroup (seen on
            # Kafka 4.4.0 with cooperative-sticky members and four partitions)
            if (
                target.error != ErrorCode.NONE
                or not isinstance(answer, JoinGroupResponse)
                or answer.error != ErrorCode.NONE
                or target.generation_id == answer.generation_id
            ):
                return None
            gid, member_id = request.group_id, answer.member_id
            g0 = before.state.consumer.groups.get(gid)
            m0 = None if g0 is None else g0.members.get(member_id)
            if m0 is None:
                return None
            got = m0.assigned
        else:
            return None
        coord = self.coords[before.origin]
        tries: list[tuple[MHypo, bool]] = [(before.copy(), True)]  # the assignor runs in this request
        tries += [(d, False) for d in self._with_target(before, gid, member_id, got, coord)]  # it ran before
        if isinstance(target, SyncGroupResponse):
            # a classic member's partitions were decided at its JoinGroup (reconciliation), which does
            # not show them: take them as assigned now if nobody else holds any of them
            tries += (
                [(d, False) for d in self._with_assigned(tries[-1][0], gid, member_id, got)]
                if len(tries) > 1
                else []
            )
        for d, hook in tries:
            engine: Any = coord.consumer
            if hook:
                engine.adopt, engine.adopt_pins = {member_id: got}, {}
            try:
                again = self._run(d, request, ref, at, self._t_ans)
            except NoLegal:
                continue
            finally:
                engine.adopt = None
            d.now = max(d.now, at)
            why, _ = compare(again, target, prior)
            if why is None:
                d._answer = again  # type: ignore[attr-defined]
                d.adoptions += 1
                d.notes = d.notes + (
                    f"the target's assignor gave {member_id} {tps(got)} where the model's chose "
                    f"{tps(given(answer))}; legal (docs/protocol-reference.md#b11; docs/protocol-reference.md#f), adopted",
                )
                return d, None
        return None

    def _with_target(
        self, h: MHypo, gid: str, member_id: str, got: frozenset[TopicPartition], coord: MixedCoordinator
    ) -> list[MHypo]:
        """``h`` with a legal target assignment giving ``member_id`` exactly ``got`` (none if no legal one):
        what earlier answers revealed of the current target is kept (`consumer.adoption.adoption_constraints`),
        and classic members whose reconciliation no answer has shown yet are reconciled again to the
        new target (`_rereconcile`)."""
        g = h.state.consumer.groups.get(gid)
        if g is None or member_id not in g.members:
            return []
        fixed, pins = adoption_constraints(h.pins, h.pin_epoch, g, member_id, got, False)
        d = h.copy()
        changed = install_target(coord.consumer, d.state.consumer, gid, fixed, pins)
        redone = None if changed is None else self._rereconcile(d, gid, changed, coord)
        if redone is None:
            return []
        if redone:  # the request met this state, not the one shown before it (`SplitPort.rewritten`)
            d.rewritten = (d.state.copy(), d.now)  # type: ignore[attr-defined]
        d.adoptions += 1
        return [d]

    @staticmethod
    def _rereconcile(d: MHypo, gid: str, changed: set[str], coord: MixedCoordinator) -> set[str] | None:
        """Reconcile again, to their new target, the ``changed`` classic members whose JoinGroup
        reconciled them without showing their partitions (`Unrevealed`): as Kafka's JoinGroup would
        have with the target it chose (`model.consumer.reconcile`, the model's own rule, from the
        member's assignment before the join, the other members' holdings as they are). The members
        reconciled again; None when that contradicts what the JoinGroup showed (another generation)
        or would move a revocation, which this does not redo: the target's choice is then not
        explained this way."""
        g = d.state.consumer.groups[gid]
        config = coord.consumer.config
        redone: set[str] = set()
        for mid in sorted(changed):
            u, m = d.unrevealed.get(mid), g.members.get(mid)
            if u is None or m is None or m.classic is None:
                continue
            if u.assignment_epoch != g.assignment_epoch or m.member_epoch != u.generation:
                continue  # reconciled against an earlier target, or moved on since: not this join's
            others = frozenset().union(*(o.held for oid, o in g.members.items() if oid != mid))
            nxt = reconcile(
                u.start,
                g.assignment_epoch,
                g.target_of(mid),
                lambda tp, held=others: g.current_partition_epoch(tp) if tp in held else NO_EPOCH,
                u.owned,
                config.own_pending_is_free,
                config.bump_after_revocation,
            )
            now = CurrentAssignment(
                m.state, m.member_epoch, m.previous_member_epoch, m.assigned, m.pending_revocation
            )
            if nxt == now:
                continue
            revoking = MemberState.UNREVOKED_PARTITIONS
            if nxt is None or nxt.member_epoch != u.generation or revoking in (nxt.state, m.state):
                return None
            redone.add(mid)
            apply(
                d.state.consumer,
                CurrentAssignmentRecord(
                    gid,
                    mid,
                    nxt.member_epoch,
                    nxt.previous_member_epoch,
                    nxt.state,
                    tuple(sorted(nxt.assigned)),
                    tuple(sorted(nxt.pending_revocation)),
                ),
            )
        return redone

    def _with_assigned(
        self, h: MHypo, gid: str, member_id: str, got: frozenset[TopicPartition]
    ) -> list[MHypo]:
        """``h`` (whose target gives ``member_id`` exactly ``got``) with the member reconciled to it,
        when that is legal: no other member holds any of ``got`` and it revokes nothing."""
        g = h.state.consumer.groups.get(gid)
        m = None if g is None else g.members.get(member_id)
        if g is None or m is None or m.pending_revocation:
            return []
        others: frozenset[TopicPartition] = frozenset()
        for mid, other in g.members.items():
            if mid != member_id:
                others |= other.held
        if got & others or g.target_of(member_id) != got:
            return []
        d = h.copy()
        apply(
            d.state.consumer,
            CurrentAssignmentRecord(
                gid,
                member_id,
                m.member_epoch,
                m.previous_member_epoch,
                MemberState.STABLE,
                tuple(sorted(got)),
                (),
            ),
        )
        return [d]
