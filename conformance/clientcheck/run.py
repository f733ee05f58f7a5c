"""One adversarial run of a real client library against the served model (docs/clients.md).

Two consumers of the library join one group on a served coordinator (`conformance.serve`) whose
adversary, under the seed, loses and delays answers, fences members, forces rebalances, bumps
epochs and fails over (docs/serve.md); besides those draws the run forces one rebalance, one fence
and one failover at fixed points, in an order drawn from the seed, so every run meets each. Each
consumer is told to commit what it holds once a second. Then both leave, and the log of their
requests is judged (`conformance.clientcheck.invariants`). Every wait has a deadline.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.clientcheck.invariants import Judgement, judge
from conformance.clientcheck.observe import Recorder
from conformance.clients.consumers import ClientSpec, Consumer, provision
from conformance.serve.adversary import parse_kinds
from conformance.serve.server import ServeConfig, Server
from conformance.serve.trace import Trace

TOPICS = {"t": 4}
GROUP = "g"
JOIN_TIMEOUT_S = 60.0
SETTLE_S = 20.0
FORCED = ("rebalance", "fence", "failover")


@dataclass
class RunConfig:
    client: ClientSpec
    protocol: str = "classic"  # or "consumer" (KIP-848)
    assignor: str = "range"  # classic only: the JoinGroup protocol the consumers offer
    seed: int = 0
    seconds: float = 30.0  # the adversarial phase
    adversary: str = "all"
    members: int = 2

    def to_json(self) -> dict[str, Any]:
        return {
            "client": self.client.spec, "protocol": self.protocol, "assignor": self.assignor, "seed": self.seed,
            "seconds": self.seconds, "adversary": self.adversary, "members": self.members, "topics": TOPICS,
        }  # fmt: skip


@dataclass
class RunResult:
    config: RunConfig
    judgement: Judgement
    log: list[dict[str, Any]]
    events: dict[str, list[dict[str, Any]]]
    forced: list[str]
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def verdict(self) -> str:
        if self.judgement.findings:
            return "FAILED"
        return "INCONCLUSIVE" if self.notes else "PASSED"


def run(config: RunConfig, run_dir: Path) -> RunResult:
    command = provision(config.client)
    run_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    serve = ServeConfig(
        topics=dict(TOPICS), seed=config.seed, adversary=parse_kinds(config.adversary),
        initial_rebalance_delay_ms=0, heartbeat_interval_ms=500, phantom_stay_ms=4_000,
    )  # fmt: skip
    recorder = Recorder()
    server = Server(serve, Trace(run_dir / "serve-trace.ndjson"))
    server.observer = recorder
    server.start()
    rng = random.Random(config.seed)
    forced = list(FORCED)
    rng.shuffle(forced)
    consumers: list[Consumer] = []
    notes: list[str] = []
    try:
        for i in range(1, config.members + 1):
            consumers.append(
                Consumer(
                    command,
                    f"c{i}",
                    run_dir / f"c{i}.log",
                    bootstrap=f"127.0.0.1:{server.address[1]}",
                    group=GROUP,
                    topic="t",
                    protocol=config.protocol,
                    assignor=config.assignor,
                    client_id=f"c{i}",
                    seconds=str(config.seconds + JOIN_TIMEOUT_S + 2 * SETTLE_S),
                )  # fmt: skip
            )
        for c in consumers:
            if c.wait_for("assigned", JOIN_TIMEOUT_S) is None:
                notes.append(f"{c.name} had no assignment within {JOIN_TIMEOUT_S:g} s")
        _adversarial_phase(server, consumers, forced, config.seconds)
        for c in consumers:
            code = c.stop(SETTLE_S)
            if code != 0:
                notes.append(f"{c.name} exited with {code} (log {run_dir / (c.name + '.log')})")
        time.sleep(0.5)
    finally:
        for c in consumers:
            c.stop(1.0)
        server.stop()
    if server.error is not None:
        raise RuntimeError(f"the served coordinator failed: {server.error!r}")
    events = {c.name: c.events for c in consumers}
    for c in consumers:
        if not any(e["event"] == "committed" and e.get("ok") and e.get("partitions") for e in c.events):
            notes.append(f"{c.name} never committed an offset it held")
    if recorder.truncated:
        notes.append("the request log reached its bound")
    result = RunResult(config, judge(recorder.log, TOPICS), recorder.log, events, forced, notes)
    result.seconds = time.monotonic() - t0
    save(result, run_dir)
    return result


def _adversarial_phase(server: Server, consumers: list[Consumer], forced: list[str], seconds: float) -> None:
    start = time.monotonic()
    at = [start + seconds * (i + 1) / (len(forced) + 1) for i in range(len(forced))]
    pending = list(zip(at, forced, strict=True))
    offset = 0
    next_commit = start
    while time.monotonic() < start + seconds:
        now = time.monotonic()
        if pending and now >= pending[0][0]:
            server.force(pending.pop(0)[1], GROUP)
        if now >= next_commit:
            offset += 1
            for c in consumers:
                c.send(f"commit {offset}")
            next_commit = now + 1.0
        for c in consumers:
            c.drain()
        time.sleep(0.05)


def save(result: RunResult, run_dir: Path) -> None:
    """log.ndjson (what `--replay` judges again), result.json, events.json."""
    with (run_dir / "log.ndjson").open("w", encoding="utf-8") as out:
        out.write(
            json.dumps({"groupcheck_client_log": 1, "config": result.config.to_json()}, sort_keys=True) + "\n"
        )
        for entry in result.log:
            out.write(json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n")
    summary = {
        "config": result.config.to_json(), "verdict": result.verdict, "forced": result.forced,
        "notes": result.notes, "findings": result.judgement.findings,
        "exercised": dict(sorted(result.judgement.exercised.items())), "seconds": round(result.seconds, 1),
    }  # fmt: skip
    (run_dir / "result.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    (run_dir / "events.json").write_text(json.dumps(result.events, indent=1, sort_keys=True) + "\n")
