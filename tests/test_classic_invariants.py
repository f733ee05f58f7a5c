"""Every classic invariant can fail: for each, an observation (or a mutant) that violates it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from conformance.protocols.build import make_classic_sim, settle_round
from model.classic import invariants as inv
from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupResponse,
)
from model.classic.sim import Advance, Send
from model.classic.state import GroupState
from model.embedded import Assignment, encode_assignment
from model.errors import ErrorCode
from model.invariants import REGISTRY, for_protocol, load_all
from model.observation import Observation
from model.result import Delivery

S = GroupState


@pytest.fixture(scope="module")
def stable():  # type: ignore[no-untyped-def]
    """A settled two-member group and its last observation."""
    sim = make_classic_sim({"t": 2}, [{"name": "c1"}, {"name": "c2"}], {}, {})
    last = []
    for _ in range(20):
        settle_round(sim, ["c1", "c2"], last.append)
    obs = last[-1]
    assert obs.after.group.state == S.STABLE
    return obs


def with_group(obs, before=None, event=None, deliveries=(), **changes):  # type: ignore[no-untyped-def]
    after = replace(obs.after, group=replace(obs.after.group, **changes))
    return Observation(before or obs.after, event or Advance(0), tuple(deliveries), after, obs.now)


def fails(predicate, observation) -> bool:  # type: ignore[no-untyped-def]
    return bool(list(predicate(observation)))


def test_stable_group_satisfies_every_invariant(stable) -> None:  # type: ignore[no-untyped-def]
    load_all()
    for i in for_protocol("classic", ("safety", "transition", "liveness")):
        assert i.check(stable) == [], i.id


def test_state_transitions(stable) -> None:  # type: ignore[no-untyped-def]
    bad = replace(stable.after, transitions=((S.STABLE, S.EMPTY),))
    assert fails(inv.state_transitions_legal, Observation(stable.after, Advance(0), (), bad, 0))


def test_generation_bump_once_and_monotonic(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    assert fails(inv.generation_bump_once, with_group(stable, generation=g.generation + 2))
    assert fails(inv.generation_monotonic, with_group(stable, generation=g.generation - 1))


def test_leader_is_member(stable) -> None:  # type: ignore[no-untyped-def]
    assert fails(inv.leader_is_member, with_group(stable, leader="ghost"))
    assert fails(inv.leader_is_member, with_group(stable, members=(), leader="ghost"))


def test_protocol_supported(stable) -> None:  # type: ignore[no-untyped-def]
    assert fails(inv.protocol_supported, with_group(stable, protocol="roundrobin"))


def test_static_instance_unique(stable) -> None:  # type: ignore[no-untyped-def]
    m1, m2 = stable.after.group.members
    members = (replace(m1, instance_id="i"), replace(m2, instance_id="i"))
    assert fails(inv.static_instance_unique, with_group(stable, members=members))


def test_max_size(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    before = replace(stable.after, group=replace(g, members=g.members[:1]))
    join = Send("c2", 99, JoinGroupRequest("g", "", "consumer", (("range", b""),)))
    obs = Observation(before, join, (), replace(stable.after, max_size=1), 0)
    assert fails(inv.max_size, obs)
    m1, m2 = g.members  # a rebalance with one member awaiting its join: Kafka admits the second
    preparing = replace(g, state=S.PREPARING_REBALANCE, members=(m1, replace(m2, awaiting_join=99)))
    admitted = Observation(before, join, (), replace(stable.after, max_size=1, group=preparing), 0)
    assert not fails(inv.max_size, admitted)
    both = replace(preparing, members=(replace(m1, awaiting_join=98), replace(m2, awaiting_join=99)))
    assert fails(inv.max_size, replace(admitted, after=replace(stable.after, max_size=1, group=both)))


def test_leader_sync_installs(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    members = tuple(replace(m, assignment=b"\x00\x03xyz") for m in g.members)
    assert fails(inv.leader_sync_installs, with_group(stable, members=members))


def test_assignment_visible_after_persist(stable) -> None:  # type: ignore[no-untyped-def]
    rogue = encode_assignment(Assignment((("t", 7),)))
    obs = with_group(stable, deliveries=[Delivery(5, SyncGroupResponse(ErrorCode.NONE, assignment=rogue))])
    assert fails(inv.assignment_visible_after_persist, obs)


def test_stale_generation_rejected(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    ev = Send("c1", 50, HeartbeatRequest("g", g.generation + 3, g.members[0].member_id))
    obs = with_group(stable, event=ev, deliveries=[Delivery(50, HeartbeatResponse(ErrorCode.NONE))])
    assert fails(inv.stale_generation_rejected, obs)


def test_no_commit_while_completing(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    before = replace(stable.after, group=replace(g, state=S.COMPLETING_REBALANCE))
    req = OffsetCommitRequest("g", g.generation, g.members[0].member_id, (OffsetCommitPartition("t", 0, 1),))
    resp = OffsetCommitResponse((("t", 0, ErrorCode.NONE),))
    obs = Observation(before, Send("c1", 51, req), (Delivery(51, resp),), stable.after, 0)
    assert fails(inv.no_commit_while_completing, obs)


def test_replaced_static_fenced(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    old = replace(g.members[0], instance_id="i1", awaiting_join=77)
    new = replace(g.members[0], member_id="i1-new", instance_id="i1")
    before = replace(stable.after, group=replace(g, members=(old, g.members[1])))
    after = replace(stable.after, group=replace(g, members=(new, g.members[1])))
    assert fails(inv.replaced_static_fenced, Observation(before, Advance(0), (), after, 0))


def test_join_phase_invariants(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    joined = tuple(replace(m, awaiting_join=i + 100) for i, m in enumerate(g.members))
    prep = dict(state=S.PREPARING_REBALANCE, previous_state=S.STABLE)
    assert fails(inv.join_completes_when_all_joined, with_group(stable, members=joined, **prep))
    assert fails(inv.join_phase_bounded, with_group(stable, timers=(), **prep))
    far = with_group(stable, timers=(("join", 10**9),), **prep)
    assert fails(inv.join_phase_bounded, far)
    initial = with_group(stable, timers=(), state=S.PREPARING_REBALANCE, previous_state=S.EMPTY)
    assert fails(inv.initial_rebalance_bounded, initial)


def test_unsynced_and_session_expiry(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    unsynced = with_group(
        stable, state=S.COMPLETING_REBALANCE, pending_sync=frozenset({g.members[0].member_id}), timers=()
    )
    assert fails(inv.unsynced_members_removed, unsynced)
    assert fails(inv.session_expiry_armed, with_group(stable, timers=()))
    assert fails(inv.session_expiry_armed, with_group(stable, pending_members=frozenset({"p"})))


def test_single_owner_coordinator_and_consumer(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    both = encode_assignment(Assignment((("t", 0),)))
    members = tuple(replace(m, assignment=both) for m in g.members)
    assert fails(inv.single_owner_coordinator, with_group(stable, members=members))
    delivered = ((g.generation, (("c1", frozenset({("t", 0)})), ("c2", frozenset({("t", 0)})))),)
    obs = Observation(stable.after, Advance(0), (), replace(stable.after, delivered=delivered), 0)
    assert fails(inv.single_owner_consumer, obs)


def test_member_lists(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    m1, m2 = g.members
    short = JoinGroupResponse(
        ErrorCode.NONE,
        g.generation,
        "consumer",
        "range",
        m1.member_id,
        False,
        m1.member_id,
        (JoinGroupMember(m1.member_id, None, b""),),
    )
    assert fails(inv.leader_list_complete, with_group(stable, deliveries=[Delivery(1, short)]))
    to_follower = replace(short, member_id=m2.member_id)
    assert fails(inv.followers_get_no_member_list, with_group(stable, deliveries=[Delivery(1, to_follower)]))


def test_every_classic_invariant_has_a_failing_case_here() -> None:
    """Guard: a new classic invariant must come with a test in this file."""
    load_all()
    source = Path(__file__).read_text()
    for i in REGISTRY.values():
        if i.protocol == "classic" and i.kind != "sometimes":
            assert f"inv.{i.predicate.__name__}" in source, f"{i.id} has no failing case"


# ---------------------------------------------------------------------- added by the kill matrix
from model.classic import response_invariants as rinv  # noqa: E402
from model.classic.messages import SyncGroupRequest  # noqa: E402


def test_parked_requests_answered_and_one_response(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    m1, m2 = g.members
    parked = replace(stable.after, group=replace(g, members=(replace(m1, awaiting_sync=5), m2)))
    dropped = Observation(parked, Advance(0), (), stable.after, 0)
    assert fails(rinv.parked_requests_answered, dropped)
    answered = replace(dropped, deliveries=(Delivery(5, SyncGroupResponse(ErrorCode.NONE)),))
    assert not fails(rinv.parked_requests_answered, answered)
    superseded = Observation(parked, Advance(0), (), replace(parked), 0)
    assert not fails(rinv.parked_requests_answered, superseded)
    # on a real target an answer sent down a cut connection is seen by nobody: not judged
    unseen = replace(dropped, after=replace(stable.after, unseen=frozenset({5})))
    assert not fails(rinv.parked_requests_answered, unseen)
    twice = (Delivery(3, HeartbeatResponse(ErrorCode.NONE)), Delivery(3, HeartbeatResponse(ErrorCode.NONE)))
    assert fails(rinv.one_response_per_request, replace(stable, deliveries=twice))
    assert not fails(rinv.one_response_per_request, replace(stable, deliveries=twice[:1]))


def test_stable_state_persisted(stable) -> None:  # type: ignore[no-untyped-def]
    assert not fails(rinv.stable_state_persisted, stable)
    p = stable.after.persisted
    moved = replace(stable, after=replace(stable.after, persisted=replace(p, generation=p.generation - 1)))
    assert fails(rinv.stable_state_persisted, moved)
    other = replace(p, assignments=(("someone-else", b""),) + p.assignments[1:])
    assert fails(rinv.stable_state_persisted, replace(stable, after=replace(stable.after, persisted=other)))


def test_instance_fencing(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    m1 = g.members[0]
    static = replace(stable.after, group=replace(g, static_members=(("i1", m1.member_id),)))
    zombie = Send("c1", 9, HeartbeatRequest("g", g.generation, "old-id", "i1"))
    unknown = Observation(
        static, zombie, (Delivery(9, HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID)),), static, 0
    )
    assert fails(rinv.instance_fencing, unknown)
    fenced = replace(unknown, deliveries=(Delivery(9, HeartbeatResponse(ErrorCode.FENCED_INSTANCE_ID)),))
    assert not fails(rinv.instance_fencing, fenced)
    join = Send("c1", 9, JoinGroupRequest("g", "old-id", "consumer", (("range", b""),), 6000, 6000, "i1"))
    full = Observation(
        static, join, (Delivery(9, JoinGroupResponse(ErrorCode.GROUP_MAX_SIZE_REACHED)),), static, 0
    )
    assert not fails(rinv.instance_fencing, full)  # the group's capacity is checked first
    assert fails(rinv.instance_fencing, replace(full, deliveries=unknown.deliveries))


def test_leader_sync_covers_members(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    m1, m2 = g.members
    before = replace(stable.after, group=replace(g, state=S.COMPLETING_REBALANCE, leader=m1.member_id))
    after = replace(stable.after, transitions=((S.COMPLETING_REBALANCE, S.STABLE),))
    sync = SyncGroupRequest("g", g.generation, m1.member_id, ((m1.member_id, b""),))
    short = Observation(before, Send("c1", 4, sync), (), after, 0)
    assert fails(rinv.leader_sync_covers_members, short)
    full = replace(sync, assignments=((m1.member_id, b""), (m2.member_id, b"")))
    assert not fails(rinv.leader_sync_covers_members, replace(short, event=Send("c1", 4, full)))
    # an oracle's observation may also hold a join the target took after the SyncGroup: that member
    # was not in the generation, so the leader could not assign to it (served-model, seed 0)
    alone = replace(before, group=replace(before.group, members=(m1,)))
    later = Observation(alone, Send("c1", 4, sync), (), after, 0)
    assert not fails(rinv.leader_sync_covers_members, later)


# ---------------------------------------------------------------------- docs/bug-catalogue.md#row-21
def test_lost_generation_rejoins(stable) -> None:  # type: ignore[no-untyped-def]
    """KAFKA-8104: a client with generation -1 may only (re)join or leave."""
    from model.classic.messages import HeartbeatRequest, JoinGroupRequest

    c1 = stable.after.clients[0]
    lost = replace(stable.after, clients=(replace(c1, generation=-1), *stable.after.clients[1:]))
    beat = Send(c1.name, 9, HeartbeatRequest("g", -1, c1.member_id), "client")
    assert fails(inv.lost_generation_rejoins, Observation(lost, beat, (), lost, 0))
    join = Send(c1.name, 9, JoinGroupRequest("g", "", "consumer", (("range", b""),), 6000, 6000), "client")
    assert not fails(inv.lost_generation_rejoins, Observation(lost, join, (), lost, 0))
    assert not fails(inv.lost_generation_rejoins, Observation(stable.after, beat, (), stable.after, 0))
    assert not fails(inv.lost_generation_rejoins, Observation(lost, replace(beat, how="raw"), (), lost, 0))


# ---------------------------------------------------------------------- docs/bug-catalogue.md#row-15
def test_static_rejoin_keeps_member_id(stable) -> None:  # type: ignore[no-untyped-def]
    """KAFKA-20983: a static member's unsubscribe (LeaveGroup suppressed) keeps its member id."""
    from model.classic.sim import Unsubscribe

    c1 = stable.after.clients[0]
    static = replace(stable.after, clients=(replace(c1, instance_id="i1"), *stable.after.clients[1:]))
    kept = replace(static, clients=(replace(static.clients[0], generation=-1), *static.clients[1:]))
    wiped = replace(kept, clients=(replace(kept.clients[0], member_id=""), *kept.clients[1:]))
    assert fails(inv.static_rejoin_keeps_member_id, Observation(static, Unsubscribe(c1.name), (), wiped, 0))
    assert not fails(
        inv.static_rejoin_keeps_member_id, Observation(static, Unsubscribe(c1.name), (), kept, 0)
    )
    # a dynamic member's id is not judged here (it sends LeaveGroup); nor is any other event
    dynamic_wiped = replace(stable.after, clients=(replace(c1, member_id=""), *stable.after.clients[1:]))
    assert not fails(
        inv.static_rejoin_keeps_member_id,
        Observation(stable.after, Unsubscribe(c1.name), (), dynamic_wiped, 0),
    )
    assert not fails(inv.static_rejoin_keeps_member_id, Observation(static, Advance(0), (), wiped, 0))


# ---------------------------------------------------------------------- promises (docs/invariants.md#nature)
from model.classic import promise_invariants as pinv  # noqa: E402


def test_rebalance_in_progress_keeps_membership(stable) -> None:  # type: ignore[no-untyped-def]
    """KIP-429: REBALANCE_IN_PROGRESS on SyncGroup only asks for a rejoin (KAFKA-14016)."""
    c1 = stable.after.clients[0]
    sync = Send(c1.name, 9, SyncGroupRequest("g", c1.generation, c1.member_id, ()), "client")
    answer = (Delivery(9, SyncGroupResponse(ErrorCode.REBALANCE_IN_PROGRESS)),)
    reset = replace(stable.after, clients=(replace(c1, generation=-1), *stable.after.clients[1:]))
    assert fails(
        pinv.rebalance_in_progress_keeps_membership, Observation(stable.after, sync, answer, reset, 0)
    )
    assert not fails(
        pinv.rebalance_in_progress_keeps_membership, Observation(stable.after, sync, answer, stable.after, 0)
    )
    illegal = (Delivery(9, SyncGroupResponse(ErrorCode.ILLEGAL_GENERATION)),)
    assert not fails(
        pinv.rebalance_in_progress_keeps_membership, Observation(stable.after, sync, illegal, reset, 0)
    )


def test_join_sets_member_timeouts(stable) -> None:  # type: ignore[no-untyped-def]
    """KAFKA-14009: the member holds the timeouts of the JoinGroup that admitted it."""
    m1 = stable.after.group.members[0]
    join = JoinGroupRequest("g", m1.member_id, "consumer", (("range", b""),), 7000, 9000)
    ev = Send("c1", 9, join)
    assert fails(pinv.join_sets_member_timeouts, Observation(stable.after, ev, (), stable.after, 0))
    g = stable.after.group
    updated = replace(
        g, members=(replace(m1, session_timeout_ms=7000, rebalance_timeout_ms=9000), *g.members[1:])
    )
    after = replace(stable.after, group=updated)
    assert not fails(pinv.join_sets_member_timeouts, Observation(stable.after, ev, (), after, 0))
    refused = (Delivery(9, JoinGroupResponse(ErrorCode.INVALID_SESSION_TIMEOUT)),)
    assert not fails(pinv.join_sets_member_timeouts, Observation(stable.after, ev, refused, stable.after, 0))


def test_join_sets_member_timeouts_at_the_version_sent(stable) -> None:  # type: ignore[no-untyped-def]
    """A member that drew JoinGroup v5 but was sent at v0 (Kafka 0.9 speaks v0 only) holds its
    session timeout as the rebalance timeout: v0 carries none."""
    m1 = stable.after.group.members[0]
    join = JoinGroupRequest("g", m1.member_id, "consumer", (("range", b""),), 7000, 9000, version=5)
    ev = Send("c1", 9, join)
    g = stable.after.group
    as_v0 = replace(m1, session_timeout_ms=7000, rebalance_timeout_ms=7000, join_version=0)
    after = replace(stable.after, group=replace(g, members=(as_v0, *g.members[1:])))
    assert not fails(pinv.join_sets_member_timeouts, Observation(stable.after, ev, (), after, 0))
    as_v5 = replace(as_v0, join_version=5)
    after = replace(stable.after, group=replace(g, members=(as_v5, *g.members[1:])))
    assert fails(pinv.join_sets_member_timeouts, Observation(stable.after, ev, (), after, 0))


def test_live_session_not_expired(stable) -> None:  # type: ignore[no-untyped-def]
    """KAFKA-9232: a heartbeating member of a Stable group is not removed before its session deadline."""
    g = stable.after.group
    m1, m2 = g.members
    deadline = g.timer(f"expire:{m1.member_id}")
    assert deadline is not None
    gone = replace(stable.after, group=replace(g, members=(m2,), state=S.PREPARING_REBALANCE))
    early = Observation(stable.after, Advance(1), (), gone, deadline - 1)
    assert fails(pinv.live_session_not_expired, early)
    assert not fails(pinv.live_session_not_expired, replace(early, now=deadline))


def test_timers_not_early(stable) -> None:  # type: ignore[no-untyped-def]
    g = stable.after.group
    m1, m2 = g.members
    now = stable.now
    assert not fails(inv.timers_not_early, stable)
    others = tuple(t for t in g.timers if t[0] != f"expire:{m1.member_id}")
    early = with_group(stable, timers=(*others, (f"expire:{m1.member_id}", now + m1.session_timeout_ms - 1)))
    assert fails(inv.timers_not_early, early)
    on_time = with_group(stable, timers=(*others, (f"expire:{m1.member_id}", now + m1.session_timeout_ms)))
    assert not fails(inv.timers_not_early, on_time)
    join = with_group(stable, timers=(*g.timers, ("join", now + g.rebalance_timeout_ms() // 2)))
    assert fails(inv.timers_not_early, join)
    removed = with_group(stable, members=(m2,), timers=others)  # time removed m1, its timer not due
    assert fails(inv.timers_not_early, removed)
    due = replace(stable.after.group, timers=(*others, (f"expire:{m1.member_id}", now)))
    expired = Observation(replace(stable.after, group=due), Advance(0), (), removed.after, now)
    assert not fails(inv.timers_not_early, expired)


def test_timers_not_early_follows_a_timer_that_armed_one_in_the_same_step(stable) -> None:  # type: ignore[no-untyped-def]
    """One advance may fire a timer and the one it armed: m2's expiry at ``fired`` completes a join
    phase that re-arms m1's session at ``fired``, which runs out before the step ends (thorough
    classic seed 2 on the model: a static member's session re-armed by the completion its
    predecessor's expiry caused). A removal no such chain reaches is still early."""
    g = stable.after.group
    m1, m2 = g.members
    later = stable.now + 100_000  # m1's own timer, in ``before``, is far from due
    keep = tuple(t for t in g.timers if not t[0].startswith("expire:"))
    for fired, broken in (
        (stable.now - m1.session_timeout_ms, False),
        (stable.now - m1.session_timeout_ms + 1, True),
    ):
        timers = (*keep, (f"expire:{m1.member_id}", later), (f"expire:{m2.member_id}", fired))
        before = replace(stable.after, group=replace(g, timers=timers))
        both_gone = with_group(
            stable, before=before, event=Advance(m1.session_timeout_ms + 10), members=(), timers=keep
        )
        assert fails(inv.timers_not_early, both_gone) == broken, fired


# ---------------------------------------------------------------------- convergence
from model.classic import progress_invariants as progress_inv  # noqa: E402


def test_eventual_convergence(stable) -> None:  # type: ignore[no-untyped-def]
    quiet = replace(stable.after, quiet_since=stable.now - 10, convergence_bound_ms=10)
    assert not fails(progress_inv.eventual_convergence, Observation(quiet, Advance(0), (), quiet, stable.now))
    early = replace(quiet, convergence_bound_ms=11)
    rebalancing = replace(early, group=replace(early.group, state=S.PREPARING_REBALANCE))
    assert not fails(
        progress_inv.eventual_convergence, Observation(rebalancing, Advance(0), (), rebalancing, stable.now)
    )
    late = replace(rebalancing, convergence_bound_ms=10)
    assert fails(progress_inv.eventual_convergence, Observation(late, Advance(0), (), late, stable.now))
    c1, c2 = quiet.clients
    lost = replace(quiet, clients=(c1, replace(c2, owned=frozenset())))
    assert fails(progress_inv.eventual_convergence, Observation(lost, Advance(0), (), lost, stable.now))
    twice = replace(quiet, clients=(replace(c1, owned=c1.owned | c2.owned), c2))
    assert fails(progress_inv.eventual_convergence, Observation(twice, Advance(0), (), twice, stable.now))
    behind = replace(quiet, clients=(replace(c1, generation=c1.generation - 1), c2))
    assert fails(progress_inv.eventual_convergence, Observation(behind, Advance(0), (), behind, stable.now))
    gone = replace(quiet, clients=(replace(c1, phase="left", owned=frozenset()), c2))
    assert fails(progress_inv.eventual_convergence, Observation(gone, Advance(0), (), gone, stable.now))


def test_member_id_kept_until_refused(stable) -> None:  # type: ignore[no-untyped-def]
    """A consumer that drops its member id without an answer refusing it breaks the promise; one
    answered UNKNOWN_MEMBER_ID, or given an id by a JoinGroup answer, or leaving, does not."""
    c1 = stable.after.clients[0]
    lost = replace(c1, member_id="", generation=-1)

    def obs(handed):  # type: ignore[no-untyped-def]
        after = replace(stable.after, clients=(lost, *stable.after.clients[1:]), handed=handed)
        return Observation(stable.after, Advance(0), (), after, 0)

    retriable = ((c1.name, "JoinGroupResponse", (int(ErrorCode.COORDINATOR_NOT_AVAILABLE),)),)
    assert fails(pinv.member_id_kept_until_refused, obs(()))  # a request timeout
    assert fails(pinv.member_id_kept_until_refused, obs(retriable))
    assert fails(
        pinv.member_id_kept_until_refused,
        obs(((c1.name, "SyncGroupResponse", (int(ErrorCode.ILLEGAL_GENERATION),)),)),
    )
    assert not fails(
        pinv.member_id_kept_until_refused,
        obs(((c1.name, "HeartbeatResponse", (int(ErrorCode.UNKNOWN_MEMBER_ID),)),)),
    )
    assert not fails(pinv.member_id_kept_until_refused, obs(((c1.name, "LeaveGroupResponse", (0,)),)))
    other = stable.after.clients[1].name
    assert fails(
        pinv.member_id_kept_until_refused,
        obs(((other, "HeartbeatResponse", (int(ErrorCode.UNKNOWN_MEMBER_ID),)),)),
    )
    kept = Observation(stable.after, Advance(0), (), replace(stable.after, handed=retriable), 0)
    assert not fails(pinv.member_id_kept_until_refused, kept)


def test_lost_member_id_releases_partitions(stable) -> None:  # type: ignore[no-untyped-def]
    """A cooperative consumer that lost its member id but still owns a partition breaks the promise;
    an eager one, or one under the armed stale_subscription fault, does not."""
    c1 = stable.after.clients[0]
    held = replace(c1, owned=frozenset({("t", 0)}), cooperative=True)
    lost = replace(held, member_id="", generation=-1)

    def obs(before, after):  # type: ignore[no-untyped-def]
        clients = lambda c: (c, *stable.after.clients[1:])  # noqa: E731
        return Observation(
            replace(stable.after, clients=clients(before)),
            Advance(0),
            (),
            replace(stable.after, clients=clients(after)),
            0,
        )

    assert fails(pinv.lost_member_id_releases_partitions, obs(held, lost))
    assert not fails(pinv.lost_member_id_releases_partitions, obs(held, replace(lost, owned=frozenset())))
    assert not fails(pinv.lost_member_id_releases_partitions, obs(held, replace(lost, cooperative=False)))
    armed = replace(held, stale_subscription=True)
    assert not fails(
        pinv.lost_member_id_releases_partitions, obs(armed, replace(lost, stale_subscription=False))
    )


def test_leader_gets_metadata_as_sent(stable) -> None:  # type: ignore[no-untyped-def]
    """The leader's list relays each member's metadata as its JoinGroup sent it."""
    m1, m2 = stable.after.group.members
    listed = (JoinGroupMember(m1.member_id, None, b"old"), JoinGroupMember(m2.member_id, None, b"x"))
    to_leader = JoinGroupResponse(
        ErrorCode.NONE, 3, "consumer", "range", m1.member_id, False, m1.member_id, listed
    )
    to_follower = JoinGroupResponse(ErrorCode.NONE, 3, "consumer", "range", m1.member_id, False, m2.member_id)
    answers = (Delivery(7, to_leader), Delivery(8, to_follower))
    sent = ((7, (("range", b"new"),)), (8, (("range", b"x"),)))
    obs = Observation(stable.after, Advance(0), answers, replace(stable.after, joins=sent), 0)
    assert fails(pinv.leader_gets_metadata_as_sent, obs)
    as_sent = replace(stable.after, joins=((7, (("range", b"old"),)), (8, (("range", b"x"),))))
    assert not fails(pinv.leader_gets_metadata_as_sent, replace(obs, after=as_sent))
    assert not fails(pinv.leader_gets_metadata_as_sent, replace(obs, after=stable.after))  # nothing recorded


def test_sync_gives_leader_assignment(stable) -> None:  # type: ignore[no-untyped-def]
    """A SyncGroup answer relays what the generation's leader sent for the member."""
    from model.classic.wire_record import SyncAsked

    listing = (("m1", None, b"one"), ("m2", None, b"two"), ("old", "s", b"kept"))

    def judged(member: str, given: bytes, instance: str | None = None, listings=(listing,)) -> bool:  # type: ignore[no-untyped-def]
        answer = (Delivery(7, SyncGroupResponse(ErrorCode.NONE, "consumer", "range", given)),)
        asked = replace(stable.after, syncs=(SyncAsked(7, member, instance, 3, listings),))
        return fails(
            pinv.sync_gives_leader_assignment, Observation(stable.after, Advance(0), answer, asked, 0)
        )

    assert not judged("m1", b"one")
    assert judged("m1", b"two")  # another member's assignment
    assert judged("new", b"one") and not judged("new", b"")  # not listed: nothing
    assert not judged("new", b"kept", "s") and judged("new", b"kept")  # a static replacement's predecessor's
    assert not judged("m1", b"x", listings=(listing, (("m1", None, b"x"),)))  # any listing of the generation
    assert not judged("m2", b"one", listings=())  # no leader's SyncGroup recorded: not judged
    early = (SyncAsked(7, "m1", None, 3, (), leader_known=True),)  # ... unless a join answer named the leader
    answer = (Delivery(7, SyncGroupResponse(ErrorCode.NONE, "consumer", "range", b"")),)
    obs = Observation(stable.after, Advance(0), answer, replace(stable.after, syncs=early), 0)
    assert fails(pinv.sync_gives_leader_assignment, obs)


def test_no_partition_held_twice(stable) -> None:  # type: ignore[no-untyped-def]
    """Two current members never hold one partition; a zombie (old generation or gone) does not count."""
    c1, c2 = stable.after.clients
    tp = next(iter(c1.owned))

    def held(*clients) -> bool:  # type: ignore[no-untyped-def]
        return fails(
            pinv.no_partition_held_twice, replace(stable, after=replace(stable.after, clients=clients))
        )

    assert not held(c1, c2)
    assert held(c1, replace(c2, owned=c2.owned | {tp}))
    assert not held(c1, replace(c2, owned=c2.owned | {tp}, generation=c2.generation - 1))
    assert not held(c1, replace(c2, owned=c2.owned | {tp}, member_id="gone"))
    # a partition handed back on a claim only the stale_subscription fault made is the fault's ...
    assert not held(c1, replace(c2, owned=c2.owned | {tp}, stale_regained=frozenset({tp})))
    # ... and only that one: another partition the same consumer holds twice still counts
    other = next(iter(c2.owned))
    assert held(replace(c1, owned=c1.owned | {other}), replace(c2, stale_regained=frozenset({tp})))


def test_heartbeat_signals_rebalance(stable) -> None:  # type: ignore[no-untyped-def]
    """A Heartbeat answered NONE while PreparingRebalance hides the rebalance from the member."""
    m1 = stable.after.group.members[0]
    beat = Send("c1", 4, HeartbeatRequest("g", stable.after.group.generation, m1.member_id), "client")
    preparing = with_group(stable, state=S.PREPARING_REBALANCE)

    def answered(error: ErrorCode, state=S.PREPARING_REBALANCE) -> bool:  # type: ignore[no-untyped-def]
        after = replace(stable.after, group=replace(stable.after.group, state=state))
        obs = Observation(preparing.after, beat, (Delivery(4, HeartbeatResponse(error)),), after, 0)
        return fails(pinv.heartbeat_signals_rebalance, obs)

    assert answered(ErrorCode.NONE)
    assert not answered(ErrorCode.REBALANCE_IN_PROGRESS)
    assert not answered(ErrorCode.NONE, S.COMPLETING_REBALANCE)  # the join phase completed meanwhile


def test_the_real_time_simulator_names_the_answers_nobody_sees() -> None:
    """`ClassicWorld.unseen`: the refs the oracle port marks lost (a cut connection, a restart)."""
    from conformance.protocols.classic.realtime import RealTimeSim
    from model.classic.port import ModelPort

    class LosingPort(ModelPort):
        lost = {7}

    sim = make_classic_sim({"t": 1}, [{"name": "c1"}], {}, {}, port_factory=LosingPort, sim_class=RealTimeSim)
    assert sim.snapshot(None, False).unseen == frozenset({7})
    assert make_classic_sim({"t": 1}, [{"name": "c1"}], {}, {}).world.unseen == frozenset()


# ---------------------------------------------------------------------- stray requests
from model.classic import stray_invariants as sinv  # noqa: E402


class _Broken(Exception):
    pass


@pytest.mark.parametrize(
    ("mutant", "predicate"),
    [
        ("commit-from-anyone", sinv.commit_needs_membership),
        ("commit-creates-group", sinv.commit_needs_membership),
        ("commit-any-partition", sinv.commit_partitions_checked),
        ("join-session-unchecked", sinv.invalid_join_refused),
        ("join-protocols-unchecked", sinv.invalid_join_refused),
        ("sync-protocol-unchecked", sinv.sync_protocol_matches),
        ("leave-by-instance-ignored", sinv.leave_by_instance_id),
    ],
)
def test_stray_promises_fail_on_the_mutant_that_drops_their_check(mutant, predicate) -> None:  # type: ignore[no-untyped-def]
    """The stray-request script (tests/test_stray_requests.py) breaks each promise on its mutant;
    on the model it breaks none (`test_the_model_answers_every_stray_as_the_promises_require`)."""
    from test_stray_requests import drive_strays, stray_clients

    from conformance.protocols.classic.build import make_classic_sim

    sim = make_classic_sim({"t": 2}, stray_clients(10_000, 15_000), {}, {"mutant": mutant})

    def observe(obs: Observation) -> None:  # type: ignore[type-arg]
        if list(predicate(obs)):
            raise _Broken

    with pytest.raises(_Broken):
        drive_strays(sim, observe)
