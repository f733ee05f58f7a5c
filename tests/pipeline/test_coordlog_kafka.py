"""The coordinator-log audit end to end on a real Apache Kafka broker (started by the suite, never skipped)."""

from __future__ import annotations

import json

import pytest

from conformance.cli.main import main

pytestmark = pytest.mark.target


def test_coordlog_on_apache_kafka(tmp_path, capsys):
    out = tmp_path / "coordlog"
    code = main(["pipeline", "coordlog", "--start", "apache-kafka", "--pace", "1.5", "--out", str(out)])
    printed = capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert code == 0, printed
    assert results["verdict"] == "PASSED" and results["quarantined"] == 0
    kinds = set(results["records_by_type"])
    assert {"GroupMetadata", "ConsumerGroupMetadata", "ConsumerGroupMemberMetadata",
            "ConsumerGroupTargetAssignmentMember", "ConsumerGroupCurrentMemberAssignment"} <= kinds  # fmt: skip
    assert set(results["states_checked"]) == {
        "groupcheck-classic-range", "groupcheck-classic-cooperative", "groupcheck-consumer-848",
    }  # fmt: skip
    assert all(d["states"] > 0 for d in results["invariants"].values())
    assert (out / "records.parquet").exists() and "coordinator log of apache-kafka" in printed
