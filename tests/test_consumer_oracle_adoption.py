"""The consumer oracle adopts a uniform-assignor choice the target reveals by OMITTING an assignment.

Regression of `reports/conformance/faults/apache-kafka.consumer.seed0-open-assignment-none.ndjson`
(Apache Kafka 4.4.0, `--profile faults`, seed 0). Static member c4 leaves with epoch -2 and stays in
the group (KIP-848 static membership); c1 leaves with -1 and frees t-0; the epoch-5 target among c3 and
c4 gives the one partition to whichever member Kafka's `UniformHomogeneousAssignmentBuilder` meets first
in `GroupSpec.memberIds()` (a hash map: group-coordinator `assignor/UniformHomogeneousAssignmentBuilder
.java` ``maybeRevokePartitions``). Kafka gave it to c4, so c3's heartbeat was answered at epoch 5 with
no assignment ("unchanged", GroupMetadataManager ``consumerGroupHeartbeat`` sets it only for a full
request or a changed assignment). The oracle adopted a target's choice only from an explicit
assignment and reported a protocol finding here.

The target below is the model itself with Kafka 4.4.0's builder meeting members in ascending id order
(one legal hash-map order, where the model's own tie-break picks the other member); no real target
is needed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

from conformance.protocols.consumer.codec import API_CONSUMER_GROUP_HEARTBEAT
from conformance.protocols.consumer.oracle import ConsumerOraclePort, ConsumerTiming, revealed_assignment
from model.consumer.assignors import AssignmentMember, GroupAssignment
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartition,
)
from model.consumer.state import ConsumerCoordinatorState
from model.consumer.txn import ConsumerCoordinatorConfig
from model.errors import ErrorCode

CONFIG = ConsumerCoordinatorConfig(session_timeout_ms=2000, heartbeat_interval_ms=500)


class HashOrderTarget(ConsumerCoordinator):
    """Kafka 4.4.0's homogeneous uniform builder, read from the released jar's bytecode
    (kafka-group-coordinator-4.4.0.jar, `UniformHomogeneousAssignmentBuilder.maybeRevokePartitions`):
    members are met in `GroupSpec.memberIds()` order; each gets the minimum quota plus an extra slot
    while extras remain, keeps its current partitions up to that quota, and gives the extra slot back
    when it cannot fill it and enough members remain to take it; the unfilled members then get the
    unassigned partitions in order. Here members are met in ascending id order (one hash-map order),
    so a free partition goes to the LAST member without partitions, where the model's tie-break
    (`model.consumer.assignors`, ties by member id) picks the first."""

    def run_assignor(
        self, name: str, members: dict[str, AssignmentMember], topics: dict[str, int], homogeneous: bool
    ) -> GroupAssignment:
        order = sorted(members)
        every = [(t, p) for t in sorted(topics) for p in range(topics[t])]
        claimed = {tp for m in order for tp in members[m].current}
        unassigned = [tp for tp in every if tp not in claimed]
        minimum, extra = divmod(len(every), len(order))
        out: dict[str, list[TopicPartition]] = {}
        unfilled: list[tuple[str, int]] = []
        for index, m in enumerate(order):
            quota, got_extra = (minimum + 1, True) if extra > 0 else (minimum, False)
            mine = sorted(members[m].current)
            out[m] = mine[:quota]
            unassigned += mine[quota:]
            quota -= len(out[m])
            if quota > 0 and got_extra and len(order) - index > extra:
                quota, got_extra = quota - 1, False
            if quota > 0:
                unfilled.append((m, quota))
            extra -= 1 if got_extra else 0
        for m, room in unfilled:
            out[m] += unassigned[:room]
            unassigned = unassigned[room:]
        return {m: frozenset(ps) for m, ps in out.items()}


class ScriptedPort(ConsumerOraclePort):
    """The oracle port with a virtual clock and an in-process target (no wire, no proxy)."""

    def __init__(
        self,
        target: ConsumerCoordinator,
        tamper: Mapping[int, Callable[[ConsumerGroupHeartbeatResponse], ConsumerGroupHeartbeatResponse]],
    ) -> None:
        session = SimpleNamespace(
            adapter=SimpleNamespace(alive=lambda: True),
            next_group=lambda: "real-g",
            compat=[],
            resends=0,
            rtt_ms=[],
            launcher=None,
            run_id="test",
        )
        super().__init__(ConsumerCoordinator(CONFIG), session, ConsumerTiming())  # type: ignore[arg-type]
        self.now = 0
        self.target, self.target_state = target, ConsumerCoordinatorState()
        self.target.create_topic(self.target_state, "t", 1)
        for h in self.hypos:
            self.coords[h.origin].create_topic(h.state, "t", 1)
        self.tamper = tamper
        self.pending: dict[int, Any] = {}

    def clock(self) -> int:
        return self.now

    def _submit(self, member: str, payload: Any, ref: int) -> None:
        self.target.advance(self.target_state, self.now)
        result = self.target.handle_consumer_group_heartbeat(self.target_state, payload, ref, self.now)
        answer = next(d.response for d in result.deliveries if d.ref == ref)
        self.pending[ref] = self.tamper.get(ref, lambda a: a)(answer)

    def _await(self, ref: int, t: int) -> tuple[Any, int]:
        return self.pending.pop(ref), t + 2

    def send(self, at: int, ref: int, request: ConsumerGroupHeartbeatRequest) -> Any:
        self.now, self.current_member = at, request.member_id
        self._exchange(API_CONSUMER_GROUP_HEARTBEAT, request, request, ref)
        return self.answers[ref]


def join(member: str, instance: str | None = None) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        "g", member, 0, instance_id=instance, rebalance_timeout_ms=1000, subscribed_topic_names=("t",),
        topic_partitions=(),
    )  # fmt: skip


def beat(member: str, epoch: int, instance: str | None = None) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest("g", member, epoch, instance_id=instance)


def run_script(
    tamper: Mapping[int, Callable[[ConsumerGroupHeartbeatResponse], ConsumerGroupHeartbeatResponse]] = {},
) -> tuple[ScriptedPort, dict[int, Any]]:
    """The recorded trace's shape: a holds t-0, static d and c3 join, c3 bounces with a new member id
    (b), d leaves with -2, a leaves with -1, b heartbeats until d's session expires."""
    port = ScriptedPort(HashOrderTarget(dataclasses.replace(CONFIG, initial_group_epoch=1)), tamper)
    steps: list[tuple[int, ConsumerGroupHeartbeatRequest]] = [
        (0, join("a")),
        (10, join("d", "i4")),
        (20, beat("a", 2)),
        (30, beat("d", 3, "i4")),
        (40, join("c", "i3")),
        (45, beat("c", -2, "i3")),
        (50, join("b", "i3")),
        (55, beat("d", -2, "i4")),
        (60, beat("a", -1)),
        (560, beat("b", 4, "i3")),  # ref 10: the recorded divergence (epoch 5, assignment omitted)
        (1060, beat("b", 5, "i3")),
        (1560, beat("b", 5, "i3")),
        (2060, beat("b", 5, "i3")),  # ref 13: d's session (2000 ms from t=55) expired: epoch 6, t-0 to b
        (2560, beat("b", 6, "i3")),
        (3060, beat("b", 6, "i3")),
    ]
    answers = {ref: port.send(at, ref, req) for ref, (at, req) in enumerate(steps, 1)}
    return port, answers


def test_an_omitted_assignment_reveals_the_targets_uniform_choice_and_is_adopted() -> None:
    port, answers = run_script()
    assert answers[10].member_epoch == 5 and answers[10].assignment is None  # the target chose d
    assert answers[13].member_epoch == 6 and answers[13].assigned() == frozenset({("t", 0)})
    assert all(a.error_code == ErrorCode.NONE for a in answers.values())
    assert [f.message for f in port.findings] == []
    notes = [f.message for f in port.session.compat if f.rule == "compat.assignor"]
    assert any("targeted {} to b" in n for n in notes), notes


def test_an_omitted_assignment_that_no_legal_target_explains_is_still_a_finding() -> None:
    """Teeth: at epoch 6 d has expired and b is the only member, so t-0 must be b's; a target that
    omits the assignment there (b keeps nothing) is illegal, and the oracle still says so."""

    def drop(answer: ConsumerGroupHeartbeatResponse) -> ConsumerGroupHeartbeatResponse:
        return ConsumerGroupHeartbeatResponse(
            member_id=answer.member_id, member_epoch=answer.member_epoch,
            heartbeat_interval_ms=answer.heartbeat_interval_ms, assignment=None,
        )  # fmt: skip

    port, _ = run_script({13: drop})
    messages = [f.message for f in port.findings]
    assert messages and "ref 13" in messages[0] and "no model hypothesis explains it" in messages[0]
    assert "no legal uniform assignment" in messages[0] or "no legal completion" in messages[0]


def test_revealed_assignment_reads_an_omitted_one_as_unchanged() -> None:
    coord = ConsumerCoordinator(CONFIG)
    state = ConsumerCoordinatorState()
    coord.create_topic(state, "t", 1)
    coord.handle_consumer_group_heartbeat(state, join("a"), 1, 0)
    same = ConsumerGroupHeartbeatResponse(member_id="a", member_epoch=2, heartbeat_interval_ms=500)
    assert revealed_assignment(state, beat("a", 1), same) == frozenset({("t", 0)})
    assert revealed_assignment(state, beat("x", 1), same) is None  # a member the hypothesis lacks


# ------------------------------------------------------------- a static member's replacement
class KeepsLastTarget(ConsumerCoordinator):
    """A legal uniform target that lets each member keep its highest partitions (the model keeps the
    lowest), members met in ascending id order: another choice Kafka's hash-map order can make."""

    def run_assignor(
        self, name: str, members: dict[str, AssignmentMember], topics: dict[str, int], homogeneous: bool
    ) -> GroupAssignment:
        every = [(t, p) for t in sorted(topics) for p in range(topics[t])]
        order = sorted(members)
        quota = len(every) // len(order)
        out = {m: set(sorted(members[m].current, reverse=True)[:quota]) for m in order}
        free = [tp for tp in every if not any(tp in mine for mine in out.values())]
        for m in order + order:  # fill to the quota, then the extras
            while free and len(out[m]) < quota + (m in order[: len(every) % len(order)]):
                out[m].add(free.pop(0))
        return {m: frozenset(mine) for m, mine in out.items()}


def join_tu(member: str, instance: str | None = None) -> ConsumerGroupHeartbeatRequest:
    return dataclasses.replace(join(member, instance), subscribed_topic_names=("t", "u"))


def test_a_static_replacement_reveals_the_departed_members_target_and_it_is_adopted() -> None:
    """Regression of `faults/apache-kafka.consumer.all-seed1-static-rejoin-assignment.ndjson` (Kafka
    4.4.0, `--protocol all --profile faults --seed 1`): static c3 holds everything, c2 joins (its
    answer reveals nothing), c3 leaves with -2 and rejoins under a new member id; the replacement
    copies the departed member's target (docs/protocol-reference.md#b7), so its answer is the first sight of the
    target's choice, made for the old member id. The oracle adopted only for the member id of the
    request and reported a protocol finding."""
    port = ScriptedPort(KeepsLastTarget(dataclasses.replace(CONFIG, initial_group_epoch=1)), {})
    port.target.create_topic(port.target_state, "u", 1)
    for h in port.hypos:
        port.coords[h.origin].create_topic(h.state, "u", 1)
    steps = [
        (0, join_tu("s1", "i3")),
        (10, dataclasses.replace(beat("s1", 2, "i3"), topic_partitions=())),
        (20, join_tu("a")),
        (30, beat("s1", -2, "i3")),
        (40, join_tu("s2", "i3")),  # ref 5: the replacement's first answer
        (540, beat("a", 3)),
    ]
    answers = {ref: port.send(at, ref, req) for ref, (at, req) in enumerate(steps, 1)}
    assert answers[5].assigned() == frozenset({("u", 0)})  # the target let c3 keep u-0
    assert all(a.error_code == ErrorCode.NONE for a in answers.values())
    assert [f.message for f in port.findings] == []
    notes = [f.message for f in port.session.compat if f.rule == "compat.assignor"]
    assert any("to s2" in n for n in notes), notes
