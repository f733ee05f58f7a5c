"""Probe a real KIP-848 coordinator for the fixes of docs/bug-catalogue.md#row-6 and #row-7.

    python -m conformance.power.probe848 [--target apache-kafka] [--rule 4.0]

Two short scripted runs through the consumer oracle (`conformance.protocols.consumer.oracle`), the
same adapter layer `groupcheck check --target T --protocol consumer` uses; each prints the target's
answers and the oracle's findings (a finding = the target disagreed with the model):

* ``rejoin`` (row 7, KAFKA-19233 / apache/kafka PR #21305): once c1 has moved through two epochs
  (c2 joined, c1 revoked), a heartbeat with epoch 0, c1's member id and no partitions: the rejoin
  of a fenced c1 while the coordinator still holds it at the higher epoch (neither its epoch nor
  its previous one). Fixed: NONE; before: FENCED_MEMBER_EPOCH.
* ``batching`` (Kafka 4.2+ ``group.consumer.assignment.interval.ms``, KAFKA-20291): on a target that
  batches, a member joining within the interval gets the old target; under ``--rule 4.0`` the
  model computes the new target at once and the oracle reports the difference.
* ``give-back`` (row 6, KAFKA-19449 / PR #20781): c1 revokes t-1 for c2 slowly; c2 leaves; when c1
  acknowledges, the target gives t-1 back. Fixed: c1 gets both at once; before: t-0 only (waiting
  one more heartbeat for its own pending revocation).

``--rule 4.0`` runs the model with both fixes switched off: against a fixed target the oracle then
reports the disagreement, which shows the probe can tell the two rules apart. Exit 0 when the
target agreed with the model in every run, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from conformance.protocols import get_kit
from conformance.protocols.consumer.realtime import RealTimeConsumerSim
from model.consumer.world import HeartbeatEvent, heartbeat_response


def _answers(sim: Any) -> list[str]:
    out = []
    for entry in sim.log:
        obs = entry.obs
        if obs is None or not isinstance(obs.event, HeartbeatEvent):
            continue
        resp = heartbeat_response(obs)
        if resp is None:
            continue
        req = obs.event.request
        parts = sorted((t.topic, p) for t in (resp.assignment or ()) for p in t.partitions)
        assigned = "" if resp.assignment is None else f" assigned {parts}"
        out.append(
            f"{obs.event.client}: epoch {req.member_epoch} -> {resp.error_code.name} epoch {resp.member_epoch}{assigned}"
        )
    return out


def _rejoin(sim: Any) -> None:
    sim.settle(6000, 250)
    member_id = sim.client("c1").member_id
    sim.heartbeat_as(member_id, 0, owned=[], topics=["t"])  # c1 (fenced, partitions released) rejoins
    sim.advance(250)
    sim.client_step("c2")


def _give_back(sim: Any) -> None:
    sim.client_step("c1")
    sim.advance(600)
    sim.set_slow("c1", True)
    sim.client_step("c2")
    sim.advance(600)
    sim.client_step("c1")
    sim.leave("c2")
    sim.reconcile("c1")
    sim.client_step("c1")
    sim.advance(600)
    sim.client_step("c1")


def _batching(sim: Any) -> None:
    """c2 joins 100 ms after c1's first target: with batching (Kafka 4.2+) it waits, at the old
    assignment epoch with nothing, until a heartbeat after the assignment interval computes the
    next target."""
    sim.client_step("c1")
    sim.advance(100)
    sim.client_step("c2")
    sim.client_step("c1")
    sim.advance(1300)
    sim.client_step("c1")
    sim.client_step("c2")
    sim.advance(300)
    sim.client_step("c1")
    sim.client_step("c2")


PROBES = {"rejoin": _rejoin, "give-back": _give_back, "batching": _batching}


def run_probe(handle: Any, name: str, config_overrides: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the target's heartbeat answers, the oracle's findings) of one probe on an opened target."""
    from conformance.engine.profiles import get_profile
    from conformance.protocols.consumer.build import make_consumer_sim

    port_factory, config, _ = get_kit("consumer").require("real_setup")(handle, get_profile("ci"))
    config = {**config, **config_overrides}
    sim = make_consumer_sim(
        {"t": 2},
        [{"name": "c1", "topics": ["t"]}, {"name": "c2", "topics": ["t"]}],
        config,
        {},
        port_factory=port_factory,
        sim_class=RealTimeConsumerSim,
    )
    PROBES[name](sim)
    findings = [f"{f.rule}: {f.message}" for f in sim.port.take_findings()]
    return _answers(sim), findings


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.power.probe848")
    p.add_argument("--target", default="apache-kafka")
    p.add_argument("--probe", action="append", choices=sorted(PROBES), default=[])
    p.add_argument(
        "--rule", choices=["fixed", "4.0"], default="fixed", help="the model's rule (default: fixed)"
    )
    args = p.parse_args(argv)
    from conformance.targets.open import open_target

    overrides = (
        {}
        if args.rule == "fixed"
        else {"own_pending_is_free": False, "epoch_zero_rejoin": False, "assignment_interval_ms": 0}
    )
    agreed = True
    with open_target(args.target) as handle:
        print(f"target {handle.name} {handle.version}; model rule {args.rule}")
        for name in args.probe or sorted(PROBES):
            answers, findings = run_probe(handle, name, overrides)
            print(f"== {name}")
            for line in answers[-8:]:  # the settle's steady heartbeats before them are left out
                print(f"   {line}")
            for line in findings:
                print(f"   FINDING {line}")
            print(f"   {'agrees with the model' if not findings else 'DISAGREES with the model'}")
            agreed = agreed and not findings
    return 0 if agreed else 1


if __name__ == "__main__":
    sys.exit(main())
