"""The design predicates: one definition each, applied to every design (design §3 style).

They read `Observation[DesignView]` and yield violation messages, like the model's registry
(`model/invariants.py`), but live in a registry of their own: the designs are alternatives the
shipped protocol was chosen over, not protocols the conformance suite checks targets against.
Their statements and sources are in `specs/design-invariants.yaml`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from model.designs.view import DesignView
from model.embedded import TopicPartition
from model.invariants import Invariant, Kind, Predicate
from model.observation import Observation

Obs = Observation[DesignView]
DESIGN_REGISTRY: dict[str, Invariant] = {}


def design_invariant(inv_id: str, kind: Kind) -> Callable[[Predicate], Predicate]:
    def register(fn: Predicate) -> Predicate:
        if inv_id in DESIGN_REGISTRY:
            raise ValueError(f"design invariant {inv_id} registered twice")
        summary = (fn.__doc__ or "").strip().splitlines()[0]
        DESIGN_REGISTRY[inv_id] = Invariant(inv_id, kind, "design", fn, summary)
        return fn

    return register


def _fmt(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


@design_invariant("design.single_owner", "safety")
def single_owner(obs: Obs) -> Iterator[str]:
    """No partition is held by two running members under the same generation (classic.single_owner_consumer, generalised).

    A design without generations gives every hold the same token, so it is judged on physical
    ownership. A paused process fetches nothing and is not counted until it resumes.
    """
    owner: dict[tuple[TopicPartition, int | None], str] = {}
    for m in obs.after.members:
        if not m.alive or m.paused:
            continue
        for tp in sorted(m.holds):
            key = (tp, m.token)
            if key in owner:
                under = "with no generation" if m.token is None else f"under generation {m.token}"
                yield f"{_fmt(tp)} held by {owner[key]} and {m.name} {under}"
            else:
                owner[key] = m.name


@design_invariant("design.generation_monotonic", "transition")
def generation_monotonic(obs: Obs) -> Iterator[str]:
    """The group's generation never goes back, and neither does a running process's (classic.generation_monotonic, generalised).

    A failover step may fall back (a new coordinator reloads what was persisted); a member's -1 is
    "no generation" (reset after being fenced), not a step back.
    """
    b, a = obs.before, obs.after
    if b is None:
        return
    if (
        b.generation is not None
        and a.generation is not None
        and a.generation < b.generation
        and not a.failover
    ):
        yield f"group generation went back {b.generation} -> {a.generation}"
    for m in a.members:
        old = b.member(m.name)
        if old is None or old.incarnation != m.incarnation or not m.alive:
            continue
        if old.token is not None and m.token is not None and 0 < m.token < old.token and not a.failover:
            yield f"{m.name}'s generation went back {old.token} -> {m.token}"


@design_invariant("design.eventually_owned", "liveness")
def eventually_owned(obs: Obs) -> Iterator[str]:
    """After a quiet period, every partition of a topic a running member subscribes to is held by a running member."""
    a = obs.after
    if not a.checkpoint:
        return
    running = a.running()
    wanted = {t for m in running for t in m.topics}
    held = {tp for m in running if not m.paused for tp in m.holds}
    missing = [(t, p) for t, count in a.topics if t in wanted for p in range(count) if (t, p) not in held]
    if missing:
        shown = ", ".join(_fmt(tp) for tp in missing[:6]) + (" ..." if len(missing) > 6 else "")
        yield f"after the quiet period {len(missing)} partition(s) unowned: {shown}"


@design_invariant("design.upgrade_completes", "liveness")
def upgrade_completes(obs: Obs) -> Iterator[str]:
    """Once every running member runs a new assignment-strategy version, the group assigns with it after the quiet period."""
    a = obs.after
    running = a.running()
    if not a.checkpoint or not running or not a.strategy:
        return
    wanted = {m.prefers for m in running}
    if len(wanted) != 1 or "" in wanted:
        return
    strategy = wanted.pop()
    if a.strategy != strategy:
        yield f"every member runs {strategy} but the group still assigns with {a.strategy}"


@design_invariant("design.members_survive", "liveness")
def members_survive(obs: Obs) -> Iterator[str]:
    """After a quiet period no running process has stopped on an error its design calls fatal (seed 000 'Synchronizer Soft Failure')."""
    a = obs.after
    if not a.checkpoint:
        return
    stopped = sorted(m.name for m in a.members if m.alive and m.fatal)
    if stopped:
        yield f"{', '.join(stopped)} stopped on a fatal error and will not rejoin"


@design_invariant("design.leave_accepted", "transition")
def leave_accepted(obs: Obs) -> Iterator[str]:
    """A member leaving with the member id its coordinator gave it is not told the id is unknown (KIP-1082 rejected alternative 2)."""
    for name in obs.after.leaves_refused:
        yield f"{name} left with the member id it was given and was answered UNKNOWN_MEMBER_ID"


@design_invariant("design.coordinator_state_bounded", "liveness")
def coordinator_state_bounded(obs: Obs) -> Iterator[str]:
    """After a quiet period the coordinator keeps per-member state only for running members (KIP-1082 rejected alternative 1)."""
    a = obs.after
    if not a.checkpoint or a.coordinator_entries < 0:
        return
    running = len(a.running())
    if a.coordinator_entries > running:
        yield f"coordinator keeps {a.coordinator_entries} member entries for {running} running member(s)"


def design_invariants() -> list[Invariant]:
    return sorted(DESIGN_REGISTRY.values(), key=lambda inv: inv.id)
