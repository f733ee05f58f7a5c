"""Run librdkafka's mock cluster in its own process (started by the librdkafka-mock launcher).

Loads the librdkafka shared library bundled in the confluent-kafka wheel with ctypes (the
``confluent_kafka`` package itself is not imported), creates a mock cluster, applies the group
settings, creates the topics given on the command line, prints the bootstrap list on stdout and
serves until stdin closes (or, with ``--wait signal``, until SIGTERM/SIGINT).

Standalone on purpose: it runs with the venv's interpreter and only the standard library.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import signal
import sys
import threading
from pathlib import Path

RD_KAFKA_PRODUCER = 0


def find_library() -> Path:
    spec = importlib.util.find_spec("confluent_kafka")
    if spec is None or spec.origin is None:
        raise SystemExit("librdkafka-mock: the confluent-kafka package is not installed")
    libs = Path(spec.origin).resolve().parent.parent / "confluent_kafka.libs"
    found = sorted(libs.glob("librdkafka*.so*"))
    if not found:
        raise SystemExit(f"librdkafka-mock: no librdkafka*.so* in {libs}")
    return found[0]


def load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    vp, cp, ci = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    sigs: dict[str, tuple[list[object], object]] = {
        "rd_kafka_version_str": ([], cp),
        "rd_kafka_conf_new": ([], vp),
        "rd_kafka_conf_set": ([vp, cp, cp, cp, ctypes.c_size_t], ci),
        "rd_kafka_new": ([ci, vp, cp, ctypes.c_size_t], vp),
        "rd_kafka_destroy": ([vp], None),
        "rd_kafka_mock_cluster_new": ([vp, ci], vp),
        "rd_kafka_mock_cluster_destroy": ([vp], None),
        "rd_kafka_mock_cluster_bootstraps": ([vp], cp),
        "rd_kafka_mock_topic_create": ([vp, cp, ci, ci], ci),
        "rd_kafka_mock_group_initial_rebalance_delay_ms": ([vp, ctypes.c_int32], None),
        "rd_kafka_mock_set_group_consumer_session_timeout_ms": ([vp, ci], None),
        "rd_kafka_mock_set_group_consumer_heartbeat_interval_ms": ([vp, ci], None),
        "rd_kafka_err2str": ([ci], cp),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = res
    return lib


def topic_arg(text: str) -> tuple[str, int]:
    name, _, parts = text.partition(":")
    if not name:
        raise argparse.ArgumentTypeError(f"empty topic name in {text!r}")
    n = int(parts) if parts else 1
    if n < 1:
        raise argparse.ArgumentTypeError(f"bad partition count in {text!r}")
    return name, n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", type=int, default=1)
    ap.add_argument("--topic", type=topic_arg, action="append", default=[], help="NAME[:PARTITIONS]")
    ap.add_argument("--initial-rebalance-delay-ms", type=int, default=0)
    ap.add_argument("--consumer-session-timeout-ms", type=int, default=6000)
    ap.add_argument("--consumer-heartbeat-interval-ms", type=int, default=500)
    ap.add_argument("--wait", choices=("stdin", "signal"), default="stdin")
    ap.add_argument("--version", action="store_true", help="print librdkafka's version and exit")
    args = ap.parse_args(argv)

    lib = load(find_library())
    if args.version:
        print(lib.rd_kafka_version_str().decode())
        return 0

    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    for key, value in (("client.id", "groupcheck-mock"), ("log_level", "4")):
        if lib.rd_kafka_conf_set(conf, key.encode(), value.encode(), errstr, len(errstr)) != 0:
            print(f"librdkafka-mock: conf {key}: {errstr.value.decode()}", file=sys.stderr)
            return 2
    rk = lib.rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, len(errstr))
    if not rk:
        print(f"librdkafka-mock: rd_kafka_new: {errstr.value.decode()}", file=sys.stderr)
        return 2
    mcluster = lib.rd_kafka_mock_cluster_new(rk, args.brokers)
    if not mcluster:
        print("librdkafka-mock: rd_kafka_mock_cluster_new failed", file=sys.stderr)
        return 2
    lib.rd_kafka_mock_group_initial_rebalance_delay_ms(mcluster, args.initial_rebalance_delay_ms)
    lib.rd_kafka_mock_set_group_consumer_session_timeout_ms(mcluster, args.consumer_session_timeout_ms)
    lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(mcluster, args.consumer_heartbeat_interval_ms)
    for name, partitions in args.topic:
        err = lib.rd_kafka_mock_topic_create(mcluster, name.encode(), partitions, 1)
        if err != 0:
            print(f"librdkafka-mock: topic {name}: {lib.rd_kafka_err2str(err).decode()}", file=sys.stderr)
            return 2

    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.wait == "stdin":

        def watch_stdin() -> None:
            while sys.stdin.buffer.read(4096):
                pass
            stop.set()

        threading.Thread(target=watch_stdin, daemon=True).start()

    sys.stdout.write(lib.rd_kafka_mock_cluster_bootstraps(mcluster).decode() + "\n")
    sys.stdout.flush()
    while not stop.wait(0.5):
        pass
    lib.rd_kafka_mock_cluster_destroy(mcluster)
    lib.rd_kafka_destroy(rk)
    return 0


if __name__ == "__main__":
    sys.exit(main())
