"""Probe: what a coordinator does with a late duplicate of an epoch-0 ConsumerGroupHeartbeat.

The consumer swarm (docs/pipeline.md) found `consumer.no_double_client_assignment` after the
fault injector re-delivered a client's epoch-0 join (owned partitions: none) while that member
already held partitions. This probe replays the two shapes of that situation against a real
coordinator through the consumer oracle (`conformance.protocols.consumer.oracle`: every request goes
to the target and to the model, divergences are findings):

1. *previous epoch 0*: c1 joins (epoch 0 -> E, previous epoch 0), stalls; c2 joins (group epoch
   bumps, c1 must give up a partition); c1's join arrives again. GMM
   `throwIfConsumerGroupMemberEpochIsInvalid` accepts it as the previous epoch with owned ⊆
   assigned (docs/protocol-reference.md#b6 row 12), and CurrentAssignmentBuilder skips the revocation because
   the request owns nothing (docs/protocol-reference.md#b5 next(e, A) step 1), so the partition is freed for c2 while the
   real c1 still holds it. c1's next real heartbeat (previous epoch, owning the freed partition)
   is fenced.
2. *later epoch*: c1 has moved on (previous epoch > 0) and an epoch-0 join for its member id
   arrives. Kafka 4.0 fences it (FENCED_MEMBER_EPOCH, the model's rule); KAFKA-19233
   (apache/kafka PR #21305, merged 2026-01-14) lets any epoch-0 heartbeat of an existing member
   rejoin, so a newer broker accepts it: the oracle reports that as a divergence from the model.
3. *a late incremental copy after the target moved* (the thorough profile's seed-0
   `consumer.eventual_convergence` finding, reports/findings/stale-heartbeat-copy.md): c2 is
   told its partition and has not yet acknowledged it; c1 leaves, so c2's target grows; a late
   copy of c2's last heartbeat moves its member to the new epoch with the grown assignment, in an
   answer nobody reads. c2's acknowledgement (previous epoch, owning a subset of the assignment)
   is accepted, and as neither is it a full request nor did the member's assignment change on it,
   the answer carries no assignment (GMM ``isFullRequest || hasAssignedPartitionsChanged``): the
   client never learns of the freed partition.

    python -m conformance.pipeline.probe_duplicate --target apache-kafka [--out FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def _summary(obs: Any, name: str) -> dict[str, Any]:
    resp = next((d.response for d in obs.deliveries), None) if obs is not None else None
    client = next((c for c in obs.after.clients if c.name == name), None) if obs is not None else None
    out: dict[str, Any] = {
        "error": None if resp is None else str(getattr(resp.error_code, "name", resp.error_code))
    }
    if resp is not None:
        out["member_epoch"] = resp.member_epoch
        out["assignment"] = None if resp.assignment is None else sorted(
            f"{t.topic}-{p}" for t in resp.assignment for p in t.partitions
        )  # fmt: skip
    if client is not None:
        out["client_epoch"] = client.member_epoch
        out["client_owns"] = sorted(f"{t}-{p}" for t, p in client.owned)
    return out


def _new_sim(handle: Any, topic: str) -> tuple[Any, int]:
    from conformance.engine.profiles import PROFILES
    from conformance.protocols import get_kit
    from conformance.protocols.consumer.build import make_consumer_sim
    from conformance.protocols.consumer.realtime import RealTimeConsumerSim

    port_factory, config, _profile = get_kit("consumer").require("real_setup")(handle, PROFILES["ci"])
    clients = [{"name": "c1", "topics": [topic]}, {"name": "c2", "topics": [topic]}]
    sim = make_consumer_sim(
        {topic: 2}, clients, config, {"heartbeat_version": "1"},
        port_factory=port_factory, sim_class=RealTimeConsumerSim,
    )  # fmt: skip
    return sim, int(config.get("heartbeat_interval_ms", 5000)) + 100


def stale_copy(sim: Any, wait_ms: int) -> list[dict[str, Any]]:
    """Shape 3 on a fresh ``sim`` (clients c1 and c2 on a 2-partition topic; the model or a target)."""
    steps: list[dict[str, Any]] = []

    def note(what: str, obs: Any, name: str) -> None:
        row = {"step": what, **_summary(obs, name)}
        findings = getattr(sim.port, "take_findings", list)()  # the model's port has no oracle
        row["findings"] = [f"{f.level} {f.rule}: {f.message}" for f in findings]
        steps.append(row)

    def beat(name: str) -> Any:
        sim.advance(wait_ms)
        return sim.client_step(name)

    note("3. c1 joins (epoch 0)", sim.client_step("c1"), "c1")
    note("3. c1 acknowledges", sim.client_step("c1"), "c1")
    note("3. c2 joins (c1 must give up a partition)", sim.client_step("c2"), "c2")
    note("3. c1 heartbeats: told to revoke", beat("c1"), "c1")
    note("3. c1 acknowledges the revocation", sim.client_step("c1"), "c1")
    note("3. c2 heartbeats: told its partition", beat("c2"), "c2")
    sim.stall("c2", True)  # c2 has taken its partition; its acknowledgement waits
    note("3. c1 leaves (c2's target grows)", sim.leave("c1"), "c1")
    note("3. a late copy of c2's last heartbeat", sim.duplicate("c2"), "c2")
    sim.stall("c2", False)
    note("3. c2 acknowledges (previous epoch, owns a subset)", sim.client_step("c2"), "c2")
    for k in range(3):
        note(f"3. c2 heartbeats ({k + 1})", beat("c2"), "c2")
    return steps


def probe(target: str) -> dict[str, Any]:
    from conformance.engine.profiles import PROFILES
    from conformance.protocols import get_kit
    from conformance.protocols.consumer.build import make_consumer_sim
    from conformance.protocols.consumer.realtime import RealTimeConsumerSim
    from conformance.targets.open import open_target

    kit = get_kit("consumer")
    steps: list[dict[str, Any]] = []
    with open_target(target) as handle:
        port_factory, config, _profile = kit.require("real_setup")(handle, PROFILES["ci"])
        clients = [{"name": "c1", "topics": ["t"]}, {"name": "c2", "topics": ["t"]}]
        sim = make_consumer_sim(
            {"t": 2}, clients, config, {"heartbeat_version": "1"},
            port_factory=port_factory, sim_class=RealTimeConsumerSim,
        )  # fmt: skip

        wait_ms = int(config.get("heartbeat_interval_ms", 5000)) + 100
        steps.append({"step": f"set-up: {config}", "findings": []})

        def beat(name: str) -> Any:
            """The client's next heartbeat, once its interval has passed (real time)."""
            sim.advance(wait_ms)
            return sim.client_step(name)

        def note(what: str, obs: Any, name: str) -> None:
            row = {"step": what, **_summary(obs, name)}
            row["findings"] = [f"{f.level} {f.rule}: {f.message}" for f in sim.port.take_findings()]
            steps.append(row)

        note("1. c1 joins (epoch 0)", sim.client_step("c1"), "c1")
        note("1. c1 acknowledges", sim.client_step("c1"), "c1")
        sim.stall("c1", True)
        # c1's last request is its acknowledgement: its join is re-sent field by field, as the
        # swarm's `duplicate` fault re-delivered it
        note("1. c2 joins (group epoch bumps)", sim.client_step("c2"), "c2")
        member = sim.clients["c1"].member_id
        note(
            "1. a late copy of c1's epoch-0 join (owns nothing)",
            sim.heartbeat_as(member, 0, owned=[], topics=["t"]),
            "c1",
        )
        note("1. c2 heartbeats", beat("c2"), "c2")
        sim.stall("c1", False)
        note("1. c1 resumes: its next heartbeat", beat("c1"), "c1")
        note("1. c1 rejoins", beat("c1"), "c1")
        note("1. c1 heartbeats", beat("c1"), "c1")
        note("2. c2 heartbeats", beat("c2"), "c2")
        member = sim.clients["c1"].member_id
        epoch_before = sim.clients["c1"].member_epoch
        note(
            f"2. an epoch-0 join for c1's member id (c1 at epoch {epoch_before})",
            sim.heartbeat_as(member, 0, owned=[], topics=["t"]),
            "c1",
        )
        steps += stale_copy(*_new_sim(handle, "t3"))
        version = handle.version
    return {"target": target, "version": version, "steps": steps}


def render(result: dict[str, Any]) -> str:
    lines = [
        f"# Late duplicates of a ConsumerGroupHeartbeat on {result['target']} {result['version']}",
        "",
        "Command: `python -m conformance.pipeline.probe_duplicate --target " + result["target"] + "`",
        "",
        "| step | error | response epoch | response assignment | client epoch | client owns | oracle findings |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in result["steps"]:
        lines.append(
            f"| {s['step']} | {s.get('error')} | {s.get('member_epoch', '-')} | "
            f"{', '.join(s.get('assignment') or []) or '-'} | {s.get('client_epoch', '-')} | "
            f"{', '.join(s.get('client_owns') or []) or '-'} | {'; '.join(s['findings']) or 'none'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="probe_duplicate")
    ap.add_argument("--target", default="apache-kafka")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    result = probe(a.target)
    text = render(result)
    print(text)
    print(json.dumps(result, indent=2, default=str))
    if a.out:
        a.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
