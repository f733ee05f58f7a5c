"""Replay a mixed-group trace (docs/protocol-reference.md#b13): on the model, or on a real target through the oracle.

Each recorded `MixedRun` op (members start, stop, crash, time runs) is applied again to a rebuilt
run and its observations are compared with the recording and checked (`replay_mixed_ops`, shared
with the replay against a trace's own recorded answers, `conformance.protocols.mixed.recorded`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.engine.checker import Checker
from conformance.engine.replay import (
    ReplayResult,
    judge,
    op_groups,
    recorded_exactly,
    take_port_findings,
    verdict,
)
from conformance.errors import ToolError
from conformance.formats.trace_file import Trace
from conformance.protocols.consumer.replay import failovers, local_launcher, why_no_restart
from conformance.protocols.mixed.trace import apply_op, make_mixed_run


def replay_mixed(
    trace: Trace,
    result: ReplayResult,
    *,
    port_factory: Any = None,
    exact: bool = True,
    coverage: Any = None,
    real: dict[str, Any] | None = None,
) -> ReplayResult:
    """Mixed-group traces on the model: each recorded `MixedRun` op again on a rebuilt coordinator
    (always exact when replayed with the recorded variants)."""
    if port_factory is not None:
        result.error = "mixed-group traces replay on the model only"
        return result
    try:
        run = make_mixed_run(dict(trace.header["setup"]), result.variants, f"{trace.path}:1")
    except ToolError as exc:
        result.error = str(exc)
        return result
    result.sim = run
    if not replay_mixed_ops(trace, result, run):
        return result
    return verdict(result, recorded_exactly(trace, result))


def replay_mixed_ops(
    trace: Trace, result: ReplayResult, run: Any, after_group: Callable[[list[Any]], None] | None = None
) -> bool:
    """Apply a mixed trace's op groups to ``run`` (the model's or a real target's) and judge each;
    ``after_group`` sees each group's recorded steps. False when an op could not be replayed
    (``result.error`` says where)."""
    checker = Checker("mixed")
    groups = op_groups(trace, result)
    if groups is None:
        return False
    for first, recorded in groups:
        where = f"{trace.path}:{first.line}"
        mark = len(run.observations)
        try:
            apply_op(run, first.action, where)
        except ToolError as exc:
            result.error = str(exc)
            return False
        except Exception as exc:  # the target (or an adapter) broke: not a conformance verdict
            result.error = f"{where}: replaying {first.action.get('op')!r} raised {type(exc).__name__}: {exc}"
            return False
        judge(trace, result, checker, run, recorded, run.observations[mark:])
        if after_group is not None:
            after_group(recorded)
    return True


def replay_mixed_on_target(
    trace: Trace, spec: str, variants: dict[str, str | None], restart_signal: str = "kill"
) -> tuple[ReplayResult, list[str]]:
    """Replay a mixed-group trace on ``spec``: each recorded `MixedRun` op (members start, stop,
    crash, time runs) again on a `RealMixedRun` through the mixed oracle; ``run_for`` sleeps that
    long in real ticks of the trace's ``tick_ms``. The recorded ``mixed_mutant`` (a coordinator
    variant) is dropped; the target's migration policy replaces the recorded one."""
    from conformance.engine.profiles import real_profile
    from conformance.protocols.mixed.realtime import WIRE_FAULT_OPS, real_mixed_run
    from conformance.protocols.mixed.setup import mixed_setup, not_run_reason
    from conformance.targets.open import open_target

    merged: dict[str, str | None] = dict(variants)
    notes: list[str] = []
    recorded = trace.header["variants"].get("mixed_mutant")
    if recorded and "mixed_mutant" not in variants:
        merged["mixed_mutant"] = None
        notes.append(f"coordinator variant mixed_mutant={recorded} dropped: the target is the coordinator")
    kept = {k: v for k, v in {**trace.header["variants"], **merged}.items() if v is not None}
    with open_target(spec) as handle:
        handle = local_launcher(handle)
        notes.insert(0, f"{handle.name} {handle.version}")
        result = ReplayResult(trace, handle.name, kept)
        why = not_run_reason(handle)
        if why is not None:
            result.error = f"{handle.name}: {why}"
            return result, notes
        for step in trace.steps:
            if step.action.get("op") == "failover" and why_no_restart(handle) is not None:
                result.error = f"{trace.path}:{step.line}: the trace fails the coordinator over; {why_no_restart(handle)}"
                return result, notes
        if handle.session is not None:  # failover ops restart the target (mixed_failover: either group type)
            handle.session.max_restarts = failovers(trace)
            handle.session.restart_signal = restart_signal
        # wire-fault ops need the fault proxy's port (`mixed_faults`, the `faults` profile's)
        faulty = any(step.action.get("op") in WIRE_FAULT_OPS for step in trace.steps)
        factory, _config, _ = mixed_setup(handle, real_profile("faults" if faulty else "ci"))
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
                trace, result, run, lambda steps: take_port_findings(result, run, steps[-1].n)
            ):
                return result, notes
        finally:
            port.close()
        result.target_version = handle.version  # type: ignore[attr-defined]
        if port.unsupported is not None:
            result.error = f"{trace.path}: not replayable on a real target: {port.unsupported}"
            return result, notes
        return verdict(result, False), notes
