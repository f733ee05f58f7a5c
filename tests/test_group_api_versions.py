"""Every version of every group API that the target advertises and the model speaks is sent.

The classic machine draws each member's versions (conformance/protocols/classic/versions.py); a
seeded run must send exactly the advertised-and-supported (api, version) pairs: on the model, the
model's whole ranges; on Apache Kafka, what its ApiVersions answer leaves of them (Kafka 4.4.0
advertises JoinGroup v0-9, SyncGroup v0-5, Heartbeat v0-4, LeaveGroup v0-5 and OffsetCommit v2-10:
KIP-896 removed OffsetCommit v0-1 in 4.0; `test_group_api_versions_kafka`).

KIP-848 members send ConsumerGroupHeartbeat v0 or v1 and OffsetCommit v9 (`CONSUMER_LADDER`): in
v0 a join may name no member and the coordinator makes the id, from v1 the client brings its own
(KIP-1082). Real targets run v1 unless `--variant heartbeat_version=0` is pinned, so the ladder puts
both versions in one group.
"""

from __future__ import annotations

from typing import Any

from conformance.engine.profiles import PROFILES
from conformance.engine.run import run_check
from conformance.protocols.classic.codec import api_key_of
from conformance.protocols.classic.versions import MODEL_VERSIONS, MemberVersions, exercisable, resolve
from conformance.wire.codec import API_HEARTBEAT, API_JOIN_GROUP, API_OFFSET_COMMIT, SUPPORTED
from conformance.wire.connection import Capabilities
from model.classic.port import ModelPort
from model.consumer.port import ModelConsumerPort


class RecordingPort(ModelPort):
    """The model's port, noting the (api key, version) of every request it is sent."""

    sent: set[tuple[int, int]] = set()
    errors: set[str] = set()

    def send(self, ref: int, request: Any, now: int) -> Any:
        RecordingPort.sent.add((api_key_of(request), request.version))
        out = super().send(ref, request, now)
        RecordingPort.errors |= {e.name for d in out if (e := getattr(d.response, "error", None)) is not None}
        return out


def test_seeded_model_runs_draw_every_join_and_heartbeat_version() -> None:
    """Two ci-profile runs: every JoinGroup and Heartbeat version, KIP-394's MEMBER_ID_REQUIRED and a
    drawn group.max.size reached, no violation (commits and leaves are rarer: the ladder below)."""
    RecordingPort.sent, RecordingPort.errors = set(), set()
    for seed in (3, 4):  # one seeded run alone may miss a rarely drawn version
        result = run_check(
            "classic", profile=PROFILES["ci"], max_examples=150, seed_value=seed, port_factory=RecordingPort
        )
        assert result.violations == []
    want = exercisable(MODEL_VERSIONS, SUPPORTED)
    assert RecordingPort.sent <= want
    for key in (API_JOIN_GROUP, API_HEARTBEAT):
        assert {p for p in want if p[0] == key} <= RecordingPort.sent, key
    assert {"MEMBER_ID_REQUIRED", "GROUP_MAX_SIZE_REACHED"} <= RecordingPort.errors


def ladder(i: int) -> MemberVersions:
    """Member ``i`` of the version ladder: ten members cover every version of every API."""
    return MemberVersions(join=i, sync=i % 6, heartbeat=i % 5, leave=i % 6, commit=2 + i % 7)


def drive_ladder(sim: Any, names: list[str], observe: Any) -> None:
    """Settle the ladder's group, then each member commits once and leaves (bounded rounds)."""
    from conformance.protocols.classic.build import settle_round
    from model.classic.client import Phase

    for _ in range(30):
        settle_round(sim, names, observe)
        if all(sim.clients[n].phase == Phase.STABLE and sim.clients[n].owned for n in names):
            break
    for _ in range(3):  # heartbeats fall due
        settle_round(sim, names, observe)
    for act in (lambda n: sim.commit(n, 1), sim.leave):  # each member once, when it is free to
        todo = list(names)
        for _ in range(20):
            todo = [n for n in todo if act(n) is None]
            if not todo:
                break
            settle_round(sim, todo, observe)


def ladder_clients(session_ms: int, rebalance_ms: int) -> list[dict[str, Any]]:
    return [
        {
            "name": f"c{i + 1}",
            "session_timeout_ms": session_ms,
            "rebalance_timeout_ms": rebalance_ms,
            **ladder(i).as_spec(),
        }
        for i in range(10)
    ]


def test_the_model_answers_every_version_of_the_ladder() -> None:
    from conformance.protocols.classic.build import make_classic_sim
    from model.invariants import for_protocol, load_all

    load_all()
    checks = for_protocol("classic", ("safety", "transition", "liveness"))
    RecordingPort.sent = set()
    clients = ladder_clients(6000, 10_000)
    sim = make_classic_sim({"t": 10}, clients, {}, {}, port_factory=RecordingPort)
    broken: list[str] = []
    drive_ladder(
        sim, [c["name"] for c in clients], lambda obs: broken.extend(m for i in checks for m in i.check(obs))
    )
    assert broken == []
    assert RecordingPort.sent == exercisable(MODEL_VERSIONS, SUPPORTED)


def test_a_static_member_only_sends_versions_carrying_its_instance_id() -> None:
    v = resolve((0, 0, 0, 0, 2), static=True)
    assert (v.join, v.sync, v.heartbeat, v.leave, v.commit) == (5, 3, 3, 3, 7)
    assert resolve((0, 0, 0, 0, 2), static=False).join == 0


def test_a_version_outside_the_advertised_range_moves_to_the_nearest() -> None:
    kafka4 = Capabilities({API_JOIN_GROUP: (2, 9), API_OFFSET_COMMIT: (2, 9)}, True)
    assert kafka4.nearest(API_JOIN_GROUP, 0) == 2
    assert kafka4.nearest(API_JOIN_GROUP, 7) == 7
    kafka09 = Capabilities({API_JOIN_GROUP: (0, 0)}, False)
    assert kafka09.nearest(API_JOIN_GROUP, 9) == 0
    assert kafka09.nearest(API_OFFSET_COMMIT, 8) is None


def test_a_session_timer_armed_early_is_caught_and_the_model_passes() -> None:
    """The timer lower bound (classic.timers_not_early) has teeth: the session-timer-halved mutant
    re-arms expiry half a session ahead; the reference model never does."""
    caught = run_check(
        "classic",
        profile=PROFILES["ci"],
        max_examples=30,
        seed_value=1,
        variants={"mutant": "session-timer-halved"},
        shrink=False,
    )
    assert {v.invariant for v in caught.violations} == {"classic.timers_not_early"}
    model = run_check("classic", profile=PROFILES["ci"], max_examples=30, seed_value=1)
    assert model.violations == []


# ---------------------------------------------------------------- KIP-848: ConsumerGroupHeartbeat v0 and v1
#: one group of KIP-848 members: v0 ones let the coordinator make their ids, v1 ones bring their own
CONSUMER_LADDER: list[dict[str, Any]] = [
    {"name": "k1", "version": 0},
    {"name": "k2", "version": 0, "instance_id": "i2"},
    {"name": "k3", "version": 1},
    {"name": "k4", "version": 1, "instance_id": "i4"},
]
#: (api key, version) every KIP-848 member of the ladder sends between them
CONSUMER_SENT = {(68, 0), (68, 1), (8, 9)}


class RecordingConsumerPort(ModelConsumerPort):
    """The model's KIP-848 port, noting the (api key, version) of every request it is sent."""

    sent: set[tuple[int, int]] = set()

    def heartbeat(self, request: Any, ref: int, now: int) -> Any:
        RecordingConsumerPort.sent.add((68, request.version))
        return super().heartbeat(request, ref, now)

    def offset_commit(self, request: Any, ref: int, now: int) -> Any:
        RecordingConsumerPort.sent.add((8, request.version))
        return super().offset_commit(request, ref, now)


def drive_consumers(sim: Any, observe: Any, pause_ms: int) -> None:
    """The ladder joins and settles (bounded rounds), each member commits, the static v0 member
    leaves for a while (-2) and comes back as a new process (a v0 join without an id, replacing
    itself under its instance id), the group settles again and everyone leaves."""
    from model.consumer.client import ClientState

    names = [c["name"] for c in CONSUMER_LADDER]

    def settle() -> None:
        for _ in range(40):
            for n in names:
                observe(sim.client_step(n))
            observe(sim.advance(pause_ms))
            if all(sim.clients[n].state == ClientState.STABLE and sim.clients[n].owned for n in names):
                return
        raise AssertionError({n: sim.clients[n].state for n in names})

    settle()
    for n in names:
        observe(sim.commit(n))
    observe(sim.leave("k2"))
    observe(sim.restart("k2"))
    settle()
    for n in names:
        observe(sim.leave(n))


def test_the_model_answers_consumer_group_heartbeat_v0_and_v1_in_one_group() -> None:
    from conformance.protocols.consumer.build import make_consumer_sim
    from model.invariants import for_protocol, load_all

    load_all()
    checks = for_protocol("consumer", ("safety", "transition"))
    RecordingConsumerPort.sent = set()
    sim = make_consumer_sim({"t": 4}, CONSUMER_LADDER, {}, {}, port_factory=RecordingConsumerPort)
    broken: list[str] = []
    drive_consumers(
        sim,
        lambda obs: broken.extend(m for i in checks for m in i.check(obs)) if obs is not None else None,
        250,
    )
    assert broken == []
    assert RecordingConsumerPort.sent == CONSUMER_SENT
