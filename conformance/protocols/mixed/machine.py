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

from conformance.engine.machine import MachineSettings, bind
from conformance.engine.rules import MEMBER
from conformance.errors import UsageError
from conformance.protocols.mixed.machine_base import CLASSIC_ASSIGNORS, MAX_LIVE, MixedGroupMachine
from conformance.protocols.mixed.trace import TracedMixedRun, make_mixed_run
from model.mixed.state import MigrationPolicy


def make_machine(cfg: MachineSettings) -> type[RuleBasedStateMachine]:
    """The machine for one run: on the model, or in real time on a real coordinator; the wire
    faults only under the `faults` profile (the other profiles keep their rules and draws)."""
    if cfg.port_factory is not None:  # a real coordinator (conformance/protocols/mixed/oracle.py)
        if not cfg.real_time:
            raise UsageError("the mixed-group suite runs on the model or, in real time, on a real target")
        from conformance.protocols.mixed.machine_real import make_real_machine

        return make_real_machine(cfg)
    return bind(MixedMachine, cfg, *((WireFaultRules,) if cfg.wire_faults else ()))


#: (group.max.size of classic groups, group.consumer.max.size) per run, 0 for Kafka's default (no
#: limit): a group at either limit is refused members, and the conversions between the two group
#: types are refused above them (docs/protocol-reference.md#b13). Chosen by the run's drawn
#: coordinator seed, so the draws of every other value stay as they were (and a shrunk seed, 0,
#: has no limit)
SIZE_LIMITS = ((0, 0), (0, 0), (0, 0), (0, 0), (0, 0), (0, 0), (3, 0), (0, 2), (2, 4))


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
    def setup(
        self,
        policy: str,
        assignor: str,
        partitions: int,
        first: list[bool],
        seed: int,
    ) -> None:
        chosen = MigrationPolicy(self.settings.variants.get("migration_policy") or policy)
        setup: dict[str, object] = {"policy": chosen.value, "seed": seed}
        limits = SIZE_LIMITS[seed % len(SIZE_LIMITS)]
        for key, limit in zip(("classic_max_size", "consumer_max_size"), limits, strict=True):
            if limit:
                setup[key] = limit
        self.run = make_mixed_run(setup, self.settings.variants, "--variant")  # its log is the trace
        self.assignor = assignor  # one classic protocol per run, so classic members can share a group
        sizes = "".join(f", {k} {v}" for k, v in setup.items() if k.endswith("max_size"))
        self.steps.append(f"setup policy {chosen.value}, classic assignor {assignor}, t:{partitions}{sizes}")
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
