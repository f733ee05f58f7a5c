"""The model served over the wire as a target (`served-model`, `served-model:NAME`): the oracle finds
no divergence on the reference model after the Kafka wire, and catches a coordinator mutant served
the same way, as it would catch the bug in a broker team's coordinator."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.errors import UsageError
from conformance.mutants import get_mutant
from conformance.serve.setup import coordinator_class, mixed_config, parse_settings
from model.mixed.coordinator import MixedCoordinator
from model.mixed.state import MigrationPolicy

REPO = Path(__file__).resolve().parents[1]


def groupcheck(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance.cli.main", *args],
        cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def test_settings_by_kafka_name_reach_the_model_config() -> None:
    config = mixed_config(
        parse_settings(
            [
                "group.min.session.timeout.ms=500",
                "group.consumer.session.timeout.ms=2000",
                "group.consumer.migration.policy=downgrade",
            ]
        )
    )
    assert config.classic.min_session_timeout_ms == 500
    assert config.consumer.session_timeout_ms == 2000
    assert config.policy is MigrationPolicy.DOWNGRADE
    assert config.classic.initial_rebalance_delay_ms == 3000  # unset: Kafka's default


@pytest.mark.parametrize(
    "item",
    ["group.session.timeout=1", "group.max.size", "group.max.size=-1", "group.max.size=1e9",
     "group.consumer.migration.policy=sideways", "group.max.size=99999999999"],
)  # fmt: skip
def test_bad_settings_are_usage_errors_naming_the_item(item: str) -> None:
    with pytest.raises(UsageError, match="--config"):
        parse_settings([item])


@pytest.mark.parametrize("name", ["heartbeat-hides-rebalance", "kafka-16147", "kafka-pr-16145"])
def test_a_served_mutant_carries_its_fault(name: str) -> None:
    """Classic, KIP-848 and mixed mutants each end up in the one served coordinator."""
    mutant = get_mutant(name)
    served = coordinator_class(name)(mixed_config({}))
    assert isinstance(served, MixedCoordinator)
    assert mutant.coordinator is not None
    assert any(isinstance(part, mutant.coordinator) for part in (served, served.classic, served.consumer))
    reference = MixedCoordinator(mixed_config({}))
    assert not isinstance(reference.classic, mutant.coordinator)
    assert not isinstance(reference.consumer, mutant.coordinator)


def test_a_client_mutant_cannot_be_served() -> None:
    with pytest.raises(UsageError, match="client mutant"):
        coordinator_class("kafka-13214")
    done = groupcheck("check", "--target", "served-model:kafka-13214", "--protocol", "classic", timeout=60)
    assert done.returncode == 2 and "not a coordinator mutant" in done.stderr


@pytest.mark.parametrize("protocol", ["classic", "consumer", "mixed"])
def test_the_served_reference_model_passes_its_own_oracle(protocol: str) -> None:
    done = groupcheck(
        "check", "--target", "served-model", "--protocol", protocol, "--profile", "dev", "--seed", "0"
    )
    assert done.returncode in (0, 3), done.stdout + done.stderr  # 3: a `sometimes` goal unmet in 2-4 examples
    assert "violated:" not in done.stdout
    assert f"{protocol} on served-model" in done.stdout


def test_a_served_coordinator_mutant_is_a_divergence_of_the_oracle() -> None:
    done = groupcheck(
        "check", "--target", "served-model:heartbeat-hides-rebalance", "--protocol", "classic",
        "--profile", "ci", "--seed", "0",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    violated = next(line for line in done.stdout.splitlines() if line.startswith("violated: "))
    assert "oracle.Heartbeat" in violated


@pytest.mark.parametrize("version", range(6))
def test_describe_groups_answers_as_kafka_does(version: int) -> None:
    """The classic oracle's barrier reads (state, members) by DescribeGroups; metadata and
    assignment only for a Stable group, any other id Dead (GroupMetadataManager describeGroups)."""
    from types import SimpleNamespace

    from conformance.serve.answers import describe_groups
    from conformance.serve.codec import API_DESCRIBE_GROUPS, encode_response
    from conformance.serve.port import MixedModelPort
    from model.classic.state import ClassicGroup, GroupState, Member

    port = MixedModelPort(0, mixed_config({}))
    m = Member("m1", "i1", "c1", 6000, 6000, "consumer", (("range", b"meta"),), assignment=b"asg")
    port.state.classic.groups["g"] = ClassicGroup(
        "g", GroupState.STABLE, protocol_type="consumer", protocol="range", members={"m1": m}
    )
    values = describe_groups(port, SimpleNamespace(groups=("g", "nope")))
    stable, missing = values["groups"]
    assert (stable["group_state"], stable["protocol_data"]) == ("Stable", "range")
    assert [(x["member_id"], x["member_metadata"], x["member_assignment"]) for x in stable["members"]] == [
        ("m1", b"meta", b"asg")
    ]
    assert (missing["group_state"], missing["members"]) == ("Dead", [])
    port.state.classic.groups["g"].state = GroupState.PREPARING_REBALANCE
    preparing = describe_groups(port, SimpleNamespace(groups=("g",)))["groups"][0]
    assert preparing["group_state"] == "PreparingRebalance" and preparing["protocol_data"] == ""
    assert preparing["members"][0]["member_assignment"] == b""
    assert encode_response(API_DESCRIBE_GROUPS, version, 7, values)[4:8] == b"\x00\x00\x00\x07"


def test_the_pytest_plugin_and_help_know_the_served_mutant_target() -> None:
    from conformance.cli.help import targets_help
    from conformance.cli.plugin import _check_target

    _check_target("served-model:heartbeat-hides-rebalance")
    _check_target("served-model")
    with pytest.raises(pytest.UsageError, match="unknown mutant"):
        _check_target("served-model:no-such-bug")
    assert "served-model:NAME" in targets_help()
