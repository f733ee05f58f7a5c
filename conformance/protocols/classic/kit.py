"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat; Kafka's ClassicGroup) as the engine sees it.

Every capability imports its module when called, so listing the kits stays cheap.
"""

from __future__ import annotations

from typing import Any

from conformance.engine.checker import CHECKED_KINDS, CheckPlan, View
from conformance.engine.kit import ProtocolKit
from conformance.engine.variants import VariantKey
from model.observation import Observation


def make_machine(settings: Any) -> type:
    from conformance.protocols.classic.machine import make_machine as make

    return make(settings)


def to_trace(sim: Any, **kw: Any) -> Any:
    from conformance.protocols.classic.trace import to_trace as record

    return record(sim, **kw)


def client_observation(obs: Observation[Any]) -> Any:
    """The leader's assignor run at this step as an AssignmentObservation, if there was one."""
    la = getattr(obs.after, "leader_assignment", None)
    if la is None:
        return None
    from model.assignors import get_assignor
    from model.assignors.invariants import AssignmentObservation
    from model.embedded import Assignment

    rebalance_protocol = get_assignor(la.protocol).rebalance_protocols[0] if la.protocol else "EAGER"

    return AssignmentObservation(
        dict(la.partitions_per_topic),
        dict(la.subscriptions),
        {mid: Assignment(parts) for mid, parts in la.assignments},
        rebalance_protocol,
        la.protocol or "",  # the assignor's name: how its leader reads sticky claims
    )


def checks() -> CheckPlan:
    """The client-side assignor invariants, on each step where the leader ran its assignor."""
    from model.invariants import for_protocol

    return CheckPlan(views=(View(lambda: for_protocol("client", CHECKED_KINDS), client_observation),))


def replay(*args: Any, **kw: Any) -> Any:
    from conformance.protocols.classic.replay import replay_classic

    return replay_classic(*args, **kw)


def replay_on_target(*args: Any, **kw: Any) -> Any:
    from conformance.protocols.classic.replay import replay_on_target as on_target

    return on_target(*args, **kw)


def minimise_view(trace: Any) -> Any:
    from conformance.protocols.classic.flatten import flatten_classic

    return flatten_classic(trace)


def polish_space(trace: Any) -> Any:
    from conformance.protocols.classic.explore import polish_space as space

    return space(trace)


def state_key(sim: Any, symmetry: bool = True) -> str:
    from conformance.protocols.classic.abstraction import abstract_key

    return abstract_key(sim, symmetry=symmetry)


def explore(*args: Any, **kw: Any) -> Any:
    from conformance.protocols.classic.explore import explore as run

    return run(*args, **kw)


def explore_trace(*args: Any) -> Any:
    from conformance.protocols.classic.explore import found_trace

    return found_trace(*args)


def run_scenario(scenario: Any, variants: dict[str, str], **kw: Any) -> Any:
    from conformance.protocols.classic.scenarios import ScenarioRunner

    return ScenarioRunner(scenario, variants, **kw).run()


def swarm() -> Any:
    from conformance.protocols.classic.swarm import swarm_hooks

    return swarm_hooks()


def real_setup(handle: Any, profile: Any) -> Any:
    from conformance.protocols.classic.setup import classic_setup

    return classic_setup(handle, profile)


def not_run_reason(handle: Any) -> str | None:
    from conformance.protocols.classic.setup import not_run_reason as why

    return why(handle)


def model_port(coordinator: Any) -> Any:
    from model.classic.port import ModelPort

    return ModelPort(coordinator)


def mutants() -> dict[str, Any]:
    from conformance.mutants import MUTANTS

    return {name: m for name, m in MUTANTS.items() if m.protocol == KIT.name}


KIT = ProtocolKit(
    name="classic",
    summary="the classic group protocol: JoinGroup, SyncGroup, Heartbeat, client-side assignors",
    make_machine=make_machine,
    to_trace=to_trace,
    checks=checks,
    variants=(
        VariantKey("sticky", ("v0", "v1"), "sticky assignor user data: v0 = pre-KIP-341, v1 = KIP-341"),
        VariantKey(
            "assignor",
            ("range", "roundrobin", "sticky", "cooperative-sticky", "mixed"),
            "client-side assignor of every virtual member (mixed = drawn per run)",
        ),
        VariantKey(
            "cooperative_adjust",
            ("true", "false"),
            "KIP-429 adjust step; false = revoke and assign in one rebalance (KAFKA-14639)",
        ),
        VariantKey(
            "join_version",
            tuple(str(v) for v in range(10)),
            "JoinGroup version every member sends (unpinned: drawn per member; KIP-394 from v4)",
        ),
    ),
    report_families=("client",),
    oracle_rules=("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit"),
    replay=replay,
    replay_on_target=replay_on_target,
    merge_advances=True,
    minimise_view=minimise_view,
    polish_space=polish_space,
    state_key=state_key,
    coverage_places=(
        ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"),
        {
            "Empty": (0, 1),
            "PreparingRebalance": (1, 2),
            "CompletingRebalance": (2, 1),
            "Stable": (1, 0),
            "Dead": (-1, 0),
        },
    ),
    explore=explore,
    explore_trace=explore_trace,
    run_scenario=run_scenario,
    swarm=swarm,
    real_setup=real_setup,
    not_run_reason=not_run_reason,
    model_port=model_port,
    mutants=mutants,
)
