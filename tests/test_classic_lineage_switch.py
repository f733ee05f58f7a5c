"""A refuted reported hypothesis in the classic oracle (`timer_split.switched_from`), without
a real target: the "target" is a scripted port whose answers come from a second model coordinator.

The oracle keeps both outcomes of an uncertain timer as hypotheses and shows the simulator one of
them. When a later answer refutes the one shown, the next observation must start from the state
the surviving hypothesis had before the operation, not from the refuted one (which never happened
in the target). The consumer and mixed oracles had this first; this is the classic oracle's.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

from conformance.engine.checker import Checker
from conformance.protocols.build import make_classic_sim
from conformance.protocols.classic.oracle import Hypo, OraclePort, Timing
from conformance.protocols.classic.realtime import RealTimeSim
from model.choice import SeededChooser
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import HeartbeatRequest
from model.classic.sim import Send
from model.classic.state import ClassicState, GroupState
from model.result import Delivery

SESSION_MS = 1500


class ScriptedClassicPort(OraclePort):
    """The classic oracle with its wire replaced: a virtual clock (``_collect`` waits by moving it),
    and answers computed at once by ``reference``, a model coordinator standing for the target."""

    def __init__(self, coordinator: ClassicCoordinator, session: Any) -> None:
        super().__init__(coordinator, session)
        self.fake_now = 0
        self.reference = ClassicCoordinator(coordinator.config, SeededChooser(99))
        self.reference_state = ClassicState()

    def clock(self) -> int:
        return self.fake_now

    def sleep_until(self, ms: int) -> list[Delivery]:
        self.fake_now = max(self.fake_now, ms)
        self._target_until(self.fake_now)
        return []

    def _collect(self, timeout: float) -> None:
        self.fake_now += max(1, int(timeout * 1000))
        self._target_until(self.fake_now)

    def _target_until(self, now: int) -> None:
        """The target fires its timers due by ``now``, on time (their answers at the deadline)."""
        while (nxt := self.reference.next_deadline(self.reference_state)) is not None and nxt[0] <= now:
            deadline, gid, key = nxt
            for d in self.reference.fire_timer(self.reference_state, gid, key, deadline).deliveries:
                self.answers[d.ref] = (d.response, deadline)

    def _barrier(self) -> None:
        pass

    def create_topic(self, topic: str, partitions: int) -> None:
        super().create_topic(topic, partitions)
        self.reference.create_topic(self.reference_state, topic, partitions)

    def send(self, ref: int, request: Any, now: int) -> list[Delivery]:
        t = self.clock()
        self._target_until(t)
        self.requests[ref] = (self.current_member, request, getattr(request, "version", 0), t)
        for d in self.reference.handle(self.reference_state, request, ref, t).deliveries:
            self.answers[d.ref] = (d.response, t + 2)
        return self._operate(t, ("send", ref, request))


def scripted_sim(
    names: tuple[str, ...] = ("c1", "c2"),
    partitions: int = 2,
    variants: dict[str, str] | None = None,
    port_class: type[ScriptedClassicPort] = ScriptedClassicPort,
) -> tuple[RealTimeSim, ScriptedClassicPort]:
    """The simulator on the scripted port's clock: members ``names`` on topic t, no rebalance delay."""
    session = SimpleNamespace(
        adapter=SimpleNamespace(proxy=None, alive=lambda: True, take_findings=lambda: []),
        timing=Timing(),
        run_id="t",
        groups=0,
        ops=0,
        compat=[],
        rtt_ms=[],
        next_group=lambda: "g",
        ensure_topic=lambda name: None,
        real_topic=lambda name, partitions: name,
    )
    made: list[ScriptedClassicPort] = []

    def factory(coordinator: ClassicCoordinator) -> ScriptedClassicPort:
        made.append(port_class(coordinator, session))
        return made[-1]

    clients = [{"name": n, "topics": ["t"], "session_timeout_ms": SESSION_MS} for n in names]
    sim = make_classic_sim(
        {"t": partitions},
        clients,
        {"initial_rebalance_delay_ms": 0},
        variants or {},
        port_factory=factory,
        sim_class=RealTimeSim,
    )
    return sim, made[0]


def _observer(sim: RealTimeSim, checker: Checker, seen: list[Any], found: list[str]) -> Any:
    """Check an observation with the ones the simulator split off around it, in order."""

    def observe(obs: Any) -> None:
        if obs is None:
            return
        for o in [*sim.take_pre_observations(), obs, *sim.take_post_observations()]:
            seen.append(o)
            found.extend(v.invariant for v in checker.check(o, len(seen)))

    return observe


def _form_group(sim: RealTimeSim, port: ScriptedClassicPort, observe: Any) -> None:
    for _ in range(6):
        for name in ("c1", "c2"):
            observe(sim.client_step(name))
            port.sleep_until(port.clock() + 20)


def _run(switch: bool) -> tuple[list[Any], list[str], ScriptedClassicPort]:
    """c1 and c2 form a group; then the oracle is made to report a hypothesis in which c2's session
    expired (as it does when that outcome explains the answers so far and the other waits for one),
    and the target answers c1's next heartbeat NONE: c2 never expired there."""
    sim, port = scripted_sim()
    if not switch:
        port.take_switched = lambda: None  # type: ignore[method-assign]
    checker = Checker("classic")
    seen: list[Any] = []
    found: list[str] = []
    observe = _observer(sim, checker, seen, found)
    _form_group(sim, port, observe)
    group = port.hypos[0].state.groups["g"]
    assert group.state == GroupState.STABLE and len(group.members) == 2, group
    # the refuted-to-be hypothesis: c2's session expiry fired (the group prepares a rebalance)
    c2 = sim.clients["c2"].member_id
    expired = copy.deepcopy(port.hypos[0])
    key, timer = next((k, tm) for k, tm in expired.state.groups["g"].timers.items() if c2 in k)
    port.coordinator.fire_timer(expired.state, "g", key, timer.deadline)
    assert c2 not in expired.state.groups["g"].members
    port.hypos = [expired, *port.hypos]
    sim.world = sim.snapshot(None, False)  # the observation before showed it
    shown = sim.world.group
    assert shown is not None and shown.state == GroupState.PREPARING_REBALANCE
    obs = sim.client_step("c1")  # a heartbeat: the target answers NONE
    assert obs is not None and isinstance(obs.event.request, HeartbeatRequest)
    observe(obs)
    return seen, found, port


def test_the_observation_after_a_refuted_hypothesis_starts_from_the_survivor() -> None:
    seen, found, port = _run(True)
    last = seen[-1]
    assert isinstance(last.event, Send)
    assert last.before.group is not None and last.before.group.state == GroupState.STABLE
    assert len(last.before.group.members) == 2
    assert last.after.group is not None and len(last.after.group.members) == 2
    assert found == []
    assert isinstance(port.hypos[0], Hypo) and port.hypos[0].parent is None  # no lineage chains


def test_without_the_switch_the_observation_starts_from_the_refuted_state() -> None:
    seen, _found, _port = _run(False)
    last = seen[-1]
    assert last.before.group is not None and last.before.group.state == GroupState.PREPARING_REBALANCE
    assert len(last.before.group.members) == 1 and len(last.after.group.members) == 2


def _expire_all(coordinator: ClassicCoordinator, state: ClassicState) -> list[tuple[GroupState, GroupState]]:
    """Fire the group's timers in deadline order until no member is left (the session expiries, the
    join phase they open); the group transitions that went through."""
    moves = []
    while state.groups["g"].members or state.groups["g"].state != GroupState.EMPTY:
        nxt = coordinator.next_deadline(state)
        assert nxt is not None, state.groups["g"]
        deadline, gid, key = nxt
        was = state.groups[gid].state
        coordinator.fire_timer(state, gid, key, deadline)
        if state.groups[gid].state != was:
            moves.append((was, state.groups[gid].state))
    return moves


def test_a_switch_skips_the_survivors_unshown_transitions() -> None:
    """Run 4 of `benchmarks/results/oracle_false_alarms.md`, `classic.generation_bump_once` "generation 4 -> 4 with 1 completed join phase(s)"
    at ci seed 6 on Apache Kafka 4.4.0, no load: the surviving lineage had expired both members in
    an earlier operation (the group went PreparingRebalance -> Empty, generation + 1) while the
    simulator was shown the other one. The switch starts the next observation from the survivor's
    state, so its transitions must start there too: the ones that led to it are in that state."""
    sim, port = scripted_sim()
    checker = Checker("classic")
    found: list[str] = []
    _form_group(sim, port, _observer(sim, checker, [], found))
    assert found == []
    shown = port.hypos[0]
    assert shown.state.groups["g"].state == GroupState.STABLE and shown.reported == len(shown.transitions)
    generation = shown.state.groups["g"].generation
    gone = copy.deepcopy(shown)
    gone.transitions += _expire_all(port.coordinator, gone.state)
    assert gone.state.groups["g"].state == GroupState.EMPTY
    assert gone.state.groups["g"].generation == generation + 1
    _expire_all(port.reference, port.reference_state)  # the target expired them too
    port.hypos = [shown, gone]
    obs = sim.client_step("c1")  # a heartbeat: the target answers UNKNOWN_MEMBER_ID
    assert obs is not None and isinstance(obs.event.request, HeartbeatRequest)
    assert port.hypos[0].state.groups["g"].state == GroupState.EMPTY  # the survivor is reported now
    assert obs.before.group is not None and obs.before.group.generation == generation + 1
    assert obs.after.transitions == ()
    assert checker.check(obs, 1) == []
