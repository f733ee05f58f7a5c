"""Faults against a real coordinator: lost answers through the fault proxy, a coordinator restart
(failover) of Apache Kafka, and the oracle's comparison of the recovered group with the model's load.

The pure parts (the recovered-group comparison, transient errors) are checked without a target;
one small scenario runs against Apache Kafka (a few tens of seconds: most of it is the restart)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from conformance.engine.checker import Checker
from conformance.engine.profiles import REAL_PROFILES
from conformance.protocols import get_kit
from conformance.protocols.classic.faults import Recovered, recovered_matches, transient
from conformance.protocols.classic.oracle import PROVISIONAL, Hypo
from conformance.targets.open import open_target
from model.classic.messages import HeartbeatResponse, JoinGroupResponse, OffsetCommitResponse
from model.classic.state import ClassicGroup, ClassicState, GroupState, Member
from model.errors import ErrorCode

CLASSIC = get_kit("classic")

# ---------------------------------------------------------------------------------------------
# pure parts
# ---------------------------------------------------------------------------------------------


def _hypo(members: dict[str, bytes], state: GroupState = GroupState.STABLE) -> Hypo:
    g = ClassicGroup("g", generation=3, protocol_type="consumer")
    g.state = state
    for mid, assignment in members.items():
        g.members[mid] = Member(
            mid, None, "c", 1500, 2000, "consumer", (("range", b""),), assignment=assignment
        )
    st = ClassicState()
    st.groups["g"] = g
    return Hypo(st)


def test_recovered_group_equal_to_the_model_load() -> None:
    h = _hypo({"a": b"\x01", "b": b"\x02"})
    assert recovered_matches(h, Recovered(0, "Stable", {"a": b"\x01", "b": b"\x02"})) is None


@pytest.mark.parametrize(
    ("seen", "why"),
    [
        (Recovered(0, "Empty", {}), "recovered the group Empty"),
        (Recovered(0, "Stable", {"a": b"\x01"}), "recovered 1 members, model 2"),
        (Recovered(0, "Stable", {"a": b"\x01", "c": b"\x02"}), "member b is not in"),
        (Recovered(0, "Stable", {"a": b"\x01", "b": b"\x09"}), "member b recovered assignment 09"),
    ],
)
def test_recovered_group_that_differs_is_named(seen: Recovered, why: str) -> None:
    found = recovered_matches(_hypo({"a": b"\x01", "b": b"\x02"}), seen)
    assert found is not None and why in found


def test_recovered_member_the_client_never_heard_of_matches_by_assignment() -> None:
    lost = PROVISIONAL + "000000070001"  # a member whose JoinGroup answer was lost
    h = _hypo({"a": b"\x01", lost: b"\x02"})
    assert recovered_matches(h, Recovered(0, "Stable", {"a": b"\x01", "x-1": b"\x02"})) is None
    assert recovered_matches(h, Recovered(0, "Stable", {"a": b"\x01", "x-1": b"\x03"})) is not None


def test_empty_model_group_wants_an_empty_target_group() -> None:
    assert recovered_matches(Hypo(ClassicState()), Recovered(0, "Dead", {})) is None
    assert recovered_matches(Hypo(ClassicState()), Recovered(0, "Stable", {"a": b""})) is not None


def test_transient_coordinator_errors() -> None:
    assert transient(HeartbeatResponse(ErrorCode.NOT_COORDINATOR))
    assert transient(HeartbeatResponse(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    assert not transient(HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
    assert transient(OffsetCommitResponse((("t", 0, ErrorCode.COORDINATOR_NOT_AVAILABLE),)))
    assert not transient(OffsetCommitResponse((("t", 0, ErrorCode.NONE),)))


# ---------------------------------------------------------------------------------------------
# Apache Kafka: lost answers and a restart, judged by the oracle
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kafka() -> Iterator[Any]:
    with open_target("apache-kafka") as handle:
        yield handle


def _sim(handle: Any) -> Any:
    from conformance.protocols.build import make_classic_sim
    from conformance.protocols.classic.realtime import REAL_TIMING, RealTimeSim

    clients = [
        {
            "name": f"c{i}",
            "assignors": ["range"],
            "topics": ["t"],
            "session_timeout_ms": REAL_TIMING.session_timeout_ms,
            "rebalance_timeout_ms": REAL_TIMING.rebalance_timeout_ms,
        }
        for i in (1, 2)
    ]
    return make_classic_sim(
        {"t": 2},
        clients,
        handle.model_config,
        {},
        port_factory=CLASSIC.real_setup(handle, REAL_PROFILES["dev"])[0],
        sim_class=RealTimeSim,
        request_timeout_ms=REAL_TIMING.request_timeout_ms,
    )


class Judge:
    """Invariants plus the oracle's findings after every step (as the machine does)."""

    def __init__(self, sim: Any) -> None:
        self.sim, self.checker, self.n, self.found = sim, Checker("classic"), 0, []  # type: ignore[var-annotated]

    def __call__(self, obs: Any) -> None:
        if obs is None:
            return
        self.n += 1
        self.found += [(v.invariant, v.message) for v in self.checker.check(obs, self.n)]
        self.found += [(f.rule, f.message) for f in self.sim.port.take_findings()]

    def settle(self, rounds: int) -> None:
        from conformance.protocols.build import settle_round

        for _ in range(rounds):
            settle_round(self.sim, ["c1", "c2"], self)

    def stable(self) -> bool:
        g = self.sim.port.group("g")
        return g is not None and g.state == GroupState.STABLE and len(g.members) == 2


@pytest.mark.target
def test_lost_answers_and_a_restart_against_apache_kafka(kafka: Any) -> None:
    kafka.session.max_restarts = 1
    sim = _sim(kafka)
    judge = Judge(sim)
    proxy = kafka.session.adapter.proxy
    assert proxy is not None and proxy.running
    proxy.take_events()
    try:
        for _ in range(12):
            judge.settle(1)
            if judge.stable():
                break
        assert judge.stable(), sim.port.log
        before = {c.member_id for c in sim.clients.values()}

        # the coordinator crashes (SIGKILL) and restarts: the recovered group must be what the model
        # loads. A crashed KRaft broker serves again only after its old registration timed out, so
        # the members (nobody heartbeats meanwhile) have expired by then; the group's generation
        # survives, which the rejoin below checks (the JoinGroup answers' generations)
        assert sim.port.supports_failover and kafka.session.restart_signal == "kill"
        judge(sim.failover())
        assert len(sim.port.restarts) == 1
        stopped, loaded, serving = sim.port.restarts[0]
        assert stopped < loaded <= serving
        group = sim.port.group("g")
        assert group is not None
        assert group.state == GroupState.EMPTY or {m.member_id for m in group.members} == before
        assert not sim.port.supports_failover  # the run's restart budget is spent
        for _ in range(12):
            judge.settle(1)
            if judge.stable():
                break
        assert judge.stable() and judge.found == [], (judge.found, sim.port.log)

        # a lost answer: the target applies c1's next request, nobody hears the answer
        judge(sim.lose_response("c1"))
        judge.settle(4)
        assert "drop" in [e.kind for e in proxy.take_events()]
        assert any("proxy drops the answer" in line for line in sim.port.log)
        assert not sim.port.swallowed  # the oracle saw (and checked) the answer the client never got
        assert judge.found == []
    finally:
        sim.port.close()


# ---------------------------------------------------------------------------------------------
# replay --target: a model trace of a coordinator bug Apache Kafka does not have
# ---------------------------------------------------------------------------------------------


def _mutant_trace(tmp_path: Any) -> Any:
    """A short model run of the member-list-to-followers mutant until an invariant breaks, as a trace
    (real-target timings, so a replay takes about a second of real time)."""
    from conformance.formats.trace_file import read_trace
    from conformance.protocols.build import make_classic_sim, settle_round
    from conformance.protocols.classic.trace import to_trace
    from conformance.trace.emit import emit_counterexample

    clients = [
        {"name": f"c{i}", "assignors": ["range"], "session_timeout_ms": 1500, "rebalance_timeout_ms": 2000}
        for i in (1, 2)
    ]
    sim = make_classic_sim({"t": 2}, clients, {}, {"mutant": "member-list-to-followers"})
    checker, found = Checker("classic"), []

    def judge(obs: Any) -> None:
        found.extend((v.invariant, v.message, len(sim.log)) for v in checker.check(obs, len(sim.log)))

    for _ in range(10):
        if found:
            break
        settle_round(sim, ["c1", "c2"], judge)
    assert found, "the mutant must break an invariant on the model"
    for _ in range(6):  # more rounds: the target may order the first joins otherwise (its timers are real)
        settle_round(sim, ["c1", "c2"], judge)
    trace = to_trace(sim, target="model", target_version="0.1.0", origin={"kind": "test"}, violations=found)
    return read_trace(emit_counterexample(trace, tmp_path))


@pytest.mark.target
def test_replay_on_apache_kafka_fixes_a_coordinator_mutant(kafka: Any, tmp_path: Any) -> None:
    from conformance.trace.replay import replay, replay_on_target

    trace = _mutant_trace(tmp_path)
    assert replay(trace).verdict == "FAILED"  # on the model with the mutant: the bug is there
    result, notes = replay_on_target(trace, kafka.bootstrap, {})
    assert result.error is None, result.error
    assert result.verdict == "FIXED", result.violations
    follower_answers = [
        d.response
        for obs in result.observations
        for d in obs.deliveries
        if isinstance(d.response, JoinGroupResponse)
        and d.response.error == ErrorCode.NONE
        and not d.response.members
    ]
    assert follower_answers, "the replay must reach a follower's JoinGroup answer (not vacuous)"
    assert any("mutant=member-list-to-followers dropped" in n for n in notes)
    # the mutant kept in the model beside Kafka: the oracle sees Kafka answer otherwise
    kept, _ = replay_on_target(trace, kafka.bootstrap, {"mutant": "member-list-to-followers"})
    assert kept.verdict == "FAILED" and any(v.invariant.startswith("oracle.") for v in kept.violations)


@pytest.mark.target
def test_replay_needing_a_restart_on_a_target_that_cannot(kafka: Any, tmp_path: Any) -> None:
    from conformance.trace.replay import replay_on_target

    trace = _mutant_trace(tmp_path)
    trace.steps.append(replace(trace.steps[-1], action={"op": "failover"}))
    result, _ = replay_on_target(trace, kafka.bootstrap, {})  # host:port: no launcher to restart it
    assert result.verdict == "ERROR" and "cannot be restarted" in (result.error or "")


@pytest.mark.target
def test_a_trace_recorded_on_apache_kafka_replays_there(kafka: Any, tmp_path: Any) -> None:
    """`check` against Kafka with a broken model beside it records a trace on Kafka; replaying it
    on Kafka with the same model fails the same way, and with the reference model it is FIXED."""
    from conformance.cli.check import REAL_PROFILES
    from conformance.engine.run import run_check
    from conformance.formats.trace_file import read_trace
    from conformance.trace.emit import emit_counterexample
    from conformance.trace.replay import replay_on_target

    mutant = {"mutant": "member-list-to-followers"}
    result = run_check(
        "classic",
        target="apache-kafka",
        profile=REAL_PROFILES["dev"],
        max_examples=4,
        seed_value=1,
        variants=mutant,
        port_factory=CLASSIC.real_setup(kafka, REAL_PROFILES["dev"])[0],
        config=kafka.model_config,
        real_time=True,
    )
    assert result.violations and result.trace is not None
    trace = read_trace(emit_counterexample(result.trace, tmp_path))
    assert trace.header["target"]["name"] == "apache-kafka"
    again, _ = replay_on_target(trace, kafka.bootstrap, mutant)  # type: ignore[arg-type]
    assert again.verdict == "FAILED", again.error
    assert {v.invariant for v in again.violations} & {v.invariant for v in result.violations}
    fixed, _ = replay_on_target(trace, kafka.bootstrap, {})
    assert fixed.verdict == "FIXED", fixed.violations


class _StubAdapter:
    """Just enough of KafkaAdapter for `faults.retry`: records lookups and resends."""

    def __init__(self, fail_lookups: int = 0) -> None:
        self.coordinators = {"g-real": ("127.0.0.1", 1)}
        self.lookups, self.fail_lookups, self.sent = 0, fail_lookups, []  # type: ignore[var-annotated]
        self.net = self

    def find_coordinator(self, group: str, deadline_s: float) -> tuple[str, int]:
        self.lookups += 1
        if self.lookups <= self.fail_lookups:
            raise RuntimeError("COORDINATOR_NOT_AVAILABLE")
        self.coordinators[group] = ("127.0.0.1", 2)
        return self.coordinators[group]

    def connection(self, member: str, group: str) -> str:
        return f"{member}@{self.coordinators[group][1]}"

    def send(self, conn: str, payload: Any, tag: int, client_id: str) -> None:
        self.sent.append((conn, payload, tag, client_id))


class _StubPort:
    def __init__(self, adapter: _StubAdapter) -> None:
        from conformance.protocols.classic.oracle import TargetSession

        self.adapter, self.real_group = adapter, "g-real"
        self.session = TargetSession(adapter, "r", lambda _t: None)  # type: ignore[arg-type]
        self.sent = {7: ("payload", "c1", "c1@1")}
        self.requests = {7: ("c1", None, 4, 0)}
        self.retry_since: dict[int, float] = {}
        self.retries, self.log = 0, []  # type: ignore[var-annotated]


def test_retry_finds_the_coordinator_again_and_resends_the_same_request() -> None:
    from conformance.protocols.classic import faults

    adapter = _StubAdapter()
    port = _StubPort(adapter)
    assert faults.retry(port, 7, HeartbeatResponse(ErrorCode.NOT_COORDINATOR))
    assert adapter.lookups == 1 and adapter.sent == [("c1@2", "payload", 7, "c1")]
    assert port.session.resends == 1 and "resent" in port.log[-1]


def test_retry_gives_up_after_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.protocols.classic import faults

    port = _StubPort(_StubAdapter())
    port.retry_since[7] = 0.0  # the first transient answer came long ago
    assert not faults.retry(port, 7, HeartbeatResponse(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    monkeypatch.setattr(faults, "RETRY_DEADLINE_S", 0.5)
    failing = _StubPort(_StubAdapter(fail_lookups=10))
    assert not faults.retry(failing, 7, HeartbeatResponse(ErrorCode.NOT_COORDINATOR))
    assert failing.adapter.sent == []  # no coordinator within the deadline: the answer is judged as is
    assert not faults.retry(port, 99, HeartbeatResponse(ErrorCode.NOT_COORDINATOR))  # never sent
