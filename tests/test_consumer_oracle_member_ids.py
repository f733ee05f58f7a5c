"""The consumer oracle takes the member id a coordinator generates for a ConsumerGroupHeartbeat v0 join.

A v0 join may name no member; the coordinator then makes the id (KIP-848; GroupMetadataManager
``consumerGroupHeartbeat``, apache/kafka@1eb7644 L1744). From v1 the client must send its own
(KIP-1082: ``throwIfConsumerGroupHeartbeatRequestIsInvalid`` refuses an empty id when the request
version reaches ``CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION``, apache/kafka PR #17549). The
target below is the model coordinator with another seed, so every id it makes differs from the one
the oracle's model would draw; no broker is needed. Joins in v0 (dynamic and static) and in v1
share one group, heartbeat, and leave: no finding, and the hypotheses hold the target's ids. Teeth:
an id a member already has, or a blank one, is still a finding.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from test_consumer_oracle_adoption import CONFIG, ScriptedPort

from model.choice import SeededChooser
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse

Tamper = dict[int, Any]


def join(member: str, version: int, instance: str | None = None) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        "g", member, 0, instance_id=instance, rebalance_timeout_ms=1000, subscribed_topic_names=("t",),
        topic_partitions=(), version=version,
    )  # fmt: skip


def beat(member: str, epoch: int, version: int, instance: str | None = None) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest("g", member, epoch, instance_id=instance, version=version)


def run(tamper: Tamper | None = None) -> tuple[ScriptedPort, dict[int, ConsumerGroupHeartbeatResponse]]:
    """a and s (static) join in v0 without ids, b in v1 with its own; each heartbeats under the id
    its answer gave; s leaves for a while (-2) and rejoins in v0 without an id, replacing itself."""
    target = ConsumerCoordinator(dataclasses.replace(CONFIG, initial_group_epoch=1), SeededChooser(99))
    port = ScriptedPort(target, tamper or {})
    answers: dict[int, ConsumerGroupHeartbeatResponse] = {}

    def send(at: int, request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        ref = len(answers) + 1
        answers[ref] = port.send(at, ref, request)
        return answers[ref]

    a = send(0, join("", 0)).member_id or ""
    s = send(10, join("", 0, "i2")).member_id or ""
    send(20, join("b", 1))
    for at in (300, 600):
        send(at, beat(a, answers[1 if at == 300 else 4].member_epoch, 0))
        send(at + 5, beat(s, answers[2 if at == 300 else 5].member_epoch, 0, "i2"))
        send(at + 10, beat("b", answers[3 if at == 300 else 6].member_epoch, 1))
    send(700, beat(s, -2, 0, "i2"))
    send(710, join("", 0, "i2"))
    return port, answers


def test_v0_joins_take_the_targets_generated_ids() -> None:
    port, answers = run()
    assert [f.message for f in port.findings] == []
    a, s, s2 = answers[1].member_id, answers[2].member_id, answers[11].member_id
    assert a and s and s2 and len({a, s, s2, "b"}) == 4
    model = ConsumerCoordinator(CONFIG)  # the model's own draws differ from the target's
    assert a not in {model.assign_member_id(join("", 0)) for _ in range(3)}
    for h in port.hypos:
        assert set(h.state.groups["g"].members) == {a, "b", s2}  # s was replaced under its instance id
    assert {port.requests[r][2] for r in port.requests} == {0, 1}


def test_a_generated_id_a_member_already_has_is_a_finding() -> None:
    def reuse_b(answer: ConsumerGroupHeartbeatResponse) -> ConsumerGroupHeartbeatResponse:
        return dataclasses.replace(answer, member_id="b")

    port, _ = run({11: reuse_b})
    messages = [f.message for f in port.findings]
    assert messages and "ref 11" in messages[0] and "which a member of the group has" in messages[0]


@pytest.mark.parametrize("blank", ["", " "])
def test_a_blank_generated_id_is_a_finding(blank: str) -> None:
    port, _ = run({1: lambda answer: dataclasses.replace(answer, member_id=blank)})
    messages = [f.message for f in port.findings]
    assert messages and "ref 1" in messages[0] and "member id" in messages[0]


def test_without_the_adoption_the_first_v0_join_is_a_finding(monkeypatch: Any) -> None:
    from conformance.protocols.consumer import adoption

    monkeypatch.setattr(adoption, "generated_member_id", lambda _state, request, _target: (request, None))
    port, _ = run()
    messages = [f.message for f in port.findings]
    assert messages and "ref 1" in messages[0] and "member id" in messages[0]
