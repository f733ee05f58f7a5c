"""The KIP-848 stateful suite: the machine passes on the model, finds the catalogue mutants from
scratch, replays exactly, and the CLI runs it."""

from __future__ import annotations

import pytest

from conformance.cli.main import main
from conformance.engine.checker import Checker
from conformance.engine.profiles import get_profile
from conformance.engine.run import run_check
from conformance.protocols.build import consumer_settle_bound, make_consumer_sim
from model.consumer.sim import ConsumerSim

TWO = [{"name": "c1", "topics": ["t"]}, {"name": "c2", "topics": ["t"], "instance_id": "i2"}]


def test_check_passes_on_the_model() -> None:
    result = run_check("consumer", profile=get_profile("ci"), max_examples=120, seed_value=0)
    assert result.verdict == "PASSED", (result.violations[:3], result.vacuous)
    assert all(n > 0 for n in result.sometimes.values()), result.sometimes


def test_check_finds_kafka_16147_from_scratch() -> None:
    result = run_check(
        "consumer",
        profile=get_profile("ci"),
        max_examples=300,
        seed_value=0,
        variants={"mutant": "kafka-16147"},
    )
    assert "consumer.single_partition_holder" in {v.invariant for v in result.violations}
    assert len(result.steps) < 40  # shrunk


def test_check_finds_kip_1082_ghosts_from_scratch_with_v0() -> None:
    result = run_check(
        "consumer",
        profile=get_profile("ci"),
        max_examples=300,
        seed_value=1,
        variants={"heartbeat_version": "0"},
    )
    assert "consumer.no_ghost_member" in {v.invariant for v in result.violations}


def _walk(sim: ConsumerSim) -> None:
    sim.client_step("c1")
    sim.lose_response("c2")
    sim.client_step("c2")
    sim.advance(600)
    sim.client_step("c2")
    sim.duplicate("c2")
    sim.stale_heartbeat("c1", -1)
    sim.set_slow("c1", True)
    sim.topic("add_partitions", "t", 4)
    sim.client_step("c1")
    sim.failover()
    sim.stall("c2", True)
    sim.advance(3100)
    sim.reconcile("c1")
    sim.stall("c2", False)
    sim.leave("c2")
    sim.restart("c2")
    sim.subscribe("c1", ("t", "u"))
    sim.topic("create", "u", 2)
    sim.commit("c1")
    sim.settle(consumer_settle_bound(sim), 250)


def test_recorded_actions_replay_to_the_same_world() -> None:
    a = make_consumer_sim({"t": 2}, TWO, {}, {}, seed=3)
    _walk(a)
    b = make_consumer_sim({"t": 2}, TWO, {}, {}, seed=3)
    b.replay(list(a.actions))
    assert b.world == a.world and b.actions == a.actions
    assert a.world is not None and a.world.groups["g"].members


def test_every_step_of_a_faulty_walk_keeps_the_invariants() -> None:
    sim = make_consumer_sim({"t": 2}, TWO, {}, {}, seed=5)
    checker = Checker("consumer")
    a = make_consumer_sim({"t": 2}, TWO, {}, {}, seed=5)
    _walk(a)
    for i, obs in enumerate(sim.replay(list(a.actions))):
        assert checker.check(obs, i) == []
    assert checker.hits["consumer.sometimes_revocation"] > 0


def test_settle_checks_convergence_and_a_stuck_member_breaks_it() -> None:
    sim = make_consumer_sim({"t": 2}, TWO, {}, {})
    checker = Checker("consumer")
    for i, obs in enumerate(sim.settle(consumer_settle_bound(sim), 250)):
        assert checker.check(obs, i) == []
    # a client that never finishes its callbacks and is never fenced (no rebalance timer) cannot converge
    sim = make_consumer_sim({"t": 2}, TWO, {}, {})
    sim.port.coordinator.schedule_rebalance_timeout = lambda txn, member, now: None  # type: ignore[attr-defined]
    sim.client_step("c1")
    sim.set_slow("c1", True)
    sim.client_step("c2")
    sim.advance(500)
    sim.client_step("c1")
    sim.clients["c1"].complete_reconciliation = lambda: None  # type: ignore[method-assign]
    found = {v.invariant for i, o in enumerate(sim.settle(6000, 250)) for v in checker.check(o, i)}
    assert "consumer.eventual_convergence" in found


def test_cli_check_consumer_and_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--protocol", "consumer", "--max-examples", "20", "--profile", "dev"]) in (0, 3)
    out = capsys.readouterr().out
    assert "consumer on model:" in out
    assert main(["check", "--protocol", "all", "--max-examples", "10", "--profile", "dev"]) in (0, 3)
    out = capsys.readouterr().out
    assert "classic on model:" in out and "consumer on model:" in out


def test_cli_kafka_16147_mutant_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["check", "--protocol", "consumer", "--variant", "mutant=kafka-16147", "--max-examples", "300"]
    )
    assert code == 1
    assert "consumer.single_partition_holder" in capsys.readouterr().out


def test_cli_ghost_scenario_v0_exits_1_v1_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "run", "kip-1082-ghost-member", "--variant", "heartbeat_version=0"]) == 1
    assert "consumer.no_ghost_member" in capsys.readouterr().out
    assert main(["scenario", "run", "kip-1082-ghost-member", "--variant", "heartbeat_version=1"]) == 0


def test_unknown_consumer_client_field_is_a_spec_error() -> None:
    from conformance.errors import SpecError

    with pytest.raises(SpecError, match="unknown field"):
        make_consumer_sim({"t": 1}, [{"name": "c1", "topic": ["t"]}], {}, {}, where="x.yaml:3")
    with pytest.raises(SpecError, match="unknown config key"):
        make_consumer_sim({"t": 1}, [{"name": "c1"}], {"session_timeout": 1}, {}, where="x.yaml:3")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_compacted_log_rebuilds_the_same_state(seed: int) -> None:
    """Failover loads the compacted log; it must rebuild exactly what the whole log rebuilds."""
    import random

    from model.consumer.records import compact, rebuild

    rng = random.Random(seed)
    clients = [
        {"name": f"c{i}", "topics": ["t", "u"][: 1 + i % 2], "instance_id": f"i{i}" if i == 1 else None}
        for i in range(3)
    ]
    sim = make_consumer_sim({"t": 3, "u": 2}, clients, {}, {}, seed=seed)
    names = sorted(sim.clients)
    for _ in range(1500):
        name, r = rng.choice(names), rng.random()
        if r < 0.7:
            sim.client_step(name)
        elif r < 0.85:
            sim.advance(rng.choice((100, 500, 3100)))
        elif r < 0.9:
            sim.restart(name)
        elif r < 0.95:
            sim.leave(name)
            sim.subscribe(name, ("t",))
        else:
            sim.commit(name)
    records = sim.port.records  # type: ignore[attr-defined]
    compacted = compact(records)
    assert len(compacted) < len([r for r in records if getattr(r, "durable", False)])
    assert rebuild(compacted) == rebuild(records)
