"""docs/bug-catalogue.md#row-15 (KAFKA-20983 / KAFKA-20985, apache/kafka PRs #23265, #23266): a static classic
member that unsubscribes sends no LeaveGroup (KIP-345) and must keep its member id; the pre-fix client
(the kafka-20983 mutant) wipes it, rejoins blind and the coordinator fences its own parked join. The
suite catches the mutant from scratch."""

from __future__ import annotations

from pathlib import Path

from conformance.engine.profiles import get_profile
from conformance.mutants import MUTANTS, UNMODELLED_ROWS
from conformance.mutants.classic_clients import SuppressedLeaveWipesId
from conformance.power.matrix import run_mutant
from conformance.protocols.build import make_classic_sim
from model.classic.client import Phase
from model.classic.invariants import static_rejoin_keeps_member_id
from model.classic.messages import JoinGroupRequest, JoinGroupResponse
from model.classic.sim import Unsubscribe
from model.errors import ErrorCode


def _stable(client_cls: type | None = None):  # type: ignore[no-untyped-def]
    sim = make_classic_sim({"t": 2}, [{"name": "c1", "instance_id": "i1"}, {"name": "c2"}], {}, {})
    if client_cls is not None:
        sim.clients["c1"].__class__ = client_cls
    for _ in range(6):
        for n in ("c1", "c2"):
            sim.client_step(n)
        sim.advance(0)
    assert sim.world.group.state.value == "Stable"
    return sim


def test_static_unsubscribe_keeps_the_member_id_and_rejoins_as_itself() -> None:
    sim = _stable()
    c1 = sim.clients["c1"]
    member_id, generation = c1.member_id, sim.world.group.generation
    obs = sim.unsubscribe("c1")
    assert obs is not None and isinstance(obs.event, Unsubscribe) and obs.deliveries == ()
    assert c1.member_id == member_id and c1.generation == -1 and c1.owned == () and c1.needs_rejoin
    assert list(static_rejoin_keeps_member_id(obs)) == []
    join = sim.client_step("c1")
    assert isinstance(join.event.request, JoinGroupRequest) and join.event.request.member_id == member_id
    assert {m.member_id for m in sim.world.group.members} >= {member_id}
    for _ in range(6):
        for n in ("c1", "c2"):
            sim.client_step(n)
        sim.advance(0)
    assert c1.member_id == member_id and c1.phase == Phase.STABLE
    assert sim.world.group.generation == generation + 1


def test_dynamic_member_and_memberless_static_member_do_not_unsubscribe_this_way() -> None:
    sim = _stable()
    assert sim.unsubscribe("c2") is None  # a dynamic member's unsubscribe is `leave` (LeaveGroup sent)
    fresh = make_classic_sim({"t": 1}, [{"name": "c1", "instance_id": "i1"}], {}, {})
    assert fresh.unsubscribe("c1") is None  # no member id yet: nothing to keep


def test_pre_fix_client_wipes_the_id_and_fences_its_own_parked_join() -> None:
    sim = _stable(SuppressedLeaveWipesId)
    c1 = sim.clients["c1"]
    old = c1.member_id
    sim.rejoin("c1")
    parked = sim.client_step("c1")  # c2 has not rejoined yet: the join is parked
    assert parked.deliveries == ()
    obs = sim.unsubscribe("c1")
    assert c1.member_id == ""
    assert list(static_rejoin_keeps_member_id(obs)) == [
        f"c1 (group.instance.id i1) unsubscribed without a LeaveGroup but went from member id {old} to "
        "the unknown member id: its rejoin would replace its own member"
    ]
    blind = sim.client_step("c1")
    fenced = [
        d for d in blind.deliveries if d.ref == parked.event.ref and isinstance(d.response, JoinGroupResponse)
    ]
    assert [d.response.error for d in fenced] == [ErrorCode.FENCED_INSTANCE_ID]
    assert old not in {m.member_id for m in sim.world.group.members}


def test_suppressed_leave_mutant_is_modelled_and_caught_from_scratch(tmp_path: Path) -> None:
    assert MUTANTS["kafka-20983"].row == 15 and 15 not in UNMODELLED_ROWS
    row = run_mutant(
        "kafka-20983",
        profile=get_profile("ci"),
        max_examples=60,
        seed=0,
        budget_s=60,
        run_dir=tmp_path,
        shrink=False,
    )
    assert row.caught and row.expected_hit and row.seeds == 1, row.invariants
