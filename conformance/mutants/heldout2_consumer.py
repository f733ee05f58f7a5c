"""KIP-848 coordinator mutants of the second (held-out) bug catalogue, docs/bug-catalogue-heldout.md:
the server-side assignors and reconciliation of a consumer group.

Each class overrides one rule of `model.consumer.coordinator.ConsumerCoordinator` and reproduces one
real bug the first catalogue was not built for; ``specs/bugs-heldout.yaml`` names the source of each.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.mutants.base import Mutant
from model.consumer.assignors import AssignmentMember, GroupAssignment, uniform_homogeneous
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.records import current_assignment_record
from model.consumer.state import ConsumerMember, MemberState

# ---------------------------------------------------------------------------------- assignors


class ExtraSlotsByMemberOrder(ConsumerCoordinator):
    """KAFKA-18688: the uniform assignor with homogeneous subscriptions gives the P mod N extra
    partitions to the first members in iteration order instead of to members that already hold
    one more, so a balanced target is reshuffled and partitions move for nothing."""

    def run_assignor(
        self, name: str, members: dict[str, AssignmentMember], topics: dict[str, int], homogeneous: bool
    ) -> GroupAssignment:
        if name == "uniform" and homogeneous:
            return uniform_homogeneous(members, topics, extra_to_retained=False)
        return super().run_assignor(name, members, topics, homogeneous)


# ---------------------------------------------------------------------------------- reconciliation


class RevocationRestartsOnNewTarget(ConsumerCoordinator):
    """KAFKA-16249: a member still revoking when a new target is installed restarts its
    reconciliation from that target (assigned + pending revocation against the new target), without
    looking at what it reports owning, and the rebalance timeout is armed again from now, so a
    stream of new targets keeps a slow revocation from ever timing out."""

    def reconcile_member(
        self,
        txn: Any,
        member: ConsumerMember,
        owned: Any,
        now: int,
        subscription_changed: bool = False,
    ) -> ConsumerMember:
        if member.state != MemberState.UNREVOKED_PARTITIONS:
            return super().reconcile_member(txn, member, owned, now, subscription_changed)
        group = txn.require_group()
        target = group.target_of(member.member_id)
        if self.config.reconcile_to_subscription:
            topics = self.subscribed_topic_ids(txn.scratch, group, member)
            target = frozenset(tp for tp in target if tp[0] in topics)
        held = member.assigned | member.pending_revocation
        keep, revoke = held & target, held - target
        if not revoke or (keep, revoke) == (member.assigned, member.pending_revocation):
            return super().reconcile_member(txn, member, owned, now, subscription_changed)
        restarted = replace(member, assigned=keep, pending_revocation=revoke)
        txn.emit(current_assignment_record(txn.group_id, restarted))
        self.schedule_rebalance_timeout(txn, restarted, now)
        return restarted


def _m(name: str, fault: str, source: str, **parts: Any) -> Mutant:
    return Mutant(name, "consumer", "heldout", fault, source, (), **parts)


HELDOUT2_CONSUMER_MUTANTS: tuple[Mutant, ...] = (
    _m(
        "kafka-18688",
        "the uniform assignor gives the extra partitions by member order, moving partitions needlessly",
        "KAFKA-18688 / apache/kafka PR #19677",
        coordinator=ExtraSlotsByMemberOrder,
    ),
    _m(
        "kafka-16249",
        "a new target restarts an unfinished revocation and re-arms the rebalance timeout",
        "KAFKA-16249 / apache/kafka PR #15364",
        coordinator=RevocationRestartsOnNewTarget,
    ),
)

__all__ = ["HELDOUT2_CONSUMER_MUTANTS"]
