"""A librdkafka consumer (confluent-kafka) speaking the real-consumer line protocol (docs/clients.md).

Run as ``python -m conformance.clients.rdkafka_consumer --bootstrap H:P --group G --topic T
--protocol classic|consumer [--assignor NAME] --client-id ID --seconds S``: commands ``commit
OFFSET`` and ``leave`` on stdin, events (``ready``, ``assigned``, ``revoked``, ``lost``,
``committed``, ``left``) as JSON lines on stdout, the same as the Java and franz-go harnesses, so
all three run as child processes the same way. It leaves when stdin closes or after S seconds.
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import threading
import time
from typing import Any

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
MAX_LINE = 4096


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}, sort_keys=True), flush=True)


def names(parts: Any) -> list[str]:
    return sorted(f"{p.topic}:{p.partition}" for p in parts)


def _read_commands(commands: queue.Queue[str]) -> None:
    for line in sys.stdin:
        if len(line) <= MAX_LINE:
            commands.put(line.strip())
    commands.put("leave")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="rdkafka_consumer")
    for name in ("bootstrap", "group", "topic", "client-id"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--protocol", choices=("classic", "consumer"), required=True)
    p.add_argument("--assignor", choices=ASSIGNORS, default="range")
    p.add_argument("--seconds", type=float, required=True)
    args = p.parse_args(argv)
    if not 0 < args.seconds <= 600:
        p.error("--seconds must be in (0, 600]")
    import confluent_kafka as ck

    conf: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "group.protocol": args.protocol,
        "client.id": args.client_id,
        "enable.auto.commit": False,
        "log_level": 3,
        "socket.timeout.ms": 10_000,
        "reconnect.backoff.max.ms": 1_000,
    }
    if args.protocol == "classic":
        conf |= {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
        conf["partition.assignment.strategy"] = args.assignor
    consumer = ck.Consumer(conf)
    # confluent-kafka applies the (incremental) assignment itself when a callback does not
    consumer.subscribe(
        [args.topic],
        on_assign=lambda _c, parts: emit("assigned", partitions=names(parts)),
        on_revoke=lambda _c, parts: emit("revoked", partitions=names(parts)),
        on_lost=lambda _c, parts: emit("lost", partitions=names(parts)),
    )
    commands: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_read_commands, args=(commands,), daemon=True).start()
    emit("ready", library="librdkafka", version=ck.libversion()[0])
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        consumer.poll(0.1)
        try:
            command = commands.get_nowait()
        except queue.Empty:
            continue
        if command == "leave":
            break
        if command.startswith("commit "):
            commit(consumer, ck, int(command[7:]))
    consumer.close()
    emit("left", ok=True)
    return 0


def commit(consumer: Any, ck: Any, offset: int) -> None:
    held = consumer.assignment()
    parts = [ck.TopicPartition(p.topic, p.partition, offset) for p in held]
    if not parts:
        emit("committed", ok=True, partitions=[])
        return
    try:
        consumer.commit(offsets=parts, asynchronous=False)
        emit("committed", ok=True, partitions=names(parts))
    except ck.KafkaException as e:
        emit("committed", ok=False, partitions=names(parts), error=str(e.args[0].name()))


if __name__ == "__main__":
    sys.exit(main())
