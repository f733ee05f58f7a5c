"""Requests a well-behaved consumer never sends (conformance/protocols/classic/machine_strays.py),
answered by the model as the stray-request promises require (model/classic/stray_invariants.py).

`drive_strays` is one fixed script of every kind: a commit with a generation before the group
exists, then, in a settled group of two static members and a dynamic one, every stray commit,
JoinGroup (as a new member and as a member), SyncGroup and LeaveGroup by instance id, and last, once
the dynamic member has left and an operator removed the static ones, a commit without identity. The same script runs on Apache Kafka with the
oracle beside it (tests/test_stray_requests_kafka.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.protocols.classic.build import make_classic_sim, settle_round
from conformance.protocols.classic.machine import make_machine
from conformance.protocols.classic.machine_strays import (
    STRAY_COMMITS,
    STRAY_JOINS,
    STRAY_SYNCS,
    StrayRules,
    commit_request,
    join_request,
    leave_request,
    sync_request,
)
from model.classic.client import Phase
from model.invariants import for_protocol, load_all

CLIENTS = [
    {"name": "c1", "instance_id": "i1"},
    {"name": "c2"},
    {"name": "c3", "instance_id": "i3"},
]


def stray_clients(session_ms: int, rebalance_ms: int) -> list[dict[str, Any]]:
    return [{**c, "session_timeout_ms": session_ms, "rebalance_timeout_ms": rebalance_ms} for c in CLIENTS]


def _settle(sim: Any, observe: Callable[[Any], None]) -> None:
    names = list(sim.clients)
    for _ in range(30):
        settle_round(sim, names, observe)
        if all(sim.clients[n].phase == Phase.STABLE for n in names):
            break


def drive_strays(sim: Any, observe: Callable[[Any], None]) -> dict[str, tuple[str, ...]]:
    """The script; per stray, the error names of the answers it got at once."""
    heard: dict[str, tuple[str, ...]] = {}

    def send(label: str, name: str, request: Any) -> None:
        obs = sim.send_raw(name, request)
        observe(obs)
        ref = obs.event.ref
        errors: list[str] = []
        for d in obs.deliveries:
            if d.ref != ref:
                continue
            r = d.response
            if hasattr(r, "partitions"):
                errors += [e.name for _t, _p, e in r.partitions]
            else:
                errors.append(r.error.name)
                errors += [m.error.name for m in getattr(r, "members", ())]
        heard[label] = tuple(errors)

    send("commit to an absent group", "c1", commit_request(sim, "c1", "stale-generation", 1))
    _settle(sim, observe)
    for kind in STRAY_COMMITS:
        send(f"commit {kind}", "c1", commit_request(sim, "c1", kind, 1))
    for kind in STRAY_JOINS:
        for as_member in (False, True):
            send(
                f"join {kind}{' as member' if as_member else ''}",
                "c2",
                join_request(sim, "c2", kind, as_member),
            )
    for kind in STRAY_SYNCS:
        send(f"sync {kind}", "c1", sync_request(sim, "c1", kind))
    send("leave an instance nobody holds", "c3", leave_request(sim, "c3", False))
    send("leave instance i3", "c3", leave_request(sim, "c3", True))
    _settle(sim, observe)
    for _ in range(20):  # the dynamic member leaves; an operator removes the static ones
        if sim.leave("c2") is not None:
            break
        settle_round(sim, ["c2"], observe)
    for name in ("c1", "c3"):
        send(f"remove {name}", name, leave_request(sim, name, True))
    send("commit no-identity to an empty group", "c1", commit_request(sim, "c1", "no-identity"))
    return heard


#: what the script's answers must be on the model (and, by tests/test_stray_requests_kafka.py, on
#: Apache Kafka): the refusals the promises require, and the two strays a broker must accept
EXPECTED = {
    "commit to an absent group": ("ILLEGAL_GENERATION",),
    "commit stale-generation": ("ILLEGAL_GENERATION",),
    "commit ghost-member": ("UNKNOWN_MEMBER_ID",),
    "commit no-identity": ("UNKNOWN_MEMBER_ID",),
    "commit unknown-partition": ("UNKNOWN_TOPIC_OR_PARTITION",),
    "commit unknown-topic": ("UNKNOWN_TOPIC_OR_PARTITION",),
    "commit oversized-metadata": ("OFFSET_METADATA_TOO_LARGE",),
    **{
        f"join {kind}{suffix}": (error,)
        for kind, error in (
            ("empty-group-id", "INVALID_GROUP_ID"),
            ("session-below-minimum", "INVALID_SESSION_TIMEOUT"),
            ("session-above-maximum", "INVALID_SESSION_TIMEOUT"),
            ("other-protocol-type", "INCONSISTENT_GROUP_PROTOCOL"),
            ("unshared-protocols", "INCONSISTENT_GROUP_PROTOCOL"),
        )
        for suffix in ("", " as member")
    },
    "sync other-protocol-type": ("INCONSISTENT_GROUP_PROTOCOL",),
    "sync other-protocol-name": ("INCONSISTENT_GROUP_PROTOCOL",),
    "leave an instance nobody holds": ("NONE", "UNKNOWN_MEMBER_ID"),
    "leave instance i3": ("NONE", "NONE"),
    "remove c1": ("NONE", "NONE"),
    "remove c3": ("NONE", "NONE"),
    "commit no-identity to an empty group": ("NONE",),
}


def test_the_model_answers_every_stray_as_the_promises_require() -> None:
    load_all()
    checks = for_protocol("classic", ("safety", "transition", "liveness"))
    sim = make_classic_sim({"t": 2}, stray_clients(10_000, 15_000), {}, {})
    broken: list[str] = []
    judged: set[str] = set()

    def observe(obs: Any) -> None:
        for inv in checks:
            found = list(inv.check(obs))
            broken.extend(f"{inv.id}: {m}" for m in found)
            judged.add(inv.id)

    heard = drive_strays(sim, observe)
    assert broken == []
    assert heard == EXPECTED
    assert "classic.commit_needs_membership" in judged


def test_stray_rules_are_drawn_on_the_model_only() -> None:
    from conformance.engine.machine import MachineSettings

    model = make_machine(MachineSettings())
    real = make_machine(MachineSettings(real_time=True))
    assert issubclass(model, StrayRules) and not issubclass(real, StrayRules)
