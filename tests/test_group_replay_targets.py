"""Consumer and mixed-group traces replayed on Apache Kafka (docs/faults.md#replay-on-real-targets).

One broker for the module (a few seconds to start); each replay is a handful of requests.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conformance.formats.trace_file import read_trace
from conformance.protocols import get_kit
from conformance.targets.open import open_target

CLASSIC = get_kit("classic")

pytestmark = pytest.mark.target
REGRESSIONS = Path(__file__).parent / "regressions"
GHOST = REGRESSIONS / "consumer.no_ghost_member_2ff8b30cc9b1.ndjson"  # KAFKA-17116, a coordinator mutant
STATIC_CLOSE = REGRESSIONS / "consumer.static_close_is_temporary_3ba76cbb626d.ndjson"  # a client mutant
FAILOVER = Path(__file__).parent / "failover"  # consumer traces with failover and topic changes
PASSED = FAILOVER / "passed_3064c235d840.ndjson"
MUTANT = FAILOVER / "consumer.no_double_client_assignment_9606b073d739.ndjson"


@pytest.fixture(scope="module")
def kafka() -> Iterator[Any]:
    with open_target("apache-kafka") as handle:
        yield handle


def test_consumer_regression_is_fixed_on_kafka_and_a_kafka_recording_replays_there(
    kafka: Any, tmp_path: Path
) -> None:
    from conformance.protocols.consumer import trace as consumer
    from conformance.trace.emit import emit_counterexample
    from conformance.trace.replay import replay_on_target

    trace = read_trace(GHOST)
    result, notes = replay_on_target(trace, kafka.bootstrap, {})
    assert result.error is None, result.error
    assert result.verdict == "FIXED", result.violations
    assert any("mutant=kafka-17116 dropped" in n for n in notes)
    answers = [d.response for obs in result.observations for d in obs.deliveries]
    assert answers and all(a.error_code.name == "NONE" for a in answers)  # Kafka answered every heartbeat
    # the replay's own log is a trace recorded on Kafka: it replays there and passes
    recorded = consumer.to_trace(
        result.sim, target="apache-kafka", target_version="4.4.0", origin={"kind": "replay"}, violations=[]
    )
    again_trace = read_trace(emit_counterexample(recorded, tmp_path))
    assert again_trace.header["target"]["name"] == "apache-kafka" and again_trace.verdict == "PASSED"
    again, _ = replay_on_target(again_trace, kafka.bootstrap, {})
    assert again.error is None and again.verdict == "PASSED", again.violations
    # teeth: with the mutant kept beside Kafka, the oracle sees Kafka answer otherwise
    kept, _ = replay_on_target(trace, kafka.bootstrap, {"mutant": "kafka-17116"})
    assert kept.verdict == "FAILED"
    assert any(v.invariant == "oracle.ConsumerGroupHeartbeat" for v in kept.violations), kept.violations


def test_consumer_client_mutant_stays_and_unreplayable_ops_are_errors(
    kafka: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conformance.trace.replay import replay_on_target

    trace = read_trace(STATIC_CLOSE)
    result, notes = replay_on_target(trace, kafka.bootstrap, {})
    assert any("mutant=dekaf-1348 kept" in n for n in notes)
    assert result.verdict == "FAILED"  # the bug is in our virtual member, whatever the coordinator
    assert {v.invariant for v in result.violations} == {"consumer.static_close_is_temporary"}
    trace.steps.append(replace(trace.steps[-1], action={"op": "failover"}, line=99))
    # a coordinator at host:port that this process did not start cannot be restarted: ERROR
    import conformance.targets.base as targets_base

    monkeypatch.setattr(targets_base, "target_for_bootstrap", lambda bootstrap: None)
    broken, _ = replay_on_target(trace, kafka.bootstrap, {})
    assert broken.verdict == "ERROR" and f"{trace.path}:99" in (broken.error or "")


def test_mixed_oracle_catches_a_broken_model_and_its_trace_replays_on_kafka(
    kafka: Any, tmp_path: Path
) -> None:
    """Mixed groups on Kafka (classic and consumer-protocol members in one group): with a model that
    never tells a classic member to rejoin beside Kafka, the upgrade's rejoin is a divergence; the
    trace recorded there replays FAILED with that model and FIXED with the reference model."""
    from conformance.cli.check import _run_one, real_profile
    from conformance.trace.emit import emit_counterexample
    from conformance.trace.replay import replay_on_target

    broken = {"mixed_mutant": "heartbeat-never-rejoins"}
    run = _run_one(kafka, "mixed", real_profile("dev"), 1, 0, broken, "protocol", time.monotonic())
    found = {v.invariant for v in run.result.violations}
    assert "oracle.Heartbeat" in found, (found, run.result.steps)
    assert any("REBALANCE_IN_PROGRESS" in v.message for v in run.result.violations)
    trace = read_trace(emit_counterexample(run.result.trace, tmp_path))
    assert trace.protocol == "mixed" and trace.header["target"]["name"] == "apache-kafka"
    ops = {s.action.get("op") for s in trace.steps}
    assert {"add_classic", "add_consumer", "run_for"} <= ops
    fixed, notes = replay_on_target(trace, kafka.bootstrap, {})
    assert fixed.error is None, fixed.error
    assert fixed.verdict == "FIXED", fixed.violations
    assert any("mixed_mutant=heartbeat-never-rejoins dropped" in n for n in notes)
    kinds = {type(d.response).__name__ for obs in fixed.observations for d in obs.deliveries}
    assert {"JoinGroupResponse", "SyncGroupResponse", "ConsumerGroupHeartbeatResponse"} <= kinds
    again, _ = replay_on_target(trace, kafka.bootstrap, broken)  # type: ignore[arg-type]
    assert again.verdict == "FAILED" and "oracle.Heartbeat" in {v.invariant for v in again.violations}


def test_a_model_mixed_counterexample_is_fixed_on_kafka(kafka: Any, tmp_path: Path) -> None:
    """A mixed-group counterexample found on the model (a coordinator that never tells a classic
    member to rejoin) replays on Kafka through the mixed oracle: FIXED, the mutant dropped."""
    from conformance.engine.profiles import get_profile
    from conformance.engine.run import run_check
    from conformance.trace.emit import emit_counterexample
    from conformance.trace.replay import replay_on_target

    found = run_check(
        "mixed",
        profile=get_profile("dev"),
        seed_value=0,
        variants={"mixed_mutant": "heartbeat-never-rejoins"},
    )
    assert found.trace is not None and "mixed.classic_heartbeat_rule" in {
        v.invariant for v in found.violations
    }
    trace = read_trace(emit_counterexample(found.trace, tmp_path))
    result, notes = replay_on_target(trace, kafka.bootstrap, {})
    assert result.error is None, result.error
    assert result.verdict == "FIXED", result.violations
    assert any("dropped" in n for n in notes) and result.observations


# ---------------------------------------------------------------- failover and topic changes
def test_topic_changes_agree_with_the_model(kafka: Any) -> None:
    """A topic grows, a topic is deleted and created again under the same name (members
    subscribe by name; Kafka gives it a new id); Kafka and the model agree on every answer, the epoch
    is bumped at the first heartbeat after each change, the deleted topic leaves the assignments."""
    from conformance.cli.check import real_profile
    from conformance.protocols.build import make_consumer_sim
    from conformance.protocols.consumer.realtime import RealTimeConsumerSim
    from conformance.protocols.consumer.setup import consumer_setup

    factory, config, _ = consumer_setup(kafka, real_profile("ci"))
    clients = [{"name": "c1", "topics": ["t", "u"]}, {"name": "c2", "topics": ["t"], "instance_id": "i2"}]
    sim = make_consumer_sim(
        {"t": 2, "u": 2}, clients, config, {}, port_factory=factory, sim_class=RealTimeConsumerSim
    )
    port = sim.port
    assert port.supports_topic_changes
    assert port.supports_failover and not port.restart_left()  # no restart budget in this session

    def rounds(n: int) -> None:
        for _ in range(n):
            for name in ("c1", "c2"):
                sim.client_step(name)
            sim.advance(250)
        assert port.findings == [], port.findings

    def group() -> Any:
        return port.coordinator_state().groups["g"]

    rounds(5)
    epoch = group().group_epoch
    sim.topic("add_partitions", "t", 3)
    rounds(4)
    assert group().group_epoch == epoch + 1 and ("t", 2) in set().union(*group().target.values())
    sim.topic("delete", "u")
    rounds(4)
    assert group().group_epoch == epoch + 2
    assert all(t != "u" for m in group().members.values() for t, _ in m.assigned)
    sim.topic("create", "u", 2)
    rounds(4)
    assert group().group_epoch == epoch + 3
    assert ("u", 0) in set().union(*(m.assigned for m in group().members.values()))
    port.close()


def test_failover_traces_replay_on_kafka(kafka: Any) -> None:
    """The committed traces of tests/failover/: a model recording with a failover (a crash
    here) and topic growth and deletion PASSES on Kafka; the failover-only mutant's counterexample is
    FIXED there, and that mutant kept beside Kafka is caught (clean restarts, SIGTERM: the members
    survive, so the forgotten pending revocation matters)."""
    from conformance.protocols.consumer.replay import replay_consumer_on_target

    # a crash (SIGKILL, the default): the broker loads the group while nobody can heartbeat, the
    # members expire, and the recovered group (ConsumerGroupDescribe) must equal the model's
    passed, notes = replay_consumer_on_target(read_trace(PASSED), kafka.bootstrap, {})
    assert passed.error is None and passed.verdict == "PASSED", passed.violations
    assert not any("Failover rule is off" in n for n in notes)
    trace = read_trace(MUTANT)
    fixed, notes = replay_consumer_on_target(trace, kafka.bootstrap, {}, restart_signal="term")
    assert fixed.error is None and fixed.verdict == "FIXED", fixed.violations
    assert any("mutant=forget-pending-revocation dropped" in n for n in notes)
    # teeth: the mutant kept beside Kafka forgets c1's pending revocation on load; Kafka does not
    kept, _ = replay_consumer_on_target(
        trace, kafka.bootstrap, {"mutant": "forget-pending-revocation"}, restart_signal="term"
    )
    assert kept.verdict == "FAILED"
    assert any(v.invariant.startswith("oracle.") for v in kept.violations), kept.violations


# ---------------------------------------------------------------- wire faults inside a mixed group
def test_mixed_wire_faults_and_a_restart_while_classic_agree_with_kafka(kafka: Any) -> None:
    """In one real mixed group, a classic and a consumer-protocol member lose an answer, have
    a request duplicated and a connection cut, a classic heartbeat is held past its session (Kafka
    expires the member meanwhile, as the model); then the group is downgraded and Kafka restarts
    while it is classic: the recovered group is the one the hypotheses load from their durable
    GroupMetadata. The oracle and every mixed invariant agree at each step."""
    from conformance.cli.check import real_profile
    from conformance.engine.checker import Checker
    from conformance.protocols.mixed.machine_real import CLASSIC_REBALANCE_MS, CLASSIC_SESSION_MS
    from conformance.protocols.mixed.realtime import real_mixed_run
    from conformance.protocols.mixed.setup import mixed_setup
    from model.classic.messages import HeartbeatResponse

    proxy = kafka.session.adapter.proxy
    assert proxy is not None
    proxy.take_events()
    kafka.session.max_restarts = (
        kafka.session.__dict__.setdefault("restarts_by_protocol", {}).get("mixed", 0) + 1
    )
    factory, _, _ = mixed_setup(kafka, real_profile("faults"))
    run = real_mixed_run(factory(0, {}), {"seed": 0}, {})
    checker, found = Checker("mixed"), []

    def step(action: Any) -> None:
        action()
        for obs in run.observations:
            found.extend((v.invariant, v.message) for v in checker.check(obs, 0))
        del run.observations[:]
        found.extend((f.rule, f.message) for f in run.port.take_findings())

    def classic(name: str) -> None:
        run.add_classic(
            name, topics=("t",), assignors=("range",), join_version=9,
            session_timeout_ms=CLASSIC_SESSION_MS, rebalance_timeout_ms=CLASSIC_REBALANCE_MS,
        )  # fmt: skip

    try:
        step(lambda: run.topic("t", 2))
        classic("c1")
        step(lambda: run.run_for(1_500))
        run.add_consumer("k2", topics=("t",), rebalance_timeout_ms=CLASSIC_REBALANCE_MS)
        step(lambda: run.run_for(1_500))  # upgraded online
        classic("c3")
        step(lambda: run.run_for(1_500))
        for fault, name in (("lose_response", "c1"), ("duplicate_request", "k2"), ("cut_connection", "c3")):
            step(lambda fault=fault, name=name: getattr(run, fault)(name))
            step(lambda: run.run_for(750))
        step(lambda: run.duplicate_request("c1"))
        step(lambda: run.lose_response("k2"))
        step(lambda: run.run_for(750))
        step(lambda: run.delay_request("c3"))
        step(lambda: run.run_for(CLASSIC_SESSION_MS + 1_000))  # held past its session
        heard = len(run.responses)
        step(lambda: run.release("c3"))
        late = [r for name, r in run.responses[heard:] if name == "c3"]
        step(lambda: run.run_for(1_500))
        step(lambda: run.stop("c3"))
        step(lambda: run.run_for(1_000))
        step(lambda: run.stop("k2"))  # the last consumer-protocol member leaves: a classic group
        step(lambda: run.run_for(1_500))
        assert run.port.state().group_type("g") == "classic"
        step(run.failover)
        step(lambda: run.run_for(1_500))
    finally:
        run.port.close()
    assert found == [], found
    kinds = {e.kind for e in proxy.take_events()}
    assert {"duplicate", "drop", "cut", "delay", "release"} <= kinds, kinds
    assert late and isinstance(late[0], HeartbeatResponse) and late[0].error.name == "UNKNOWN_MEMBER_ID"
    assert any("(classic group)" in line for line in run.port.log), run.port.log[-5:]
    assert run.port.state().group_type("g") == "classic"
