"""The mixed oracle keeps the uniform assignor's other legal tie-breaks (`conformance/protocols/mixed/assignor_ties.py`).

Regression of `reports/conformance/faults/apache-kafka.mixed.all-seed0-classic-heartbeat-none.ndjson`
(Apache Kafka 4.4.0, `check --protocol all --profile faults --seed 0`, only under load): c3 joined a
group where classic member c1 and consumer member k2 held two partitions each; Kafka gave the extra
partition to c1 and c3 the one k2 had to revoke, the model's tie-break gave it to k2 and c3 c1's. A
classic member's target never shows in its answers, so c3's Heartbeat right after c1's rejoin (which
released c1's partition) was the first sign: NONE on Kafka (k2 still held c3's partition), where the
model said REBALANCE_IN_PROGRESS. No real target here: the first test feeds the oracle Kafka's
recorded answers, the second a model target that breaks ties the other way, in the order of requests
where nothing else reveals the choice.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from test_timer_split import ScriptedMixedPort

from conformance.formats.codec import decode
from conformance.protocols.mixed.assignor_ties import NOTE, member_orders, tie_breaks
from conformance.protocols.mixed.oracle import mixed_config
from conformance.targets.apache_kafka import ApacheKafkaTarget
from conformance.targets.open import _model_config_from, launched_settings
from model.choice import SeededChooser
from model.classic.messages import HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, SyncGroupRequest
from model.classic.state import ClassicConfig
from model.consumer.assignors import ASSIGNORS, AssignmentMember
from model.consumer.messages import ConsumerGroupHeartbeatRequest, to_topic_partitions
from model.consumer.txn import ConsumerCoordinatorConfig
from model.embedded import Subscription, encode_subscription
from model.errors import ErrorCode as E
from model.mixed.classic_requests import MixedConsumerCoordinator
from model.mixed.consumer_group import MixedConfig
from model.mixed.coordinator import MixedCoordinator
from model.mixed.state import MixedState

TRACE = (
    Path(__file__).resolve().parent.parent
    / "reports/conformance/faults/apache-kafka.mixed.all-seed0-classic-heartbeat-none.ndjson"
)


class _Wireless(ScriptedMixedPort):
    """The scripted mixed oracle of `test_timer_split`, its target ``answer(request, ref, t)``
    instead of the reference coordinator."""

    def _submit(self, member: str, payload: Any, ref: int) -> None:
        pass

    def _note_answer(self, *_: Any) -> None:
        pass

    def _await(self, ref: int, t: int, *_: Any) -> tuple[Any, int]:
        return self.answer(self.pending, ref, t)  # type: ignore[attr-defined, no-any-return]


def _session() -> Any:
    adapter = SimpleNamespace(submit=lambda *a: None, drop_member=lambda member: None, alive=lambda: True)
    return SimpleNamespace(
        adapter=adapter, next_group=lambda: "real-g", launcher=None, compat=[], rtt_ms=[], run_id="test"
    )


# ---------------------------------------------------------------------- Kafka's recorded answers
def _feed(lines: list[dict[str, Any]]) -> _Wireless:
    """Run the oracle on a recorded mixed trace, the target's answers taken from the trace."""
    settings = ApacheKafkaTarget().default_settings()
    handle = SimpleNamespace(
        launcher=SimpleNamespace(settings=settings),
        model_config=_model_config_from(settings, []),
        settings=launched_settings(settings),
        notes=[],
        session=None,
    )
    steps = [s for s in lines if s.get("kind") == "step"]
    answers = {d["ref"]: (decode(d["response"]), s["now"] + 2) for s in steps for d in s.get("actual") or []}
    port = _Wireless(MixedCoordinator(mixed_config(handle), SeededChooser(0)), _session())
    port.answer = lambda request, ref, t: answers[ref]  # type: ignore[attr-defined]
    for s in steps:
        if s.get("event") is None:
            continue
        event = decode(s["event"])
        port.fake_now = s["now"]
        kind = type(event).__name__
        if kind == "TopicEvent":
            port.create_topic(event.topic, event.partitions)
        elif kind == "AdvanceEvent":
            port.advance()
        else:
            port.exchange(event.client, event.request, event.ref)
    return port


def _trace() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TRACE.read_text().splitlines()]


def test_kafkas_recorded_answers_are_explained() -> None:
    port = _feed(_trace())
    assert [f.message for f in port.findings if f.level == "protocol"] == []
    c3 = "zQIWFLpiRB6Nler71rkK5A"
    # every surviving hypothesis holds Kafka's choice: c3's target is the partition k2 revoked
    assert {h.state.consumer.groups["g"].target_of(c3) for h in port.hypos} == {frozenset({("t", 3)})}
    # the followed tie-break is a kafka-compat note (the model's own order differs from Kafka's)
    assert any(NOTE in f.message for f in port.session.compat)


def test_a_heartbeat_no_tie_break_explains_is_still_a_finding() -> None:
    """Teeth: c3's last Heartbeat (t=4335) answered NONE instead of REBALANCE_IN_PROGRESS, after k2
    released the partition c3 waits for; no legal tie-break makes that NONE."""
    lines = _trace()
    for s in lines:
        for d in s.get("actual") or []:
            if d["ref"] == 25:
                assert d["response"]["error"] == "REBALANCE_IN_PROGRESS"
                d["response"]["error"] = "NONE"
    port = _feed(lines)
    found = [f for f in port.findings if f.level == "protocol"]
    assert found and {f.rule for f in found} == {"oracle.Heartbeat"}, found
    assert "at t=4335, c3 sends Heartbeat (ref 25)" in found[-1].message


# ---------------------------------------------------------------------- a target with other tie-breaks
class _OtherTies(MixedConsumerCoordinator):
    """The uniform assignor meeting tied members in descending id order (another hash-map order)."""

    def run_assignor(
        self, name: str, members: dict[str, AssignmentMember], topics: dict[str, int], homogeneous: bool
    ) -> Any:
        if name != "uniform":
            return super().run_assignor(name, members, topics, homogeneous)
        order = sorted(members, reverse=True)
        alias = {m: f"{i:06d}" for i, m in enumerate(order)}
        back = {a: m for m, a in alias.items()}
        aliased = {alias[m]: dataclasses.replace(s, member_id=alias[m]) for m, s in members.items()}
        return {back[a]: ps for a, ps in ASSIGNORS[name](aliased, topics, homogeneous).items()}


class _OtherTiesTarget(MixedCoordinator):
    consumer_class = _OtherTies


def _join(member_id: str, owned: tuple[tuple[str, int], ...] = ()) -> JoinGroupRequest:
    sub = encode_subscription(Subscription(("t",), owned_partitions=owned), 3)
    return JoinGroupRequest("g", member_id, "consumer", (("range", sub),), 2000, 4000)


def _hb(member_id: str, epoch: int, owned: Any = None) -> ConsumerGroupHeartbeatRequest:
    if epoch == 0:
        return ConsumerGroupHeartbeatRequest(
            "g", member_id, 0, rebalance_timeout_ms=4000, subscribed_topic_names=("t",), topic_partitions=()
        )
    tps = None if owned is None else to_topic_partitions(owned)
    return ConsumerGroupHeartbeatRequest("g", member_id, epoch, topic_partitions=tps)


def _other_ties_run(split_choice: bool) -> tuple[_Wireless, Any]:
    """k2 (consumer protocol) and classic c1 share four partitions two and two; classic c3 joins.
    c1 is told to rejoin and does (eager: owning nothing), then c3 heartbeats before k2 is heard
    from again. ``split_choice``: the target breaks the tie the other way round from the model."""
    consumer = ConsumerCoordinatorConfig(
        session_timeout_ms=20000, heartbeat_interval_ms=500, initial_group_epoch=1
    )
    classic = ClassicConfig(min_session_timeout_ms=500, initial_rebalance_delay_ms=0)
    config = MixedConfig(classic=classic, consumer=consumer, classic_rejoin_epoch="assignment")
    target_class = _OtherTiesTarget if split_choice else MixedCoordinator
    reference, state = target_class(config, SeededChooser(5)), MixedState()

    def answer(request: Any, ref: int, t: int) -> tuple[Any, int]:
        reference.advance(state, t)
        result = reference.handle(state, request, ref, t)
        return next(d.response for d in result.deliveries if d.ref == ref), t + 3

    port = _Wireless(MixedCoordinator(config, SeededChooser(0)), _session(), policy_known=True)
    port.answer = answer  # type: ignore[attr-defined]
    reference.create_topic(state, "t", 4)
    port.create_topic("t", 4)
    ref = iter(range(1, 100))

    def send(at: int, member: str, request: Any) -> Any:
        port.fake_now = at
        port.advance()
        return port.exchange(member, request, next(ref))

    k2 = "k2-member"
    e1 = send(10, "k2", _hb(k2, 0)).member_epoch
    c1 = send(20, "c1", _join("")).member_id
    e2 = send(30, "c1", _join(c1)).generation_id
    assert e2 == e1 + 1
    got = send(40, "k2", _hb(k2, e1, {("t", p) for p in range(4)}))
    kept = got.assigned()
    assert kept is not None and len(kept) == 2
    assert send(50, "k2", _hb(k2, got.member_epoch, kept)).member_epoch == e2
    assert send(60, "c1", HeartbeatRequest("g", e2, c1)).error == E.REBALANCE_IN_PROGRESS
    assert send(70, "c1", _join(c1)).generation_id == e2
    send(80, "c1", SyncGroupRequest("g", e2, c1, (), protocol_type="consumer", protocol_name="range"))
    assert send(90, "k2", _hb(k2, e2, kept)).member_epoch == e2
    c3 = send(100, "c3", _join("")).member_id
    e3 = send(110, "c3", _join(c3)).generation_id
    assert e3 == e2 + 1
    send(120, "c3", SyncGroupRequest("g", e3, c3, (), protocol_type="consumer", protocol_name="range"))
    assert send(130, "c1", HeartbeatRequest("g", e2, c1)).error == E.REBALANCE_IN_PROGRESS
    assert send(140, "c1", _join(c1)).generation_id == e3  # eager: c1 rejoins owning nothing
    last = send(150, "c3", HeartbeatRequest("g", e3, c3))
    return port, last


def test_a_tie_break_a_classic_heartbeat_reveals_is_adopted() -> None:
    port, last = _other_ties_run(split_choice=True)
    assert isinstance(last, HeartbeatResponse)
    assert [f.message for f in port.findings if f.level == "protocol"] == []


def test_the_same_run_with_the_models_own_tie_break() -> None:
    port, last = _other_ties_run(split_choice=False)
    assert [f.message for f in port.findings if f.level == "protocol"] == []
    assert isinstance(last, HeartbeatResponse)


# ---------------------------------------------------------------------- the enumeration
def test_tie_breaks_gives_each_legal_order_once() -> None:
    members = {
        "a": AssignmentMember("a", frozenset({"t"}), frozenset({("t", 0), ("t", 1)})),
        "b": AssignmentMember("b", frozenset({"t"}), frozenset({("t", 2), ("t", 3)})),
        "c": AssignmentMember("c", frozenset({"t"})),
    }
    run = lambda ms: ASSIGNORS["uniform"](ms, {"t": 4}, True)  # noqa: E731
    got = tie_breaks(run, "uniform", members, True)
    as_sets = [{m: sorted(p for _, p in ps) for m, ps in g.items()} for g in got]
    assert as_sets == [
        {"a": [0, 1], "b": [2], "c": [3]},
        {"a": [0], "b": [2, 3], "c": [1]},
    ]
    assert tie_breaks(run, "range", members, True) == []
    assert tie_breaks(run, "uniform", members, False) == []
    assert len(list(member_orders(list("abcd")))) == 24
    assert list(member_orders(list("edcba"))) == [
        tuple("abcde"),
        tuple("bcdea"),
        tuple("cdeab"),
        tuple("deabc"),
        tuple("eabcd"),
    ]
