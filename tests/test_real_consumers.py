"""Each real consumer (librdkafka, franz-go's kgo, Java's KafkaConsumer; classic and KIP-848) against
`groupcheck serve`: joins, is assigned every partition, commits, survives a forced rebalance and a
coordinator failover, commits again and leaves. Every wait is bounded; each step waits for an event
the consumer reports, never for a fixed time."""

from __future__ import annotations

import json
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.clients.consumers import Consumer, parse_client, provision
from conformance.serve.server import ServeConfig, Server

TEST_BUDGET_S = 150
ALL = {"t:0", "t:1", "t:2"}
CASES = [
    ("librdkafka", "classic"),
    ("librdkafka", "consumer"),
    ("kgo", "classic"),
    ("kgo", "consumer"),
    ("java", "classic"),
    ("java", "consumer"),
]
TOOLS = {"librdkafka": (), "kgo": ("go",), "java": ("java", "mvn")}


@pytest.fixture(autouse=True)
def _bounded() -> Iterator[None]:
    def expired(_sig: int, _frame: Any) -> None:
        raise TimeoutError(f"test exceeded {TEST_BUDGET_S} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_BUDGET_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


class Held:
    """The partitions a consumer holds, from its assigned / revoked / lost events."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.parts: set[str] = set()
        self.seen = 0

    def update(self) -> set[str]:
        self.consumer.drain()
        for e in self.consumer.events[self.seen :]:
            if e["event"] == "assigned":
                self.parts |= set(e["partitions"])
            elif e["event"] in ("revoked", "lost"):
                self.parts -= set(e["partitions"])
        self.seen = len(self.consumer.events)
        return self.parts

    def until(self, done: Any, seconds: float) -> bool:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.update()
            if done():
                return True
            time.sleep(0.05)
        return bool(done())


def _commit(consumer: Consumer, held: Held, offset: int) -> dict[str, Any]:
    consumer.send(f"commit {offset}")
    got = consumer.wait_for("committed", 30)
    held.update()
    assert got is not None, consumer.events
    return got


@pytest.mark.parametrize(("kind", "protocol"), CASES)
def test_real_consumer_joins_commits_survives_rebalance_and_failover_and_leaves(
    kind: str, protocol: str, tmp_path: Path
) -> None:
    missing = [tool for tool in TOOLS[kind] if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{kind}: {', '.join(missing)} not installed")
    if kind == "librdkafka":
        pytest.importorskip("confluent_kafka")
    command = provision(parse_client(kind))
    config = ServeConfig(
        topics={"t": 3}, initial_rebalance_delay_ms=0, heartbeat_interval_ms=500, phantom_stay_ms=2_000
    )
    server = Server(config).start()
    consumer = Consumer(
        command, "c1", tmp_path / "c1.log", bootstrap=f"127.0.0.1:{server.address[1]}", group="g", topic="t",
        protocol=protocol, assignor="range", client_id="c1", seconds="120",
    )  # fmt: skip
    held = Held(consumer)
    try:
        assert held.until(lambda: held.parts == ALL, 45), consumer.events
        assert _commit(consumer, held, 5)["ok"] is True
        assert all(server.port_model.committed("g", "t", p)[0] == 5 for p in range(3))

        before = len(consumer.events)
        server.force("rebalance", "g")
        moved = lambda: any(e["event"] in ("revoked", "lost") for e in consumer.events[before:])  # noqa: E731
        assert held.until(lambda: moved() and held.parts == ALL, 45), consumer.events[before:]

        server.force("failover", "g")
        assert server.port_model.committed("g", "t", 0)[0] == 5  # durable: reloaded
        got = _commit(consumer, held, 6)
        for _ in range(5):  # a commit racing the reconnection may fail; the consumer retries on its own
            if got["ok"] and set(got["partitions"]) == ALL:
                break
            time.sleep(0.5)
            got = _commit(consumer, held, 6)
        assert got["ok"] is True and set(got["partitions"]) == ALL, consumer.events
        assert all(server.port_model.committed("g", "t", p)[0] == 6 for p in range(3))
        closed = [x for x in server.trace.lines if x["kind"] == "closed" and x["why"] == "failover"]
        assert closed
        assert consumer.stop(30) == 0
        assert consumer.events[-1]["event"] == "left", consumer.events[-3:]
        time.sleep(0.3)
        group = server.port_model.state.classic.groups.get(
            "g"
        ) or server.port_model.state.consumer.groups.get("g")
        assert group is not None and not [m for m in group.members if not m.startswith("groupcheck-phantom-")]
        assert server.group_type("g") == ("classic" if protocol == "classic" else "consumer")
    finally:
        consumer.stop(1)
        server.stop()
    assert server.error is None, server.error


#: KIP-1082: ConsumerGroupHeartbeat v1's member id is kept for the consumer's lifetime. franz-go
#: v1.22.3 rejoins with a fresh one after UNKNOWN_MEMBER_ID (pkg/kgo/consumer_group_848.go,
#: reports/clients/kgo.md); librdkafka and the Java consumer keep theirs.
KEEPS_MEMBER_ID = {"librdkafka": True, "kgo": False, "java": True}


@pytest.mark.parametrize("kind", sorted(KEEPS_MEMBER_ID))
def test_fenced_kip848_member_rejoins_and_its_member_id_is_judged(kind: str, tmp_path: Path) -> None:
    from conformance.clientcheck.invariants import judge
    from conformance.clientcheck.observe import Recorder

    missing = [tool for tool in TOOLS[kind] if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"{kind}: {', '.join(missing)} not installed")
    command = provision(parse_client(kind))
    server = Server(ServeConfig(topics={"t": 3}, initial_rebalance_delay_ms=0, heartbeat_interval_ms=500))
    recorder = Recorder()
    server.observer = recorder
    server.start()
    consumer = Consumer(
        command, "c1", tmp_path / "c1.log", bootstrap=f"127.0.0.1:{server.address[1]}", group="g", topic="t",
        protocol="consumer", assignor="range", client_id="c1", seconds="90",
    )  # fmt: skip
    held = Held(consumer)
    try:
        assert held.until(lambda: held.parts == ALL, 45), consumer.events
        assert server.force("fence", "g") != "no KIP-848 member to fence"
        fenced_at = [x.get("action") for x in recorder.log].index("fence")

        def rejoined() -> bool:
            beats = [e for e in recorder.log[fenced_at:] if e.get("api") == "ConsumerGroupHeartbeat"]
            return any(e["kind"] == "request" and e["epoch"] == 0 for e in beats)

        assert held.until(lambda: rejoined() and held.parts == ALL, 45), consumer.events
        assert consumer.stop(30) == 0
    finally:
        consumer.stop(1)
        server.stop()
    judgement = judge(recorder.log, {"t": 3})
    assert judgement.exercised["client.fenced_rejoins_same_member_id"] >= 1
    found = [f for f in judgement.findings if f["invariant"] == "client.fenced_rejoins_same_member_id"]
    assert bool(found) is not KEEPS_MEMBER_ID[kind], found


def test_check_client_finds_the_kgo_kip1082_rejoin_and_the_saved_log_replays(
    tmp_path: Path, capsys: Any
) -> None:
    """`check --client` end to end: its forced fence always meets franz-go's fresh member id after
    UNKNOWN_MEMBER_ID (reports/clients/kgo.md), exit 1; the saved log judges the same again."""
    from conformance.cli.main import main

    if shutil.which("go") is None:
        pytest.skip("kgo: go not installed")
    argv = ["check", "--client", "kgo", "--protocol", "consumer", "--seed", "5", "--duration", "8"]
    assert main([*argv, "--report-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "client.fenced_rejoins_same_member_id" in out
    (log,) = tmp_path.glob("*/log.ndjson")
    result = json.loads((log.parent / "result.json").read_text())
    assert result["verdict"] == "FAILED" and sorted(result["forced"]) == ["failover", "fence", "rebalance"]
    assert main(["check", "--client", "kgo", "--replay", str(log)]) == 1
    assert "client.fenced_rejoins_same_member_id" in capsys.readouterr().out
