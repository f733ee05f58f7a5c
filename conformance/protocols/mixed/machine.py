"""A Hypothesis state machine over KIP-848 mixed groups (docs/protocol-reference.md#b13).

Classic consumers (`model.classic.client`, eager or cooperative, dynamic or static, JoinGroup v3/v4/v9)
and KIP-848 consumers (`model.consumer.client`) share one group id on a `MixedCoordinator` under a
drawn ``group.consumer.migration.policy``: members come and go (LeaveGroup, leave with -1/-2),
crash, the coordinator fails over, time passes; under the `faults` profile members' requests also
lose their answers, are cut, duplicated or held on the wire (`MixedRun`). The group is upgraded,
downgraded and replaced as the rules allow. Every consumer and mixed invariant, and the classic
invariants that read only the group (`CLASSIC_STATE_INVARIANTS`, on classic groups), are checked
after every step. Against a real coordinator: conformance/protocols/mixed/machine_real.py.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from conformance.engine.machine import GroupMachine, MachineSettings, bind
from conformance.engine.rules import MEMBER
from conformance.errors import UsageError
from conformance.protocols.mixed.trace import TracedMixedRun, make_mixed_run
from model.mixed.state import MigrationPolicy

CLASSIC_ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")
MAX_LIVE = 5


def make_machine(cfg: MachineSettings) -> type[RuleBasedStateMachine]:
    """The machine for one run: on the model, or in real time on a real coordinator; the wire
    faults only under the `faults` profile (the other profiles keep their rules and draws)."""
    if cfg.port_factory is not None:  # a real coordinator (conformance/protocols/mixed/oracle.py)
        if not cfg.real_time:
            raise UsageError("the mixed-group suite runs on the model or, in real time, on a real target")
        from conformance.protocols.mixed.machine_real import make_real_machine

        return make_real_machine(cfg)
    return bind(MixedMachine, cfg, *((WireFaultRules,) if cfg.wire_faults else ()))


class MixedGroupMachine(GroupMachine):
    """What both mixed machines share: the run, its members, and how a step's observations are judged."""

    protocol = "mixed"
    #: classic members' timeouts (ms)
    classic_session_ms = 10_000
    classic_rebalance_ms = 20_000
    #: KIP-848 members' rebalance timeout (ms; None: the client's default)
    consumer_rebalance_ms: int | None = None

    def __init__(self, settings: MachineSettings, checker: Any = None) -> None:
        super().__init__(settings, checker)
        self.run: Any = None  # a TracedMixedRun (the model) or a RealMixedRun
        self.assignor = "range"
        self.count = 0

    def _do(self, what: str | None, action: Callable[[], Any]) -> None:
        """Note ``what``, run ``action``, judge every observation it made."""
        assert self.run is not None
        if what is not None:
            self.steps.append(what)
        mark = len(self.run.observations)
        action()
        self._check_port()
        fresh = self.run.observations[mark:]
        del self.run.observations[:]  # keep memory flat; the machine keeps its own list
        for obs in fresh:
            self.observations.append(obs)
            self.judge(obs, self.run.step_of(obs), self.run)

    def _check_port(self) -> None:
        """After each action: whatever the port noticed that ends the run (a real target's)."""

    def _live(self) -> list[str]:
        assert self.run is not None
        return [n for n in sorted(self.run.clients) if n not in self.run.stopped]

    def _add(self, classic: bool, instance: str | None = None, join_version: int = 9) -> str:
        assert self.run is not None
        self.count += 1
        if classic:
            name = f"c{self.count}"
            self.run.add_classic(
                name,
                topics=("t",),
                assignors=(self.assignor,),
                instance_id=instance,
                join_version=join_version,
                session_timeout_ms=self.classic_session_ms,
                rebalance_timeout_ms=self.classic_rebalance_ms,
            )
        else:
            name = f"k{self.count}"
            timeouts = (
                {}
                if self.consumer_rebalance_ms is None
                else {"rebalance_timeout_ms": self.consumer_rebalance_ms}
            )
            self.run.add_consumer(name, topics=("t",), instance_id=instance, **timeouts)
        self.steps.append(f"start {name}" + (f" (instance {instance})" if instance else ""))
        return name

    def _instance(self, name: str) -> str | None:
        """The client's ``group.instance.id`` (classic: its config; KIP-848: the consumer's own)."""
        assert self.run is not None
        c = self.run.clients[name]
        found = getattr(c, "instance_id", None) or getattr(getattr(c, "config", None), "instance_id", None)
        return str(found) if found else None


class MixedMachine(MixedGroupMachine):
    """Mixed groups on the model's `MixedCoordinator`."""

    run: TracedMixedRun | None

    @initialize(
        policy=st.sampled_from([p.value for p in MigrationPolicy]),
        assignor=st.sampled_from(CLASSIC_ASSIGNORS),
        partitions=st.integers(2, 6),
        first=st.lists(st.booleans(), min_size=2, max_size=3),
        seed=st.integers(0, 2**16),
    )
    def setup(self, policy: str, assignor: str, partitions: int, first: list[bool], seed: int) -> None:
        chosen = MigrationPolicy(self.settings.variants.get("migration_policy") or policy)
        setup = {"policy": chosen.value, "seed": seed}
        self.run = make_mixed_run(setup, self.settings.variants, "--variant")  # its log is the trace
        self.assignor = assignor  # one classic protocol per run, so classic members can share a group
        self.steps.append(f"setup policy {chosen.value}, classic assignor {assignor}, t:{partitions}")
        self._do(None, lambda: self.run.topic("t", partitions) if self.run else None)
        for classic in first:
            self._add(classic, None, 9)

    @property
    def ready(self) -> bool:
        return self.run is not None

    # ------------------------------------------------------------ rules
    @precondition(lambda self: self.ready and len(self._live()) < MAX_LIVE)
    @rule(classic=st.booleans(), static=st.booleans(), join_version=st.sampled_from((3, 4, 9)))
    def start(self, classic: bool, static: bool, join_version: int) -> None:
        assert self.run is not None
        used = {self._instance(n) for n in self._live()}
        free = [i for i in ("i1", "i2") if i not in used]
        self._add(classic, free[0] if static and free else None, join_version)

    @precondition(lambda self: self.ready and bool(self._live()))
    @rule(i=MEMBER)
    def stop(self, i: int) -> None:
        live = self._live()
        name = live[i % len(live)]
        self._do(f"stop {name}", lambda: self.run.stop(name) if self.run else None)

    @precondition(lambda self: self.ready and bool(self._live()))
    @rule(i=MEMBER)
    def roll(self, i: int) -> None:
        """One step of a rolling upgrade or downgrade: a member is replaced by one speaking the
        other protocol, then the group settles for a while. A static member's replacement keeps
        its ``group.instance.id``, as a rolled process does, so a classic static member can
        replace the last consumer-protocol member (the downgrade of
        ``validateOnlineDowngradeWithReplacedMemberId``, docs/protocol-reference.md#b13)."""
        live = self._live()
        name = live[i % len(live)]
        instance = self._instance(name)
        self._do(f"roll {name}", lambda: self.run.stop(name) if self.run else None)
        self._add(name.startswith("k"), instance, 9)
        self._do(None, lambda: self.run.run_for(20_000) if self.run else None)

    @precondition(lambda self: self.ready and bool(self._live()))
    @rule(i=MEMBER)
    def crash(self, i: int) -> None:
        live = self._live()
        name = live[i % len(live)]
        self._do(
            f"crash {name}", lambda: self.run.crash(name) if self.run else None
        )  # a held request arrives

    @precondition(lambda self: self.ready)
    @rule(ms=st.sampled_from((1_000, 3_000, 10_000, 30_000)))
    def run_for(self, ms: int) -> None:
        self._do(f"run {ms} ms", lambda: self.run.run_for(ms) if self.run else None)

    @precondition(lambda self: self.ready)
    @rule()
    def failover(self) -> None:
        self._do("coordinator failover", lambda: self.run.failover() if self.run else None)


class WireFaultRules:
    """Profile `faults`: the member's next request loses its answer, is cut, sent twice or held on
    the wire (`MixedRun`); it happens at the next tick. A mixin of `MixedMachine`."""

    run: Any
    _live: Callable[[], list[str]]
    _do: Callable[[str | None, Callable[[], Any]], None]

    @precondition(lambda self: self.ready and bool(self._live()))
    @rule(
        i=MEMBER,
        kind=st.sampled_from(("lose_response", "cut_connection", "duplicate_request", "delay_request")),
    )
    def wire_fault(self, i: int, kind: str) -> None:
        live = self._live()
        name = live[i % len(live)]
        self._do(f"{kind} {name}", lambda: getattr(self.run, kind)(name) if self.run else None)

    @precondition(lambda self: self.ready and bool(self.run.wire_held))
    @rule()
    def release(self) -> None:
        assert self.run is not None
        for name in sorted(self.run.wire_held):
            self._do(f"release {name}", partial(self.run.release, name))
