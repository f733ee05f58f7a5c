"""A failover is not a group conversion (`mixed.upgrade_rules`): the thorough mixed profile on the
model (seed 4) met a classic group whose member was still joining when the coordinator failed
over. Its join had found an empty consumer group that an earlier join with a stale member id had
dropped only in memory (docs/protocol-reference.md#b13, `ConsumerGroupDropped`), so no tombstone
was written; the reload brings back the empty consumer group and not the classic group, which was
never written. The invariant had read that as an upgrade by a FailoverEvent."""

from __future__ import annotations

from pathlib import Path

from conformance.formats.trace_file import read_trace
from conformance.trace.replay import replay
from model.consumer.world import FailoverEvent

TRACE = Path(__file__).parent / "false_alarms" / "mixed.upgrade_rules_c7806a39c0d2.ndjson"


def test_the_reload_restores_the_durable_groups_and_is_not_an_upgrade() -> None:
    result = replay(read_trace(TRACE))
    assert result.exact and result.verdict == "FIXED", (result.verdict, result.difference, result.error)
    last = result.observations[-1]
    assert isinstance(last.event, FailoverEvent)
    assert "g" in last.before.classic_groups and last.before.classic_groups["g"].members
    assert "g" not in last.after.classic_groups
    assert "g" in last.after.groups and not last.after.groups["g"].members
