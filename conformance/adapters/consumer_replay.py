"""`groupcheck replay FILE --target NAME|host:port` for KIP-848 consumer traces (issue 5 on real targets).

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
members are still ours. Ops a real target cannot take (coordinator failover on a target that
cannot restart, deleting a topic or adding partitions) are an ERROR naming the trace line.
"""

from __future__ import annotations

from typing import Any

from conformance.trace.format import Trace
from conformance.trace.replay import ReplayResult, replay

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
    """Why the trace's ops cannot run against ``handle`` (file:line), or None."""
    for step in trace.steps:
        op = step.action.get("op")
        where = f"{trace.path}:{step.line}"
        if op == "failover":
            return f"{where}: the trace fails the coordinator over; consumer traces replay failover on the model only"
        if op == "topic" and step.action.get("action") != "create":
            return (
                f"{where}: topic {step.action.get('action')!r} against a real target is not supported "
                "(only create)"
            )
    return None


def replay_consumer_on_target(
    trace: Trace, spec: str, variants: dict[str, str | None]
) -> tuple[ReplayResult, list[str]]:
    """Replay the consumer ``trace`` on the real target ``spec``; (result, notes about the target)."""
    from conformance.adapters import open_target
    from conformance.adapters.check import real_profile
    from conformance.adapters.consumer_check import consumer_setup, not_run_reason
    from conformance.adapters.consumer_realtime import RealTimeConsumerSim

    merged, dropped = kept_variants(trace, variants, "consumer")
    with open_target(spec) as handle:
        notes = [f"{handle.name} {handle.version}"] + dropped
        offered = not_run_reason(handle, "consumer")
        why = f"{handle.name}: {offered}" if offered else unreplayable(trace, handle)
        if why is not None:
            result = ReplayResult(trace, handle.name, {})
            result.error = why
            return result, notes
        port_factory, config, _ = consumer_setup(handle, real_profile("ci"))
        result = replay(
            trace,
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


def replay_group_on_target(
    trace: Trace, spec: str, variants: dict[str, str | None]
) -> tuple[ReplayResult, list[str]]:
    """The replay of a consumer or mixed-group trace on a real target."""
    if trace.protocol == "consumer":
        return replay_consumer_on_target(trace, spec, variants)
    if trace.protocol == "mixed":
        return replay_mixed_on_target(trace, spec, variants)
    result = ReplayResult(trace, spec, {})
    result.error = f"protocol {trace.protocol!r} traces do not replay on real targets"
    return result, []


def replay_mixed_on_target(
    trace: Trace, spec: str, variants: dict[str, str | None]
) -> tuple[ReplayResult, list[str]]:
    """Replay a mixed-group trace on ``spec``: each recorded `MixedRun` op (members start, stop,
    crash, time runs) again on a `RealMixedRun` through the mixed oracle; ``run_for`` sleeps that
    long in real ticks of the trace's ``tick_ms``. The recorded ``mixed_mutant`` (a coordinator
    variant) is dropped; the target's migration policy replaces the recorded one."""
    from conformance.adapters import open_target
    from conformance.adapters.check import real_profile
    from conformance.adapters.mixed_check import mixed_setup, not_run_reason
    from conformance.adapters.mixed_realtime import real_mixed_run
    from conformance.trace.replay import _take_port_findings, _verdict, replay_mixed_ops

    merged: dict[str, str | None] = dict(variants)
    notes: list[str] = []
    recorded = trace.header["variants"].get("mixed_mutant")
    if recorded and "mixed_mutant" not in variants:
        merged["mixed_mutant"] = None
        notes.append(f"coordinator variant mixed_mutant={recorded} dropped: the target is the coordinator")
    kept = {k: v for k, v in {**trace.header["variants"], **merged}.items() if v is not None}
    with open_target(spec) as handle:
        notes.insert(0, f"{handle.name} {handle.version}")
        result = ReplayResult(trace, handle.name, kept)
        why = not_run_reason(handle)
        if why is not None:
            result.error = f"{handle.name}: {why}"
            return result, notes
        for step in trace.steps:
            if step.action.get("op") == "failover":
                result.error = f"{trace.path}:{step.line}: mixed-group traces replay coordinator failover on the model only"
                return result, notes
        factory, _config, _ = mixed_setup(handle, real_profile("ci"))
        setup = dict(trace.header["setup"])
        port = factory(int(setup.get("seed", 0)), kept)
        if setup.get("policy") and setup["policy"] != port.coordinator.config.policy.value:
            notes.append(
                f"recorded migration policy {setup['policy']}; the target runs "
                f"{port.coordinator.config.policy.value}"
            )
        run = real_mixed_run(port, setup, kept)
        result.sim = run
        try:
            if not replay_mixed_ops(
                trace, result, run, lambda steps: _take_port_findings(result, run, steps[-1].n)
            ):
                return result, notes
        finally:
            port.close()
        result.target_version = handle.version  # type: ignore[attr-defined]
        if port.unsupported is not None:
            result.error = f"{trace.path}: not replayable on a real target: {port.unsupported}"
            return result, notes
        return _verdict(result, False), notes
