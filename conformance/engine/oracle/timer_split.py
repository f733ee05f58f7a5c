"""Timer effects as observations of their own, for the oracles on a real clock (docs/oracle.md#observation-split).

An oracle keeps the model as hypotheses and fires a due model timer (a session expiry, a join
phase's or a rebalance's timeout) inside the operation that follows it: the target may have acted
on the timer just before it processed the request, or not yet (the tolerance window,
docs/oracle.md#timing). An invariant over the request's observation compares the state before the request
with its answers; with a timer's effect folded in, it judges the request against a state the
request never saw (seen: `consumer.offset_commit_exact_epoch` reading an OffsetCommit answered
UNKNOWN_MEMBER_ID as the rejection of an exact-epoch commit, because the session expiry that
preceded it in the hypothesis was part of the same observation; classic: a join phase its timer
completed just before a static replacement, cause 5 of
`benchmarks/results/oracle_false_alarms.md`).

So the reported hypothesis remembers what its timers did just before the request (and, in the
classic oracle, just after it), and the simulator on the real clock shows that part as an
observation of its own: an advance that moves no time. `SplitPort` is the port's half (one per
oracle: classic `OraclePort`, consumer `ConsumerOraclePort`, mixed `MixedOraclePort`);
`fired_before` is the consumer and mixed hypotheses' half (the classic `Hypo` keeps its own group
views, `protocols/classic/candidates.py`). The invariants are unchanged: they see one more, smaller step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class SplitPort:
    """What the reported hypothesis' timers did just before (``pre_split``) and just after
    (``post_split``) the last request, each taken once by the simulator. The value's shape is the
    oracle's own (the state, or views of it, as it stood at the split)."""

    pre_split: Any = None
    post_split: Any = None
    #: (state, clock) of the hypothesis the reported one descends from, when that was not the one
    #: reported before the last request (`switched_from`)
    switched: Any = None
    #: (state, clock) the last request met in the reported hypothesis after an adoption rewrote what
    #: no answer had shown before it (the mixed oracle's `_rereconcile`: a classic member's partitions
    #: decided at a JoinGroup that does not show them); the request's observation starts there
    rewritten: Any = None
    #: False restores the behaviour before the split (timers folded into the request's
    #: observation), for `benchmarks/oracle_false_alarms.py`'s "before" runs only
    split_timers: bool = True

    def take_pre_split(self) -> Any:
        """The timers the reported hypothesis fired just before the last request, once.

        The target may act on a due timer just before it processes a request; the model then fires
        it in the same operation. The simulator shows that part as an observation of its own (an
        advance of 0 ms) so that invariants comparing the state before a request with its answers
        never read a timer's effect (a member its session expiry removed, a join phase its timer
        completed) as the request's."""
        taken, self.pre_split = self.pre_split, None
        return taken if self.split_timers else None

    def take_post_split(self) -> Any:
        """As `take_pre_split`, for the timers fired just after the last request."""
        taken, self.post_split = self.post_split, None
        return taken if self.split_timers else None

    def take_rewritten(self) -> Any:
        """The state the last request met after an adoption rewrote the unseen past (see
        ``rewritten``), once; else None."""
        taken, self.rewritten = self.rewritten, None
        return taken

    def take_switched(self) -> Any:
        """The state the last request met in the reported hypothesis' own lineage, once, when the
        hypothesis reported before it was refuted by the answer (see `switched_from`); else None."""
        taken, self.switched = self.switched, None
        return taken if self.split_timers else None


def fired_before(original: Any, candidate: Any) -> tuple[Any, int] | None:
    """(a copy of the candidate's state, its clock) when the candidate's timers changed the state of
    the hypothesis it was copied from (``original``) before its request; else None.

    Both are consumer (`CHypo`) or mixed (`MHypo`) hypotheses: ``state`` with ``copy()`` and value
    equality, ``now`` the model clock up to which every timer has fired."""
    if candidate.state == original.state:
        return None
    return candidate.state.copy(), candidate.now


def carry(
    pre: tuple[Any, int] | None, candidates: list[tuple[Any, Any]], parent: Any = None
) -> list[tuple[Any, Any]]:
    """Mark each (hypothesis, why) of one request's candidates with the timers that preceded it (the
    adoptions built from the candidate share them: they start from its state before the request)
    and with the hypothesis it was copied from (``parent``)."""
    for c, _why in candidates:
        c.pre = pre
        c.parent = parent
    return candidates


def switched_from(reported: Any, chosen: Any, view: Callable[[Any], Any] | None = None) -> Any:
    """(state, clock) of ``chosen``'s parent when that is not ``reported``: a lineage switch.
    ``view`` gives another shape of the parent (the classic oracle's group views and durable
    records, `protocols/classic/operation.py`).

    Both outcomes of an uncertain timer stay hypotheses, and the simulator is shown one of them
    (the reported one, which prefers timers fired). When a later answer refutes it, the one reported
    next descends from another: the state the previous observation showed never happened in the
    target. The next observation then starts from the state the surviving lineage had (a transition
    from the refuted state would read, e.g., a session expiry undone: `consumer.epoch_order` "group
    epoch went back", seen in `benchmarks/oracle_false_alarms.py` under broker stalls)."""
    parent = getattr(chosen, "parent", None)
    if parent is None or reported is None or parent is reported:
        return None
    return (parent.state.copy(), parent.now) if view is None else view(parent)
