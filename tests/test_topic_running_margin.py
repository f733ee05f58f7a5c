"""The wait after a topic change counts the coordinator's margin only while the target runs
(`topic_ops.seen_running_for`), without a real target: a scripted Metadata that a paused broker
answers only when it runs again.

Seen under `benchmarks/oracle_false_alarms.py` (consumer ci seed 4): Apache Kafka answered
the first heartbeat of a new group with an empty assignment because its group coordinator had not
yet seen the topic that Metadata already listed; the broker was paused during the fixed 300 ms
margin, so the oracle (whose model knew the topic) reported a divergence that depended on load.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from conformance.protocols import topic_ops


class PausedBroker:
    """Metadata lists the topic at once; the broker pauses ``pause_s`` from ``pause_at`` (after the
    first answer), and its group coordinator learns the topic after ``learn_s`` of running time."""

    def __init__(self, pause_at: float, pause_s: float, learn_s: float) -> None:
        self.t0: float | None = None
        self.pause_at, self.pause_s, self.learn_s = pause_at, pause_s, learn_s

    def partition_counts(self, adapter: Any, names: list[str], timeout_s: float = 5.0) -> dict[str, int]:
        now = time.monotonic()
        if self.t0 is None:
            self.t0 = now
        start, end = self.t0 + self.pause_at, self.t0 + self.pause_at + self.pause_s
        if start <= now < end:
            time.sleep(end - now)  # a stopped JVM answers when it runs again
        return {n: 2 for n in names}

    def coordinator_knows(self, at: float) -> bool:
        """Running time since Metadata listed the topic reached ``learn_s`` by ``at``."""
        assert self.t0 is not None
        running = at - self.t0 - max(0.0, min(at - self.t0 - self.pause_at, self.pause_s))
        return running >= self.learn_s


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> PausedBroker:
    fake = PausedBroker(pause_at=0.05, pause_s=0.45, learn_s=0.15)
    monkeypatch.setattr(topic_ops, "partition_counts", fake.partition_counts)
    return fake


def test_the_margin_restarts_after_a_pause_of_the_target(broker: PausedBroker) -> None:
    topic_ops.wait_until(None, "t", 2)
    done = time.monotonic()
    assert broker.coordinator_knows(done)
    assert broker.t0 is not None and done - broker.t0 >= 0.5 + topic_ops.COORDINATOR_MARGIN_S


def test_a_fixed_sleep_returns_while_the_coordinator_has_not_seen_the_topic(
    broker: PausedBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule before (a fixed sleep after Metadata showed the topic): the false alarm's cause."""
    monkeypatch.setattr(topic_ops, "seen_running_for", lambda a, n, margin_s: time.sleep(margin_s))
    topic_ops.wait_until(None, "t", 2)
    assert not broker.coordinator_knows(time.monotonic())


def test_a_running_target_costs_the_margin_only() -> None:
    calls: list[float] = []

    def counts(adapter: Any, names: list[str], timeout_s: float = 5.0) -> dict[str, int]:
        calls.append(time.monotonic())
        return {}

    saved = topic_ops.partition_counts
    topic_ops.partition_counts = counts  # type: ignore[assignment]
    try:
        waited = topic_ops.seen_running_for(None, "t", 0.2)
    finally:
        topic_ops.partition_counts = saved  # type: ignore[assignment]
    assert 0.2 <= waited < 0.2 + topic_ops.RUNNING_GAP_S + 0.5
    assert len(calls) >= 2
