"""Run real groups on a broker, export `__consumer_offsets`, decode it and audit it (docs/pipeline.md#coordinator-log).

`run_workload` drives confluent-kafka consumers (librdkafka) in three groups on one topic: a
classic group with the range assignor, a classic group with cooperative-sticky (KIP-429), and a
KIP-848 group (`group.protocol=consumer`). Members join one after another, one leaves, one static
member restarts, so the coordinator writes generations, rebalances and epoch bumps.
`read_log` reads every partition of `__consumer_offsets` from the beginning to its high watermark.
Every wait has a deadline; a broker that does not answer is a TargetError (exit 2).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from conformance.errors import TargetError
from conformance.pipeline.coordlog import CoordinatorRecord, RecordDecodeError, decode_record

OFFSETS_TOPIC = "__consumer_offsets"
CLASSIC_RANGE = "groupcheck-classic-range"
CLASSIC_COOP = "groupcheck-classic-cooperative"
CONSUMER_848 = "groupcheck-consumer-848"
GROUPS = (CLASSIC_RANGE, CLASSIC_COOP, CONSUMER_848)


def _conf(bootstrap: str, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "client.id": "groupcheck-coordlog", "log_level": 3, **extra}


def kafka_uuid(u: Any) -> str:
    """confluent-kafka's Uuid (two signed 64-bit halves) as the canonical UUID text the decoder uses."""
    msb = u.get_most_significant_bits() & (2**64 - 1)
    lsb = u.get_least_significant_bits() & (2**64 - 1)
    return str(uuid.UUID(int=(msb << 64) | lsb))


def topic_metadata(
    bootstrap: str, topics: list[str], timeout_s: float = 20.0
) -> tuple[dict[str, str], dict[str, int]]:
    """(topic id -> name, name -> partition count) from DescribeTopics."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(_conf(bootstrap))
    futures = admin.describe_topics(TopicCollection(topics), request_timeout=timeout_s)
    names, counts = {}, {}
    for name, fut in futures.items():
        try:
            desc = fut.result(timeout=timeout_s)
        except Exception as exc:
            raise TargetError(f"{bootstrap}: DescribeTopics {name}: {exc}") from exc
        names[kafka_uuid(desc.topic_id)] = name
        counts[name] = len(desc.partitions)
    return names, counts


@dataclass
class _Member:
    group: str
    name: str
    conf: dict[str, Any]
    topic: str
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    assigned: int = 0
    error: str | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from confluent_kafka import Consumer

        try:
            c = Consumer(self.conf)
            c.subscribe([self.topic])
            while not self.stop.is_set():
                msg = c.poll(0.2)
                if msg is not None and msg.error() is None:
                    self.assigned += 1
            c.close()  # LeaveGroup (classic) / heartbeat with epoch -1 (consumer); static: epoch -2
        except Exception as exc:  # reported by run_workload
            self.error = f"{type(exc).__name__}: {exc}"

    def leave(self, timeout_s: float = 20.0) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout_s)
            if self.thread.is_alive():
                raise TargetError(f"consumer {self.name} did not close within {timeout_s:.0f} s")


def run_workload(bootstrap: str, topic: str, pace_s: float = 3.0) -> list[str]:
    """Run the three groups; returns the notes of what happened, in order."""
    from confluent_kafka import Producer

    producer = Producer(_conf(bootstrap))
    for i in range(200):
        producer.produce(topic, key=str(i).encode(), value=b"x")
    if producer.flush(20) != 0:
        raise TargetError(f"{bootstrap}: could not produce to {topic} within 20 s")
    common = {"auto.offset.reset": "earliest", "enable.auto.commit": True, "auto.commit.interval.ms": 500}
    classic = {
        **common,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "group.protocol": "classic",
    }

    def member(group: str, name: str, **extra: Any) -> _Member:
        cfg = _conf(bootstrap, **{"group.id": group, "client.id": name, **extra})
        return _Member(group, name, cfg, topic)

    plan = [
        [
            member(CLASSIC_RANGE, f"range-{i}", **classic, **{"partition.assignment.strategy": "range"})
            for i in range(3)
        ],
        [
            member(
                CLASSIC_COOP,
                f"coop-{i}",
                **classic,
                **{"partition.assignment.strategy": "cooperative-sticky"},
            )
            for i in range(3)
        ],
        [member(CONSUMER_848, f"kip848-{i}", **common, **{"group.protocol": "consumer"}) for i in range(3)],
    ]
    static = member(
        CONSUMER_848, "kip848-static", **common, **{"group.protocol": "consumer", "group.instance.id": "s1"}
    )
    notes: list[str] = []
    everyone = [m for ms in plan for m in ms] + [static]
    try:
        for round_ in range(3):
            for ms in plan:
                ms[round_].start()
            notes.append(f"member {round_ + 1} of each group joins")
            time.sleep(pace_s)
        static.start()
        notes.append("a static member joins the KIP-848 group")
        time.sleep(pace_s)
        for ms in plan:
            ms[1].leave()
        notes.append("member 2 of each group leaves")
        time.sleep(pace_s)
        static.leave()
        notes.append("the static member leaves (temporary, epoch -2)")
        restarted = member(
            CONSUMER_848,
            "kip848-static-2",
            **common,
            **{"group.protocol": "consumer", "group.instance.id": "s1"},
        )
        everyone.append(restarted)
        restarted.start()
        notes.append("the static member comes back")
        time.sleep(pace_s)
    finally:
        for m in everyone:
            if m.thread is not None:
                m.leave()
    notes.append("every member leaves")
    errors = [f"{m.name}: {m.error}" for m in everyone if m.error]
    if errors:
        raise TargetError("consumer failed: " + "; ".join(errors))
    return notes


def probe(bootstrap: str, timeout_s: float = 5.0) -> None:
    """One ApiVersions exchange under a total deadline before the client library takes over: a
    closed, hanging or garbage peer is a TargetError within ``timeout_s`` (twice that when the
    peer asks for the v0 retry), not a library's retry loop."""
    from conformance.wire.requests import WireGarbage, WireRetry, api_versions, split_bootstrap

    try:
        host, port = split_bootstrap(bootstrap)
    except ValueError as exc:
        raise TargetError(str(exc)) from None
    try:
        api_versions(host, port, timeout_s)
    except (WireRetry, WireGarbage) as exc:
        raise TargetError(f"{bootstrap}: no Kafka broker answers there ({exc})") from None


def read_log(bootstrap: str, timeout_s: float = 30.0) -> Iterator[CoordinatorRecord | tuple[int, str]]:
    """Every record of `__consumer_offsets` (decoded), or (offset, reason) for one that does not decode."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    reader = Consumer(_conf(bootstrap, **{"group.id": "groupcheck-coordlog-reader", "enable.auto.commit": False,
                                          "enable.partition.eof": True}))  # fmt: skip
    try:
        meta = reader.list_topics(OFFSETS_TOPIC, timeout=timeout_s)
        parts = sorted(meta.topics[OFFSETS_TOPIC].partitions) if OFFSETS_TOPIC in meta.topics else []
        if not parts:
            raise TargetError(f"{bootstrap}: {OFFSETS_TOPIC} has no partitions (no group ever ran?)")
        ends = {
            p: reader.get_watermark_offsets(TopicPartition(OFFSETS_TOPIC, p), timeout=timeout_s)[1]
            for p in parts
        }
        todo = {p for p in parts if ends[p] > 0}
        reader.assign([TopicPartition(OFFSETS_TOPIC, p, OFFSET_BEGINNING) for p in parts])
        deadline = time.monotonic() + timeout_s
        while todo:
            if time.monotonic() > deadline:
                raise TargetError(
                    f"{bootstrap}: reading {OFFSETS_TOPIC} did not finish within {timeout_s:.0f} s"
                )
            msg = reader.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == -191:  # _PARTITION_EOF
                    todo.discard(msg.partition())
                    continue
                raise TargetError(f"{bootstrap}: {msg.error()}")
            if msg.offset() >= ends[msg.partition()] - 1:
                todo.discard(msg.partition())
            key = msg.key()
            if key is None:
                yield (msg.offset(), "record without a key")
                continue
            try:
                yield decode_record(msg.offset(), msg.timestamp()[1], key, msg.value())
            except RecordDecodeError as exc:
                yield (msg.offset(), str(exc))
    finally:
        reader.close()
