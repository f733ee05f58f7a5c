"""OffsetCommit member-epoch rules (KIP-848 exact epochs; KIP-1251) as z3 formulas over one commit.

The coordinator's answer to an OffsetCommit is a function of the group, the committing member and
the request, so a rule is proved with one query: no group state and request of the bounded domain
(P partitions of one topic) make the rule's per-partition answer break the invariant.

* ``exact`` (Kafka 4.0-4.2, `OffsetsAndTopics.offset_commit_group_error`; CoG `validateOffsetCommit`):
  a negative epoch to a group without members is accepted; otherwise an unknown member is
  UNKNOWN_MEMBER_ID, a version below 9 UNSUPPORTED_VERSION, an epoch other than the member's
  STALE_MEMBER_EPOCH, the member's epoch accepted; one answer for every partition.
* ``assignment`` (KIP-1251, Kafka 4.3+; KAFKA-20066, apache/kafka PRs #21508, #21692;
  `older_epoch_member` / `assignment_epoch_error`): where the exact rule says STALE_MEMBER_EPOCH
  to a consumer-protocol member, version 9+, with 0 <= epoch < its epoch, each partition is judged
  alone: accepted iff the member holds it (assigned or pending revocation) since an epoch not
  after the commit's.

The member keeps, per held partition, the epoch it was given the partition at
(`ConsumerMember.assignment_epochs`); its value is unconstrained here, so the proof holds for every
history. The invariant is `model.consumer.invariants.offset_commit_exact_epoch`, read for the
coordinator's configured rule (``kip1251``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import z3

NONE, STALE, UNKNOWN_MEMBER, UNSUPPORTED = 0, 1, 2, 3
"""The answers the rules give (ErrorCode NONE, STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION)."""
GROUP_ERRORS = (STALE, UNKNOWN_MEMBER)
"""The group-level rejections the invariant forbids for a commit that may be made (ILLEGAL_GENERATION
is one too; these rules never give it)."""
INVARIANT = "consumer.offset_commit_exact_epoch"


@dataclass(frozen=True)
class Commit:
    """A group, the committing member, and its request (``partitions``: the committed set)."""

    others: Any  # the group has members other than the committer
    present: Any  # the committer is a member
    classic: Any  # ... a classic-protocol member of the consumer group
    epoch: Any  # its member epoch
    held: Any  # bit-vector: assigned or pending revocation
    since: tuple[Any, ...]  # per partition, the epoch the member was given it at
    version: Any
    commit_epoch: Any
    partitions: Any

    @property
    def width(self) -> int:
        return len(self.since)


def fresh(tag: str, partitions: int) -> Commit:
    return Commit(
        z3.Bool(f"{tag}_others"),
        z3.Bool(f"{tag}_present"),
        z3.Bool(f"{tag}_classic"),
        z3.Int(f"{tag}_epoch"),
        z3.BitVec(f"{tag}_held", partitions),
        tuple(z3.Int(f"{tag}_since{p}") for p in range(partitions)),
        z3.Int(f"{tag}_version"),
        z3.Int(f"{tag}_commit_epoch"),
        z3.BitVec(f"{tag}_partitions", partitions),
    )


def domain(c: Commit) -> Any:
    """OffsetCommit versions 0..9 (the model's registry); a member's epoch is -2 or >= 0 (a classic
    member's is >= 0); what it holds was given to it at an epoch >= 0 (`derive_assignment_epochs`)."""
    out = [c.version >= 0, c.version <= 9]
    out.append(z3.Implies(c.present, z3.Or(c.epoch == -2, c.epoch >= 0)))
    out.append(z3.Implies(z3.And(c.present, c.classic), c.epoch >= 0))
    out += [z3.Implies(_bit(c.held, p), s >= 0) for p, s in enumerate(c.since)]
    return z3.And(out)


def _bit(v: Any, p: int) -> Any:
    return z3.Extract(p, p, v) == 1


def _members(c: Commit) -> Any:
    return z3.Or(c.others, c.present)


def exact_answer(c: Commit) -> Any:
    """`offset_commit_group_error` (after availability, which is not part of the rule)."""
    return z3.If(
        z3.And(c.commit_epoch < 0, z3.Not(_members(c))),
        z3.IntVal(NONE),
        z3.If(
            z3.Not(c.present),
            z3.IntVal(UNKNOWN_MEMBER),
            z3.If(
                c.version < 9,
                z3.IntVal(UNSUPPORTED),
                z3.If(c.commit_epoch != c.epoch, z3.IntVal(STALE), z3.IntVal(NONE)),
            ),
        ),
    )


def older_epoch(c: Commit) -> Any:
    """`older_epoch_member` under KIP-1251: the commit is judged per partition."""
    return z3.And(c.version >= 9, c.present, z3.Not(c.classic), c.commit_epoch >= 0, c.commit_epoch < c.epoch)


def answers(c: Commit, rule: str) -> tuple[Any, ...]:
    """The answer per partition under ``rule`` ("exact" or "assignment")."""
    group = exact_answer(c)
    if rule == "exact":
        return tuple(group for _ in c.since)
    per = z3.And(group == STALE, older_epoch(c))
    return tuple(
        z3.If(
            per,
            z3.If(z3.And(_bit(c.held, p), s <= c.commit_epoch), z3.IntVal(NONE), z3.IntVal(STALE)),
            group,
        )
        for p, s in enumerate(c.since)
    )


def may_commit(c: Commit, kip1251: bool) -> tuple[Any, ...]:
    """The invariant's ``may_commit`` per partition: the exact epoch (or a negative one to a group
    without members), or under KIP-1251 an older epoch not below the partition's assignment epoch."""
    exact = z3.Or(
        z3.And(c.commit_epoch < 0, z3.Not(_members(c))), z3.And(c.present, c.commit_epoch == c.epoch)
    )
    older = z3.And(z3.BoolVal(kip1251), older_epoch(c))
    return tuple(
        z3.Or(exact, z3.And(older, _bit(c.held, p), s <= c.commit_epoch)) for p, s in enumerate(c.since)
    )


def violated(c: Commit, got: tuple[Any, ...], kip1251: bool) -> Any:
    """`offset_commit_exact_epoch` fails for some committed partition: accepted though it may not be
    committed, or a commit that may be made (version 9+) rejected with a group-level error."""
    out = []
    for p, (code, may) in enumerate(zip(got, may_commit(c, kip1251), strict=True)):
        rejected = z3.Or([code == e for e in GROUP_ERRORS])
        bad = z3.Or(z3.And(code == NONE, z3.Not(may)), z3.And(may, c.version >= 9, rejected))
        out.append(z3.And(_bit(c.partitions, p), bad))
    return z3.Or(out)
