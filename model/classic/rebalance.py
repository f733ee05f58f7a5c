"""The classic group's rebalance steps that every request and timer shares: prepare, complete the
join, elect the leader, remove members, persist, propagate the assignment, and the timers
(Kafka's ``ClassicGroup`` state machine: Empty, PreparingRebalance, CompletingRebalance, Stable,
Dead; methods of ``GroupMetadataManager`` cited per method).
"""

from __future__ import annotations

from dataclasses import replace

from model.choice import Chooser, SeededChooser
from model.classic.messages import (
    JoinGroupMember,
    JoinGroupResponse,
    SyncGroupResponse,
)
from model.classic.records import (
    AppendFault,
    GroupDeleted,
    GroupMetadataRecord,
    MemberMetadata,
    MemberRemoved,
    MemberUpserted,
    PendingMember,
    PendingSync,
    TopicMetadata,
)
from model.classic.state import ClassicConfig, ClassicGroup, ClassicState
from model.classic.tx import E, S, Tx
from model.errors import ErrorCode
from model.result import Result


class RebalanceRules:
    """Shared steps of the classic coordinator (`model.classic.coordinator`)."""

    def __init__(self, config: ClassicConfig | None = None, chooser: Chooser | None = None) -> None:
        self.config = config or ClassicConfig()
        self.chooser: Chooser = chooser or SeededChooser(0)

    def join_response(self, group: ClassicGroup, member_id: str, *, full: bool) -> JoinGroupResponse:
        members: tuple[JoinGroupMember, ...] = ()
        if full:
            proto = group.protocol or ""
            members = tuple(
                JoinGroupMember(m.member_id, m.instance_id, m.metadata(proto)) for m in group.members.values()
            )
        return JoinGroupResponse(
            E.NONE,
            generation_id=group.generation,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol,
            leader=group.leader or "",
            member_id=member_id,
            members=members,
        )

    def maybe_prepare_rebalance_or_complete_join(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY):
            self.prepare_rebalance(tx, group, now)
        elif group.state == S.PREPARING_REBALANCE:
            self.maybe_complete_join(tx, group, now)

    def maybe_complete_join(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        """Completes only when all joined and the rebalance is not the initial one (GMM L4528)."""
        if (
            group.state == S.PREPARING_REBALANCE
            and group.has_all_members_joined()
            and group.previous_state != S.EMPTY
        ):
            self.complete_join(tx, group, now)

    # ------------------------------------------------------------------ rebalance
    def prepare_rebalance(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        """`prepareRebalance` (GMM L5208)."""
        if group.state == S.COMPLETING_REBALANCE:
            self.reset_assignments_with_error(tx, group, E.REBALANCE_IN_PROGRESS, now)
        tx.timer(group, "sync", None)
        initial = group.state == S.EMPTY
        tx.set(group, state=S.PREPARING_REBALANCE, previous_state=group.state)
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            tx.set(group, new_member_added=False)
            tx.timer(group, "initial", now + delay, delay, remaining)
        elif group.has_all_members_joined():
            self.complete_join(tx, group, now)
        else:
            tx.timer(group, "join", now + group.rebalance_timeout_ms())

    def reset_assignments_with_error(self, tx: Tx, group: ClassicGroup, error: ErrorCode, now: int) -> None:
        """Answer parked syncs with ``error`` and reset every assignment (GMM L5317). A member whose
        parked sync is answered gets a new session, as when it is answered an assignment
        (`resetAndPropagateAssignmentWithError` goes through `propagateAssignment`, which re-arms the
        heartbeat of each member `completeSyncFuture` answered)."""
        for member in list(group.members.values()):
            if member.awaiting_sync is not None:
                tx.reply(member.awaiting_sync, SyncGroupResponse(error))
                tx.timer(group, f"expire:{member.member_id}", now + member.session_timeout_ms)
            if member.awaiting_sync is not None or member.assignment:
                tx.emit(MemberUpserted(group.group_id, replace(member, awaiting_sync=None, assignment=b"")))

    def select_protocol(self, group: ClassicGroup, *, dry_run: bool = False) -> str | None:
        """Each member votes for its first candidate; most votes wins; ties are a choice (CG L999-1060)."""
        candidates = group.candidate_protocols()
        if not candidates:
            return None
        votes: dict[str, int] = {}
        for member in group.members.values():
            vote = next(n for n in member.protocol_names() if n in candidates)
            votes[vote] = votes.get(vote, 0) + 1
        best = max(votes.values())
        tied = sorted(name for name, count in votes.items() if count == best)
        if len(tied) == 1 or dry_run:
            return tied[0]
        return self.chooser.pick("protocol_vote", tied)

    def complete_join(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        """`completeClassicGroupJoin` (GMM L4887) and `initNextGeneration` (CG L1283)."""
        if group.state != S.PREPARING_REBALANCE:
            return
        for member in list(group.members.values()):
            if member.awaiting_join is None and member.instance_id is None:
                self.remove_member(tx, group, member.member_id)
        if not self.elect_joined_leader(tx, group) and group.members:
            tx.timer(group, "join", now + group.rebalance_timeout_ms())
            return
        tx.timer(group, "join", None)
        tx.timer(group, "initial", None)
        generation = group.generation + 1
        if not group.members:
            tx.set(group, generation=generation, protocol=None, leader=None)
            tx.set(group, state=S.EMPTY, previous_state=group.state)
            self.persist(tx, group)
            return
        protocol = self.select_protocol(group)
        tx.set(group, generation=generation, protocol=protocol)
        tx.set(group, state=S.COMPLETING_REBALANCE, previous_state=group.state)
        for member in list(group.members.values()):
            if member.awaiting_join is not None:
                resp = self.join_response(group, member.member_id, full=member.member_id == group.leader)
                tx.reply(member.awaiting_join, resp)
            tx.emit(MemberUpserted(group.group_id, replace(member, awaiting_join=None, is_new=False)))
            tx.timer(group, f"expire:{member.member_id}", now + member.session_timeout_ms)
        tx.emit(PendingSync(group.group_id, frozenset(group.members)))
        tx.timer(group, "sync", now + group.rebalance_timeout_ms(), generation)

    def elect_joined_leader(self, tx: Tx, group: ClassicGroup) -> bool:
        """Keep a joined leader, else pick any joined member (CG L502); False when none joined."""
        leader = group.members.get(group.leader or "")
        if leader is not None and leader.awaiting_join is not None:
            return True
        joined = sorted(m.member_id for m in group.members.values() if m.awaiting_join is not None)
        if not joined:
            return False
        tx.set(group, leader=self.chooser.pick("leader", joined))
        return True

    def remove_member(self, tx: Tx, group: ClassicGroup, member_id: str) -> None:
        """Remove; a removed leader is replaced by an arbitrary remaining member (CG L470)."""
        tx.emit(MemberRemoved(group.group_id, member_id))
        tx.timer(group, f"expire:{member_id}", None)
        if group.leader == member_id:
            rest = sorted(group.members)
            tx.set(group, leader=self.chooser.pick("leader", rest) if rest else None)

    def remove_member_and_update_group(self, tx: Tx, group: ClassicGroup, member_id: str, now: int) -> None:
        """`removeMemberAndUpdateClassicGroup` (GMM L5054)."""
        member = group.members[member_id]
        if member.awaiting_join is not None:
            tx.reply(member.awaiting_join, JoinGroupResponse(E.UNKNOWN_MEMBER_ID, member_id=""))
        self.remove_member(tx, group, member_id)
        self.after_member_removed(tx, group, now)

    def after_member_removed(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self.prepare_rebalance(tx, group, now)
        elif group.state == S.PREPARING_REBALANCE and group.has_all_members_joined():
            self.complete_join(tx, group, now)

    def persist(self, tx: Tx, group: ClassicGroup) -> bool:
        """Append GroupMetadataValue; False when the append fails (injected fault, COEH L52-76)."""
        if tx.state.fail_next_append:
            tx.emit(AppendFault(False))
            return False
        proto = group.protocol or ""
        members = tuple(
            MemberMetadata(
                m.member_id,
                m.instance_id,
                m.client_id,
                m.session_timeout_ms,
                m.rebalance_timeout_ms,
                m.metadata(proto),
                m.assignment,
            )
            for m in group.members.values()
        )
        tx.emit(
            GroupMetadataRecord(
                group.group_id, group.generation, group.protocol_type, group.protocol, group.leader, members
            )
        )
        return True

    def propagate_assignment(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        """Answer the parked SyncGroups; only the members answered get a new session (GMM
        `propagateAssignment` re-arms a member's heartbeat only when `ClassicGroup.completeSyncFuture`
        completed its parked sync): a member that has not sent its SyncGroup yet keeps the session
        its join completion (or last heartbeat) started."""
        for member in list(group.members.values()):
            if member.awaiting_sync is not None:
                resp = SyncGroupResponse(E.NONE, group.protocol_type, group.protocol, member.assignment)
                tx.reply(member.awaiting_sync, resp)
                tx.emit(MemberUpserted(group.group_id, replace(member, awaiting_sync=None)))
                tx.timer(group, f"expire:{member.member_id}", now + member.session_timeout_ms)

    # ------------------------------------------------------------------ time
    def next_deadline(self, state: ClassicState) -> tuple[int, str, str] | None:
        """Earliest armed timer as (deadline, group id, key); ties broken by group id then key."""
        best: tuple[int, str, str] | None = None
        for gid, group in state.groups.items():
            for key, timer in group.timers.items():
                cand = (timer.deadline, gid, key)
                if best is None or cand < best:
                    best = cand
        return best

    def advance(self, state: ClassicState, to: int) -> Result:
        """Fire every timer with deadline <= ``to`` in deadline order (virtual time, docs/model.md)."""
        out = Result()
        while True:
            nxt = self.next_deadline(state)
            if nxt is None or nxt[0] > to:
                return out
            deadline, gid, key = nxt
            out.extend(self.fire_timer(state, gid, key, deadline))

    def fire_timer(self, state: ClassicState, group_id: str, key: str, now: int) -> Result:
        tx = Tx(state)
        group = state.groups[group_id]
        timer = group.timers[key]
        tx.timer(group, key, None)
        if key == "join":
            self.complete_join(tx, group, now)
        elif key == "initial":
            self.on_initial_delay(tx, group, timer.args, now)
        elif key == "sync":
            self.on_sync_expired(tx, group, timer.args[0], now)
        elif key.startswith("expire:"):
            self.on_member_expired(tx, group, key.split(":", 1)[1], now)
        elif key.startswith("pending:"):
            self.on_pending_expired(tx, group, key.split(":", 1)[1], now)
        return tx.result

    def on_initial_delay(self, tx: Tx, group: ClassicGroup, args: tuple[int, ...], now: int) -> None:
        """`tryCompleteInitialRebalanceElseSchedule` (GMM L5277)."""
        delay, remaining = args
        if group.new_member_added and remaining != 0:
            tx.set(group, new_member_added=False)
            wait = min(self.config.initial_rebalance_delay_ms, remaining)
            tx.timer(group, "initial", now + wait, wait, max(remaining - delay, 0))
        else:
            self.complete_join(tx, group, now)

    def on_sync_expired(self, tx: Tx, group: ClassicGroup, generation: int, now: int) -> None:
        """Members that never synced are removed, then rebalance (GMM L5435)."""
        if generation != group.generation:
            return
        if group.state not in (S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync:
            return
        for mid in sorted(group.pending_sync):
            if mid in group.members:
                self.remove_member(tx, group, mid)
        self.prepare_rebalance(tx, group, now)

    def on_member_expired(self, tx: Tx, group: ClassicGroup, member_id: str, now: int) -> None:
        """Session expiry; ignored for a non-new member parked in Join or Sync (GMM L5004, CGM L208)."""
        member = group.members.get(member_id)
        if member is None or group.state == S.DEAD:
            return
        if not member.is_new and (member.awaiting_join is not None or member.awaiting_sync is not None):
            return
        self.remove_member_and_update_group(tx, group, member_id, now)

    def on_pending_expired(self, tx: Tx, group: ClassicGroup, member_id: str, now: int) -> None:
        """A MEMBER_ID_REQUIRED id that never came back (GMM L5085)."""
        if member_id not in group.pending_members:
            return
        tx.emit(PendingMember(group.group_id, member_id, False))
        if group.state == S.PREPARING_REBALANCE and group.has_all_members_joined():
            self.complete_join(tx, group, now)

    # ------------------------------------------------------------------ cluster and failover
    def inject_append_failure(self, state: ClassicState) -> Result:
        """Fault: the next GroupMetadata append fails (COEH L52-76 maps it to COORDINATOR_NOT_AVAILABLE)."""
        tx = Tx(state)
        tx.emit(AppendFault(True))
        return tx.result

    def create_topic(self, state: ClassicState, topic: str, partitions: int) -> Result:
        tx = Tx(state)
        tx.emit(TopicMetadata(topic, partitions))
        return tx.result

    def deletable_groups(self, state: ClassicState) -> list[str]:
        """The groups the periodic cleanup would delete now: Empty, with no committed offset (offsets
        do not expire within a run: ``offsets.retention.minutes`` is 7 days by default)."""
        with_offsets = {gid for gid, _topic, _partition in state.offsets}
        return sorted(
            gid for gid, g in state.groups.items() if g.state == S.EMPTY and gid not in with_offsets
        )

    def cleanup_group_metadata(self, state: ClassicState) -> Result:
        """The cleanup Kafka runs every ``offsets.retention.check.interval.ms`` (10 min by default):
        every group whose offsets have all expired (none committed counts) and that is Empty is
        deleted with a tombstone; the next join creates it anew, at generation 0
        (GroupCoordinatorShard ``cleanupGroupMetadata`` L643-657, GroupMetadataManager
        ``maybeDeleteGroup`` L5987-5992, OffsetMetadataManager ``cleanupExpiredOffsets`` L865-901;
        apache/kafka 1eb7644)."""
        tx = Tx(state)
        for gid in self.deletable_groups(state):
            tx.emit(GroupDeleted(gid))
        return tx.result

    def unload(self, state: ClassicState) -> Result:
        """Shard unloaded: parked requests answered NOT_COORDINATOR (`onUnloaded` GMM L4281)."""
        tx = Tx(state)
        for group in state.groups.values():
            for member in group.members.values():
                if member.awaiting_join is not None:
                    tx.reply(
                        member.awaiting_join, JoinGroupResponse(E.NOT_COORDINATOR, member_id=member.member_id)
                    )
                if member.awaiting_sync is not None:
                    tx.reply(member.awaiting_sync, SyncGroupResponse(E.NOT_COORDINATOR))
        return tx.result

    def validate_member(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> ErrorCode:
        """Instance check first, then member check (`validateMember` CG L790)."""
        if instance_id is not None:
            known = group.static_members.get(instance_id)
            if known is None:
                return E.UNKNOWN_MEMBER_ID
            if known != member_id:
                return E.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return E.UNKNOWN_MEMBER_ID
        return E.NONE

    def supports_protocols(self, group: ClassicGroup, protocol_type: str, names: tuple[str, ...]) -> bool:
        """CG `supportsProtocols` L1103."""
        if group.state == S.EMPTY or not group.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == group.protocol_type and bool(group.candidate_protocols() & set(names))

    def accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        """Capacity check (`acceptJoiningMember` GMM L5480)."""
        if group.state in (S.EMPTY, S.DEAD):
            return True
        if group.state == S.PREPARING_REBALANCE:
            member = group.members.get(member_id)
            if member is not None and member.awaiting_join is not None:
                return True
            return group.awaiting_join_count() < self.config.max_size
        return member_id in group.members or len(group.members) < self.config.max_size
