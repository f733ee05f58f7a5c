"""`groupcheck replay FILE --target NAME|host:port` for KIP-848 consumer traces (docs/faults.md#replay-on-real-targets).

The trace's recorded ops (member steps, leaves, restarts, duplicated or stale heartbeats, time
passing) are called again on a `RealTimeConsumerSim` whose port is the consumer oracle
(`ConsumerOraclePort`): every request goes to the target over its member's connection and to the
model hypotheses beside it, an ``advance`` op sleeps that long on the real clock, and the oracle's
protocol findings count as violations exactly as in `check --protocol consumer`. Verdicts as on the
model: FAILED (exit 1), FIXED or PASSED (exit 0), ERROR (exit 2).

The model beside the target runs with the target's own group settings (session timeout, heartbeat
interval: `consumer_check.consumer_setup`), not the recording's. Coordinator mutants of the trace
are dropped (the target is the coordinator, so a mutant's bug is FIXED when the target does not
have it); a mutant that only changes the virtual members (``Mutant.client``) is kept, since the
members are still ours. A ``failover`` op restarts the target (`consumer_failover`, the run's
restart signal, SIGKILL by default) and ``topic`` ops change topics over the wire (`topic_ops`);
on a target that cannot restart on its own state, or lacks CreatePartitions / DeleteTopics, such an
op is an ERROR naming the trace line.
"""

from __future__ import annotations

from typing import Any

from conformance.engine.checker import Checker
from conformance.engine.replay import (
    ReplayResult,
    judge,
    op_groups,
    recorded_exactly,
    replay,
    sim_from_trace,
    take_port_findings,
    verdict,
)
from conformance.errors import ToolError
from conformance.formats.trace_file import Trace
from conformance.protocols.consumer.build import make_consumer_sim
from conformance.protocols.consumer.swarm import consumer_row
from conformance.protocols.consumer.trace import action_of

#: real time after the last op, so that a timer the last answers depend on is inside the window
SETTLE_MS = 700


def kept_variants(
    trace: Trace, variants: dict[str, str | None], protocol: str
) -> tuple[dict[str, str | None], list[str]]:
    """The variants for the model beside a real target and notes on what was dropped: a recorded
    coordinator mutant is dropped (``None``) unless it only changes the clients."""
    merged: dict[str, str | None] = dict(variants)
    recorded = trace.header["variants"]
    notes: list[str] = []
    name = recorded.get("mutant")
    if name and "mutant" not in variants:
        from conformance.mutants import get_mutant

        mutant = get_mutant(name, protocol)
        if mutant.client is not None and mutant.coordinator is None and getattr(mutant, "port", None) is None:
            notes.append(f"client variant mutant={name} kept: the virtual members are ours")
        else:
            merged["mutant"] = None
            notes.append(f"coordinator variant mutant={name} dropped: the target is the coordinator")
    return merged, notes


def unreplayable(trace: Trace, handle: Any) -> str | None:
    """Why the trace's ops cannot run against ``handle`` (file:line), or None. A coordinator failover
    needs a target that restarts on its own state (`consumer_failover`); topic changes need
    CreatePartitions and DeleteTopics (`topic_ops`)."""
    launcher = getattr(handle, "launcher", None)
    can_restart = launcher is not None and "restart" in getattr(launcher, "capabilities", ())
    versions = handle.capabilities.api_versions if handle.capabilities is not None else {}
    for step in trace.steps:
        op = step.action.get("op")
        where = f"{trace.path}:{step.line}"
        if op == "failover" and not can_restart:
            return f"{where}: the trace fails the coordinator over; {handle.name} cannot restart on its own state"
        if op == "topic" and step.action.get("action") != "create":
            key = 37 if step.action.get("action") == "add_partitions" else 20
            if versions.get(key, (0, -1))[1] < 0:
                return (
                    f"{where}: topic {step.action.get('action')!r} needs api key {key}, "
                    f"which {handle.name} does not offer"
                )
    return None


def local_launcher(handle: Any) -> Any:
    """``handle`` for ``host:port`` of a target this process started (a test's broker): its session
    gets the launcher, so a failover op can restart it and the model takes the target's settings.
    The handle itself keeps no launcher (closing it must not stop a target it did not start)."""
    if handle.launcher is not None or handle.session is None or not handle.bootstrap:
        return handle
    from conformance.targets.base import target_for_bootstrap

    launcher = target_for_bootstrap(handle.bootstrap)
    if launcher is None:
        return handle
    handle.session.launcher = launcher
    absent = "restart (coordinator failover): absent, the Failover rule is off on this target"
    handle.notes[:] = [n for n in handle.notes if n != absent]
    return _WithLauncher(handle, launcher)


class _WithLauncher:
    """A view of a target handle with a launcher (everything else is the handle's)."""

    def __init__(self, handle: Any, launcher: Any) -> None:
        self.__dict__["_handle"] = handle
        self.__dict__["launcher"] = launcher

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_handle"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.__dict__["_handle"], name, value)


def why_no_restart(handle: Any) -> str | None:
    launcher = getattr(handle, "launcher", None)
    if launcher is None or "restart" not in getattr(launcher, "capabilities", ()):
        return f"{handle.name} cannot restart on its own state"
    return None


def failovers(trace: Trace) -> int:
    """How many coordinator restarts replaying ``trace`` takes."""
    return sum(1 for step in trace.steps if step.action.get("op") == "failover")


def replay_consumer_on_target(
    trace: Trace, spec: str, variants: dict[str, str | None], restart_signal: str = "kill"
) -> tuple[ReplayResult, list[str]]:
    """Replay the consumer ``trace`` on the real target ``spec``; (result, notes about the target).
    ``restart_signal``: how a failover op stops the target (kill: a crash, the default; term)."""
    from conformance.engine.profiles import real_profile
    from conformance.protocols.consumer.realtime import RealTimeConsumerSim
    from conformance.protocols.consumer.setup import consumer_setup, not_run_reason
    from conformance.targets.open import open_target

    merged, dropped = kept_variants(trace, variants, "consumer")
    with open_target(spec) as handle:
        handle = local_launcher(handle)
        notes = [f"{handle.name} {handle.version}"] + dropped
        offered = not_run_reason(handle)
        why = f"{handle.name}: {offered}" if offered else unreplayable(trace, handle)
        if why is not None:
            result = ReplayResult(trace, handle.name, {})
            result.error = why
            return result, notes
        if handle.session is not None:  # the trace's failovers restart the target (consumer_failover)
            handle.session.max_restarts = failovers(trace)
            handle.session.restart_signal = restart_signal
        port_factory, config, _ = consumer_setup(handle, real_profile("ci"))
        result = replay(
            trace,
            "consumer",
            target=handle.name,
            variants=merged,
            port_factory=port_factory,
            real={"sim_class": RealTimeConsumerSim, "config": config, "settle_ms": SETTLE_MS},
        )
        if result.sim is not None:
            close = getattr(result.sim.port, "close", None)
            if close is not None:
                close()
        result.target_version = handle.version  # type: ignore[attr-defined]
        notes += [n for n in handle.notes if n not in notes]
    return result, notes


def replay_consumer(
    trace: Trace,
    result: ReplayResult,
    *,
    port_factory: Any = None,
    exact: bool = True,
    coverage: Any = None,
    real: dict[str, Any] | None = None,
) -> ReplayResult:
    """Consumer traces: call each recorded action again; its observations must match the step
    lines it produced (the action's own line and the ``cont`` lines after it). With ``real``
    (`replay_consumer_on_target`) the port is the consumer oracle on a real clock: the target's
    settings replace the recording's and the oracle's findings count as violations."""
    try:
        sim = sim_from_trace(
            trace,
            make_consumer_sim,
            result.variants,
            f"{trace.path}:1",
            (real or {}).get("config"),
            port_factory=port_factory,
            sim_class=(real or {}).get("sim_class"),
        )
    except ToolError as exc:
        result.error = str(exc)
        return result
    result.sim = sim
    if coverage is not None:
        coverage.start(sim)
    checker = Checker("consumer")
    groups = op_groups(trace, result)
    if groups is None:
        return result
    for first, recorded in groups:
        where = f"{trace.path}:{first.line}"
        try:
            observations = sim.replay([action_of(first.action, where)])
        except ToolError as exc:
            result.error = str(exc)
            return result
        except Exception as exc:
            result.error = f"{where}: replaying {first.action.get('op')!r} raised {type(exc).__name__}: {exc}"
            return result
        if coverage is not None:
            coverage.visit(sim)
        judge(trace, result, checker, sim, recorded, observations)
        if real is not None:
            take_port_findings(result, sim, recorded[-1].n)
    if real is not None and real.get("settle_ms") and groups:
        last = trace.steps[-1].n + 1
        obs = sim.advance(int(real["settle_ms"]))
        result.observations.append(obs)
        result.violations += checker.check(obs, last)
        take_port_findings(result, sim, last)
    return verdict(result, exact and recorded_exactly(trace, result), consumer_row)
