"""The mixed-group machine against a real coordinator (docs/protocol-reference.md#b13).

Classic members (JoinGroup v9, one classic assignor per run) and KIP-848 members share ONE real
group through `MixedOraclePort`. Each example starts with the three moves an online upgrade is
made of: a classic member forms a classic group alone, a consumer-protocol member (the *anchor*)
joins and the group is upgraded online, a second classic member joins the consumer group and the
first is told to rejoin. Then members come and go, crash, time passes, and the `downgrade` rule
lets the group fall back: every member but the anchor and one classic member leaves, then the
anchor leaves and the group becomes a classic group; a new anchor upgrades it again.

While the group is a consumer group, every request is answered at once (GMM
``classicGroupJoinToConsumerGroup`` completes from ``appendFuture``, apache/kafka@1eb7644 L2084);
a classic group here never has more than one member, so its JoinGroup is never parked waiting for
others (docs/protocol-reference.md#a: the join phase completes when every known member has
rejoined). That keeps every verdict independent of request ordering across connections.
Coordinator failover (profile `faults`) restarts the target with at most one classic member live,
the group a consumer group or a classic one (`conformance.protocols.mixed.failover`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from conformance.engine.legal import LegalRange
from conformance.engine.machine import MachineSettings, bind
from conformance.engine.rules import MEMBER
from conformance.protocols.mixed.machine_base import MixedGroupMachine
from conformance.protocols.mixed.realtime import REAL_TICK_MS, real_mixed_run

CLASSIC_ASSIGNORS = ("range", "cooperative-sticky")
MAX_LIVE = 4
#: classic members' timeouts on a real clock (the launchers allow session timeouts from 500 ms)
CLASSIC_SESSION_MS = 2_000
CLASSIC_REBALANCE_MS = 4_000
SETTLE_MS = 1_500


def make_real_machine(cfg: MachineSettings) -> type[RuleBasedStateMachine]:
    """The machine for one real-time run; failover and the wire faults only under `faults`."""
    return bind(RealMixedMachine, cfg, *((RealFaultRules,) if cfg.wire_faults else ()))


class RealMixedMachine(MixedGroupMachine):
    """Mixed groups on a real coordinator: ``settings.port_factory(seed, variants)`` makes the port."""

    classic_session_ms = CLASSIC_SESSION_MS
    classic_rebalance_ms = CLASSIC_REBALANCE_MS
    consumer_rebalance_ms: int | None = CLASSIC_REBALANCE_MS
    settle_ms = first_settle_ms = SETTLE_MS

    def __init__(self, settings: MachineSettings, checker: Any = None) -> None:
        super().__init__(settings, checker)
        self.anchor: str | None = None

    # ------------------------------------------------------------ plumbing
    def _check_port(self) -> None:
        if self.run.port.unsupported is not None:  # never by these rules (module docstring): a suite bug
            from conformance.errors import TargetError

            raise TargetError(f"the mixed machine left what the oracle follows: {self.run.port.unsupported}")

    def _held_ok(self) -> list[str]:
        """Members whose request may be held: not the anchor (`delay_request`)."""
        return [n for n in self._live() if n != self.anchor]

    def _classic_live(self) -> list[str]:
        return [n for n in self._live() if n.startswith("c")]

    def _settle(self, ms: int | None = None) -> None:
        ms = self.settle_ms if ms is None else ms
        self._do(f"run {ms} ms", lambda: self.run.run_for(ms) if self.run else None)

    def _fit_timeouts(self, classic: Any) -> None:
        """Classic members' timeouts inside the target's legal session range (its learned
        ``group.min/max.session.timeout.ms``, `conformance.engine.legal`), the settle periods
        stretched with them; the first settle also waits out the initial rebalance delay."""
        legal = LegalRange(classic.min_session_timeout_ms, classic.max_session_timeout_ms)
        self.classic_session_ms = legal.clamp(CLASSIC_SESSION_MS)
        factor = max(1.0, self.classic_session_ms / CLASSIC_SESSION_MS)
        self.classic_rebalance_ms = self.consumer_rebalance_ms = int(CLASSIC_REBALANCE_MS * factor)
        self.settle_ms = int(SETTLE_MS * factor)
        self.first_settle_ms = self.settle_ms + classic.initial_rebalance_delay_ms

    def _crashed_classic_left_ms(self) -> int:
        """How long a crashed classic member may still be in the group: until its session timeout
        has passed since the crash, plus a settle. Converted to a classic group with it, the group
        would have several classic members whose joins park (module docstring); with Kafka's
        default minimum session of 6 s a crash shortly before a downgrade left one behind (stock
        Apache Kafka 4.4.0, mixed ci seed 1)."""
        crashed = getattr(self, "classic_crash_ms", None)
        if crashed is None or self.run is None:
            return 0
        return max(0, crashed + self.classic_session_ms + self.settle_ms - self.run.now)

    @property
    def anchored(self) -> bool:
        return self.run is not None and self.anchor is not None

    # ------------------------------------------------------------ set-up: form, upgrade, rejoin
    @initialize(
        assignor=st.sampled_from(CLASSIC_ASSIGNORS),
        partitions=st.integers(2, 4),
        seed=st.integers(0, 2**16),
    )
    def setup(self, assignor: str, partitions: int, seed: int) -> None:
        cfg = self.settings
        assert cfg.port_factory is not None
        port = cfg.port_factory(seed, cfg.variants)
        self.run = real_mixed_run(port, {"seed": seed}, cfg.variants)
        self._fit_timeouts(port.coordinator.config.classic)
        self.assignor = assignor
        self.steps.append(f"setup classic assignor {assignor}, t:{partitions}, seed {seed}")
        self._do("topic t", lambda: self.run.topic("t", partitions) if self.run else None)
        self._add(True)
        self._settle(self.first_settle_ms)  # a classic group of one, Stable
        self.anchor = self._add(False)
        self._settle()  # upgraded online by the anchor's first heartbeat
        self._add(True)
        self._settle()  # the first classic member is told to rejoin

    # ------------------------------------------------------------ rules
    @precondition(lambda self: self.anchored and len(self._live()) < MAX_LIVE)
    @rule(classic=st.booleans(), static=st.booleans())
    def start(self, classic: bool, static: bool) -> None:
        assert self.run is not None
        used = {
            getattr(c, "instance_id", None) or getattr(getattr(c, "config", None), "instance_id", None)
            for n, c in self.run.clients.items()
            if n not in self.run.stopped
        }
        free = [i for i in ("i1", "i2") if i not in used]
        self._add(classic, free[0] if static and free else None)

    @precondition(lambda self: self.anchored and len(self._live()) > 1)
    @rule(i=MEMBER)
    def stop(self, i: int) -> None:
        others = [n for n in self._live() if n != self.anchor]
        name = others[i % len(others)]
        self._do(f"stop {name}", lambda: self.run.stop(name) if self.run else None)

    @precondition(lambda self: self.anchored and len(self._live()) > 1)
    @rule(i=MEMBER)
    def crash(self, i: int) -> None:
        assert self.run is not None
        others = [n for n in self._live() if n != self.anchor]
        name = others[i % len(others)]
        self._do(f"crash {name}", lambda: self.run.crash(name) if self.run else None)
        if name.startswith("c"):
            self.classic_crash_ms = self.run.now

    @precondition(lambda self: self.run is not None)
    @rule(ms=st.sampled_from((500, 1_500, 3_000)))
    def run_for(self, ms: int) -> None:
        self._settle(ms)

    @precondition(lambda self: self.anchored and bool(self._classic_live()))
    @rule()
    def downgrade(self) -> None:
        """Only the anchor and one classic member stay; the anchor leaves: a classic group again."""
        assert self.run is not None
        keep = self._classic_live()[0]
        for name in [n for n in self._live() if n not in (keep, self.anchor)]:
            self._do(f"stop {name}", partial(self.run.stop, name))
        self._settle(max(self.settle_ms, self._crashed_classic_left_ms()))
        anchor, self.anchor = self.anchor, None
        self._do(f"stop {anchor} (downgrade)", lambda: self.run.stop(anchor) if self.run and anchor else None)
        self._settle()

    @precondition(lambda self: self.run is not None and self.anchor is None)
    @rule()
    def upgrade(self) -> None:
        """A consumer-protocol member joins the classic group (of at most one member)."""
        self.anchor = self._add(False)
        self._settle()


class RealFaultRules:
    """Profile `faults`: coordinator failover and wire faults through the fault proxy
    (`mixed_failover`, `mixed_faults`). A mixin of `RealMixedMachine`."""

    run: Any
    steps: list[str]
    _live: Callable[[], list[str]]
    _classic_live: Callable[[], list[str]]
    _held_ok: Callable[[], list[str]]
    _do: Callable[[str | None, Callable[[], Any]], None]
    _settle: Callable[..., None]

    @precondition(
        lambda self: (
            len(self._classic_live()) <= 1 and self.run is not None and self.run.port.supports_failover
        )
    )
    @rule()
    def failover(self) -> None:
        """The target restarts (`mixed_failover`), the group a consumer group or, after a
        downgrade, a classic group (reloaded from its last GroupMetadata record). At most one
        classic member is live, so a group downgraded while the members expire (a crash
        restart) is a classic group of at most one member, as everywhere in this machine."""
        from conformance.protocols.mixed.failover import restart_allowed

        assert self.run is not None
        why = restart_allowed(self.run.port)
        if why is not None or not self.run.port.restart_left():
            self.steps.append(f"coordinator failover skipped: {why or 'the run has no restart left'}")
            return
        self._do("coordinator failover", lambda: self.run.failover() if self.run else None)
        self._settle()

    @precondition(lambda self: self.run is not None and bool(self._live()))
    @rule(i=MEMBER, kind=st.sampled_from(("lose_response", "cut_connection", "duplicate_request")))
    def wire_fault(self, i: int, kind: str) -> None:
        """The member's next request: its answer lost, its connection cut under it, or sent
        twice (`MixedRun`); it happens within the half second that follows."""
        live = self._live()
        name = live[i % len(live)]
        self._do(f"{kind} {name}", lambda: getattr(self.run, kind)(name) if self.run else None)
        self._settle(2 * REAL_TICK_MS)

    @precondition(lambda self: self.run is not None and not self.run.wire_held and bool(self._held_ok()))
    @rule(i=MEMBER)
    def delay_request(self, i: int) -> None:
        """The member's next request is held on the wire (until `release`, its stop or crash,
        or a failover) while the others go on. Never the anchor's: its session could expire
        meanwhile and downgrade a group of several classic members (whose joins park)."""
        names = self._held_ok()
        name = names[i % len(names)]
        self._do(f"delay_request {name}", lambda: self.run.delay_request(name) if self.run else None)
        self._settle(2 * REAL_TICK_MS)

    @precondition(lambda self: self.run is not None and bool(self.run.wire_held))
    @rule()
    def release(self) -> None:
        assert self.run is not None
        for name in sorted(self.run.wire_held):
            self._do(f"release {name}", partial(self.run.release, name))
