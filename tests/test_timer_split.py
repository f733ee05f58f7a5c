"""Timers the consumer oracle fires just before a request are an observation of their own (docs/oracle.md#observation-split,
`conformance/engine/oracle/timer_split.py`), without a real target: the "target" here is a scripted
port whose answers come from a second model coordinator that acts on a session expiry before an
OffsetCommit (as Apache Kafka did at `check --protocol consumer --profile ci --seed 1`)."""

from __future__ import annotations

import dataclasses
import uuid
from types import SimpleNamespace
from typing import Any

from conformance.engine.checker import Checker
from conformance.protocols.build import make_consumer_sim
from conformance.protocols.consumer.codec import API_CONSUMER_GROUP_HEARTBEAT, API_OFFSET_COMMIT
from conformance.protocols.consumer.oracle import ConsumerOraclePort
from conformance.protocols.consumer.realtime import RealTimeConsumerSim
from conformance.protocols.mixed.oracle import MixedOraclePort
from conformance.protocols.mixed.realtime import real_mixed_run
from model.choice import SeededChooser
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatRequest
from model.consumer.state import ConsumerCoordinatorState
from model.consumer.txn import ConsumerCoordinatorConfig
from model.consumer.world import AdvanceEvent, HeartbeatEvent, OffsetCommitEvent
from model.errors import ErrorCode
from model.mixed.consumer_group import MixedConfig
from model.mixed.coordinator import MixedCoordinator
from model.mixed.state import MixedState

SESSION_MS = 2000


class ScriptedConsumerPort(ConsumerOraclePort):
    """The consumer oracle with its wire replaced: a virtual clock, and answers computed by
    ``reference`` (a model coordinator standing for the target) at the clock's time."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.fake_now = 0
        self.reference = ConsumerCoordinator(self.config)
        self.reference_state = ConsumerCoordinatorState()
        self.pending: Any = None

    def clock(self) -> int:
        return self.fake_now

    def sleep_until(self, ms: int) -> None:
        self.fake_now = max(self.fake_now, ms)

    def topic(self, action: str, topic: str, partitions: int) -> Any:
        self.topics.add(topic, f"real-{topic}", uuid.UUID(int=7))
        self.reference.create_topic(self.reference_state, topic, partitions)
        for h in self.hypos:
            self.coords[h.origin].create_topic(h.state, topic, partitions)
        from model.result import Result

        return Result()

    def heartbeat(self, request: ConsumerGroupHeartbeatRequest, ref: int, now: int) -> Any:
        self.pending = request
        return super().heartbeat(request, ref, now)

    def offset_commit(self, request: object, ref: int, now: int) -> Any:
        self.pending = request
        return super().offset_commit(request, ref, now)

    def _submit(self, member: str, payload: Any, ref: int) -> None:
        pass

    def _await(self, ref: int, t: int) -> tuple[Any, int]:
        """The target acts on every timer due by ``t`` (its session expiries) first, then answers."""
        self.reference.advance(self.reference_state, t)
        request = self.pending
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            result = self.reference.handle_consumer_group_heartbeat(self.reference_state, request, ref, t)
        else:
            result = self.reference.handle_offset_commit(self.reference_state, request, ref, t)
        return next(d.response for d in result.deliveries if d.ref == ref), t + 5


def scripted_sim(
    names: tuple[str, ...] = ("c1",), partitions: int = 1
) -> tuple[RealTimeConsumerSim, ScriptedConsumerPort]:
    adapter = SimpleNamespace(
        connect=lambda: SimpleNamespace(
            api_versions={API_CONSUMER_GROUP_HEARTBEAT: (0, 1), API_OFFSET_COMMIT: (0, 9)}
        ),
        drop_member=lambda member: None,
    )
    session = SimpleNamespace(
        adapter=adapter, next_group=lambda: "gc-test-g1", launcher=None, compat=[], rtt_ms=[], run_id="test"
    )
    made: list[ScriptedConsumerPort] = []

    def factory(coordinator: Any) -> ScriptedConsumerPort:
        made.append(ScriptedConsumerPort(coordinator, session))  # type: ignore[arg-type]
        return made[-1]

    sim = make_consumer_sim(
        {"t": partitions},
        [{"name": n, "topics": ["t"], "rebalance_timeout_ms": 1000} for n in names],
        {"session_timeout_ms": SESSION_MS, "initial_group_epoch": 1, "heartbeat_interval_ms": 500},
        {},
        port_factory=factory,
        sim_class=RealTimeConsumerSim,
    )
    return sim, made[0]


def _run_to_commit(split: bool) -> tuple[list[Any], list[str], RealTimeConsumerSim]:
    """c1 joins and owns t-0; 2.6 s later (its session of 2 s expired in the target, which the oracle
    cannot yet know for certain) it commits at its epoch and the target answers UNKNOWN_MEMBER_ID."""
    sim, port = scripted_sim()
    port.split_timers = split
    checker = Checker("consumer")
    seen: list[Any] = []
    found: list[str] = []

    def observe(obs: Any) -> None:
        if obs is None:
            return
        for o in [*sim.take_pre_observations(obs), obs]:
            seen.append(o)
            found.extend(v.invariant for v in checker.check(o, len(seen)))

    for _ in range(3):  # join, then acknowledge the assignment
        observe(sim.client_step("c1"))
        port.sleep_until(port.clock() + 100)
    assert sim.client("c1").owned == frozenset({("t", 0)})
    port.sleep_until(port.clock() + SESSION_MS + 400)
    observe(sim.commit("c1"))
    return seen, found, sim


def violations(seen: list[Any]) -> list[tuple[str, list[str]]]:
    from model.invariants import REGISTRY

    return [
        (name, found)
        for o in seen
        for name in ("consumer.offset_commit_exact_epoch",)
        if (found := REGISTRY[name].check(o))
    ]


def test_an_expiry_before_an_offset_commit_is_its_own_observation() -> None:
    seen, found, _sim = _run_to_commit(split=True)
    assert found == []  # every invariant holds on every step
    commit = seen[-1]
    assert isinstance(commit.event, OffsetCommitEvent)
    assert set(commit.deliveries[0].response.errors().values()) == {ErrorCode.UNKNOWN_MEMBER_ID}
    expiry = seen[-2]
    member = commit.event.request.member_id
    # the expiry: an advance that moves no time, from a world with c1 to one without it
    assert isinstance(expiry.event, AdvanceEvent) and not expiry.deliveries
    assert member in expiry.before.groups["g"].members
    assert "g" not in expiry.after.groups or member not in expiry.after.groups["g"].members
    assert commit.before is expiry.after  # the commit is judged from the state the expiry left
    assert violations(seen) == []


def test_without_the_split_the_commit_is_judged_against_the_member_that_expired() -> None:
    """The behaviour before the fix (the benchmark's switch): the expiry folded into the commit's
    observation reads as an exact-epoch commit rejected (the seed 1 false alarm)."""
    seen, checked, _sim = _run_to_commit(split=False)
    assert checked == ["consumer.offset_commit_exact_epoch"]
    assert not any(isinstance(o.event, AdvanceEvent) and o.now == seen[-1].now for o in seen[-2:-1])
    found = violations(seen)
    assert [name for name, _ in found] == ["consumer.offset_commit_exact_epoch"]
    assert "exact epoch" in found[0][1][0] and "UNKNOWN_MEMBER_ID" in found[0][1][0]


def test_the_trace_records_the_split_as_the_actions_first_step() -> None:
    """The commit action's own line carries the expiry (an advance event), a ``cont`` line the commit."""
    _seen, _found, sim = _run_to_commit(split=True)
    first, second = sim.log[-2], sim.log[-1]
    assert first.op == {"op": "commit", "name": "c1", "offset": 1}
    assert isinstance(first.obs.event, AdvanceEvent)
    assert second.op == {"op": "cont"} and isinstance(second.obs.event, OffsetCommitEvent)


# ---------------------------------------------------------------------- mixed groups
class ScriptedMixedPort(MixedOraclePort):
    """The mixed oracle with its wire replaced, as `ScriptedConsumerPort`."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.fake_now = 0
        self.reference = MixedCoordinator(self.coordinator.config, SeededChooser(0))
        self.reference_state = MixedState()
        self.pending: Any = None

    def clock(self) -> int:
        return self.fake_now

    def sleep_until(self, ms: int) -> None:
        self.fake_now = max(self.fake_now, ms)

    def create_topic(self, topic: str, partitions: int) -> None:
        self.topics.add(topic, f"real-{topic}", uuid.UUID(int=7))
        self.reference.create_topic(self.reference_state, topic, partitions)
        for h in self.hypos:
            self.coords[h.origin].create_topic(h.state, topic, partitions)

    def _encode(self, request: Any) -> tuple[int, int, Any]:
        self.pending = request
        return API_CONSUMER_GROUP_HEARTBEAT, 1, b""

    def _await(self, ref: int, t: int, *_: Any) -> tuple[Any, int]:
        request = self.pending
        self.reference.advance(self.reference_state, t)
        result = self.reference.handle(self.reference_state, request, ref, t)
        return next(d.response for d in result.deliveries if d.ref == ref), t + 5


def _mixed_run(split: bool) -> list[Any]:
    """Consumer members k1 and k2 in one group; k1 crashes and its session (2 s) expires in the target
    just before one of k2's heartbeats, which the oracle cannot yet know for certain."""
    consumer = ConsumerCoordinatorConfig(
        session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500, initial_group_epoch=1
    )
    config = MixedConfig(consumer=consumer, classic_rejoin_epoch="assignment")
    adapter = SimpleNamespace(submit=lambda *a: None, drop_member=lambda member: None)
    session = SimpleNamespace(
        adapter=adapter, next_group=lambda: "gc-test-g2", launcher=None, compat=[], rtt_ms=[], run_id="test"
    )
    port = ScriptedMixedPort(MixedCoordinator(config, SeededChooser(0)), session, policy_known=True)  # type: ignore[arg-type]
    port.split_timers = split
    run = real_mixed_run(port, {"tick_ms": 250}, {})
    run.topic("t", 2)
    run.add_consumer("k1", topics=("t",), rebalance_timeout_ms=1000)
    run.add_consumer("k2", topics=("t",), rebalance_timeout_ms=1000)
    for _ in range(8):
        run.tick()
    run.crash("k1")
    for _ in range(14):
        run.tick()
    assert not port.findings, port.findings
    return list(run.observations)


def _member_of(world: Any, member_id: str) -> bool:
    group = None if world is None else world.groups.get("g")
    return group is not None and member_id in group.members


def _folded(observations: list[Any], member_id: str) -> list[Any]:
    """Heartbeats of others in whose observation ``member_id`` leaves the group."""
    return [
        o
        for o in observations
        if isinstance(o.event, HeartbeatEvent)
        and o.event.request.member_id != member_id
        and o.before is not None
        and _member_of(o.before, member_id)
        and not _member_of(o.after, member_id)
    ]


def test_mixed_an_expiry_before_another_members_heartbeat_is_its_own_observation() -> None:
    observations = _mixed_run(split=True)
    k1 = next(
        o.event.request.member_id
        for o in observations
        if isinstance(o.event, HeartbeatEvent) and o.event.client == "k1"
    )
    assert _folded(observations, k1) == []
    gone = [
        i
        for i, o in enumerate(observations)
        if isinstance(o.event, AdvanceEvent) and _member_of(o.before, k1) and not _member_of(o.after, k1)
    ]
    assert len(gone) == 1
    nxt = observations[gone[0] + 1]  # the split: k2's heartbeat right after, from the state it left
    assert isinstance(nxt.event, HeartbeatEvent) and nxt.event.client == "k2"
    assert nxt.before == observations[gone[0]].after
    checker = Checker("mixed")
    assert [v.invariant for n, o in enumerate(observations) for v in checker.check(o, n)] == []


def test_mixed_without_the_split_the_expiry_is_folded_into_a_heartbeat() -> None:
    observations = _mixed_run(split=False)
    k1 = next(
        o.event.request.member_id
        for o in observations
        if isinstance(o.event, HeartbeatEvent) and o.event.client == "k1"
    )
    assert len(_folded(observations, k1)) == 1


# ---------------------------------------------------------------------- a refuted reported hypothesis
def _run_lineage_switch(switch: bool) -> tuple[list[Any], list[str]]:
    """c1 and c2 join; c2 stalls. Its session (2 s in the model) is due just before c1 commits, so
    the oracle keeps both outcomes and reports the one where it expired. The target (its expiry
    600 ms late, a stalled broker) answers c1's next heartbeat at the unchanged epoch: the reported
    hypothesis is refuted and the one that survives never expired c2."""
    sim, port = scripted_sim(("c1", "c2"), 2)
    port.reference = ConsumerCoordinator(
        dataclasses.replace(port.config, session_timeout_ms=SESSION_MS + 600)
    )
    if not switch:
        port.take_switched = lambda: None  # type: ignore[method-assign]
    checker = Checker("consumer")
    seen: list[Any] = []
    found: list[str] = []

    def observe(obs: Any) -> None:
        if obs is None:
            return
        for o in [*sim.take_pre_observations(obs), obs]:
            seen.append(o)
            found.extend(v.invariant for v in checker.check(o, len(seen)))

    for _ in range(3):
        for name in ("c1", "c2"):
            observe(sim.client_step(name))
        port.sleep_until(port.clock() + 100)
    observe(sim.stall("c2", True))
    for at in (700, 1200, 1700):  # c1 heartbeats: the target is seen running
        port.sleep_until(at)
        sim.client("c1").next_heartbeat_at = 0
        observe(sim.client_step("c1"))
    port.sleep_until(SESSION_MS + 100)  # c2's expiry is due in the model, not yet in the target
    observe(sim.commit("c1"))  # both outcomes explain its answer: the expiry is reported
    port.sleep_until(SESSION_MS + 300)
    sim.client("c1").next_heartbeat_at = 0
    observe(sim.client_step("c1"))  # the target answers the unchanged epoch: the expiry is refuted
    return seen, found


def test_a_refuted_reported_hypothesis_is_not_shown_as_a_transition() -> None:
    """The observation after a lineage switch starts from the survivor's state (`switched_from`)."""
    seen, found = _run_lineage_switch(True)
    assert found == []
    last = seen[-1]
    assert isinstance(last.event, HeartbeatEvent) and last.event.client == "c1"
    group = last.before.groups["g"]
    assert len(group.members) == 2 and group.group_epoch == last.after.groups["g"].group_epoch
    assert any(isinstance(o.event, AdvanceEvent) and len(o.after.groups["g"].members) == 1 for o in seen)


def test_without_the_switch_the_refuted_expiry_reads_as_an_epoch_going_back() -> None:
    _seen, found = _run_lineage_switch(False)
    assert found == ["consumer.epoch_order"]
