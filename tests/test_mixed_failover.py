"""Mixed-group failover in the oracle, the model side (docs/faults.md#consumer-failover): what a restarted coordinator loads
for a mixed group of either type (a classic group from its last GroupMetadata record), and the
orders of equal session deadlines that decide a downgrade."""

from __future__ import annotations

from types import SimpleNamespace

from conformance.protocols.classic.faults import Recovered
from conformance.protocols.mixed.failover import (
    MixedRecovered,
    load_times,
    loaded_all,
    matches,
    restart_allowed,
    track_durable,
)
from conformance.protocols.mixed.oracle import MHypo
from model.mixed.coordinator import MixedCoordinator
from model.mixed.world import MixedRun


class _Topics:
    """The port's topic map: the model's topic names are the real ones here."""

    @staticmethod
    def model_of_name(real: str) -> str:
        return real


def _upgraded(coord: MixedCoordinator | None = None) -> tuple[MixedCoordinator, MixedRun]:
    """A classic member forms the group, a consumer-protocol member upgrades it (docs/protocol-reference.md#b13)."""
    coord = coord or MixedCoordinator()
    run = MixedRun(coord, ())
    run.topic("t", 2)
    run.add_classic(
        "c1", topics=("t",), assignors=("range",), session_timeout_ms=10_000, rebalance_timeout_ms=20_000
    )
    run.run_for(20_000)
    run.add_consumer("k2", topics=("t",))
    run.run_for(20_000)
    return coord, run


def _hypo(run: MixedRun) -> MHypo:
    return MHypo(run.state.copy(), 0, run.now, durable=track_durable((), run.records))


def test_a_consumer_group_with_a_classic_member_fails_over() -> None:
    coord, run = _upgraded()
    assert run.state.group_type("g") == "consumer"
    port = SimpleNamespace(coords={0: coord}, group_id="g", hypos=[_hypo(run)])
    assert restart_allowed(port) is None
    # loaded when the target serves again: both members are there, with their epochs and partitions
    (h,) = loaded_all(port, port.hypos[0], run.now + 10, run.now + 10)
    before, after = run.state.consumer.groups["g"], h.state.consumer.groups["g"]
    assert {m: (x.member_epoch, x.assigned) for m, x in after.members.items()} == {
        m: (x.member_epoch, x.assigned) for m, x in before.members.items()
    }
    assert any(x.classic is not None for x in after.members.values())  # the classic metadata survives
    # loaded long before it serves (a crash): every session expires; which member goes last is open,
    # and when the consumer-protocol member goes first the rest is downgraded to a classic group
    outcomes = {h.state.group_type("g") for h in loaded_all(port, port.hypos[0], run.now, run.now + 120_000)}
    assert "classic" in outcomes and len(outcomes) == 2, outcomes


def _downgraded(coord: MixedCoordinator | None = None) -> tuple[MixedCoordinator, MixedRun]:
    coord, run = _upgraded(coord)
    run.stop("k2")  # the anchor leaves: the group is downgraded (bidirectional policy)
    run.run_for(20_000)
    assert run.state.group_type("g") == "classic"
    return coord, run


def test_a_classic_group_after_the_downgrade_fails_over_from_its_last_group_metadata() -> None:
    coord, run = _downgraded()
    port = SimpleNamespace(
        coords={0: coord}, coordinator=coord, group_id="g", hypos=[_hypo(run)], topics=_Topics()
    )
    assert restart_allowed(port) is None
    h0 = port.hypos[0]
    # loaded as the target serves again: what the model's own failover rebuilds from every record
    (h,) = loaded_all(port, h0, run.now + 10, run.now + 10)
    rebuilt, _ = coord.failover(run.records, run.now + 10)
    assert h.state.group_type("g") == "classic"
    assert h.state.classic.groups["g"] == rebuilt.classic.groups["g"]
    live = run.state.classic.groups["g"]
    g = h.state.classic.groups["g"]
    assert (g.state.value, g.generation, set(g.members)) == ("Stable", live.generation, set(live.members))
    seen = {mid: m.assignment for mid, m in live.members.items()}
    assert matches(port, h, MixedRecovered(0, classic=Recovered(0, "Stable", seen))) is None
    # what the target may show instead is named: an empty group, another member, a consumer group
    assert "state Empty" in (matches(port, h, MixedRecovered(0, classic=Recovered(0, "Empty", {}))) or "")
    other = {"someone-else": next(iter(seen.values()))}
    assert "members" in (matches(port, h, MixedRecovered(0, classic=Recovered(0, "Stable", other))) or "")
    assert "consumer group" in (matches(port, h, MixedRecovered(0, consumer=object())) or "")
    # a crash: loaded at the stop, nobody heartbeats while the target is down, the classic member's
    # session (armed at the load, GMM onLoaded) expires: the group empties
    t_load = run.now + 60_000
    assert any(at < t_load - 10_000 for at in load_times(port, h0, run.now, t_load))
    (late,) = loaded_all(port, h0, run.now, t_load)[:1]
    assert late.state.classic.groups["g"].state.value == "Empty"
    assert matches(port, late, MixedRecovered(0, classic=Recovered(0, "Empty", {}))) is None
    # without its durable GroupMetadata (as the oracle once had it) the hypothesis loads no group
    # and cannot explain the target's recovered classic group
    blind = MHypo(run.state.copy(), 0, run.now)
    (lost,) = loaded_all(port, blind, run.now + 10, run.now + 10)
    assert "no group" in (matches(port, lost, MixedRecovered(0, classic=Recovered(0, "Stable", seen))) or "")


def test_an_upgrade_tombstones_the_classic_group_in_the_durable_records() -> None:
    _coord, run = _downgraded()
    run.add_consumer("k3", topics=("t",))  # a new consumer-protocol member upgrades it again
    run.run_for(20_000)
    assert run.state.group_type("g") == "consumer"
    (last,) = [r for r in track_durable((), run.records) if getattr(r, "group_id", None) == "g"]
    assert type(last).__name__ == "ClassicGroupTombstone"


def test_a_load_that_forgets_classic_expiry_is_caught_at_the_failover() -> None:
    """The mutant `classic-load-forgets-expiry` keeps the right live group, so nothing shows until a
    restart while the group is classic: a crash loads the group at the stop, nobody heartbeats, and
    Kafka (the reference) expires the member where the mutant keeps it (an `oracle.Failover`
    difference on a real target); on the model the invariant `classic.session_expiry_armed` fails."""
    from conformance.mutants.mixed import MIXED_MUTANTS

    mutant = MIXED_MUTANTS["classic-load-forgets-expiry"]
    ref_coord, ref_run = _downgraded()
    bad_coord, bad_run = _downgraded(mutant())
    assert bad_run.state == ref_run.state  # the live groups agree
    empty = MixedRecovered(0, classic=Recovered(0, "Empty", {}))
    for coord, run, caught in ((ref_coord, ref_run, False), (bad_coord, bad_run, True)):
        port = SimpleNamespace(
            coords={0: coord}, coordinator=coord, group_id="g", hypos=[_hypo(run)], topics=_Topics()
        )
        loads = loaded_all(port, port.hypos[0], run.now, run.now + 60_000)
        why = matches(port, loads[0], empty)
        assert (why is not None) == caught, why
    from model.invariants import REGISTRY, load_all
    from model.mixed.world import CLASSIC_STATE_INVARIANTS

    load_all()
    for coord_class, caught in ((MixedCoordinator, False), (mutant, True)):
        run = MixedRun(coord_class(), tuple(REGISTRY[i] for i in CLASSIC_STATE_INVARIANTS))
        run.topic("t", 2)
        run.add_classic(
            "c1", topics=("t",), assignors=("range",), session_timeout_ms=10_000, rebalance_timeout_ms=20_000
        )
        run.run_for(20_000)
        run.crash("c1")
        run.failover()
        run.run_for(20_000)
        found = any(inv == "classic.session_expiry_armed" for inv, _ in run.violations)
        assert found == caught, run.violations
