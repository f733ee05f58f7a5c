"""`consumer.member_record_matches_client`: the coordinator holds what the consumer last sent
(KIP-848 incremental heartbeat fields; specs/scenarios/kip-848-subscription-held.yaml)."""

from __future__ import annotations

from conformance.mutants import get_mutant
from conformance.specs import load_scenarios
from conformance.trace.scenario import run_scenario
from model.choice import SeededChooser
from model.consumer.client import VirtualConsumer

SCENARIO = "kip-848-subscription-held"


def test_the_scenario_passes_on_the_model_and_only_the_promise_catches_the_mutant() -> None:
    passed = run_scenario(load_scenarios()[SCENARIO], {})
    assert passed.passed, (passed.violations, passed.failed_expectations)
    caught = run_scenario(load_scenarios()[SCENARIO], {"mutant": "join-only-subscription"})
    assert {v.invariant for v in caught.violations} == {"consumer.member_record_matches_client"}
    assert "last sent topic names ['t', 'u']" in caught.violations[0].message
    assert get_mutant("join-only-subscription").expect == ("consumer.member_record_matches_client",)


def test_a_consumer_declares_what_it_sent_until_a_request_fails() -> None:
    c = VirtualConsumer("c1", "g", SeededChooser(0), topics=("t",))
    assert c.view().declared == (None, None, None)  # nothing sent yet
    request = c.next_request(0)
    assert request is not None and request.subscribed_topic_names == ("t",)
    assert c.view().declared == (frozenset({"t"}), None, request.rebalance_timeout_ms)
    c.on_request_lost(10)  # it will send every field again
    assert c.view().declared == (None, None, None)
