"""`groupcheck check --target NAME|host:port` and `groupcheck target start|stop NAME` (docs/real-targets.md).

Opens the target (`open_target`), runs each protocol's stateful suite through the port its kit
sets up (`ProtocolKit.real_setup`: the oracle on a real clock), and reports both verdict levels: `protocol` (invariants and protocol-level
divergences) and `kafka-compat` (Apache Kafka's exact choices). `--level` picks the one that
decides the exit code. Real-time runs use smaller example counts than the in-process model
(`REAL_PROFILES`), since every step takes real milliseconds.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

from conformance.engine.profiles import REAL_PROFILES, Profile, real_profile
from conformance.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_TOOL, EXIT_VIOLATION, TargetError, UsageError
from conformance.protocols import KITS, get_kit

LEVELS = ("protocol", "kafka-compat")
#: coordinator restarts (the Failover rule, faults.restart) per run on targets that can restart
RESTARTS = {"dev": 0, "ci": 1, "thorough": 4, "faults": 1}


@dataclass
class TargetRun:
    result: object
    handle: object
    wall_s: float
    rtt_ms: list[float]
    #: what the fault proxy and restarts injected in this run alone (`faults.summary`); None
    #: without a fault session
    faults: str | None = None
    #: requests the target answered in this run (every group's)
    ops: int = 0


def run_on_target(
    spec: str,
    protocol: str,
    profile_name: str,
    *,
    max_examples: int | None,
    seed: int,
    variants: dict[str, str],
    level: str,
    restarts: int | None = None,
) -> TargetRun:
    """One protocol against one target (started and stopped around the run)."""
    runs, skipped = run_protocols_on_target(
        spec, [protocol], profile_name, max_examples=max_examples, seed=seed, variants=variants, level=level,
        restarts=restarts,
    )  # fmt: skip
    if skipped:
        raise TargetError(f"{spec}: {skipped[0][1]}")
    return runs[0]


def run_protocols_on_target(
    spec: str,
    protocols: list[str],
    profile_name: str,
    *,
    max_examples: int | None,
    seed: int,
    variants: dict[str, str],
    level: str,
    only_offered: bool = False,
    examples: dict[str, int] | None = None,
    restarts: int | None = None,
    restart_signal: str = "kill",
    given: dict[str, Any] | None = None,
    keep: Any = None,
) -> tuple[list[TargetRun], list[tuple[str, str]]]:
    """Each protocol against one target opened once; with ``only_offered`` a protocol the target
    does not offer (ApiVersions) is skipped with its reason instead of being an error; ``examples``
    overrides ``max_examples`` per protocol."""
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r} (known: {', '.join(LEVELS)})")
    for protocol in protocols:
        kit = get_kit(protocol)
        if kit.real_setup is None:
            wired = ", ".join(k.name for k in KITS.values() if k.real_setup)
            raise UsageError(f"protocol {protocol!r} is not wired to real targets (known: {wired})")
    profile = real_profile(profile_name)
    runs: list[TargetRun] = []
    skipped: list[tuple[str, str]] = []
    opened = time.monotonic()
    try:
        counts = {p: (examples or {}).get(p, max_examples) for p in protocols}
        n_restarts = RESTARTS[profile_name] if restarts is None else restarts
        _run_all(
            spec,
            protocols,
            profile,
            counts,
            seed,
            variants,
            level,
            only_offered,
            opened,
            runs,
            skipped,
            n_restarts,
            restart_signal,
            given,
            keep,
        )
    except TargetError as e:
        # a target that crashed during a run cannot be stopped cleanly: the crash is already a finding
        crashed = [r for r in runs if any(v.invariant == "target.crash" for v in r.result.violations)]
        if not crashed:
            raise
        crashed[-1].handle.notes.append(f"stopping the target after the crash: {e}")
    return runs, skipped


def _run_all(
    spec: str,
    protocols: list[str],
    profile: Profile,
    counts: dict[str, int | None],
    seed: int,
    variants: dict[str, str],
    level: str,
    only_offered: bool,
    opened: float,
    runs: list[TargetRun],
    skipped: list[tuple[str, str]],
    restarts: int,
    restart_signal: str = "kill",
    given: dict[str, Any] | None = None,
    keep: Any = None,
) -> None:
    from conformance.targets.open import open_target

    with open_target(spec, given=given) as handle:
        if handle.session is not None:  # coordinator restarts (conformance/protocols/classic/faults.py)
            handle.session.max_restarts = restarts
            handle.session.restart_signal = restart_signal
        for protocol in protocols:
            why = get_kit(protocol).require("not_run_reason")(handle)
            if why is not None:
                if not only_offered:
                    raise TargetError(f"{handle.name}: {why}")
                skipped.append((protocol, why))
                continue
            t0 = opened if not runs else time.monotonic()  # the first run's wall time includes the start
            runs.append(
                _run_one(handle, protocol, profile, counts[protocol], seed, variants, level, t0, keep)
            )
        if handle.session is not None and hasattr(handle.session, "wire_drops"):
            from conformance.protocols.classic.faults import summary

            handle.notes.append(("all runs together, " if len(runs) > 1 else "") + summary(handle.session))


def _run_one(
    handle: object,
    protocol: str,
    profile: Profile,
    max_examples: int | None,
    seed: int,
    variants: dict[str, str],
    level: str,
    t0: float,
    keep: Any = None,
) -> TargetRun:
    from conformance.engine.run import run_check

    kit = get_kit(protocol)
    h = handle  # type: Any
    if keep is not None:  # --keep-going, --baseline, --groups (conformance/cli/keep_going.py)
        from conformance.cli.keep_going import run_on_target

        run_kw = dict(
            target=h.name, target_version=h.version, max_examples=max_examples, seed_value=seed,
            variants=variants, level=level,
        )  # fmt: skip
        since = None
        if keep.groups == 1 and h.session is not None and hasattr(h.session, "wire_drops"):
            from conformance.protocols.classic.faults import snapshot, summary

            since = snapshot(h.session)  # one group runs on the target's own session
        kept, rtt, ops = run_on_target(h, kit, profile, run_kw, keep)
        kept.target_version = h.version
        faults = None if since is None else summary(h.session, since)
        return TargetRun(kept, handle, time.monotonic() - t0, rtt, faults, ops)
    session = h.session
    compat_before = len(session.compat) if session is not None else 0
    rtt_before = len(session.rtt_ms) if session is not None else 0
    faults_since = None
    if session is not None and hasattr(session, "wire_drops"):
        from conformance.protocols.classic.faults import snapshot, summary

        faults_since = snapshot(session)
    port_factory, config, profile = kit.require("real_setup")(h, profile)
    result = run_check(
        kit,
        target=h.name,
        target_version=h.version,
        profile=profile,
        max_examples=max_examples,
        seed_value=seed,
        variants=variants,
        port_factory=port_factory,
        config=config,
        real_time=True,
        level=level,
    )
    result.target_version = h.version
    result.compat = list(session.compat[compat_before:]) if session is not None else []
    rtt = list(session.rtt_ms[rtt_before:]) if session is not None else []
    if h.launcher is not None:
        try:
            h.launcher.check_alive()
        except Exception as e:  # noqa: BLE001 - a crash at the end of the run is a finding too
            from conformance.engine.checker import Violation

            result.violations.append(Violation("target.crash", str(e), len(result.steps)))
    learned = getattr(h, "settings", None)
    if learned is not None:  # divergences name the settings they depend on; contradicted ones first
        import dataclasses

        from conformance.engine.checker import Violation
        from conformance.targets.settings import depends

        result.violations = [Violation("target.config", c, 0) for c in learned.conflicts] + [
            dataclasses.replace(v, message=depends(v.message, learned)) for v in result.violations
        ]
    faults = None if faults_since is None else summary(session, faults_since)
    return TargetRun(result, handle, time.monotonic() - t0, rtt, faults)


def print_result(run: TargetRun) -> int:
    r = run.result
    print(
        f"{r.protocol} on {r.target} {r.target_version}: {r.verdict} at level {r.level} "  # type: ignore[attr-defined]
        f"({r.max_examples} examples, seed {r.seed}, {r.seconds:.1f} s)"  # type: ignore[attr-defined]
    )
    proto_ok = not r.violations  # type: ignore[attr-defined]
    print(f"  protocol:     {'PASSED' if proto_ok else 'FAILED'}")
    print(
        f"  kafka-compat: {'PASSED' if proto_ok and not r.compat else 'FAILED'} ({len(r.compat)} compat finding(s))"
    )  # type: ignore[attr-defined]
    for f in _uniq_compat(r.compat)[:10]:  # type: ignore[attr-defined]
        print(f"    {f}")
    from conformance.reporting.deviations import deviation_lines

    for line in deviation_lines(r):
        print(line)
    if run.faults is not None:  # faults on real targets
        print(f"  {run.faults}")
    if r.restarts:  # type: ignore[attr-defined]
        print(
            f"  restarts: {r.restarts} round(s) begun again on a derived seed: the target answered a "  # type: ignore[attr-defined]
            "prefix Hypothesis replayed otherwise than the first time"
        )
    if r.top_up_rounds:  # type: ignore[attr-defined]
        print(
            f"  top-up: {r.top_up_rounds} more round(s) of {r.max_examples} examples on a derived seed, "  # type: ignore[attr-defined]
            "a `sometimes` goal being unmet"
        )
    if r.violations:  # type: ignore[attr-defined]
        print(f"violated: {', '.join(sorted({v.invariant for v in r.violations}))}")  # type: ignore[attr-defined]
        for v in r.violations:  # type: ignore[attr-defined]
            print(f"  {v.invariant}: {v.message}")
        print("steps:")
        for i, line in enumerate(r.steps, 1):  # type: ignore[attr-defined]
            print(f"  {i:3d}. {line}")
        return EXIT_VIOLATION
    if r.level == "kafka-compat" and r.compat:  # type: ignore[attr-defined]
        return EXIT_VIOLATION
    if r.vacuous:  # type: ignore[attr-defined]
        print(f"inconclusive: never exercised {', '.join(r.vacuous)}")  # type: ignore[attr-defined]
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def _uniq_compat(findings: list) -> list[str]:  # type: ignore[type-arg]
    seen: dict[str, int] = {}
    for f in findings:
        text = f.message.split(": ", 1)[-1]
        seen[text] = seen.get(text, 0) + 1
    return [f"{t} (x{n})" for t, n in seen.items()]


def cmd_target(args: argparse.Namespace) -> int:
    """`groupcheck target start|stop|status NAME` through the launchers (detached)."""
    from conformance.targets import TARGETS, get_target
    from conformance.targets import TargetError as LauncherError

    if args.name not in TARGETS:
        raise UsageError(f"unknown target {args.name!r} (known: {', '.join(TARGETS)})")
    target = get_target(args.name)
    try:
        if args.target_command == "start":
            target.provision(900)
            print(target.start(120, detach=True), flush=True)
        elif args.target_command == "stop":
            target.stop(60)
        else:
            bootstrap = target.detached_bootstrap()
            print(bootstrap or f"{args.name}: not running")
            return EXIT_OK if bootstrap else EXIT_VIOLATION
    except LauncherError as e:
        raise TargetError(str(e)) from e
    return EXIT_OK


__all__ = ["EXIT_TOOL", "REAL_PROFILES", "cmd_target", "print_result", "real_profile", "run_on_target"]
