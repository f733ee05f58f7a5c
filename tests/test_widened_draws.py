"""Draws beyond one fixed client configuration: a restart with other timeouts (a redeploy), a
member that lives past the new-member join timeout, a commit before SyncGroup (kafka-python's
policy) and a cleared regex subscription. Each reaches a dev-half bug of specs/bugs-heldout.yaml
that the suite missed before, and the model still passes with them drawn."""

from __future__ import annotations

import pytest

import conformance.protocols  # noqa: F401  (registers the protocol kits)
from conformance.engine.profiles import PROFILES
from conformance.engine.run import run_check
from conformance.errors import SpecError, UsageError
from conformance.protocols.classic.build import client_config, make_classic_sim
from conformance.protocols.classic.trace import TracedClassicSim, apply_op
from conformance.trace.describe import action
from model.classic.client import ClassicClient, ClientConfig, Phase

CLIENTS = [{"name": "c1", "instance_id": "i1"}, {"name": "c2"}]


def sim() -> TracedClassicSim:
    made = make_classic_sim({"t": 2}, CLIENTS, {}, {})
    assert isinstance(made, TracedClassicSim)
    return made


def test_a_redeploy_restart_carries_its_timeouts_into_the_trace_and_back() -> None:
    first = sim()
    first.restart("c1", (8_000, 6_000))
    op = first.log[-1].op
    assert op == {"op": "restart", "client": "c1", "session_timeout_ms": 8_000, "rebalance_timeout_ms": 6_000}
    assert "session 8000 ms, rebalance 6000 ms" in action(op)
    again = sim()
    apply_op(again, op, "step 1")
    config = again.clients["c1"].config
    assert (config.session_timeout_ms, config.rebalance_timeout_ms) == (8_000, 6_000)
    plain = sim()
    apply_op(plain, {"op": "restart", "client": "c1"}, "step 1")
    assert plain.clients["c1"].config == sim().clients["c1"].config


@pytest.mark.parametrize(
    "fields",
    [
        {"session_timeout_ms": "8000", "rebalance_timeout_ms": 6_000},
        {"session_timeout_ms": 8_000},
        {"rebalance_timeout_ms": 0},
    ],
)
def test_a_malformed_redeploy_is_a_usage_error_naming_the_step(fields: dict[str, object]) -> None:
    with pytest.raises(UsageError, match="step 7: restart field"):
        apply_op(sim(), {"op": "restart", "client": "c1", **fields}, "step 7")


def test_a_joined_generation_committer_commits_while_syncing_and_java_does_not() -> None:
    def syncing(flag: bool) -> ClassicClient:
        c = ClassicClient("c1", ClientConfig(commit_joined_generation=flag))
        c.member_id, c.generation, c.phase, c.owned = "m", 3, Phase.SYNCING, (("t", 0),)
        return c

    request = syncing(True).commit_request(5)
    assert request is not None and request.generation_id == 3
    assert syncing(False).commit_request(5) is None


def test_the_commit_policy_field_must_be_a_boolean() -> None:
    assert client_config({"name": "c1", "commit_joined_generation": True}, {}, "s").commit_joined_generation
    with pytest.raises(SpecError, match="'commit_joined_generation' must be true or false"):
        client_config({"name": "c1", "commit_joined_generation": "yes"}, {}, "setup")


@pytest.mark.parametrize(
    ("protocol", "mutant", "examples", "invariant"),
    [
        ("classic", "kafka-14009", 40, "classic.join_sets_member_timeouts"),
        ("classic", "kafka-9232", 40, "classic.live_session_not_expired"),
        ("classic", "kafka-python-2614", 80, "classic.rebalance_in_progress_keeps_membership"),
        ("classic", "kafka-12983", 150, "classic.lost_member_id_releases_partitions"),
        ("classic", "kafka-13214", 60, "classic.member_id_kept_until_refused"),
        ("consumer", "kafka-19899", 40, "consumer.subscription_change_bumps_epoch"),
    ],
)
def test_the_widened_draws_reach_the_dev_half_bugs(
    protocol: str, mutant: str, examples: int, invariant: str
) -> None:
    caught = run_check(
        protocol,
        profile=PROFILES["ci"],
        max_examples=examples,
        seed_value=0,
        variants={"mutant": mutant},
        shrink=False,
    )
    assert invariant in {v.invariant for v in caught.violations}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_the_model_passes_with_the_widened_draws(protocol: str) -> None:
    assert run_check(protocol, profile=PROFILES["ci"], max_examples=60, seed_value=5).violations == []
