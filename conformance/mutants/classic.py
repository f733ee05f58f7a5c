"""Classic-protocol mutants: catalogue rows on the classic coordinator and its assignors, and the
generic coordinator faults of docs/mutants.md.

Each class overrides one rule of `model.classic.coordinator.ClassicCoordinator` (or of the
in-process port, or of the virtual client's assignor) and says which bug it reproduces. Sources:
``docs/bug-catalogue.md`` (rows cited per mutant), docs/protocol-reference.md#a1 to #a8 and #e1 to #e14.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.mutants.base import Mutant
from conformance.mutants.classic_clients import (
    LooseBalanceClient,
    NoFollowUpRejoin,
    NoVoidingClient,
    ResetWithoutRejoin,
    SplitBrainPort,
    SuppressedLeaveWipesId,
)
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest, SyncGroupResponse
from model.classic.port import ModelPort
from model.classic.records import MemberRemoved, MemberUpserted, PendingSync
from model.classic.state import ClassicGroup, ClassicState, GroupState
from model.classic.tx import Tx
from model.errors import ErrorCode
from model.result import Result

S = GroupState
E = ErrorCode


# ---------------------------------------------------------------------------------- catalogue


class DuplicateStaticJoin(ClassicCoordinator):
    """KAFKA-8500 (row 11): an unknown-id JoinGroup for a known group.instance.id during
    PreparingRebalance adds a second member instead of replacing the first (KIP-345, GMM L5519)."""

    def replace_static_member(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, new_id: str, ref: int, now: int
    ) -> None:
        if group.state == S.PREPARING_REBALANCE:
            self.add_member_and_rebalance(tx, group, req, new_id, ref, now)
            return
        super().replace_static_member(tx, group, req, new_id, ref, now)


class StaticRejoinWithoutRebalance(ClassicCoordinator):
    """KAFKA-9801 (row 12): a static member that rejoins while the group is CompletingRebalance gets
    a new member id and an answer at once, without a rebalance, so the leader's assignment (computed
    for the old id) leaves it with nothing (PR #8405; docs/protocol-reference.md#a3-1 says: rebalance)."""

    def replace_static_member(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, new_id: str, ref: int, now: int
    ) -> None:
        if group.state != S.COMPLETING_REBALANCE:
            super().replace_static_member(tx, group, req, new_id, ref, now)
            return
        assert req.group_instance_id is not None
        old_id = group.static_members[req.group_instance_id]
        old = group.members[old_id]
        if old.awaiting_sync is not None:
            tx.reply(old.awaiting_sync, SyncGroupResponse(E.FENCED_INSTANCE_ID))
        tx.emit(MemberRemoved(group.group_id, old_id))
        tx.timer(group, f"expire:{old_id}", None)
        new = replace(old, member_id=new_id, protocols=req.protocols, awaiting_join=None, awaiting_sync=None)
        tx.emit(MemberUpserted(group.group_id, new))
        if old_id in group.pending_sync:
            tx.emit(PendingSync(group.group_id, frozenset((group.pending_sync - {old_id}) | {new_id})))
        if group.leader == old_id:
            tx.set(group, leader=new_id)
        tx.timer(group, f"expire:{new_id}", now + new.session_timeout_ms)
        tx.reply(ref, self.join_response(group, new_id, full=False))


class StaticRejoinNotPersisted(ClassicCoordinator):
    """KAFKA-10284 (row 13): the new member id of a static member that rejoined a Stable group is
    not persisted, so a failover loads the old id and fences the live member (PR #9270)."""

    _skip = False

    def replace_static_member(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, new_id: str, ref: int, now: int
    ) -> None:
        self._skip = True
        try:
            super().replace_static_member(tx, group, req, new_id, ref, now)
        finally:
            self._skip = False

    def persist(self, tx: Tx, group: ClassicGroup) -> bool:
        return True if self._skip else super().persist(tx, group)


class NoInstanceFencing(ClassicCoordinator):
    """KAFKA-8225 (row 14): requests are validated by member id only; a zombie holding an old member
    id of a replaced static member is not answered FENCED_INSTANCE_ID (KIP-345; CG L790)."""

    def validate_member(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> ErrorCode:
        return super().validate_member(group, member_id, None)


class PendingMemberNeverExpires(ClassicCoordinator):
    """KAFKA-7824 (row 16): a KIP-394 MEMBER_ID_REQUIRED id is parked without its expiry timer, so
    clients that never come back leave pending members behind for ever (GMM L4665, L5085)."""

    def require_known_member_id(
        self, tx: Tx, group: ClassicGroup, req: JoinGroupRequest, new_id: str, ref: int, now: int
    ) -> None:
        super().require_known_member_id(tx, group, req, new_id, ref, now)
        tx.timer(group, f"pending:{new_id}", None)


class RemovalSkipsJoinCheck(ClassicCoordinator):
    """KAFKA-7909 (row 17): a member removed during PreparingRebalance does not re-check whether
    the join phase can complete, so the group waits for the rebalance timeout (PR #6251; GMM L4528)."""

    def after_member_removed(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        if group.state == S.PREPARING_REBALANCE:
            return
        super().after_member_removed(tx, group, now)


# ---------------------------------------------------------------------------------- generic


class SkipGenerationBump(ClassicCoordinator):
    """Generic: a completed join phase keeps the old generation (docs/protocol-reference.md#e2; CG L1283 initNextGeneration)."""

    def complete_join(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        before, was = group.generation, group.state
        super().complete_join(tx, group, now)
        if was == S.PREPARING_REBALANCE and group.generation == before + 1 and before > 0:
            tx.set(group, generation=before)


class AcceptStaleGeneration(ClassicCoordinator):
    """Generic: Heartbeat is not checked against the generation (docs/protocol-reference.md#e8; GMM L6005)."""

    def handle_heartbeat(self, state: ClassicState, req: HeartbeatRequest, ref: int, now: int) -> Result:
        group = state.groups.get(req.group_id)
        if group is not None:
            req = replace(req, generation_id=group.generation)
        return super().handle_heartbeat(state, req, ref, now)


class StaleSyncAccepted(ClassicCoordinator):
    """Generic (``stale-sync``, found by a z3 refutation, docs/proofs.md): SyncGroup is accepted whatever generation
    it carries, so a leader's SyncGroup from an earlier generation installs assignments computed for
    the old membership (docs/protocol-reference.md#e8; `validateSyncGroup` GMM L5859)."""

    def validate_sync(self, group: ClassicGroup, req: SyncGroupRequest) -> ErrorCode:
        return super().validate_sync(group, replace(req, generation_id=group.generation))


class MemberListToFollowers(ClassicCoordinator):
    """Generic: every member gets the member list in its JoinGroup response ("Phase 1", docs/protocol-reference.md#client-side-assignment; CG L1302)."""

    def join_response(self, group: ClassicGroup, member_id: str, *, full: bool) -> Any:
        return super().join_response(group, member_id, full=True)


class DropParkedResponse(ClassicCoordinator):
    """Generic: when the leader's assignment is installed, followers' parked SyncGroups are forgotten,
    never answered (GMM L5684 propagateAssignment)."""

    def propagate_assignment(self, tx: Tx, group: ClassicGroup, now: int) -> None:
        for member in list(group.members.values()):
            if member.awaiting_sync is not None and member.member_id != group.leader:
                tx.emit(MemberUpserted(group.group_id, replace(member, awaiting_sync=None)))
        super().propagate_assignment(tx, group, now)


class AnswerTwice(ClassicCoordinator):
    """Generic: a Heartbeat is answered twice (a response written to the connection two times)."""

    def handle_heartbeat(self, state: ClassicState, req: HeartbeatRequest, ref: int, now: int) -> Result:
        result = super().handle_heartbeat(state, req, ref, now)
        result.deliveries.extend([d for d in result.deliveries if d.ref == ref])
        return result


class ForgetAssignmentOnLoad(ModelPort):
    """Generic: a coordinator that loads the group after failover forgets the persisted member
    assignments ("Handling Coordinator Failures", docs/protocol-reference.md#client-side-assignment; GMM L4343 replay)."""

    def failover(self, now: int) -> list[Any]:
        deliveries = super().failover(now)
        for group in self.state.groups.values():
            for mid, member in list(group.members.items()):
                group.members[mid] = replace(member, assignment=b"")
        return deliveries


class SessionTimerOffByOne(ClassicCoordinator):
    """Generic: a heartbeat re-arms the member's expiry one millisecond past its session timeout
    (docs/protocol-reference.md#e14; GMM L5004)."""

    def handle_heartbeat(self, state: ClassicState, req: HeartbeatRequest, ref: int, now: int) -> Result:
        result = super().handle_heartbeat(state, req, ref, now + 1)
        return result


class SessionTimerHalved(ClassicCoordinator):
    """Generic: a heartbeat re-arms the member's expiry half a session timeout ahead, so the member
    expires early (JoinGroupRequest.json SessionTimeoutMs; KIP-62)."""

    def handle_heartbeat(self, state: ClassicState, req: HeartbeatRequest, ref: int, now: int) -> Result:
        group = state.groups.get(req.group_id)
        member = group.members.get(req.member_id) if group is not None else None
        early = member.session_timeout_ms // 2 if member is not None else 0
        return super().handle_heartbeat(state, req, ref, now - early)


class RejoinKeepsMetadata(ClassicCoordinator):
    """Generic: a member's rejoin keeps the protocol metadata of its earlier join, so the leader
    assigns on a stale subscription and stale owned partitions (JoinGroupResponse.json Members)."""

    def update_member_and_rebalance(
        self, tx: Tx, group: ClassicGroup, member: Any, req: JoinGroupRequest, ref: int, now: int
    ) -> None:
        super().update_member_and_rebalance(
            tx, group, member, replace(req, protocols=member.protocols), ref, now
        )


# ---------------------------------------------------------------------------------- clients


CLASSIC_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "kafka-7026",
        "classic",
        "catalogue",
        "the sticky leader honours a rejoining member's stale claim (user data V0, no generation)",
        "docs/bug-catalogue.md#row-1: KAFKA-7026 / apache/kafka PR #5291 (KIP-341)",
        (
            "client.assignment_single_owner",
            "classic.single_owner_consumer",
            "client.sticky_stale_claim_loses",
        ),
        row=1,
        variants=(("assignor", "sticky"), ("sticky", "v0")),
    ),
    Mutant(
        "kafka-12984",
        "classic",
        "catalogue",
        "pre-PR-#10985 cooperative-sticky: claims carry no generation and a doubly claimed partition is not voided",
        "docs/bug-catalogue.md#row-2: KAFKA-12984 / apache/kafka PR #10985",
        (
            "client.assignment_single_owner",
            "classic.single_owner_consumer",
            "client.sticky_stale_claim_loses",
        ),
        row=2,
        client=NoVoidingClient,
        variants=(("assignor", "cooperative-sticky"),),
    ),
    Mutant(
        "kafka-15106",
        "classic",
        "catalogue",
        "the sticky leader calls a group balanced while two members' loads differ by two",
        "docs/bug-catalogue.md#row-4: KAFKA-15106 / apache/kafka PR #13920",
        ("client.sticky_balanced",),
        row=4,
        client=LooseBalanceClient,
        variants=(("assignor", "sticky"),),
    ),
    Mutant(
        "kafka-14639",
        "classic",
        "catalogue",
        "cooperative-sticky revokes and assigns a partition in one rebalance (no adjust step)",
        "docs/bug-catalogue.md#row-3: KAFKA-14639 / apache/kafka PR #13550 (KIP-429)",
        ("client.cooperative_no_direct_transfer",),
        row=3,
        variants=(("assignor", "cooperative-sticky"), ("cooperative_adjust", "false")),
    ),
    Mutant(
        "kafka-8104",
        "classic",
        "catalogue",
        "a consumer whose generation is reset does not rejoin (the heartbeat-thread race's outcome)",
        "docs/bug-catalogue.md#row-21: KAFKA-8104 / apache/kafka PR #7460",
        ("classic.lost_generation_rejoins",),
        row=21,
        client=ResetWithoutRejoin,
    ),
    Mutant(
        "kafka-8500",
        "classic",
        "catalogue",
        "two unknown-id joins for one group.instance.id during PreparingRebalance make two members",
        "docs/bug-catalogue.md#row-11: KAFKA-8500 / apache/kafka PR #6899 (KIP-345)",
        ("classic.static_instance_unique",),
        row=11,
        coordinator=DuplicateStaticJoin,
    ),
    Mutant(
        "kafka-9801",
        "classic",
        "catalogue",
        "a static rejoin during CompletingRebalance changes the member id without a rebalance",
        "docs/bug-catalogue.md#row-12: KAFKA-9801 / apache/kafka PR #8405",
        ("classic.leader_sync_covers_members",),
        row=12,
        coordinator=StaticRejoinWithoutRebalance,
    ),
    Mutant(
        "kafka-10284",
        "classic",
        "catalogue",
        "the new member id of a static rejoin to a Stable group is not persisted",
        "docs/bug-catalogue.md#row-13: KAFKA-10284 / apache/kafka PR #9270",
        ("classic.stable_state_persisted",),
        row=13,
        coordinator=StaticRejoinNotPersisted,
    ),
    Mutant(
        "kafka-8225",
        "classic",
        "catalogue",
        "a request naming a group.instance.id held by another member id is not fenced",
        "docs/bug-catalogue.md#row-14: KAFKA-8225 / apache/kafka PR #6650 (KIP-345)",
        ("classic.instance_fencing",),
        row=14,
        coordinator=NoInstanceFencing,
    ),
    Mutant(
        "kafka-20983",
        "classic",
        "catalogue",
        "a static member's suppressed LeaveGroup still wipes its member id, so it rejoins blind and replaces itself",
        "docs/bug-catalogue.md#row-15: KAFKA-20983, KAFKA-20985 / apache/kafka PRs #23265, #23266",
        ("classic.static_rejoin_keeps_member_id",),
        row=15,
        client=SuppressedLeaveWipesId,
    ),
    Mutant(
        "kafka-7824",
        "classic",
        "catalogue",
        "KIP-394 pending member ids never expire",
        "docs/bug-catalogue.md#row-16: KAFKA-7824 / apache/kafka PR #6058 (KIP-394)",
        ("classic.session_expiry_armed",),
        row=16,
        coordinator=PendingMemberNeverExpires,
    ),
    Mutant(
        "kafka-7909",
        "classic",
        "catalogue",
        "removing a member during PreparingRebalance does not re-check join completion",
        "docs/bug-catalogue.md#row-17: KAFKA-7909 / apache/kafka PR #6251; streamnative/kop PR #380",
        ("classic.join_completes_when_all_joined",),
        row=17,
        coordinator=RemovalSkipsJoinCheck,
    ),
    Mutant(
        "split-brain",
        "classic",
        "catalogue",
        "two coordinators each run the group for half of the members",
        "docs/bug-catalogue.md#row-18: KafScale/platform#121; redpanda-data/redpanda#386",
        ("classic.single_owner_consumer", "classic.leader_list_complete"),
        row=18,
        port=SplitBrainPort,
    ),
    Mutant(
        "skip-generation-bump",
        "classic",
        "generic",
        "a completed join phase keeps the old generation",
        "docs/protocol-reference.md#e2; ClassicGroup.java initNextGeneration",
        ("classic.generation_bump_once",),
        coordinator=SkipGenerationBump,
    ),
    Mutant(
        "accept-stale-generation",
        "classic",
        "generic",
        "Heartbeat is not checked against the generation",
        "docs/protocol-reference.md#e8; GroupMetadataManager.java L6005",
        ("classic.stale_generation_rejected",),
        coordinator=AcceptStaleGeneration,
    ),
    Mutant(
        "stale-sync",
        "classic",
        "generic",
        "SyncGroup is not checked against the generation",
        "docs/protocol-reference.md#e8; docs/protocol-reference.md#a4; GroupMetadataManager.java L5859 validateSyncGroup (found by a z3 refutation)",
        ("classic.stale_generation_rejected",),
        coordinator=StaleSyncAccepted,
    ),
    Mutant(
        "member-list-to-followers",
        "classic",
        "generic",
        "followers receive the member list in JoinGroup",
        "Client-side Assignment Proposal, 'Phase 1' (docs/protocol-reference.md#client-side-assignment); docs/protocol-reference.md#a3",
        ("classic.followers_get_no_member_list",),
        coordinator=MemberListToFollowers,
    ),
    Mutant(
        "drop-parked-response",
        "classic",
        "generic",
        "followers' parked SyncGroups are forgotten when the leader's assignment is installed",
        "docs/protocol-reference.md#a4; GroupMetadataManager.java L5684 propagateAssignment",
        ("classic.parked_requests_answered",),
        coordinator=DropParkedResponse,
    ),
    Mutant(
        "answer-twice",
        "classic",
        "generic",
        "a Heartbeat is answered twice",
        "Kafka wire protocol: one response per request, in order",
        ("classic.one_response_per_request",),
        coordinator=AnswerTwice,
    ),
    Mutant(
        "forget-persisted-field",
        "classic",
        "generic",
        "after failover the loaded group has forgotten the persisted member assignments",
        "Client-side Assignment Proposal, 'Handling Coordinator Failures' (docs/protocol-reference.md#client-side-assignment); GroupMetadataManager.java L4343",
        ("classic.stable_state_persisted",),
        port=ForgetAssignmentOnLoad,
    ),
    Mutant(
        "cooperative-no-follow-up",
        "classic",
        "generic",
        "a cooperative member that revoked partitions does not rejoin for the follow-up rebalance",
        "KIP-429 (the follow-up rebalance after a revocation); ConsumerCoordinator.onJoinComplete",
        ("classic.eventual_convergence",),
        client=NoFollowUpRejoin,
        variants=(("assignor", "cooperative-sticky"),),
    ),
    Mutant(
        "timer-off-by-one",
        "classic",
        "generic",
        "a heartbeat re-arms the expiry timer 1 ms past the session timeout",
        "docs/protocol-reference.md#e14; docs/protocol-reference.md#a8; GroupMetadataManager.java L5004",
        ("classic.session_expiry_armed",),
        coordinator=SessionTimerOffByOne,
    ),
    Mutant(
        "session-timer-halved",
        "classic",
        "generic",
        "a heartbeat re-arms the expiry timer half a session timeout ahead (the member expires early)",
        "KIP-62; clients/src/main/resources/common/message/JoinGroupRequest.json (SessionTimeoutMs)",
        ("classic.timers_not_early",),
        coordinator=SessionTimerHalved,
    ),
    Mutant(
        "rejoin-keeps-metadata",
        "classic",
        "generic",
        "a member's rejoin keeps the protocol metadata of its earlier join",
        "Kafka protocol guide, JoinGroup; clients/src/main/resources/common/message/JoinGroupResponse.json (Members.Metadata)",
        ("classic.leader_gets_metadata_as_sent",),
        coordinator=RejoinKeepsMetadata,
    ),
)
