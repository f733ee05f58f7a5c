"""A Hypothesis RuleBasedStateMachine over KIP-848 mixed groups (docs/protocol-reference.md#b13).

Classic consumers (`model.classic.client`, eager or cooperative, dynamic or static, JoinGroup v3/v4/v9)
and KIP-848 consumers (`model.consumer.client`) share one group id on a `MixedCoordinator` under a
drawn ``group.consumer.migration.policy``: members come and go (LeaveGroup, leave with -1/-2),
crash, the coordinator fails over, time passes; under the `faults` profile members' requests also
lose their answers, are cut, duplicated or held on the wire (`MixedRun`). The group is upgraded, downgraded and replaced as
the rules allow. Every consumer and mixed invariant, and the classic invariants that read only the
group (`CLASSIC_STATE_INVARIANTS`, on classic groups), are checked after every step.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from conformance.engine.checker import Checker
from conformance.errors import UsageError
from conformance.protocols.classic.machine import InvariantViolation, MachineSettings
from conformance.protocols.mixed.trace import TracedMixedRun, make_mixed_run
from model.mixed.state import MigrationPolicy
from model.observation import Observation

CLASSIC_ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")
MAX_LIVE = 5


def make_machine(cfg: MachineSettings) -> type[RuleBasedStateMachine]:
    checker = cfg.checker or Checker("mixed")
    if cfg.port_factory is not None:  # a real coordinator (conformance/protocols/mixed/oracle.py)
        if not cfg.real_time:
            raise UsageError("the mixed-group suite runs on the model or, in real time, on a real target")
        from conformance.protocols.mixed.machine_real import make_real_machine

        return make_real_machine(cfg)
    fixed_policy = cfg.variants.get("migration_policy")

    class MixedMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.run: TracedMixedRun | None = None
            self.assignor = "range"
            self.count = 0
            self.steps: list[str] = []
            self.observations: list[Observation[Any]] = []

        @initialize(
            policy=st.sampled_from([p.value for p in MigrationPolicy]),
            assignor=st.sampled_from(CLASSIC_ASSIGNORS),
            partitions=st.integers(2, 6),
            first=st.lists(st.booleans(), min_size=2, max_size=3),
            seed=st.integers(0, 2**16),
        )
        def setup(self, policy: str, assignor: str, partitions: int, first: list[bool], seed: int) -> None:
            chosen = MigrationPolicy(fixed_policy or policy)
            setup = {"policy": chosen.value, "seed": seed}
            self.run = make_mixed_run(setup, cfg.variants, "--variant")  # its log is the trace
            self.assignor = assignor  # one classic protocol per run, so classic members can share a group
            self.steps.append(f"setup policy {chosen.value}, classic assignor {assignor}, t:{partitions}")
            self._do(lambda: self._topic(partitions))
            for classic in first:
                self._add(classic, None, 9)

        # ------------------------------------------------------------ plumbing
        def _topic(self, partitions: int) -> None:
            assert self.run is not None
            self.run.topic("t", partitions)

        def _do(self, action: Any) -> None:
            assert self.run is not None
            mark = len(self.run.observations)
            action()
            fresh = self.run.observations[mark:]
            del self.run.observations[:]  # keep memory flat; the machine keeps its own list
            for obs in fresh:
                self.observations.append(obs)
                found = checker.check(obs, self.run.step_of(obs))
                self.run.note_checks(
                    obs,
                    checker.last_checked,
                    [(v.invariant, v.message) for v in found],
                    checker.last_sometimes,
                )
                if found:
                    raise InvariantViolation(found, list(self.steps), list(self.observations), self.run)

        def _live(self) -> list[str]:
            assert self.run is not None
            return [n for n in sorted(self.run.clients) if n not in self.run.stopped]

        def _add(self, classic: bool, instance: str | None, join_version: int) -> None:
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
                    session_timeout_ms=10_000,
                    rebalance_timeout_ms=20_000,
                )
            else:
                name = f"k{self.count}"
                self.run.add_consumer(name, topics=("t",), instance_id=instance)
            self.steps.append(f"start {name}" + (f" (instance {instance})" if instance else ""))

        def _instance(self, name: str) -> str | None:
            """The client's ``group.instance.id`` (classic: its config; KIP-848: the consumer's own)."""
            assert self.run is not None
            c = self.run.clients[name]
            found = getattr(c, "instance_id", None) or getattr(
                getattr(c, "config", None), "instance_id", None
            )
            return str(found) if found else None

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
        @rule(i=st.integers(0, 7))
        def stop(self, i: int) -> None:
            assert self.run is not None
            live = self._live()
            name = live[i % len(live)]
            self.steps.append(f"stop {name}")
            self._do(lambda: self.run.stop(name) if self.run else None)

        @precondition(lambda self: self.ready and bool(self._live()))
        @rule(i=st.integers(0, 7))
        def roll(self, i: int) -> None:
            """One step of a rolling upgrade or downgrade: a member is replaced by one speaking the
            other protocol, then the group settles for a while. A static member's replacement keeps
            its ``group.instance.id``, as a rolled process does, so a classic static member can
            replace the last consumer-protocol member (the downgrade of
            ``validateOnlineDowngradeWithReplacedMemberId``, docs/protocol-reference.md#b13)."""
            assert self.run is not None
            live = self._live()
            name = live[i % len(live)]
            instance = self._instance(name)
            self.steps.append(f"roll {name}")
            self._do(lambda: self.run.stop(name) if self.run else None)
            self._add(name.startswith("k"), instance, 9)
            self._do(lambda: self.run.run_for(20_000) if self.run else None)

        @precondition(lambda self: self.ready and bool(self._live()))
        @rule(i=st.integers(0, 7))
        def crash(self, i: int) -> None:
            assert self.run is not None
            live = self._live()
            name = live[i % len(live)]
            self.steps.append(f"crash {name}")
            self._do(lambda: self.run.crash(name) if self.run else None)  # a held request arrives

        @precondition(lambda self: self.ready)
        @rule(ms=st.sampled_from((1_000, 3_000, 10_000, 30_000)))
        def run_for(self, ms: int) -> None:
            self.steps.append(f"run {ms} ms")
            self._do(lambda: self.run.run_for(ms) if self.run else None)

        @precondition(lambda self: self.ready)
        @rule()
        def failover(self) -> None:
            self.steps.append("coordinator failover")
            self._do(lambda: self.run.failover() if self.run else None)

        if cfg.wire_faults:  # profile `faults` only: the other profiles keep their rules and draws

            @precondition(lambda self: self.ready and bool(self._live()))
            @rule(
                i=st.integers(0, 7),
                kind=st.sampled_from(
                    ("lose_response", "cut_connection", "duplicate_request", "delay_request")
                ),
            )
            def wire_fault(self, i: int, kind: str) -> None:
                """The member's next request loses its answer, is cut, sent twice or held on
                the wire (`MixedRun`); it happens at the next tick."""
                assert self.run is not None
                live = self._live()
                name = live[i % len(live)]
                self.steps.append(f"{kind} {name}")
                self._do(lambda: getattr(self.run, kind)(name) if self.run else None)

            @precondition(lambda self: self.ready and bool(self.run.wire_held))
            @rule()
            def release(self) -> None:
                assert self.run is not None
                for name in sorted(self.run.wire_held):
                    self.steps.append(f"release {name}")
                    self._do(lambda name=name: self.run.release(name) if self.run else None)

    return MixedMachine
