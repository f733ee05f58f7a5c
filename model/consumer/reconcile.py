"""Reconciliation of one member towards its target: CurrentAssignmentBuilder as a pure function.

docs/protocol-reference.md#b5 (CAB `build` L131, `computeNextAssignment` L227; GMM `maybeReconcile` L2681).
Kept free of the coordinator so that it can be encoded in z3 one-to-one: inputs are the member's
current-assignment slice, the target epoch and set, a partition-epoch lookup (-1 = free) and the
owned set the request reported (None when the request did not carry TopicPartitions).

Variant ``own_pending_is_free`` models the KAFKA-19449 fix (PR #20781, after 4.1): a partition the
member itself still has pending revocation is not "unreleased" for that member. This function's
default (False) is Apache Kafka 4.0 (docs/protocol-reference.md#b5: "including this member's own pending
revocations"); the coordinator passes its config, whose default is the fix (Kafka 4.4.0).

Variant ``bump_after_revocation`` is the rule before KAFKA-19974 (apache/kafka PR #21107, merged
2025-12 to trunk and 4.2): a member that has acknowledged its revocations leaves
UNREVOKED_PARTITIONS through ``computeNextAssignment(memberEpoch + 1, ...)`` (docs/protocol-reference.md#b5, 4.0).
Since the fix the member keeps its epoch when it must revoke again, and moves to the target epoch
otherwise (`CurrentAssignmentBuilder.build`, UNREVOKED_PARTITIONS case, group-coordinator 4.4.0).
This function's default (True) is again Kafka 4.0; the coordinator passes its config (False).

Argument ``subscribed`` is KAFKA-19431 (apache/kafka PR #20055, Kafka 4.1+): reconciliation keeps a
member to the topics it subscribes to (names and resolved regexes, in the metadata image; an
unresolved regex matches nothing): `computeNextAssignment` treats the target of any other topic as
empty, and a heartbeat that changed the member's subscription (``subscription_changed``) drops the
other topics' partitions at once, at the same member epoch (CAB `updateCurrentAssignment`), even
when the target is not newer. None is Kafka 4.0: no such filter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from model.consumer.messages import TopicPartition
from model.consumer.state import NO_EPOCH, MemberState


@dataclass(frozen=True)
class CurrentAssignment:
    """The slice of a member that reconciliation reads and writes (the current-assignment record)."""

    state: MemberState
    member_epoch: int
    previous_member_epoch: int
    assigned: frozenset[TopicPartition]
    pending_revocation: frozenset[TopicPartition]


def _with_epoch(
    current: CurrentAssignment,
    state: MemberState,
    epoch: int,
    assigned: frozenset[TopicPartition],
    pending: frozenset[TopicPartition],
) -> CurrentAssignment:
    # CoGM `updateMemberEpoch`: the previous epoch always becomes the epoch before the update, even
    # when the epoch value does not change.
    return CurrentAssignment(state, epoch, current.member_epoch, assigned, pending)


def next_assignment(
    current: CurrentAssignment,
    epoch: int,
    assigned: frozenset[TopicPartition],
    target_epoch: int,
    target: frozenset[TopicPartition],
    partition_epoch: Callable[[TopicPartition], int],
    owned: frozenset[TopicPartition] | None,
    own_pending_is_free: bool = False,
    subscribed: frozenset[str] | None = None,
) -> CurrentAssignment:
    """CAB `computeNextAssignment(epoch, assigned)` (docs/protocol-reference.md#b5 "next(e, A)")."""
    if subscribed is not None:
        target = frozenset(tp for tp in target if tp[0] in subscribed)
    keep = assigned & target
    revoke = assigned - keep
    wanted = target - keep
    unreleased = frozenset(
        tp
        for tp in wanted
        if partition_epoch(tp) != NO_EPOCH and not (own_pending_is_free and tp in current.pending_revocation)
    )
    add = wanted - unreleased
    if revoke and (owned is None or owned & revoke):
        return _with_epoch(current, MemberState.UNREVOKED_PARTITIONS, epoch, keep, revoke)
    if add:
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return _with_epoch(current, state, target_epoch, keep | add, frozenset())
    if unreleased:
        return _with_epoch(current, MemberState.UNRELEASED_PARTITIONS, target_epoch, keep, frozenset())
    return _with_epoch(current, MemberState.STABLE, target_epoch, keep, frozenset())


def update_current_assignment(
    current: CurrentAssignment,
    subscribed: frozenset[str],
    owned: frozenset[TopicPartition] | None,
) -> CurrentAssignment:
    """CAB `updateCurrentAssignment` (KAFKA-19431): the partitions of topics the member no longer
    subscribes to move to pending revocation, the member epoch unchanged; ``current`` itself when
    there are none."""
    dropped = frozenset(tp for tp in current.assigned if tp[0] not in subscribed)
    if not dropped:
        return current
    assigned, pending = current.assigned - dropped, current.pending_revocation | dropped
    if owned is None or owned & pending:
        return _with_epoch(current, MemberState.UNREVOKED_PARTITIONS, current.member_epoch, assigned, pending)
    return _with_epoch(current, current.state, current.member_epoch, assigned, current.pending_revocation)


def reconcile(
    current: CurrentAssignment,
    target_epoch: int,
    target: frozenset[TopicPartition],
    partition_epoch: Callable[[TopicPartition], int],
    owned: frozenset[TopicPartition] | None,
    own_pending_is_free: bool = False,
    bump_after_revocation: bool = True,
    subscribed: frozenset[str] | None = None,
    subscription_changed: bool = False,
) -> CurrentAssignment | None:
    """The member's next current assignment (CAB `build`), or None when the member must be fenced
    (FENCED_MEMBER_EPOCH: state UNKNOWN and the request did not report an empty owned set).

    Returns ``current`` itself when nothing can change (reconciled, or revocation not acknowledged).
    """
    st = current.state
    if st == MemberState.STABLE:
        if current.member_epoch == target_epoch:  # GMM `maybeReconcile` skip, CAB STABLE case
            if subscribed is not None and subscription_changed:
                return update_current_assignment(current, subscribed, owned)
            return current
        return next_assignment(
            current,
            current.member_epoch,
            current.assigned,
            target_epoch,
            target,
            partition_epoch,
            owned,
            own_pending_is_free,
            subscribed,
        )
    if st == MemberState.UNREVOKED_PARTITIONS:
        if owned is None or owned & current.pending_revocation:
            if subscribed is not None and subscription_changed:
                return update_current_assignment(current, subscribed, owned)
            return current
        # docs/protocol-reference.md#b5 (4.0): memberEpoch + 1; since KAFKA-19974 (Kafka 4.2+): memberEpoch.
        return next_assignment(
            current,
            current.member_epoch + 1 if bump_after_revocation else current.member_epoch,
            current.assigned,
            target_epoch,
            target,
            partition_epoch,
            owned,
            own_pending_is_free,
            subscribed,
        )
    if st == MemberState.UNRELEASED_PARTITIONS:
        return next_assignment(
            current,
            current.member_epoch,
            current.assigned,
            target_epoch,
            target,
            partition_epoch,
            owned,
            own_pending_is_free,
            subscribed,
        )
    # UNKNOWN
    if owned is None or owned:
        return None
    return next_assignment(
        current,
        target_epoch,
        current.assigned,
        target_epoch,
        target,
        partition_epoch,
        owned,
        own_pending_is_free,
        subscribed,
    )
