"""The consumer settle bound leaves room for a regex resolution (`consumer_settle_bound`).

The thorough consumer profile on the model (seed 1) judged a group not converged when the
resolution of a regex subscribed during the settle finished after the bound: Kafka starts a
resolution only on a heartbeat at least REGEX_BATCH_REFRESH_MIN_INTERVAL_MS (10 s) after the last
one (GroupMetadataManager, Apache Kafka 4.4.0), and its result bumps the group epoch. The trace
replays that failure with the bound it recorded; with the bound the machine now computes, the same
ops pass."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from conformance.formats.trace_file import read_trace
from conformance.protocols.build import make_consumer_sim
from conformance.protocols.consumer.build import consumer_settle_bound
from conformance.trace.replay import replay

TRACE = Path(__file__).parent / "bounds" / "consumer.eventual_convergence_ff3a7ef90fcb.ndjson"


def test_the_bound_grows_by_a_regex_batch_interval_and_a_reconciliation() -> None:
    clients = [{"name": "c1", "rebalance_timeout_ms": 4000}, {"name": "c2", "rebalance_timeout_ms": 4000}]
    sim = make_consumer_sim({"t": 2}, clients, {}, {})
    names = consumer_settle_bound(sim)
    sim.subscribe("c2", (), "[tu]")
    assert consumer_settle_bound(sim) == names + 10_000 + sim.port.config.heartbeat_interval_ms + 4000


def test_the_late_resolution_fails_the_old_bound_and_passes_the_new_one() -> None:
    trace = read_trace(TRACE)
    old = replay(trace)
    assert old.exact and old.verdict == "FAILED"
    assert {v.invariant for v in old.violations} == {"consumer.eventual_convergence"}
    longer = [
        dataclasses.replace(s, action={**s.action, "bound_ms": 23_500})
        if s.action.get("op") == "settle"
        else s
        for s in trace.steps
    ]
    new = replay(dataclasses.replace(trace, steps=longer), exact=False)
    assert new.error is None and not new.violations, new.violations[:3]
