"""A join completion answers every member at once, each on its own connection, so the leader's
answer (the member list) may reach the oracle before the followers' (their own member ids). With
JoinGroup v3 (no KIP-394 round trip) new members have provisional ids in the model, and members
with the same metadata and no instance id can be told apart only by their own answers: the
comparison of the leader's list must wait for them (classic ci seed 5 on Apache Kafka 4.4.0
diverged this way on a quiet machine only; `benchmarks/results/oracle_false_alarms.md`). No broker: a scripted target (a second model
coordinator) that hands the followers' answers over one collect later than the leader's."""

from __future__ import annotations

from typing import Any

from test_classic_lineage_switch import ScriptedClassicPort, scripted_sim

from conformance.protocols.classic.oracle import PROVISIONAL
from model.classic.messages import JoinGroupResponse
from model.classic.state import GroupState


class FollowersLatePort(ScriptedClassicPort):
    """The target's answers to followers' JoinGroups arrive one `_collect` after the rest."""

    def __init__(self, coordinator: Any, session: Any) -> None:
        super().__init__(coordinator, session)
        self.held: dict[int, Any] = {}
        self.released: set[int] = set()
        self.late = 0

    def _target_until(self, now: int) -> None:
        super()._target_until(now)
        for ref, (resp, _at) in list(self.answers.items()):
            follower = isinstance(resp, JoinGroupResponse) and resp.error == 0 and not resp.members
            if follower and ref not in self.released:
                self.held[ref] = self.answers.pop(ref)
                self.late += 1

    def _collect(self, timeout: float) -> None:
        for ref, answer in self.held.items():  # what was held since the last collect
            self.answers[ref] = answer
            self.released.add(ref)
        self.held = {}
        super()._collect(timeout)


def _run(port_class: type[ScriptedClassicPort]) -> tuple[ScriptedClassicPort, list[str]]:
    sim, port = scripted_sim(("c1", "c2", "c3"), 3, {"join_version": "3"}, port_class)
    for _ in range(8):
        for name in ("c1", "c2", "c3"):
            sim.client_step(name)
            port.sleep_until(port.clock() + 20)
    return port, [f.message for f in port.take_findings()]


def test_the_leaders_list_waits_for_the_followers_answers() -> None:
    port, findings = _run(FollowersLatePort)
    assert port.late >= 2  # at least one completion whose followers' answers came late
    assert findings == []
    group = port.hypos[0].state.groups["g"]
    assert group.state == GroupState.STABLE and len(group.members) == 3
    assert not any(PROVISIONAL in m for m in group.members)


def test_in_order_answers_need_no_wait() -> None:
    port, findings = _run(ScriptedClassicPort)
    assert findings == []
    assert len(port.hypos[0].state.groups["g"].members) == 3
