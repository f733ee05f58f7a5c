"""The wave-3 KIP-848 and mixed-group mutants (specs/bugs-heldout.yaml) each behave as their bug
describes on a short scripted sequence, and the reference coordinator does not."""

from __future__ import annotations

from typing import Any

from conformance.mutants.heldout3_consumer import (
    HELDOUT3_CONSUMER_MUTANTS,
    HELDOUT3_MIXED_MUTANTS,
    RegexTopicsNotWatched,
    TopicDescribeNotChecked,
    UpgradeDropsAssignorUserData,
    UpgradeRejectsEmptyAssignment,
)
from model.classic.messages import JoinGroupRequest, SyncGroupRequest
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.state import ConsumerCoordinatorState
from model.consumer.txn import ConsumerCoordinatorConfig
from model.embedded import Assignment, Subscription, encode_assignment, encode_subscription
from model.errors import ErrorCode as E
from model.mixed.coordinator import MixedConfig, MixedCoordinator
from model.mixed.state import MixedState
from tests.test_heldout_mutants_848 import Script, hb, owned_of


def consumer_script(cls: type[ConsumerCoordinator], **config: Any) -> Script:
    s = Script(cls(ConsumerCoordinatorConfig(**config)), ConsumerCoordinatorState())
    s.coord.create_topic(s.state, "t", 3)
    return s


# ---------------------------------------------------------------------------------- KAFKA-18813


def join_denied_topic_by_name(s: Script) -> Any:
    resp = s.send(hb("m1", 0), 0)
    return resp.error_code, owned_of(resp)


def join_regex_over_denied_topic(s: Script) -> Any:
    s.coord.create_topic(s.state, "t2", 1)
    first = s.send(hb("m1", 0, subscribed_topic_regex="t.*"), 0)
    s.advance(1)  # the regex resolution runs
    resp = s.send(hb("m1", first.member_epoch, owned=()), 2)
    return resp.error_code, sorted((tp.topic, p) for tp in resp.assignment or () for p in tp.partitions)


def test_kafka_18813_denied_topics_are_subscribed_and_assigned() -> None:
    denied = {"topic_describe_denied": frozenset({"t"})}
    fixed = join_denied_topic_by_name(consumer_script(ConsumerCoordinator, **denied))
    broken = join_denied_topic_by_name(consumer_script(TopicDescribeNotChecked, **denied))
    assert fixed == (E.TOPIC_AUTHORIZATION_FAILED, ())
    assert broken == (E.NONE, (0, 1, 2))

    fixed = join_regex_over_denied_topic(consumer_script(ConsumerCoordinator, **denied))
    broken = join_regex_over_denied_topic(consumer_script(TopicDescribeNotChecked, **denied))
    assert fixed == (E.NONE, [("t2", 0)])
    assert broken == (E.NONE, [("t", 0), ("t", 1), ("t", 2), ("t2", 0)])


# ---------------------------------------------------------------------------------- KAFKA-18916


def regex_topic_grows(s: Script) -> Any:
    first = s.send(hb("m1", 0, subscribed_topic_regex="t.*"), 0)
    s.advance(1)  # the regex resolution runs and bumps the group epoch
    joined = s.send(hb("m1", first.member_epoch, owned=()), 2)
    assert owned_of(joined) == (0, 1, 2)
    s.coord.add_partitions(s.state, "t", 4)
    later = s.send(hb("m1", joined.member_epoch, owned=owned_of(joined)), 1_000)
    group = s.state.groups["g"]
    return group.group_epoch - joined.member_epoch, later.member_epoch, owned_of(later)


def test_kafka_18916_regex_topic_change_does_not_refresh_the_group() -> None:
    fixed = regex_topic_grows(consumer_script(ConsumerCoordinator))
    broken = regex_topic_grows(consumer_script(RegexTopicsNotWatched))
    assert fixed[0] == 1 and fixed[2] == (0, 1, 2, 3)
    assert broken[0] == 0 and broken[2] == ()  # no bump, nothing new to hand out
    # a topic subscribed by name is still watched by the mutant
    s = consumer_script(RegexTopicsNotWatched)
    first = s.send(hb("m1", 0), 0)
    s.coord.add_partitions(s.state, "t", 4)
    later = s.send(hb("m1", first.member_epoch, owned=owned_of(first)), 10)
    assert owned_of(later) == (0, 1, 2, 3)


# ---------------------------------------------------------------------------------- mixed groups

SUB = (("range", encode_subscription(Subscription(("t",)))),)


def mixed_script(cls: type[MixedCoordinator]) -> Script:
    s = Script(cls(MixedConfig()), MixedState())
    s.coord.create_topic(s.state, "t", 3)
    return s


def classic_join(member: str = "", **kw: Any) -> JoinGroupRequest:
    return JoinGroupRequest("g", member, "consumer", SUB, version=3, **kw)


def stable_classic_group(s: Script, assignment: Assignment) -> str:
    """One classic member forms a Stable classic group with ``assignment``."""
    s.send(classic_join(client_id="c1"), 0)
    s.advance(3_000)
    member_id = next(iter(s.state.classic.groups["g"].members))
    payload = encode_assignment(assignment)
    s.send(SyncGroupRequest("g", 1, member_id, ((member_id, payload),), None, "consumer", "range"), 3_000)
    return member_id


def upgrade_with_unsynced_member(s: Script) -> Any:
    stable_classic_group(s, Assignment((("t", 0),)))
    s.send(classic_join(client_id="c2"), 3_500)  # a second member joins: no assignment yet
    assert any(not m.assignment for m in s.state.classic.groups["g"].members.values())
    resp = s.send(hb("m1", 0), 4_000)
    return resp.error_code, s.state.group_type("g")


def test_kafka_17733_upgrade_fails_on_an_empty_assignment() -> None:
    assert upgrade_with_unsynced_member(mixed_script(MixedCoordinator)) == (E.NONE, "consumer")
    broken = upgrade_with_unsynced_member(mixed_script(UpgradeRejectsEmptyAssignment))
    assert broken == (E.GROUP_ID_NOT_FOUND, "classic")


def upgrade_with_user_data(s: Script) -> Any:
    stable_classic_group(s, Assignment((("t", 0),), user_data=b"custom"))
    resp = s.send(hb("m1", 0), 4_000)
    return resp.error_code, s.state.group_type("g")


def test_kafka_18134_upgrade_drops_custom_assignor_user_data() -> None:
    assert upgrade_with_user_data(mixed_script(MixedCoordinator)) == (E.GROUP_ID_NOT_FOUND, "classic")
    assert upgrade_with_user_data(mixed_script(UpgradeDropsAssignorUserData)) == (E.NONE, "consumer")
    # without user data both upgrade alike
    for cls in (MixedCoordinator, UpgradeDropsAssignorUserData):
        s = mixed_script(cls)
        stable_classic_group(s, Assignment((("t", 0),)))
        assert s.send(hb("m1", 0), 4_000).error_code == E.NONE


def test_catalogue_entries() -> None:
    names = {m.name for m in HELDOUT3_CONSUMER_MUTANTS}
    assert names == {"kafka-18813", "kafka-18916", "kafka-17733", "kafka-18134"}
    assert set(HELDOUT3_MIXED_MUTANTS) == {"kafka-17733", "kafka-18134"}
    for m in HELDOUT3_CONSUMER_MUTANTS:
        assert m.expect == () and m.family == "heldout" and m.coordinator is not None
        assert m.coordinator.__doc__
        if m.protocol == "mixed":
            assert m.variants == (("mixed_mutant", m.name),)
            assert HELDOUT3_MIXED_MUTANTS[m.name] is m.coordinator
