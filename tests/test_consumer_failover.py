"""Coordinator failover and topic changes for KIP-848 groups, the model side (docs/faults.md#consumer-failover).

The oracle beside a real coordinator keeps states, not record logs, so what a new coordinator loads
is read off a state (`durable_view`); it must equal the model's own failover (`rebuild` of the
compacted records) on every step of random runs. The rest: the Kafka 4.4.0 rule that fencing the
last member writes the target at the new epoch, the recovered-group comparison and the load
moments the oracle tries, and the failover-only mutant with its trace.
"""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

from conformance.formats.trace_file import read_trace
from conformance.protocols.build import make_consumer_sim
from conformance.protocols.consumer.failover import (
    RecoveredGroup,
    RecoveredMember,
    load_times,
    recovered_matches,
)
from conformance.trace.replay import replay
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatRequest
from model.consumer.records import compact, durable_view, rebuild
from model.consumer.state import ConsumerCoordinatorState, GroupState, Timer
from model.consumer.txn import ConsumerCoordinatorConfig

HERE = Path(__file__).parent / "failover"
PASSED = HERE / "passed_3064c235d840.ndjson"
MUTANT = HERE / "consumer.no_double_client_assignment_9606b073d739.ndjson"


def _random_run(seed: int, steps: int = 50) -> object:
    rnd = random.Random(seed)
    clients = [
        {
            "name": f"c{i}",
            "topics": ["t", "u"] if i % 2 else ["t"],
            **({"instance_id": f"i{i}"} if i == 1 else {}),
        }
        for i in range(3)
    ]
    sim = make_consumer_sim({"t": 3, "u": 2}, clients, {}, {}, seed=seed)
    for _ in range(steps):
        op = rnd.choice(
            ["step"] * 5 + ["advance", "leave", "restart", "reconcile", "commit", "topic", "failover", "slow"]
        )
        name = f"c{rnd.randrange(3)}"
        if op == "step":
            sim.client_step(name)
        elif op == "advance":
            sim.advance(rnd.choice([100, 500, 2000, 6000]))
        elif op == "leave":
            sim.leave(name)
        elif op == "restart":
            sim.restart(name)
        elif op == "reconcile":
            sim.reconcile(name)
        elif op == "commit":
            sim.commit(name)
        elif op == "failover":
            sim.failover()
        elif op == "slow":
            sim.set_slow(name, rnd.random() < 0.5)
        else:
            topics = sim.port.coordinator_state().topics
            if "u" in topics:
                sim.topic("delete", "u")
            else:
                sim.topic("add_partitions", "t", topics["t"] + 1)
        yield sim


def test_durable_view_is_what_the_model_loads_on_failover() -> None:
    compared = timers = 0
    for seed in range(8):
        for sim in _random_run(seed):
            state = sim.port.state  # type: ignore[attr-defined]
            view = durable_view(state)
            assert view == rebuild(compact(sim.port.records)), seed  # type: ignore[attr-defined]
            timers += sum(len(g.timers) for g in state.groups.values())
            compared += 1
    assert compared == 400 and timers > 0  # the live states had timers; the loaded ones have none


def test_fencing_the_last_member_writes_the_empty_target_at_the_new_epoch() -> None:
    """Kafka 4.4.0 GroupMetadataManager.consumerGroupFenceMembers (seen through ConsumerGroupDescribe
    after a crash restart: an expired group came back Empty at assignment epoch = group epoch)."""
    coord = ConsumerCoordinator(ConsumerCoordinatorConfig(session_timeout_ms=1000))
    state = ConsumerCoordinatorState()
    coord.create_topic(state, "t", 2)
    for mid in ("a", "b"):
        coord.handle_consumer_group_heartbeat(
            state,
            ConsumerGroupHeartbeatRequest(
                "g", mid, 0, rebalance_timeout_ms=5000, subscribed_topic_names=("t",), topic_partitions=()
            ),
            1,
            0,
        )
    g = state.groups["g"]
    epoch = g.group_epoch
    coord.handle_consumer_group_heartbeat(state, ConsumerGroupHeartbeatRequest("g", "a", -1), 2, 10)
    assert (g := state.groups["g"]).group_epoch == epoch + 1 and g.assignment_epoch < g.group_epoch  # b stays
    coord.advance(state, 5000)  # b's session expires: the last member
    g = state.groups["g"]
    assert not g.members and g.state == GroupState.EMPTY
    assert g.assignment_epoch == g.group_epoch == epoch + 2


def _port(state: ConsumerCoordinatorState) -> SimpleNamespace:
    return SimpleNamespace(group_id="g", state=state)


def test_recovered_group_comparison_names_each_difference() -> None:
    sim = next(s for i, s in enumerate(_random_run(3, 30)) if i == 29)
    state = durable_view(sim.port.state)  # type: ignore[attr-defined]
    g = state.groups["g"]
    same = RecoveredGroup(
        0,
        g.state.value,
        g.group_epoch,
        g.assignment_epoch,
        {
            mid: RecoveredMember(mid, m.instance_id, m.member_epoch, m.held, g.target_of(mid))
            for mid, m in g.members.items()
        },
    )
    assert g.members and recovered_matches(_port(state), state, same) is None
    mid = sorted(g.members)[0]
    m = same.members[mid]
    worse = RecoveredGroup(
        0,
        same.state,
        same.group_epoch + 1,
        same.assignment_epoch,
        {**same.members, mid: RecoveredMember(mid, None, m.member_epoch + 1, frozenset(), m.target)},
    )
    why = recovered_matches(_port(state), state, worse) or ""
    assert "group/assignment epoch" in why and f"{mid} epoch" in why
    assert recovered_matches(_port(state), state, None) is not None  # the target lost the group
    empty = RecoveredGroup(0, "Empty", g.group_epoch, g.assignment_epoch, {})
    assert "members []" in (recovered_matches(_port(state), state, empty) or "")


def test_load_moments_cover_the_timers_that_may_fire_while_the_target_is_down() -> None:
    state = ConsumerCoordinatorState()
    coord = ConsumerCoordinator(ConsumerCoordinatorConfig(session_timeout_ms=2000))
    coord.create_topic(state, "t", 1)
    coord.handle_consumer_group_heartbeat(
        state,
        ConsumerGroupHeartbeatRequest(
            "g", "a", 0, rebalance_timeout_ms=700, subscribed_topic_names=("t",), topic_partitions=()
        ),
        1,
        0,
    )
    h = SimpleNamespace(state=state)
    assert load_times(h, 1000, 20000, 2000) == [20000, 17999, 1000]
    state.groups["g"].timers[("rebalance", "a")] = Timer("rebalance", "a", 900, 1)
    assert load_times(h, 1000, 20000, 2000) == [20000, 19299, 17999, 1000]
    assert load_times(h, 19000, 20000, 2000) == [20000, 19299, 19000]  # a clean, quick restart


def test_failover_only_mutant_trace_fails_on_the_model_and_the_reference_passes_it() -> None:
    trace = read_trace(MUTANT)
    assert trace.header["variants"] == {"mutant": "forget-pending-revocation"}
    assert [s.action["op"] for s in trace.steps].count("failover") == 1
    failed = replay(trace, target="model")
    assert failed.verdict == "FAILED", failed.error
    assert {v.invariant for v in failed.violations} == {"consumer.no_double_client_assignment"}
    fixed = replay(trace, target="model", variants={"mutant": None})
    assert fixed.verdict == "FIXED", fixed.violations
    ok = replay(read_trace(PASSED), target="model")
    assert ok.verdict == "PASSED"
    ops = {(s.action["op"], s.action.get("action")) for s in read_trace(PASSED).steps}
    assert {("failover", None), ("topic", "add_partitions"), ("topic", "delete")} <= ops
