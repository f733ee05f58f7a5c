"""Classic-protocol mutants of the second (held-out) bug catalogue, docs/bug-catalogue-heldout.md.

Each class overrides one rule of `model.classic.coordinator.ClassicCoordinator` or of
`model.classic.client.ClassicClient` and reproduces one real bug that the first catalogue (and the
suite's invariants) were not built for; ``specs/bugs-heldout.yaml`` names the source of each.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from conformance.mutants.base import Mutant
from model.classic.client import ClassicClient, Phase
from model.classic.coordinator import ClassicCoordinator, Tx
from model.classic.messages import (
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupResponse,
)
from model.classic.records import MemberUpserted
from model.classic.state import ClassicGroup, ClassicState, GroupState, Member
from model.errors import ErrorCode
from model.result import Result

S = GroupState
E = ErrorCode

# ---------------------------------------------------------------------------------- coordinator


class NoSyncDeadline(ClassicCoordinator):
    """KAFKA-12890: no deadline for the SyncGroups of CompletingRebalance, so a member that keeps
    heartbeating but never syncs holds the group in CompletingRebalance for ever."""

    def complete_join(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        super().complete_join(tx, group, now)
        if "sync" in group.timers:
            tx.timer(group, "sync", None)


class V0RebalanceTimeoutZero(ClassicCoordinator):
    """KAFKA-8653: a JoinGroup v0 (no rebalance-timeout field) gets rebalance timeout 0 instead of
    its session timeout, so the join phase ends at once and members that have not rejoined yet are
    dropped."""

    def handle_join_group(self, state: ClassicState, req: JoinGroupRequest, ref: int, now: int) -> Result:
        if req.version == 0:
            req = _ZeroRebalanceTimeout(**{f.name: getattr(req, f.name) for f in fields(req)})
        return super().handle_join_group(state, req, ref, now)


@dataclass(frozen=True)
class _ZeroRebalanceTimeout(JoinGroupRequest):
    """A v0 JoinGroup read as carrying rebalance timeout 0 (the bug), not the session timeout."""

    @property
    def effective_rebalance_timeout_ms(self) -> int:
        return 0


class ParkedNewMemberNeverExpires(ClassicCoordinator):
    """KAFKA-7610: a new member whose JoinGroup is parked is never expired (no new-member join
    timeout), so retried joins of clients that gave up pile up as members."""

    def on_member_expired(self, tx: Tx, group: ClassicGroup, member_id: str, now: int) -> None:
        member = group.members.get(member_id)
        if member is not None and member.awaiting_join is not None:
            return
        super().on_member_expired(tx, group, member_id, now)


class NewMemberHeartbeatIgnored(ClassicCoordinator):
    """KAFKA-9232: a member that joined with JoinGroup v3 or older stays "new": its heartbeats never
    satisfy the new-member expiry, so it is removed one new-member join timeout after it joined."""

    def add_member_and_rebalance(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, member_id: str, ref: int, now: int
    ) -> None:
        super().add_member_and_rebalance(tx, group, req, member_id, ref, now)
        if req.version <= 3 and member_id in group.members:
            tx.timer(group, f"newjoin:{member_id}", now + self.config.new_member_join_timeout_ms)

    def fire_timer(self, state: ClassicState, group_id: str, key: str, now: int) -> Result:
        if not key.startswith("newjoin:"):
            return super().fire_timer(state, group_id, key, now)
        tx = Tx(state)
        group = state.groups[group_id]
        tx.timer(group, key, None)
        member_id = key.split(":", 1)[1]
        if member_id in group.members:
            self.remove_member_and_update_group(tx, group, member_id, now)
        return tx.result


class StaticRejoinKeepsTimeouts(ClassicCoordinator):
    """KAFKA-14009: a static member replaced by an unknown-id JoinGroup keeps the session and
    rebalance timeouts of the old member instead of taking the ones of the new request."""

    def replace_static_member(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, new_id: str, ref: int, now: int
    ) -> None:
        assert req.group_instance_id is not None
        old = group.members[group.static_members[req.group_instance_id]]
        kept = replace(
            req, session_timeout_ms=old.session_timeout_ms, rebalance_timeout_ms=old.rebalance_timeout_ms
        )
        super().replace_static_member(tx, group, kept, new_id, ref, now)


class StaticLeaderNotTold(ClassicCoordinator):
    """KAFKA-13435 (KIP-814): a static leader that rejoins a Stable group with JoinGroup v9 is
    answered like a follower (old leader id, no member list, no skip-assignment), so nobody in the
    group acts as leader and metadata changes are never reassigned."""

    def replace_static_member(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, new_id: str, ref: int, now: int
    ) -> None:
        super().replace_static_member(tx, group, replace(req, version=min(req.version, 8)), new_id, ref, now)
        member = group.members.get(new_id)
        if member is not None and member.join_version != req.version:
            tx.emit(MemberUpserted(group.group_id, replace(member, join_version=req.version)))


class PendingBypassesMaxSize(ClassicCoordinator):
    """KAFKA-9885: a KIP-394 pending member id that comes back is admitted whatever
    ``group.max.size`` says (only unknown ids were counted against the limit)."""

    def accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        return member_id in group.pending_members or super().accept_joining_member(group, member_id)


class CommitDuringCompletingRebalance(ClassicCoordinator):
    """KAFKA-8487: an OffsetCommit with the new generation is stored while the group is
    CompletingRebalance, before the member has received its assignment of that generation."""

    def handle_offset_commit(
        self, state: ClassicState, req: OffsetCommitRequest, ref: int, now: int
    ) -> Result:
        group = state.groups.get(req.group_id)
        if group is None or group.state != S.COMPLETING_REBALANCE:
            return super().handle_offset_commit(state, req, ref, now)
        group.state = S.STABLE  # read by the validation only; no record touches the group state here
        try:
            return super().handle_offset_commit(state, req, ref, now)
        finally:
            group.state = S.COMPLETING_REBALANCE


class LateJoinWithoutRebalance(ClassicCoordinator):
    """seaweedfs PR #9162: a new member joining while the group is CompletingRebalance is added and
    answered at the current generation without a new join phase; the leader's assignment, computed
    without it, gives it nothing."""

    def add_member_and_rebalance(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, member_id: str, ref: int, now: int
    ) -> None:
        if group.state != S.COMPLETING_REBALANCE:
            super().add_member_and_rebalance(tx, group, req, member_id, ref, now)
            return
        member = Member(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.session_timeout_ms,
            req.effective_rebalance_timeout_ms,
            req.protocol_type,
            req.protocols,
            join_version=req.version,
        )
        tx.emit(MemberUpserted(group.group_id, member))
        tx.timer(group, f"expire:{member_id}", now + req.session_timeout_ms)
        tx.reply(ref, self.join_response(group, member_id, full=False))


class StaticNotRejoinedRemoved(ClassicCoordinator):
    """KAFKA-8220 (KIP-345): at the end of a join phase static members that did not rejoin are
    removed like dynamic ones, so a static member's restart loses its membership."""

    def complete_join(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        if group.state == S.PREPARING_REBALANCE:
            for member in list(group.members.values()):
                if member.awaiting_join is None and member.instance_id is not None:
                    self.remove_member(tx, group, member.member_id)
        super().complete_join(tx, group, now)


# ---------------------------------------------------------------------------------- clients


class IllegalGenerationDropsMemberId(ClassicClient):
    """KAFKA-13419: ILLEGAL_GENERATION resets the member id as well as the generation, so the
    consumer rejoins as a new member and its old id lingers until its session expires."""

    def _on_error(self, error: ErrorCode) -> None:
        if error == E.ILLEGAL_GENERATION:
            self.last_error = error
            self._reset(member_id=True)
            return
        super()._on_error(error)


class SyncRebalanceResetsGeneration(ClassicClient):
    """KAFKA-14016: a SyncGroup answered REBALANCE_IN_PROGRESS resets the generation, so a
    cooperative consumer gives up every owned partition instead of only the revoked ones."""

    def _on_sync(self, resp: SyncGroupResponse) -> None:
        if resp.error == E.REBALANCE_IN_PROGRESS:
            self.last_error = resp.error
            self._reset(member_id=False)
            return
        super()._on_sync(resp)


class CommitRebalanceResetsGeneration(ClassicClient):
    """kafka-python PR #2614 (KAFKA-8487 client side): an OffsetCommit answered REBALANCE_IN_PROGRESS
    resets the generation instead of only asking for a rejoin."""

    def on_response(self, response: Any, topics: dict[str, int]) -> None:
        if self.inflight == "commit" and isinstance(response, OffsetCommitResponse):
            if any(e == E.REBALANCE_IN_PROGRESS for _, _, e in response.partitions):
                self.inflight = None
                self.last_error = E.REBALANCE_IN_PROGRESS
                self._reset(member_id=False)
                return
        super().on_response(response, topics)


class LostIdKeepsOwned(ClassicClient):
    """KAFKA-12983: a cooperative consumer that loses its member id while joining or syncing skips
    onJoinPrepare and keeps its owned partitions, then claims them in its next JoinGroup."""

    def _reset(self, *, member_id: bool) -> None:
        keep = self.owned if member_id and self.phase in (Phase.JOINING, Phase.SYNCING) else None
        super()._reset(member_id=member_id)
        if keep is not None:
            self.owned = keep


def _m(name: str, fault: str, source: str, **parts: Any) -> Mutant:
    return Mutant(name, "classic", "heldout", fault, source, (), **parts)


HELDOUT_CLASSIC_MUTANTS: tuple[Mutant, ...] = (
    _m(
        "kafka-12890",
        "no SyncGroup deadline in CompletingRebalance",
        "KAFKA-12890 / apache/kafka PR #10863",
        coordinator=NoSyncDeadline,
    ),
    _m(
        "kafka-8653",
        "JoinGroup v0 gets rebalance timeout 0",
        "KAFKA-8653 / apache/kafka PR #7072",
        coordinator=V0RebalanceTimeoutZero,
    ),
    _m(
        "kafka-7610",
        "a parked new member never expires",
        "KAFKA-7610 / apache/kafka PR #5962",
        coordinator=ParkedNewMemberNeverExpires,
    ),
    _m(
        "kafka-9232",
        "a JoinGroup v3 member expires at the new-member timeout despite heartbeats",
        "KAFKA-9232 / apache/kafka PR #7753",
        coordinator=NewMemberHeartbeatIgnored,
    ),
    _m(
        "kafka-14009",
        "a replaced static member keeps its old timeouts",
        "KAFKA-14009 / apache/kafka PR #12308",
        coordinator=StaticRejoinKeepsTimeouts,
    ),
    _m(
        "kafka-13435",
        "a static leader rejoining a Stable group is not told it leads (no KIP-814)",
        "KAFKA-13435 / apache/kafka PR #11688",
        coordinator=StaticLeaderNotTold,
    ),
    _m(
        "kafka-9885",
        "a returning KIP-394 pending member bypasses group.max.size",
        "KAFKA-9885 / apache/kafka PR #8525",
        coordinator=PendingBypassesMaxSize,
    ),
    _m(
        "kafka-8487",
        "OffsetCommit accepted while CompletingRebalance",
        "KAFKA-8487 / apache/kafka PR #6894",
        coordinator=CommitDuringCompletingRebalance,
    ),
    _m(
        "seaweedfs-9162",
        "a late joiner in CompletingRebalance is answered without a new join phase",
        "seaweedfs/seaweedfs PR #9162",
        coordinator=LateJoinWithoutRebalance,
    ),
    _m(
        "kafka-8220",
        "static members that did not rejoin are removed at join completion",
        "KAFKA-8220 / apache/kafka PR #6666 (KIP-345)",
        coordinator=StaticNotRejoinedRemoved,
    ),
    _m(
        "kafka-13419",
        "ILLEGAL_GENERATION also resets the member id",
        "KAFKA-13419 / apache/kafka PR #11451",
        client=IllegalGenerationDropsMemberId,
    ),
    _m(
        "kafka-14016",
        "SyncGroup REBALANCE_IN_PROGRESS resets the generation",
        "KAFKA-14016 / apache/kafka PRs #12140, #12348",
        client=SyncRebalanceResetsGeneration,
    ),
    _m(
        "kafka-python-2614",
        "OffsetCommit REBALANCE_IN_PROGRESS resets the generation",
        "dpkp/kafka-python PR #2614; KAFKA-8487",
        client=CommitRebalanceResetsGeneration,
    ),
    _m(
        "kafka-12983",
        "a lost member id during a join keeps the owned partitions",
        "KAFKA-12983 / apache/kafka PR #10986",
        client=LostIdKeepsOwned,
    ),
)
