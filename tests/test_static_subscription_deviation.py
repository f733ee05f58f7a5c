"""The known deviation `static-subscription-change` (docs/known-deviations.md): a static member
that restarts with a new subscription into a Stable group is replaced without a rebalance, as
Apache Kafka does (KAFKA-12759), so its new topic is never assigned."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from conformance.engine.checker import Checker
from conformance.formats.trace_file import read_trace
from conformance.trace.replay import replay
from model.classic.deviations import STATIC_SUBSCRIPTION
from model.classic.progress_invariants import eventual_convergence
from model.deviations import explain

FINDINGS = Path(__file__).resolve().parents[1] / "reports" / "findings"
FINDING = FINDINGS / "classic.eventual_convergence_05aaf342cbbc.ndjson"
#: the same restart of a static leader at JoinGroup v5 (thorough classic profile, seed 0)
LEADER = FINDINGS / "classic.eventual_convergence_07364901ef04.ndjson"


def _restarted_follower(new_topics: tuple[str, ...], join_version: int = 5):  # type: ignore[no-untyped-def]
    """c1 (dynamic) leads and c2 (static) follows on t; c2's process restarts subscribed to
    ``new_topics``, then perturbations stop."""
    from conformance.protocols.build import make_classic_sim

    clients = [
        {"name": "c1", "join_version": 0, "session_timeout_ms": 6000},
        {"name": "c2", "instance_id": "i2", "join_version": join_version, "session_timeout_ms": 6000},
    ]
    sim = make_classic_sim({"t": 2, "u": 2}, clients, {}, {})
    sim.subscribe("c1", ("t",))
    sim.subscribe("c2", ("t",))
    seen: list = []
    sim.converge(seen.append)
    assert sim.world.group is not None and sim.world.group.leader == sim.clients["c1"].member_id
    generation = sim.world.group.generation
    seen.clear()
    sim.restart("c2")
    sim.subscribe("c2", new_topics)
    sim.converge(seen.append)
    return sim, seen, generation


def test_the_finding_replays_as_the_known_deviation() -> None:
    result = replay(read_trace(FINDING))
    assert result.exact and result.verdict == "KNOWN DEVIATION", (result.verdict, result.difference)
    assert result.deviations == [STATIC_SUBSCRIPTION]
    broken = [o for o in result.observations if list(eventual_convergence(o))]
    assert broken
    obs = broken[-1]
    assert (STATIC_SUBSCRIPTION, "c2") in obs.after.deviations
    strict = Checker("classic", strict=True)
    assert any(v.invariant == "classic.eventual_convergence" for v in strict.check(obs, 1))
    assert not Checker("classic").check(obs, 1)


def test_a_follower_restarting_with_a_new_topic_is_never_given_it_at_every_join_version() -> None:
    for version in (5, 9):
        sim, seen, generation = _restarted_follower(("t", "u"), version)
        assert sim.world.group is not None and sim.world.group.generation == generation, version
        broken = [o for o in seen if list(eventual_convergence(o))]
        assert broken, version
        assert all(explain("classic.eventual_convergence", o).id == STATIC_SUBSCRIPTION for o in broken)  # type: ignore[union-attr]
        assert not any(tp[0] == "u" for c in broken[-1].after.clients for tp in c.owned)


def test_the_same_restart_with_the_same_subscription_is_not_tagged() -> None:
    sim, seen, generation = _restarted_follower(("t",))
    assert not any(o.after.deviations for o in seen)
    assert not any(list(eventual_convergence(o)) for o in seen)


def test_a_rebalance_run_by_the_leader_clears_the_tag_and_converges() -> None:
    sim, seen, _ = _restarted_follower(("t", "u"))
    sim.rejoin("c1")
    after: list = []
    sim.converge(after.append)
    assert not after[-1].after.deviations
    assert not list(eventual_convergence(after[-1]))
    assert any(tp[0] == "u" for tp in sim.world.clients[1].owned)


def test_a_partition_of_the_old_subscription_owned_by_nobody_is_not_explained() -> None:
    _, seen, _ = _restarted_follower(("t", "u"))
    obs = [o for o in seen if list(eventual_convergence(o))][-1]
    world = obs.after
    owner = next(c for c in world.clients if any(tp[0] == "t" for tp in c.owned))
    dropped = replace(owner, owned=frozenset(tp for tp in owner.owned if tp[0] != "t"))
    broken = replace(
        obs, after=replace(world, clients=tuple(dropped if c is owner else c for c in world.clients))
    )
    assert list(eventual_convergence(broken))
    assert explain("classic.eventual_convergence", broken) is None
    untagged = replace(obs, after=replace(world, deviations=frozenset()))
    assert explain("classic.eventual_convergence", untagged) is None


def test_a_static_leader_restarting_with_a_new_topic_is_explained_too() -> None:
    result = replay(read_trace(LEADER))
    assert result.exact and result.verdict == "KNOWN DEVIATION", (result.verdict, result.difference)
    broken = [o for o in result.observations if list(eventual_convergence(o))]
    obs = broken[-1]
    assert (STATIC_SUBSCRIPTION, "c1") in obs.after.deviations
    assert obs.after.group is not None and obs.after.group.leader == obs.after.clients[0].member_id
    untagged = replace(obs, after=replace(obs.after, deviations=frozenset()))
    assert explain("classic.eventual_convergence", untagged) is None
    strict = Checker("classic", strict=True)
    assert any(v.invariant == "classic.eventual_convergence" for v in strict.check(obs, 1))
