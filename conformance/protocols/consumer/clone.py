"""Copying a `ConsumerSim` for the explorers (`conformance.protocols.consumer.explore`, polish).

`copy.deepcopy` walked every frozen member, request and snapshot and was more than half of the
consumer explorer's time. `clone` copies exactly the mutable containers (the coordinator state's
groups and maps, each virtual consumer and its sent fields, the simulator's maps and sets) and the
choosers' random state, and shares the frozen values. Objects it does not know (a mutant's extra
attributes) fall back to the deep copy, so it is never less faithful than `deep_clone`; a test
checks it behaves like deepcopy.
"""

from __future__ import annotations

import copy
from typing import Any

from conformance.engine.explore import clone_chooser, shallow_copy
from model.consumer.client import VirtualConsumer
from model.consumer.port import ModelConsumerPort
from model.consumer.state import ConsumerCoordinatorState, ConsumerGroup

#: the attributes `clone` knows how to copy; anything else takes `deep_clone`
_SIM_FIELDS = frozenset(
    {
        "actions",
        "chooser",
        "clients",
        "convergence_bound_ms",
        "deviations",
        "explore_perturbed",
        "group_id",
        "held",
        "known_member_ids",
        "last_request",
        "log",
        "lose_next",
        "next_ref",
        "now",
        "port",
        "quiet_since",
        "reports",
        "seed",
        "setup",
        "specs",
        "variants",
        "wire_next",
        "world",
    }
)
_PORT_FIELDS = frozenset({"config", "coordinator", "records", "state"})
_COORDINATOR_FIELDS = frozenset({"config", "chooser"})
_CLIENT_FIELDS = frozenset(
    {
        "_last_view",  # a cache of the client's last snapshot view (immutable, shared)
        "_sent",
        "_sent_at",
        "auto_reconcile",
        "crashed",
        "group_id",
        "heartbeat_interval_ms",
        "inflight",
        "instance_id",
        "member_epoch",
        "member_id",
        "name",
        "next_heartbeat_at",
        "owned",
        "rack_id",
        "rebalance_timeout_ms",
        "regex",
        "retry_backoff_ms",
        "server_assignor",
        "state",
        "target",
        "topics",
        "version",
    }
)


def deep_clone(sim: Any) -> Any:
    """Deep copy sharing the frozen world snapshot (it holds read-only mapping proxies); the log
    and the actions start empty."""
    memo: dict[int, Any] = {id(sim.world): sim.world, id(sim.log): [], id(sim.actions): []}
    coordinator = getattr(sim.port, "coordinator", None)
    for chooser in (getattr(sim, "chooser", None), getattr(coordinator, "chooser", None)):
        if chooser is not None and id(chooser) not in memo:
            memo[id(chooser)] = clone_chooser(chooser)  # shared by the clients: one copy for all
    return copy.deepcopy(sim, memo)


def _known(sim: Any) -> bool:
    port = getattr(sim, "port", None)
    coordinator = getattr(port, "coordinator", None)
    return (
        isinstance(port, ModelConsumerPort)
        and type(port.state) is ConsumerCoordinatorState
        and all(type(g) is ConsumerGroup for g in port.state.groups.values())
        and vars(sim).keys() <= _SIM_FIELDS
        and vars(port).keys() <= _PORT_FIELDS
        and coordinator is not None
        and vars(coordinator).keys() <= _COORDINATOR_FIELDS
        and all(vars(c).keys() <= _CLIENT_FIELDS for c in sim.clients.values())
        and all(vars(h[2]).keys() <= _CLIENT_FIELDS for h in sim.held.values())
    )


def _client(c: VirtualConsumer, copies: dict[int, Any]) -> VirtualConsumer:
    """One process copied once (a held heartbeat may name the same process as ``clients``)."""
    done = copies.get(id(c))
    if done is not None:
        return done  # type: ignore[no-any-return]
    new = shallow_copy(c)
    new._sent = shallow_copy(c._sent)
    copies[id(c)] = new
    return new


def clone(sim: Any) -> Any:
    """A copy of ``sim`` that behaves like `deep_clone` (same state, same future), log empty."""
    if not _known(sim):
        return deep_clone(sim)
    port = sim.port
    coordinator = port.coordinator
    new_coordinator = shallow_copy(coordinator)  # the class of a mutant's coordinator too
    choosers = {id(sim.chooser): clone_chooser(sim.chooser)}
    if id(coordinator.chooser) not in choosers:
        choosers[id(coordinator.chooser)] = clone_chooser(coordinator.chooser)
    new_coordinator.chooser = choosers[id(coordinator.chooser)]
    new_port = shallow_copy(port)
    new_port.coordinator = new_coordinator
    new_port.state = port.state.copy()
    new_port.records = list(port.records)
    out = shallow_copy(sim)
    out.port = new_port
    out.chooser = choosers[id(sim.chooser)]
    copies: dict[int, Any] = {}
    out.clients = {n: _client(c, copies) for n, c in sim.clients.items()}
    out.held = {n: (ref, request, _client(c, copies)) for n, (ref, request, c) in sim.held.items()}
    out.specs = dict(sim.specs)
    out.lose_next = set(sim.lose_next)
    out.last_request = dict(sim.last_request)
    out.known_member_ids = set(sim.known_member_ids)
    out.wire_next = dict(sim.wire_next)
    out.deviations = set(sim.deviations)
    out.reports = sim.reports.copy()
    out.actions = []
    out.log = []
    return out  # setup, variants and the world snapshot are only read: shared
