"""The KIP-848 and mixed-group mutants of the held-out catalogue (specs/bugs-heldout.yaml) each
change what the model answers or records on a short scripted request sequence."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conformance.mutants import get_mutant
from conformance.mutants.heldout_consumer import HELDOUT_CONSUMER_MUTANTS
from conformance.mutants.heldout_mixed import HELDOUT_MIXED_MUTANTS
from model.choice import SeededChooser
from model.classic.messages import JoinGroupRequest, SyncGroupRequest
from model.classic.state import ClassicConfig
from model.consumer.client import ClientState, VirtualConsumer
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from model.consumer.state import SESSION, ConsumerCoordinatorState
from model.embedded import Assignment, Subscription, encode_assignment, encode_subscription
from model.errors import ErrorCode as E
from model.mixed.coordinator import MixedConfig, MixedCoordinator
from model.mixed.state import MixedState


class Script:
    """A coordinator (consumer or mixed facade) and its state; every answer and record kept."""

    def __init__(self, coord: Any, state: Any) -> None:
        self.coord, self.state, self.ref = coord, state, 0
        self.answers: dict[int, Any] = {}
        self.records: list[Any] = []

    def send(self, request: Any, now: int) -> Any:
        self.ref += 1
        if isinstance(self.coord, ConsumerCoordinator):
            result = self.coord.handle_consumer_group_heartbeat(self.state, request, self.ref, now)
        else:
            result = self.coord.handle(self.state, request, self.ref, now)
        self._take(result)
        return self.answers.get(self.ref)

    def advance(self, to: int) -> None:
        self._take(self.coord.advance(self.state, to))

    def _take(self, result: Any) -> None:
        self.answers.update({d.ref: d.response for d in result.deliveries})
        self.records.extend(result.records)


def consumer_script(cls: type[ConsumerCoordinator]) -> Script:
    s = Script(cls(), ConsumerCoordinatorState())
    s.coord.create_topic(s.state, "t", 3)
    return s


def hb(
    member: str, epoch: int, owned: tuple[int, ...] | None = None, **kw: Any
) -> ConsumerGroupHeartbeatRequest:
    tps = None if owned is None else ((TopicPartitions("t", owned),) if owned else ())
    if epoch == 0:
        kw.setdefault("rebalance_timeout_ms", 30_000)
        kw.setdefault("subscribed_topic_names", None if "subscribed_topic_regex" in kw else ("t",))
        tps = ()
    return ConsumerGroupHeartbeatRequest("g", member, epoch, topic_partitions=tps, **kw)


def owned_of(resp: ConsumerGroupHeartbeatResponse) -> tuple[int, ...]:
    return tuple(sorted(p for tp in resp.assignment or () for p in tp.partitions))


def last_member_fenced(s: Script) -> Any:
    s.send(hb("m1", 0), 0)
    s.send(hb("m1", -1), 10)
    group = s.state.groups["g"]
    return group.group_epoch, group.assignment_epoch


def topic_created_later(s: Script) -> Any:
    first = s.send(hb("m1", 0, subscribed_topic_names=("u",)), 0)
    s.coord.create_topic(s.state, "u", 1)
    later = s.send(hb("m1", first.member_epoch, owned=()), 10)
    return s.state.groups["g"].group_epoch, later.assignment


def revoke_twice(s: Script) -> Any:
    first = s.send(hb("m1", 0), 0)
    s.send(hb("m1", first.member_epoch, owned=owned_of(first)), 1)  # m1 holds t-0..t-2
    s.send(hb("m2", 0), 2)
    revoking = s.send(hb("m1", first.member_epoch, owned=owned_of(first)), 3)  # revoke one
    s.send(hb("m3", 0), 4)
    after = s.send(hb("m1", revoking.member_epoch, owned=owned_of(revoking)), 5)  # ack, revoke again
    member = s.state.groups["g"].members["m1"]
    return member.state.value, after.member_epoch


def regex_cleared(s: Script) -> Any:
    first = s.send(hb("m1", 0, subscribed_topic_regex="t.*"), 0)
    s.send(hb("m1", first.member_epoch, owned=owned_of(first), subscribed_topic_regex=""), 10)
    return s.state.groups["g"].group_epoch


CONSUMER_CASES: dict[str, Callable[[Script], Any]] = {
    "kafka-20442": last_member_fenced,
    "kfake-1259": topic_created_later,
    "kafka-19974": revoke_twice,
    "kafka-19899": regex_cleared,
}


@pytest.mark.parametrize("name", sorted(CONSUMER_CASES))
def test_consumer_coordinator_mutant_answers_differently(name: str) -> None:
    mutant = get_mutant(name, "consumer").coordinator
    assert mutant is not None and issubclass(mutant, ConsumerCoordinator) and mutant.__doc__
    run = CONSUMER_CASES[name]
    fixed, broken = run(consumer_script(ConsumerCoordinator)), run(consumer_script(mutant))
    assert fixed != broken, (fixed, broken)


def test_consumer_scripts_show_the_fixed_rule() -> None:
    epochs = last_member_fenced(consumer_script(ConsumerCoordinator))
    assert epochs[0] == epochs[1]
    group_epoch, assignment = topic_created_later(consumer_script(ConsumerCoordinator))
    assert assignment == (TopicPartitions("u", (0,)),)


# ---------------------------------------------------------------------------------- clients


def stable_consumer(cls: type[VirtualConsumer], owned: frozenset[Any] = frozenset()) -> VirtualConsumer:
    c = cls("c1", "g", SeededChooser(1), topics=("t",))
    c.member_id, c.member_epoch, c.state, c.owned = "m1", 3, ClientState.STABLE, owned
    return c


def close_without_partitions(cls: type[VirtualConsumer]) -> Any:
    c = stable_consumer(cls)
    c.leave()
    request = c.next_request(0)
    return c.state.value, None if request is None else request.member_epoch


def answer_while_leaving(cls: type[VirtualConsumer]) -> Any:
    c = stable_consumer(cls, frozenset({("t", 0)}))
    assert c.next_request(10_000) is not None
    c.leave()
    c.on_response(ConsumerGroupHeartbeatResponse(member_id="m1", member_epoch=4, heartbeat_interval_ms=5), 1)
    return c.member_epoch


def group_not_found(cls: type[VirtualConsumer]) -> Any:
    c = stable_consumer(cls, frozenset({("t", 0)}))
    assert c.next_request(10_000) is not None
    c.on_response(ConsumerGroupHeartbeatResponse(E.GROUP_ID_NOT_FOUND), 1)
    return c.state.value, c.member_epoch, sorted(c.owned)


CLIENT_CASES: dict[str, Callable[[type[VirtualConsumer]], Any]] = {
    "librdkafka-4634": close_without_partitions,
    "librdkafka-4672": answer_while_leaving,
    "librdkafka-5488": group_not_found,
}


@pytest.mark.parametrize("name", sorted(CLIENT_CASES))
def test_consumer_client_mutant_behaves_differently(name: str) -> None:
    mutant = get_mutant(name, "consumer").client
    assert mutant is not None and issubclass(mutant, VirtualConsumer) and mutant.__doc__
    fixed, broken = CLIENT_CASES[name](VirtualConsumer), CLIENT_CASES[name](mutant)
    assert fixed != broken, (fixed, broken)


def test_every_consumer_heldout_mutant_has_a_script() -> None:
    assert {m.name for m in HELDOUT_CONSUMER_MUTANTS} == set(CONSUMER_CASES) | set(CLIENT_CASES)


# ---------------------------------------------------------------------------------- mixed

SUB = (("range", encode_subscription(Subscription(("t",)))),)


def mixed_script(cls: type[MixedCoordinator], **classic: Any) -> Script:
    s = Script(cls(MixedConfig(classic=ClassicConfig(**classic))), MixedState())
    s.coord.create_topic(s.state, "t", 3)
    return s


def classic_join(member: str = "", version: int = 3, **kw: Any) -> JoinGroupRequest:
    return JoinGroupRequest("g", member, "consumer", SUB, version=version, **kw)


def stable_classic_group(s: Script, **kw: Any) -> str:
    """One classic member forms a Stable classic group holding t-0."""
    mid = s.send(classic_join(**kw), 0) or None
    s.advance(3_000)
    member_id = next(iter(s.state.classic.groups["g"].members))
    assignment = encode_assignment(Assignment((("t", 0),)))
    s.send(
        SyncGroupRequest(
            "g", 1, member_id, ((member_id, assignment),), kw.get("group_instance_id"), "consumer", "range"
        ),
        3_000,
    )
    assert mid is None  # the join was parked until the initial delay completed it
    return member_id


def downgrade_over_max_size(s: Script) -> Any:
    s.send(hb("m1", 0), 0)
    s.send(classic_join(client_id="c1"), 1)
    s.send(classic_join(client_id="c2"), 2)
    s.send(hb("m1", -1), 3)
    return s.state.group_type("g")


def upgrade_session_timers(s: Script) -> Any:
    member_id = stable_classic_group(s, session_timeout_ms=20_000)
    s.send(hb("m1", 0), 4_000)
    return s.state.consumer.groups["g"].timers[(SESSION, member_id)].deadline


def static_takeover_of_classic_holder(s: Script) -> Any:
    stable_classic_group(s, version=5, group_instance_id="i1")
    return s.send(hb("m1", 0, instance_id="i1"), 4_000).error_code


MIXED_CASES: dict[str, tuple[Callable[[Script], Any], dict[str, Any]]] = {
    "kafka-16861": (downgrade_over_max_size, {"max_size": 1}),
    "kafka-pr-16290": (upgrade_session_timers, {}),
    "kafka-17228": (static_takeover_of_classic_holder, {}),
}


@pytest.mark.parametrize("name", sorted(MIXED_CASES))
def test_mixed_mutant_answers_differently(name: str) -> None:
    mutant = HELDOUT_MIXED_MUTANTS[name]
    assert get_mutant(name, "mixed").coordinator is mutant and mutant.__doc__
    run, classic = MIXED_CASES[name]
    fixed, broken = run(mixed_script(MixedCoordinator, **classic)), run(mixed_script(mutant, **classic))
    assert fixed != broken, (fixed, broken)


def test_mixed_scripts_show_the_fixed_rule() -> None:
    assert downgrade_over_max_size(mixed_script(MixedCoordinator, max_size=1)) == "consumer"
    assert upgrade_session_timers(mixed_script(MixedCoordinator)) == 4_000 + 20_000
    assert static_takeover_of_classic_holder(mixed_script(MixedCoordinator)) == E.NONE
    assert set(MIXED_CASES) == set(HELDOUT_MIXED_MUTANTS)
