"""Asynchronous SubscribedTopicRegex resolution (`model.consumer.regex_rules`, KAFKA-17593): the
heartbeat that brings a regex does not resolve it; a later resolution writes the topics and bumps."""

from __future__ import annotations

import re
import uuid

from conformance.protocols.consumer.codec import TopicMap
from conformance.specs import load_scenarios
from conformance.trace.scenario import run_scenario
from model.choice import SeededChooser
from model.consumer.coordinator import ConsumerCoordinator
from model.consumer.promise_invariants import regex_resolved_off_heartbeat
from model.consumer.regex_records import RegexResolvedRecord, RegexResolvedTombstone
from model.consumer.state import REGEX_RESOLUTION
from model.consumer.txn import ConsumerCoordinatorConfig
from model.consumer.world import HeartbeatEvent, capture_world, observe
from model.errors import ErrorCode
from tests.test_consumer_model import Harness, beat, join, ok

TIMER = (REGEX_RESOLUTION, "")


def regex_join(member_id: str, regex: str):  # type: ignore[no-untyped-def]
    return join(member_id, subscribed_topic_names=None, subscribed_topic_regex=regex)


def test_new_regex_resolves_after_the_heartbeat_then_bumps() -> None:
    h = Harness(topics={"a1": 1, "a2": 1, "b": 1})
    r = ok(h.hb(regex_join("m1", "a.*")))
    assert r.assigned() == frozenset() and h.group.group_epoch == 1
    assert not h.group.resolved_regexes and h.group.timers[TIMER].regexes == ("a.*",)
    h.advance(h.now)  # the resolution lands
    assert h.group.resolved_regexes["a.*"].topics == {"a1", "a2"} and h.group.group_epoch == 2
    assert any(isinstance(rec, RegexResolvedRecord) for rec in h.records)
    r = ok(h.hb(beat("m1", r.member_epoch)))
    assert r.assigned() == {("a1", 0), ("a2", 0)} and r.member_epoch == 2
    assert not h.violations


def test_new_topic_is_picked_up_only_after_the_minimum_interval() -> None:
    h = Harness(topics={"a1": 1})
    ok(h.hb(regex_join("m1", "a.*")))
    h.advance(0)
    h.topic("create", "a2", 1)
    h.now = 5_000
    ok(h.hb(beat("m1", 1)))
    assert TIMER not in h.group.timers  # resolved 5 s ago: not before 10 s
    h.now = 10_001
    ok(h.hb(beat("m1", 2)))
    assert TIMER in h.group.timers
    h.advance(h.now)
    assert h.group.resolved_regexes["a.*"].topics == {"a1", "a2"} and h.group.group_epoch == 3
    assert not h.violations


def test_refresh_interval_re_resolves_an_old_resolution() -> None:
    cfg = ConsumerCoordinatorConfig(regex_refresh_interval_ms=20_000)
    h = Harness(ConsumerCoordinator(cfg, SeededChooser(1)), topics={"a1": 1})
    ok(h.hb(regex_join("m1", "a.*")))
    h.advance(0)
    h.now = 15_000
    ok(h.hb(beat("m1", 1)))
    assert TIMER not in h.group.timers  # nothing new, younger than the refresh interval
    h.now = 20_001
    ok(h.hb(beat("m1", 2)))
    assert TIMER in h.group.timers
    h.advance(h.now)
    assert h.group.resolved_regexes["a.*"].timestamp == 20_001 and h.group.group_epoch == 2  # same topics


def test_regex_another_member_resolved_bumps_at_once_and_last_one_out_deletes_it() -> None:
    h = Harness(topics={"a1": 2, "b": 1})
    ok(h.hb(regex_join("m1", "a.*")))
    h.advance(0)
    e = h.group.group_epoch
    ok(h.hb(regex_join("m2", "a.*")))
    assert h.group.group_epoch == e + 1 and TIMER not in h.group.timers
    ok(h.hb(beat("m1", h.member("m1").member_epoch, subscribed_topic_regex="b")))
    assert "a.*" in h.group.resolved_regexes  # m2 still subscribes
    ok(h.hb(beat("m2", h.member("m2").member_epoch, subscribed_topic_regex="")))
    assert "a.*" not in h.group.resolved_regexes
    assert any(isinstance(rec, RegexResolvedTombstone) for rec in h.records)
    assert not h.violations


def test_invalid_regex_is_refused_before_any_record() -> None:
    h = Harness()
    r = h.hb(regex_join("m1", "t["))
    assert r.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION and not h.state.groups


def test_resolution_survives_failover_and_a_pending_one_is_started_again() -> None:
    h = Harness(topics={"a1": 1})
    ok(h.hb(regex_join("m1", "a.*")))
    state, _ = h.coord.failover(h.records, h.now)
    assert not state.groups["g"].resolved_regexes and TIMER not in state.groups["g"].timers
    h.state = state
    h.now = 1
    ok(h.hb(beat("m1", 1)))  # unresolved regex: the heartbeat starts the resolution again
    assert TIMER in h.group.timers


def _sync_rule_observation() -> list[str]:
    """The old synchronous rule, observed by a world that says resolution is asynchronous."""
    sync = ConsumerCoordinator(ConsumerCoordinatorConfig(regex_resolution="sync"), SeededChooser(1))
    h = Harness(sync, topics={"t": 2, "u": 1}, check=False)
    ok(h.hb(join("m1", subscribed_topic_names=("t",))))
    said = ConsumerCoordinatorConfig()
    before = capture_world(h.state, config=said)
    request = beat("m1", 1, subscribed_topic_regex="u")
    result = sync.handle_consumer_group_heartbeat(h.state, request, 99, h.now)
    obs = observe(before, HeartbeatEvent(99, request), result, capture_world(h.state, config=said), h.now)
    return list(regex_resolved_off_heartbeat(obs))


def test_invariant_fails_on_the_synchronous_rule_under_the_async_setting() -> None:
    assert _sync_rule_observation()


def test_invariant_holds_on_the_asynchronous_rule() -> None:
    h = Harness(topics={"t": 2, "u": 1})
    ok(h.hb(join("m1", subscribed_topic_names=("t",))))
    ok(h.hb(beat("m1", 1, subscribed_topic_regex="u")))
    assert h.group.group_epoch == 1 and h.group.subscription_metadata == {"t": 2}
    assert not h.violations


SCENARIO = "kip-848-regex-resolution"


def test_reference_passes_the_regex_scenario() -> None:
    result = run_scenario(load_scenarios()[SCENARIO], {})
    assert result.passed, (result.violations, result.failed_expectations)


def test_regex_mutant_is_caught_by_the_scenario() -> None:
    result = run_scenario(load_scenarios()[SCENARIO], {"mutant": "regex-resolved-in-heartbeat"})
    # c2 is also given u-0 of a regex the group has not resolved (KAFKA-19431's subscription filter)
    assert {v.invariant for v in result.violations} == {
        "consumer.regex_resolved_off_heartbeat",
        "consumer.assignment_within_subscription",
    }


def test_regex_goes_on_the_wire_over_the_ports_real_topic_names() -> None:
    topics = TopicMap()
    topics.add("t", "gc-r1-t.g1-2", uuid.UUID(int=1))
    assert topics.real_regex("[tu]") == r"gc-r1-t\.g1-2"  # a fixed topic set: the names it matches
    assert topics.real_regex("x") == "gc-missing-none" and topics.real_regex("") == ""
    topics.frame = ("gc-r1-", ".g1-")  # topics the port creates, now or later
    wire = topics.real_regex("[tu]")
    assert wire is not None and re.fullmatch(wire, "gc-r1-u.g1-3") and not re.fullmatch(wire, "gc-r1-u.g12-3")
