"""`groupcheck serve`: parse the options, run the served coordinator for a while (docs/serve.md)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from conformance.errors import EXIT_OK, ToolError, UsageError

#: bounds on the configuration (hostile input)
MAX_TOPICS = 1000
MAX_PARTITIONS = 10_000


def add_parser(sub: Any) -> None:
    s = sub.add_parser("serve", help="serve the reference model as a Kafka group coordinator on 127.0.0.1")
    s.add_argument("--port", type=int, default=0, help="listen port (default: one the system picks)")
    s.add_argument("--topics", default="t:3", help="served topics as name:partitions,... (default t:3)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument(
        "--adversary", default="none", help="none | all | lose,delay,fence,rebalance,bump,failover"
    )
    s.add_argument("--trace", type=Path, help="write the NDJSON trace of every request and answer here")
    s.add_argument("--duration", type=float, default=3600.0, help="seconds to serve (default 3600)")
    s.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka group setting of the served coordinator (repeatable; docs/serve.md#settings)",
    )
    s.add_argument(
        "--mutant", help="serve this coordinator mutant instead of the reference model (docs/mutants.md)"
    )


def parse_topics(value: str) -> dict[str, int]:
    topics: dict[str, int] = {}
    for item in value.split(","):
        name, sep, count = item.strip().partition(":")
        if not name or not sep or not count.isdigit():
            raise UsageError(f"--topics: {item!r} is not name:partitions")
        partitions = int(count)
        if not 1 <= partitions <= MAX_PARTITIONS or len(name) > 249:
            raise UsageError(f"--topics: {item!r} out of range (1..{MAX_PARTITIONS} partitions)")
        topics[name] = partitions
    if len(topics) > MAX_TOPICS:
        raise UsageError(f"--topics: more than {MAX_TOPICS} topics")
    return topics


def cmd_serve(args: argparse.Namespace) -> int:
    from conformance.serve.adversary import parse_kinds
    from conformance.serve.server import ServeConfig, Server
    from conformance.serve.setup import coordinator_class, parse_settings
    from conformance.serve.trace import Trace

    topics = parse_topics(args.topics)
    try:
        kinds = parse_kinds(args.adversary)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} out of range")
    if not 0 < args.duration <= 7 * 86400:
        raise UsageError("--duration must be in (0, 604800] seconds")
    if len(args.config) > 100:
        raise UsageError("--config: more than 100 settings")
    settings = tuple(parse_settings(args.config).items())
    coordinator_class(args.mutant)  # an unknown or unservable mutant is a usage error before listening
    config = ServeConfig(
        topics=topics, port=args.port, seed=args.seed, adversary=kinds, settings=settings, mutant=args.mutant
    )
    try:
        trace = Trace(args.trace)
        server = Server(config, trace)
    except OSError as e:
        raise UsageError(f"serve: {e}") from None
    host, port = server.address
    served = f"mutant {args.mutant}" if args.mutant else "the reference model"
    print(
        f"serving on {host}:{port} ({served}, {len(topics)} topics, adversary {args.adversary}, seed {args.seed})"
    )
    sys.stdout.flush()
    started = time.monotonic()
    try:
        server.serve_for(args.duration)
    except KeyboardInterrupt:
        pass
    except Exception as e:  # an unexpected error is a tool error (exit 2), never a traceback
        raise ToolError(f"serve: unexpected {type(e).__name__}: {e}") from e
    finally:
        server.stop()
    print(
        f"served {time.monotonic() - started:.1f} s; {len(server.events)} adversary actions; {trace.seq} trace lines"
    )
    return EXIT_OK
