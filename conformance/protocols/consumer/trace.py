"""Recording and replaying KIP-848 consumer runs (the consumer twin of `conformance.protocols.classic.trace`).

`ConsumerSim` already logs every call as an `Action` (model/consumer/sim.py); `TracedConsumerSim`
pairs each action with the observations it produced. One trace step per observation: the first
carries the action (``{"op": "client_step", "name": "c1"}``), the rest of a multi-step action
(``settle``) carry ``{"op": "cont"}``; an action that observed nothing still gets its own step.
Replay calls the same actions on a simulator rebuilt from the header and compares every event and
response with the recording.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.engine.minimise import flatten_macro
from conformance.errors import UsageError
from conformance.formats.trace_file import CheckedLog, LogEntry, Step, Trace, trace_of_log
from model.consumer.sim import ConsumerSim
from model.consumer.sim_specs import Action
from model.consumer.world import AdvanceEvent, ConsumerWorld, HeartbeatEvent
from model.observation import Observation


def op_of(action: Action) -> dict[str, Any]:
    return {"op": action.name, **{k: list(v) if isinstance(v, tuple) else v for k, v in action.args}}


#: the fields an op may carry, for the ops that take a fixed set (checked before anything runs)
OP_FIELDS: dict[str, frozenset[str]] = {"delete_group": frozenset()}


def action_of(op: dict[str, Any], where: str) -> Action:
    name = op.get("op")
    if not isinstance(name, str) or name == "cont" or name.startswith("_") or not hasattr(ConsumerSim, name):
        raise UsageError(f"{where}: unknown consumer op {name!r}")
    allowed = OP_FIELDS.get(name)
    extra = sorted(k for k in op if k != "op" and allowed is not None and k not in allowed)
    if extra:
        raise UsageError(f"{where}: consumer op {name!r} has no field {', '.join(map(repr, extra))}")
    return Action(name, tuple(sorted((k, v) for k, v in op.items() if k != "op")))


class TracedConsumerSim(CheckedLog, ConsumerSim):
    """A `ConsumerSim` whose log pairs actions with observations (check, scenarios, replay)."""

    log: list[LogEntry]
    setup: dict[str, Any]
    variants: dict[str, str]
    seed: int

    def __post_init__(self) -> None:
        self.log = []
        self.setup, self.variants, self.seed = {}, {}, 0
        super().__post_init__()

    def _record(self, method: str, **args: object) -> None:
        super()._record(method, **args)
        self.log.append(LogEntry(op_of(self.actions[-1]), None, self.now))

    def _step(self, event: object, result: Any) -> Observation[ConsumerWorld]:
        obs = super()._step(event, result)
        if self.log and self.log[-1].obs is None:
            self.log[-1].obs, self.log[-1].now = obs, self.now
        else:
            self.log.append(LogEntry({"op": "cont"}, obs, self.now))
        return obs


def state_summary(world: ConsumerWorld | None, group_id: str) -> dict[str, Any] | None:
    if world is None:
        return None
    g = world.group(group_id)
    return {
        "group": None
        if g is None
        else {
            "state": g.state.value if hasattr(g.state, "value") else str(g.state),
            "group_epoch": g.group_epoch,
            "assignment_epoch": g.assignment_epoch,
            "members": sorted(g.members),
        },
        "clients": {
            c.name: {
                "member_id": c.member_id,
                "member_epoch": c.member_epoch,
                "owned": sorted(f"{t}-{p}" for t, p in c.owned),
            }
            for c in world.clients
            if hasattr(c, "name")
        },
    }


def to_trace(
    sim: TracedConsumerSim,
    *,
    target: str,
    target_version: str,
    origin: dict[str, Any],
    violations: list[tuple[str, str, int]],
) -> Trace:
    """The trace of everything ``sim`` recorded, with the driver's verdict."""
    return trace_of_log(
        sim,
        lambda world: state_summary(world, sim.group_id),
        protocol="consumer",
        target=target,
        target_version=target_version,
        origin=origin,
        violations=violations,
    )


def flatten_consumer(trace: Trace) -> Trace:
    """A consumer trace whose ``settle`` actions are rewritten as the primitive ops they performed.

    A settle is one action whose observations follow on ``cont`` lines; ddmin cannot cut inside it,
    and it is not one op of `groupcheck explore` either. Each of its heartbeats becomes
    ``reconcile`` + ``client_step`` of that client (settle completes slow callbacks first; a
    ``reconcile`` of a client with nothing to finish is a no-op), each tick an ``advance``. So every
    op is one BFS edge (docs/mutants.md#shrinking). The settle's convergence bound is not kept, so a
    ``consumer.eventual_convergence`` violation may not survive; `minimise` then keeps the original.
    The kit's ``minimise_view``.
    """
    return flatten_macro(trace, "settle", _settle_op)


def _settle_op(step: Step, previous: Step | None) -> list[Step] | None:
    """The primitive ops that made one observation of a settle (`flatten_consumer`)."""
    event = step.event
    if isinstance(event, HeartbeatEvent) and event.client is not None:
        return [
            replace(step, action={"op": "reconcile", "name": event.client}, event=None),
            replace(step, action={"op": "client_step", "name": event.client}),
        ]
    if isinstance(event, AdvanceEvent):
        return [replace(step, action={"op": "advance", "ms": event.now - (previous.now if previous else 0)})]
    return None
