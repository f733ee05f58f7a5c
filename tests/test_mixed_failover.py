"""Mixed-group failover in the oracle, the model side (issue 4): what a restarted coordinator loads
for a mixed group, and the orders of equal session deadlines that decide a downgrade."""

from __future__ import annotations

from types import SimpleNamespace

from conformance.adapters.consumer_failover import loaded_all, mixed_restart_allowed
from conformance.adapters.mixed_oracle import MHypo
from model.consumer.mixed import MixedCoordinator
from model.consumer.mixed_world import MixedRun


def _upgraded() -> tuple[MixedCoordinator, MixedRun]:
    """A classic member forms the group, a consumer-protocol member upgrades it (B.13)."""
    coord = MixedCoordinator()
    run = MixedRun(coord, ())
    run.topic("t", 2)
    run.add_classic(
        "c1", topics=("t",), assignors=("range",), session_timeout_ms=10_000, rebalance_timeout_ms=20_000
    )
    run.run_for(20_000)
    run.add_consumer("k2", topics=("t",))
    run.run_for(20_000)
    return coord, run


def test_a_consumer_group_with_a_classic_member_fails_over_and_a_classic_group_does_not() -> None:
    coord, run = _upgraded()
    assert run.state.group_type("g") == "consumer"
    port = SimpleNamespace(coords={0: coord}, group_id="g", hypos=[MHypo(run.state.copy(), 0, run.now)])
    assert mixed_restart_allowed(port) is None
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
    run.stop("k2")  # the anchor leaves: the group is downgraded (bidirectional policy)
    run.run_for(20_000)
    assert run.state.group_type("g") == "classic"
    port.hypos = [MHypo(run.state.copy(), 0, run.now)]
    assert "classic group" in (mixed_restart_allowed(port) or "")
