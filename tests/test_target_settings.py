"""The target's group settings: learned once, each with its origin; a stated value the target
contradicts is a divergence naming the setting (conformance/targets/settings.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.errors import UsageError
from conformance.targets.open import classic_model_config, launched_settings
from conformance.targets.settings import (
    ASKED,
    DEFAULT,
    GIVEN,
    KAFKA_DEFAULTS,
    STARTED,
    ask,
    learn,
    parse_given,
)


def test_origins_given_over_started_over_asked_over_default() -> None:
    got = learn(
        {"group.min.session.timeout.ms": 500},
        {"group.min.session.timeout.ms": "7000", "group.initial.rebalance.delay.ms": "0"},
        {"group.consumer.heartbeat.interval.ms": 600},
    )
    assert (got["group.min.session.timeout.ms"], got.origin("group.min.session.timeout.ms")) == (500, STARTED)
    assert (got["group.initial.rebalance.delay.ms"], got.origin("group.initial.rebalance.delay.ms")) == (
        0,
        ASKED,
    )
    assert got.origin("group.consumer.heartbeat.interval.ms") == GIVEN
    assert (got["group.max.session.timeout.ms"], got.origin("group.max.session.timeout.ms")) == (
        1_800_000,
        DEFAULT,
    )
    assert got.conflicts == []  # nothing the target said was contradicted
    assert len(got.lines()) == len(KAFKA_DEFAULTS)
    assert "group.consumer.heartbeat.interval.ms=600 (given)" in got.lines()


def test_a_given_value_the_target_contradicts_is_a_conflict_naming_the_setting() -> None:
    got = learn(None, {"group.min.session.timeout.ms": "6000"}, {"group.min.session.timeout.ms": 500})
    assert got["group.min.session.timeout.ms"] == 500  # the user's statement is what the oracle uses
    assert len(got.conflicts) == 1 and "group.min.session.timeout.ms" in got.conflicts[0]
    assert "6000" in got.conflicts[0] and "asked" in got.conflicts[0]


def test_kafka_defaults_for_a_target_that_says_nothing() -> None:
    got = learn(None, {}, {})
    assert classic_model_config(got) == {
        "initial_rebalance_delay_ms": 3000,
        "min_session_timeout_ms": 6000,
        "max_session_timeout_ms": 1_800_000,
        "max_size": 2**31 - 1,
        "offset_metadata_max_bytes": 4096,
    }
    assert {got.origin(k) for k in KAFKA_DEFAULTS} == {DEFAULT}


def test_launched_settings_are_started_with() -> None:
    got = launched_settings({"group.consumer.session.timeout.ms": 2000})
    assert got.origin("group.consumer.session.timeout.ms") == STARTED
    assert got.origin("group.min.session.timeout.ms") == STARTED  # what the launchers assume
    assert got["group.consumer.assignment.interval.ms"] == 0  # launched coordinators do not batch
    assert got.origin("group.consumer.heartbeat.interval.ms") == DEFAULT


def test_given_from_file_and_key_value(tmp_path: Path) -> None:
    f = tmp_path / "broker.properties"
    f.write_text(
        "# a comment\n\ngroup.min.session.timeout.ms = 6000\ngroup.consumer.migration.policy=UPGRADE\n"
    )
    given = parse_given([str(f), "group.initial.rebalance.delay.ms=3000"])
    assert given == {
        "group.min.session.timeout.ms": 6000,
        "group.consumer.migration.policy": "upgrade",
        "group.initial.rebalance.delay.ms": 3000,
    }


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("group.min.session.timeout.ms=six\n", "broker.properties:1"),
        ("\nno-equals-sign\n", "broker.properties:2"),
        ("group.nonsense=1\n", "broker.properties:1"),
        ("group.consumer.migration.policy=sideways\n", "broker.properties:1"),
    ],
)
def test_bad_given_names_file_and_line(tmp_path: Path, text: str, where: str) -> None:
    f = tmp_path / "broker.properties"
    f.write_text(text)
    with pytest.raises(UsageError, match=where):
        parse_given([str(f)])


def test_unreadable_or_huge_given_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read"):
        parse_given([str(tmp_path / "absent")])
    big = tmp_path / "big"
    big.write_bytes(b"#" * 70_000)
    with pytest.raises(UsageError, match="longer than"):
        parse_given([str(big)])


def test_a_target_without_describe_configs_is_not_asked() -> None:
    caps = SimpleNamespace(api_versions={18: (0, 3)})
    asked, why = ask("127.0.0.1", 1, caps, 0.1)
    assert asked == {} and why is not None and "DescribeConfigs" in why


def test_a_divergence_names_the_settings_it_depends_on() -> None:
    from conformance.targets.settings import depends

    got = learn(None, {}, {"group.min.session.timeout.ms": 6000})
    said = depends("oracle.JoinGroup: error NONE, model INVALID_SESSION_TIMEOUT", got)
    assert said.endswith(
        "[depends on group.max.session.timeout.ms=1800000 (Kafka default), "
        "group.min.session.timeout.ms=6000 (given)]"
    )
    assert depends("error NONE, model UNKNOWN_MEMBER_ID", got) == "error NONE, model UNKNOWN_MEMBER_ID"


@pytest.mark.target
def test_wrong_target_config_is_a_divergence_naming_the_setting() -> None:
    """Apache Kafka started with a 500 ms minimum session, told it is 6000 ms: the run fails with a
    `target.config` divergence naming the setting, and the report header shows it as given."""
    from conformance.cli.check import run_protocols_on_target

    runs, skipped = run_protocols_on_target(
        "apache-kafka", ["classic"], "dev", max_examples=1, seed=0, variants={}, level="protocol",
        restarts=0, given={"group.min.session.timeout.ms": 6000},
    )  # fmt: skip
    assert skipped == []
    found = [v for v in runs[0].result.violations if v.invariant == "target.config"]
    assert (
        len(found) == 1 and "group.min.session.timeout.ms" in found[0].message and "6000" in found[0].message
    )
    assert "group.min.session.timeout.ms=6000 (given)" in runs[0].handle.settings.lines()
