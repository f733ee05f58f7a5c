"""`groupcheck check --client librdkafka|kgo|java[:VERSION]` (docs/clients.md, "Real consumers").

Runs the client library against the served model under the seed, once per protocol asked
(``--protocol classic|consumer|all``), judges the client-side invariants on its requests and
saves the run (``log.ndjson``, ``result.json``, the serve trace, each consumer's events and log).
``--replay LOG`` judges a saved log again. Exit 0 pass, 1 an invariant violated, 2 tool error,
3 inconclusive (a consumer never got an assignment or never committed, or it crashed).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from conformance.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_VIOLATION, UsageError

ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
MAX_LOG_LINES = 200_001
MAX_LINE = 1 << 20
KINDS = {"request": ("api", "client", "ref"), "response": ("api", "client", "ref"), "action": ("action",)}


def add_arguments(c: Any) -> None:
    """The options `check` takes for real clients (beside --protocol, --seed, --report-dir)."""
    c.add_argument(
        "--client", help="librdkafka | kgo | java[:VERSION]: run a real consumer on the served model"
    )
    c.add_argument("--assignor", default="range", choices=ASSIGNORS, help="--client, classic: the assignor")
    c.add_argument("--duration", type=float, default=30.0, help="--client: seconds of adversarial running")
    c.add_argument(
        "--replay", type=Path, help="--client: judge a saved log.ndjson (or every run in a folder) again"
    )


def cmd_check_client(args: argparse.Namespace) -> int:
    from conformance.clients.consumers import parse_client

    client = parse_client(args.client)
    if args.replay is not None:
        return replay(args.replay)
    if args.protocol not in ("classic", "consumer", "all"):
        raise UsageError("--client: --protocol classic, consumer or all")
    if not 5 <= args.duration <= 600:
        raise UsageError("--duration must be between 5 and 600 seconds")
    from conformance.clientcheck.run import RunConfig, run

    protocols = ("classic", "consumer") if args.protocol == "all" else (args.protocol,)
    codes = []
    for protocol in protocols:
        assignor = args.assignor if protocol == "classic" else "range"
        config = RunConfig(client, protocol, assignor, args.seed, args.duration)
        name = f"{client.kind}-{client.version}-{protocol}" + (
            f"-{assignor}" if protocol == "classic" else ""
        )
        run_dir = (args.report_dir or Path("reports") / "runs") / f"client-{name}-seed{args.seed}"
        result = run(config, run_dir)
        shown = f"{client.spec} {protocol}" + (f" ({assignor})" if protocol == "classic" else "")
        judged = sum(result.judgement.exercised.values())
        print(
            f"{shown}, seed {args.seed}: {result.verdict} ({judged} checks, forced {', '.join(result.forced)}, {result.seconds:.1f} s)"
        )
        print_findings(result.judgement.findings)
        for note in result.notes:
            print(f"  inconclusive: {note}")
        print(f"run: {run_dir}")
        if result.judgement.findings:
            print(f"Replay with: groupcheck check --client {client.spec} --replay {run_dir / 'log.ndjson'}")
        codes.append(
            {"FAILED": EXIT_VIOLATION, "INCONCLUSIVE": EXIT_INCONCLUSIVE}.get(result.verdict, EXIT_OK)
        )
    return EXIT_VIOLATION if EXIT_VIOLATION in codes else max(codes)


def print_findings(findings: list[dict[str, Any]], limit: int = 20) -> None:
    for f in findings[:limit]:
        print(f"  {f['invariant']} (log entry {f['seq']}): {f['message']}")
    if len(findings) > limit:
        print(f"  ... {len(findings) - limit} more in result.json")


def replay(path: Path) -> int:
    """Judge a saved log again; the same findings come back (judging is a pure function of the log).
    A folder: every run's log below it, as a Markdown verdict table (conformance/clientcheck/report.py)."""
    from conformance.clientcheck.invariants import judge

    if path.is_dir():
        from conformance.clientcheck.report import table

        text, failed = table(path, load_log)
        print(text, end="")
        return EXIT_VIOLATION if failed else EXIT_OK
    header, log = load_log(path)
    topics = header["config"]["topics"]
    judgement = judge(log, topics)
    verdict = "FAILED" if judgement.findings else "PASSED"
    print(f"{path}: {verdict} ({len(log)} log entries, {sum(judgement.exercised.values())} checks)")
    print_findings(judgement.findings)
    return EXIT_VIOLATION if judgement.findings else EXIT_OK


def load_log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A saved log, read strictly: bad input names the file, line and field (exit 2)."""
    try:
        handle = path.open("rb")
    except OSError as e:
        raise UsageError(f"{path}: cannot read ({e.strerror})") from e
    header: dict[str, Any] | None = None
    log: list[dict[str, Any]] = []
    with handle:
        for number, raw in enumerate(handle, start=1):
            if number > MAX_LOG_LINES or len(raw) > MAX_LINE:
                raise UsageError(
                    f"{path}:{number}: log over its bounds ({MAX_LOG_LINES} lines of {MAX_LINE} bytes)"
                )
            try:
                item = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as e:
                raise UsageError(f"{path}:{number}: not JSON ({e})") from e
            if not isinstance(item, dict):
                raise UsageError(f"{path}:{number}: not a JSON object")
            if header is None:
                topics = (
                    item.get("config", {}).get("topics") if isinstance(item.get("config"), dict) else None
                )
                if item.get("groupcheck_client_log") != 1 or not _topics_ok(topics):
                    raise UsageError(
                        f"{path}:1: field groupcheck_client_log/config.topics: not a client log header"
                    )
                header = item
                continue
            _check_entry(item, path, number)
            log.append(item)
    if header is None:
        raise UsageError(f"{path}: empty")
    return header, log


def _topics_ok(topics: Any) -> bool:
    return isinstance(topics, dict) and all(
        isinstance(k, str) and isinstance(v, int) and 0 < v <= 10_000 for k, v in topics.items()
    )


def _check_entry(item: dict[str, Any], path: Path, number: int) -> None:
    kind = item.get("kind")
    if kind not in KINDS or not isinstance(item.get("seq"), int):
        raise UsageError(f"{path}:{number}: field kind/seq: expected request, response or action with a seq")
    for name in KINDS[kind]:
        if name not in item:
            raise UsageError(f"{path}:{number}: field {name}: missing")
    wanted: dict[str, type | tuple[type, ...]] = {
        "epoch": int,
        "member": str,
        "owned": (list, type(None)),
        "partitions": list,
        "error": int,
    }
    for name, types in wanted.items():
        if name in item and not isinstance(item[name], types):
            raise UsageError(f"{path}:{number}: field {name}: wrong type")
    for name in ("owned", "partitions", "assigned", "assignment"):
        value = item.get(name)
        if isinstance(value, list) and not all(
            isinstance(x, str) and ":" in x and x.rpartition(":")[2].isdigit() for x in value
        ):
            raise UsageError(f"{path}:{number}: field {name}: expected topic:partition strings")
