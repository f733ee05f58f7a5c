"""Classic-protocol `sometimes` entries: what a run must have done at least once not to be vacuous
(docs/invariants.md#kinds); registered with `model.classic.invariants`."""

from __future__ import annotations

from collections.abc import Iterator

from model.classic.produced import produced, responded
from model.classic.state import GroupState
from model.classic.world import ClassicWorld
from model.errors import ErrorCode
from model.invariant_reads import changed
from model.invariants import invariant
from model.observation import Observation

Obs = Observation[ClassicWorld]
S = GroupState
E = ErrorCode


@invariant("classic.sometimes_rebalance_completed", "sometimes", "classic", reads=("after.transitions",))
def sometimes_rebalance_completed(obs: Obs) -> Iterator[str]:
    """A rebalance reached Stable."""
    if any(nxt == S.STABLE for _, nxt in obs.after.transitions):
        yield "stable"


@invariant("classic.sometimes_member_expired", "sometimes", "classic", when=changed("group"))
def sometimes_member_expired(obs: Obs) -> Iterator[str]:
    """A member was removed by a timer (session, join or sync expiry)."""
    b, a = obs.before, obs.after
    if b is None or b.group is None or a.group is None or a.failover or type(obs.event).__name__ != "Advance":
        return
    if {m.member_id for m in b.group.members} - {m.member_id for m in a.group.members}:
        yield "expired"


@invariant("classic.sometimes_generation_fenced", "sometimes", "classic", when=responded)
def sometimes_generation_fenced(obs: Obs) -> Iterator[str]:
    """A request was answered ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID (a zombie was fenced)."""
    for d in produced(obs):
        if getattr(d.response, "error", None) in (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID):
            yield "fenced"


@invariant("classic.sometimes_member_id_required", "sometimes", "classic", when=responded)
def sometimes_member_id_required(obs: Obs) -> Iterator[str]:
    """A KIP-394 MEMBER_ID_REQUIRED round trip happened."""
    for d in produced(obs):
        if getattr(d.response, "error", None) == E.MEMBER_ID_REQUIRED:
            yield "member id required"
