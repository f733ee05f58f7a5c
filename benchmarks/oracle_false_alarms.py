"""False divergences of the oracles against Apache Kafka under an artificial load, before/after.

Apache Kafka is the reference: every divergence the oracle reports against it in these runs is a
false alarm of the suite (unless it is a model question, which the trace then shows). The script
starts one apache-kafka broker, optionally loads the machine with busy-loop processes (``--burn N``)
and pauses the broker's JVM for 20 ms..S s every 0.2..1.0 s (``--stall S``, SIGSTOP/SIGCONT,
seeded), then runs the classic oracle (``--mode agree``: the body of
`tests/test_adapters.py::test_oracle_agrees_with_apache_kafka`, dev profile, 3 examples, seed 7;
``--mode ci``: the ci profile, 12 examples, seeds 0, 1, ...) and/or the consumer oracle
(``--protocol consumer``: ci profile, 6 examples) RUNS times per variant, alternating the variants
run by run on the same broker. ``before`` restores the oracle and the model as they were before
the timing fixes (causes 1-5 of `benchmarks/results/oracle_false_alarms.md`; see `legacy`),
``after`` is the current code, ``nosplit`` the current code with only the consumer and mixed
oracles' observation split turned off (`timer_split.SplitPort.split_timers`: timers fired before a
request folded into its observation; docs/oracle.md#observation-split), and ``noswitch`` the
current code without the classic oracle's lineage switch (`no_switch`, docs/oracle.md#lineage-switch).
``--protocol mixed`` runs the mixed machine (ci profile, 3 examples x 8 steps), ``all`` the three
protocols in turn.
Prints one line per run and a table; ``--keep DIR`` writes each failure's trace there.

Usage: python benchmarks/oracle_false_alarms.py RUNS [--mode agree|ci]
       [--protocol classic|consumer|mixed|all] [--variants before,nosplit,noswitch,after] [--burn N] [--stall S] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from conformance.cli.check import _run_one, real_profile
from conformance.protocols import get_kit
from conformance.protocols.classic import judge as judge_mod
from conformance.protocols.classic import oracle as oracle_mod
from conformance.protocols.consumer import oracle as consumer_oracle
from conformance.targets.open import open_target
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import SyncGroupResponse
from model.classic.records import MemberUpserted
from model.errors import ErrorCode
from model.result import Result


class LegacyCoordinator(ClassicCoordinator):
    """The model before the fix: the leader's assignment re-armed the session of EVERY member, and
    a parked SyncGroup answered with an error re-armed none (Kafka: only the members whose parked
    sync is answered, either way; GMM `propagateAssignment`)."""

    def reset_assignments_with_error(self, tx: Any, group: Any, error: ErrorCode, now: int) -> None:
        for member in list(group.members.values()):
            if member.awaiting_sync is not None:
                tx.reply(member.awaiting_sync, SyncGroupResponse(error))
            if member.awaiting_sync is not None or member.assignment:
                tx.emit(MemberUpserted(group.group_id, replace(member, awaiting_sync=None, assignment=b"")))

    def propagate_assignment(self, tx: Any, group: Any, now: int) -> None:
        for member in list(group.members.values()):
            if member.awaiting_sync is not None:
                resp = SyncGroupResponse(
                    ErrorCode.NONE, group.protocol_type, group.protocol, member.assignment
                )
                tx.reply(member.awaiting_sync, resp)
                tx.emit(MemberUpserted(group.group_id, replace(member, awaiting_sync=None)))
            tx.timer(group, f"expire:{member.member_id}", now + member.session_timeout_ms)


@contextlib.contextmanager
def legacy() -> Iterator[None]:
    """The oracle as before: no `_seen_running` evidence, slack lost when a provisional id is
    renamed, certain timers dated at the operation (not their deadline), timers fired around a
    request folded into its observation (no `take_pre_split` / `take_post_split`, in every oracle)."""
    port = oracle_mod.OraclePort
    saved = (port._seen_running, port._fire_certain, judge_mod.rename_hypo)

    def fire_certain(self: Any, c: Any, cutoff: int, t: int) -> int:
        def fire() -> Any:
            out = Result()
            while True:
                nxt = self.coordinator.next_deadline(c.state)
                if nxt is None or nxt[0] > cutoff:
                    return out
                deadline, gid, key = nxt
                if deadline + c.slack.get((gid, key, deadline), 0) > cutoff:
                    return out
                out.extend(self.coordinator.fire_timer(c.state, gid, key, deadline))

        self._apply(c, fire, t)
        return 0

    def rename_hypo(h: Any, old: str, new: str) -> None:
        h.state = oracle_mod.rename(h.state, old, new)
        h.durable = oracle_mod.rename(h.durable, old, new)
        h.outstanding = oracle_mod.rename(h.outstanding, old, new)

    port._seen_running = lambda self, due, t: True  # type: ignore[method-assign]
    port._fire_certain = fire_certain  # type: ignore[method-assign]
    port.split_timers = False
    # the consumer and mixed oracles: a fixed late_ms margin, no evidence of the target running
    base = consumer_oracle.HypothesisFindings
    saved_cutoff = base._certain_cutoff
    base._certain_cutoff = lambda self, t: t - self.timing.late_ms  # type: ignore[method-assign]
    judge_mod.rename_hypo = rename_hypo
    try:
        with no_split():
            yield
    finally:
        base._certain_cutoff = saved_cutoff  # type: ignore[method-assign]
        del port.split_timers
        (port._seen_running, port._fire_certain, judge_mod.rename_hypo) = saved  # type: ignore[method-assign]


@contextlib.contextmanager
def no_split() -> Iterator[None]:
    """The consumer and mixed oracles without the observation split: the timers a hypothesis fired before a
    request are part of the request's observation (the seed 1 `consumer.offset_commit_exact_epoch`
    false alarm); everything else as now."""
    base = consumer_oracle.HypothesisFindings
    base.split_timers = False
    try:
        yield
    finally:
        base.split_timers = True


def stutter(pid: int, longest_s: float, stop: threading.Event) -> None:
    rnd = random.Random(1)
    while not stop.is_set():
        time.sleep(rnd.uniform(0.2, 1.0))
        if stop.is_set():
            return
        os.kill(pid, signal.SIGSTOP)
        time.sleep(rnd.uniform(0.02, longest_s))
        os.kill(pid, signal.SIGCONT)


#: the oracle variants a run may alternate (module docstring)
VARIANTS = ("before", "nosplit", "noswitch", "after")


@contextlib.contextmanager
def no_switch() -> Iterator[None]:
    """The oracles without the classic oracle's lineage switch (docs/oracle.md#lineage-switch;
    `OraclePort._operate` / `RealTimeSim._switched`)."""
    port = oracle_mod.OraclePort
    port.take_switched = lambda self: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        del port.take_switched


def variant_context(variant: str) -> contextlib.AbstractContextManager[None]:
    if variant == "before":
        return legacy()
    if variant == "nosplit":
        return no_split()
    if variant == "noswitch":
        return no_switch()
    return contextlib.nullcontext()


def one_run(handle: Any, args: argparse.Namespace, protocol: str, variant: str, seed: int) -> Any:
    if protocol in ("consumer", "mixed"):
        # the ci profile as `check` runs it (consumer 6 x 20, mixed 3 x 8: `consumer_check`, `mixed_check`)
        with variant_context(variant):
            return _run_one(
                handle, protocol, real_profile("ci"), None, seed, {}, "protocol", time.monotonic()
            ).result
    examples, profile = (3, "dev") if args.mode == "agree" else (12, "ci")
    inner = get_kit("classic").real_setup(handle, real_profile(profile))[0]

    def port_factory(coord: ClassicCoordinator) -> Any:
        if variant == "before":
            coord = LegacyCoordinator(coord.config, coord.chooser)
        return inner(coord)

    from conformance.engine.run import run_check

    with variant_context(variant):
        return run_check(
            "classic", target="apache-kafka", profile=real_profile(profile), max_examples=examples,
            seed_value=seed, port_factory=port_factory, config=handle.model_config, real_time=True,
        )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=int)
    ap.add_argument("--mode", choices=("agree", "ci"), default="agree")
    ap.add_argument("--protocol", choices=("classic", "consumer", "mixed", "all"), default="classic")
    ap.add_argument("--variants", default="before,after")
    ap.add_argument("--burn", type=int, default=0, help="busy-loop processes beside the run")
    ap.add_argument("--stall", type=float, default=0.0, help="longest SIGSTOP pause of the broker (s)")
    ap.add_argument("--keep", type=Path, default=None, help="write each failure's trace here")
    args = ap.parse_args()
    variants = args.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        ap.error(f"unknown variant(s) {', '.join(unknown)} (known: {', '.join(VARIANTS)})")
    protocols = ("classic", "consumer", "mixed") if args.protocol == "all" else (args.protocol,)
    cells = [(p, v) for p in protocols for v in variants]
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burn)]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
    failed = {c: 0 for c in cells}
    done = {c: 0 for c in cells}
    wall = {c: 0.0 for c in cells}
    loads: list[float] = []
    started = time.time()
    stop = threading.Event()
    try:
        with open_target("apache-kafka") as handle:
            pid = handle.launcher.pids[-1]
            thread = threading.Thread(target=stutter, args=(pid, args.stall, stop), daemon=True)
            if args.stall > 0:
                thread.start()
            try:
                for i in range(args.runs):
                    for protocol, variant in cells:
                        seed = 7 if args.mode == "agree" and protocol == "classic" else i
                        t0 = time.monotonic()
                        result = one_run(handle, args, protocol, variant, seed)
                        found = [(v.invariant, v.message[:200]) for v in result.violations]
                        cell = (protocol, variant)
                        done[cell] += 1
                        failed[cell] += bool(found)
                        wall[cell] += time.monotonic() - t0
                        loads.append(os.getloadavg()[0])
                        print(
                            f"{i} {protocol} {variant} seed {seed} {time.monotonic() - t0:.1f}s "
                            f"load {loads[-1]:.1f} {'FAIL' if found else 'ok'} {found}",
                            flush=True,
                        )
                        if found and args.keep is not None and result.trace is not None:
                            from conformance.formats.trace_file import write_trace

                            args.keep.mkdir(parents=True, exist_ok=True)
                            write_trace(
                                result.trace, args.keep / f"{protocol}-{variant}-{i}-seed{seed}.ndjson"
                            )
            finally:
                stop.set()
                if thread.is_alive():
                    thread.join(timeout=args.stall + 2)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
    finally:
        for p in burners:
            p.kill()
            p.wait()
    print(
        "\n| protocol | oracle | runs | false divergences | wall (s, mean per run) | load average (min-max) |"
    )
    print("|---|---|---|---|---|---|")
    for (p, v), n in done.items():
        what = f"{p} {args.mode}" if p == "classic" else f"{p} ci"
        mean = wall[(p, v)] / n if n else 0.0
        lo, hi = (min(loads), max(loads)) if loads else (0.0, 0.0)
        print(f"| {what} | {v} | {n} | {failed[(p, v)]} | {mean:.1f} | {lo:.1f}-{hi:.1f} |")
    print(
        f"(busy loops {args.burn}, broker stalls up to {args.stall:g} s; "
        f"total wall {time.time() - started:.0f} s, {time.strftime('%H:%M', time.gmtime(started))}-"
        f"{time.strftime('%H:%M', time.gmtime())} UTC)"
    )


if __name__ == "__main__":
    main()
