"""Classic-protocol mutants of the virtual client and its assignors, and of the in-process port.

Each class changes one client-side rule (or routes members to two coordinators) and names the bug
it reproduces; rows refer to docs/bug-catalogue.md.
"""

from __future__ import annotations

from typing import Any

from model.classic.client import ClassicClient, Phase
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import JoinGroupRequest, SyncGroupResponse
from model.classic.port import ModelPort
from model.classic.state import ClassicState


class NoVoidingClient(ClassicClient):
    """KAFKA-12984 (row 2): the leader runs the cooperative-sticky assignor as it was before apache/kafka
    PR #10985: claims carry no generation (the PR "brings the generation field back" to it) and a
    partition several members claim as owned is not voided, so every claimant keeps it (the pre-fix
    `allSubscriptionsEqual` added each claim to its claimant's owned list) and one partition goes to
    two consumers in one generation (docs/protocol-reference.md#c3)."""

    def _assignor(self, name: str):  # type: ignore[no-untyped-def]
        assignor = super()._assignor(name)
        if name != "cooperative-sticky":
            return assignor
        return _PreFixCooperative(assignor.adjust)


class ResetWithoutRejoin(ClassicClient):
    """KAFKA-8104 (row 21): the consumer loses its generation and does not rejoin. In Java the
    heartbeat thread cleared the generation while the consumer thread completed a join, which then
    carried on with no generation (apache/kafka PR #7460); the virtual client is single-threaded,
    so this mutant models the race's outcome: `resetStateAndGeneration` without the rejoin request,
    and the consumer keeps heartbeating with generation -1."""

    def _reset(self, *, member_id: bool) -> None:
        self.generation = -1
        if member_id:
            self.member_id = ""
        if self.cooperative:
            self.owned = ()


class NoFollowUpRejoin(ClassicClient):
    """A cooperative member that revoked partitions does not rejoin at once (KIP-429's follow-up
    rebalance; Java `ConsumerCoordinator.onJoinComplete` requests it, CC L382-408): the partitions
    held back for one rebalance stay unassigned until something else rebalances the group."""

    def _on_sync(self, resp: SyncGroupResponse) -> None:
        already = self.needs_rejoin
        super()._on_sync(resp)
        if self.cooperative and not already and self.needs_rejoin and self.phase == Phase.STABLE:
            self.needs_rejoin = False


class SuppressedLeaveWipesId(ClassicClient):
    """KAFKA-20983 / KAFKA-20985 (row 15): a static member's unsubscribe sends no LeaveGroup
    (KIP-345) but `resetGenerationOnLeaveGroup` still wipes the member id, as the classic consumer
    did before apache/kafka PRs #23265 / #23266. Its rejoin is then a blind one (unknown member id,
    same group.instance.id): the coordinator, which still holds the member, replaces it and fences
    the consumer's own pending join or sync with FENCED_INSTANCE_ID."""

    def _forget_membership(self) -> None:
        self.member_id = ""


def _pre_fix_cooperative() -> type:
    from model.assignors.base import to_assignments
    from model.assignors.cooperative_sticky import CooperativeStickyAssignor, held_back
    from model.assignors.sticky import sticky_core
    from model.embedded import DEFAULT_GENERATION

    class PreFixCooperative(CooperativeStickyAssignor):
        def assign(self, partitions_per_topic: Any, subscriptions: Any) -> Any:
            claims = {m: (sub.owned_partitions, DEFAULT_GENERATION) for m, sub in subscriptions.items()}
            result = sticky_core(partitions_per_topic, subscriptions, claims, resolve=False)
            if self.adjust:
                withheld = held_back(result, subscriptions)
                result = {m: [tp for tp in ps if tp not in withheld[m]] for m, ps in result.items()}
            return to_assignments(result, subscriptions)

    return PreFixCooperative


_PreFixCooperative = _pre_fix_cooperative()


class LooseBalanceClient(ClassicClient):
    """KAFKA-15106 (row 4): the leader's sticky assignor uses a wrong balance predicate, one that
    calls a group balanced while its loads differ by two, so a member can be left two partitions
    short (PR #13920; docs/protocol-reference.md#c3 step 3, ASA `isBalanced`)."""

    def _assignor(self, name: str):  # type: ignore[no-untyped-def]
        assignor = super()._assignor(name)
        if name != "sticky":
            return assignor
        return _LooseSticky(assignor.user_data_version)


def _loose_sticky() -> type:
    from model.assignors.base import to_assignments
    from model.assignors.sticky import StickyAssignor, _Core

    class LooseCore(_Core):
        def balance(self) -> None:  # stops at a spread of two: the wrong predicate
            while max(map(self.load, self.order)) - min(map(self.load, self.order)) > 2:
                path = self._find_path()
                if path is None:
                    return
                for src, dst, tp in path:
                    self.move(tp, src, dst)

    class LooseSticky(StickyAssignor):
        def assign(self, partitions_per_topic: Any, subscriptions: Any) -> Any:
            if not subscriptions:
                return {}
            claims = {m: self.claim(sub) for m, sub in subscriptions.items()}
            core = LooseCore(partitions_per_topic, subscriptions, claims, self.user_data_version == 1)
            return to_assignments(core.run(), subscriptions)

    return LooseSticky


_LooseSticky = _loose_sticky()


class SplitBrainPort(ModelPort):
    """Row 18 (KafScale #121, redpanda #386): two brokers both act as the group's coordinator.
    Members are routed by client name (odd-numbered to one state, even-numbered to the other), so
    each coordinator runs its own group and hands every partition to its own members. The world the
    suite observes is the first coordinator's; the consumers' deliveries show the double ownership."""

    def __init__(self, coordinator: ClassicCoordinator | None = None) -> None:
        super().__init__(coordinator)
        self.other = ClassicState()
        self.other_durable: list[Any] = []

    @staticmethod
    def _side(request: Any) -> int:
        """0 for even-numbered clients (c2, c4; static i2, i4), 1 for the rest."""
        if isinstance(request, JoinGroupRequest) and request.client_id:
            who = request.client_id
        elif getattr(request, "member_id", None):
            who = request.member_id
        else:  # LeaveGroup: the first leaving member
            members = getattr(request, "members", ())
            who = members[0].member_id if members else ""
        name = who.split("-", 1)[0]
        return int(name[1:]) % 2 if name[1:].isdigit() else 1

    def _swap(self) -> None:
        self.state, self.other = self.other, self.state
        self.durable, self.other_durable = self.other_durable, self.durable

    def send(self, ref: int, request: Any, now: int) -> list[Any]:
        if self._side(request) == 1:
            return super().send(ref, request, now)
        self._swap()
        kept = self._transitions  # the observed coordinator did not move
        try:
            deliveries = super().send(ref, request, now)
        finally:
            self._swap()
            self._transitions = kept
        return deliveries

    def advance(self, now: int) -> list[Any]:
        out = super().advance(now)
        self._swap()
        kept = self._transitions
        try:
            out += super().advance(now)
        finally:
            self._swap()
            self._transitions = kept
        return out

    def create_topic(self, topic: str, partitions: int) -> None:
        super().create_topic(topic, partitions)
        self._swap()
        kept = self._transitions
        try:
            super().create_topic(topic, partitions)
        finally:
            self._swap()
            self._transitions = kept
