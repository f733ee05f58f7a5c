"""Running classic abstract steps on the model, recorded as a replayable trace (docs/traces.md, docs/proofs.md).

Members are slots ``c0..c{M-1}`` of a `TracedClassicSim` that never act on their own: every step is
a raw request on a slot's behalf (JoinGroup v3, SyncGroup, LeaveGroup), time advanced exactly to
the join-phase timer, or a coordinator failover. Member ids are the ones the coordinator generated
(seeded, so a replay of the trace regenerates them). After each step the model's group is
abstracted to `conformance.smt.classic.ConcreteGroup` and, for a counterexample, compared with the
solver's state; the registry's predicates run through the suite's `Checker`, and the trace is
written in the trace format, so `groupcheck replay` re-runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.engine.checker import Checker, Violation
from conformance.formats.trace_file import Trace
from conformance.protocols.build import make_classic_sim
from conformance.protocols.classic.trace import TracedClassicSim, to_trace
from conformance.smt.classic import COMPLETING, EMPTY, NO_LEADER, PREPARING, STABLE, ConcreteGroup
from conformance.smt.counterexample import proof_trace
from model.classic.messages import (
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.classic.records import GroupMetadataRecord
from model.classic.state import GroupState
from model.embedded import Assignment, Subscription, decode_assignment, encode_assignment, encode_subscription
from model.errors import ErrorCode

GROUP = "g"
TOPIC = "t"
SESSION_MS = 1_800_000  # never expires within a counterexample
REBALANCE_MS = 1_000
STATES = {
    GroupState.EMPTY: EMPTY,
    GroupState.PREPARING_REBALANCE: PREPARING,
    GroupState.COMPLETING_REBALANCE: COMPLETING,
    GroupState.STABLE: STABLE,
}
PROTOCOLS = (("range", encode_subscription(Subscription(topics=(TOPIC,)))),)


@dataclass(frozen=True)
class Action:
    kind: str  # join | sync | leave | timer | failover
    member: int = -1
    generation: int = 0
    assignment: tuple[tuple[int, tuple[int, ...]], ...] | None = None
    """A leader's sync: partitions of the topic per slot (default: partition 0 for every member)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.member >= 0:
            out["member"] = f"c{self.member}"
        if self.kind == "sync":
            out["generation"] = self.generation
        return out


@dataclass
class Driver:
    sim: TracedClassicSim
    members: int
    ids: dict[int, str] = field(default_factory=dict)
    checker: Checker = field(default_factory=lambda: Checker("classic"))
    violations: list[Violation] = field(default_factory=list)
    steps: int = 0
    sync_refs: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Ref of every SyncGroup sent -> (slot, generation it carried)."""
    answers: list[tuple[int, int, frozenset[int]]] = field(default_factory=list)
    """SyncGroup answers without error of the last step: (slot, generation sent, partitions)."""

    def slot_of(self, member_id: str | None) -> int:
        for slot, mid in self.ids.items():
            if mid == member_id:
                return slot
        return NO_LEADER

    def apply(self, action: Action) -> None:
        """Do one abstract step on the model and check every classic invariant after it."""
        sim, name = self.sim, f"c{action.member}"
        before = self._member_ids()
        if action.kind == "join":
            mid = self.ids.get(action.member, "") if action.member in self._present_slots() else ""
            request = JoinGroupRequest(
                GROUP, mid, "consumer", PROTOCOLS, SESSION_MS, REBALANCE_MS, client_id=name, version=3
            )
            obs = sim.send_raw(name, request)
            new = self._member_ids() - before
            if not mid and new:
                (self.ids[action.member],) = tuple(new)
        elif action.kind == "sync":
            mid = self.ids.get(action.member, "")
            group = self._group()
            leader = group is not None and group.leader == mid
            assignments: tuple[tuple[str, bytes], ...] = ()
            if leader:  # every sync carries fresh bytes, so an installed assignment is always a change
                nonce = (self.steps + 1).to_bytes(4, "big")
                data = encode_assignment(Assignment(((TOPIC, 0),), user_data=nonce))
                assignments = tuple((m, data) for m in sorted(self._member_ids()))
                if action.assignment is not None:
                    assignments = tuple(
                        (
                            self.ids[k],
                            encode_assignment(Assignment(tuple((TOPIC, p) for p in ps), user_data=nonce)),
                        )
                        for k, ps in action.assignment
                        if k in self.ids
                    )
            request = SyncGroupRequest(
                GROUP, action.generation, mid, assignments, protocol_type="consumer", protocol_name="range"
            )
            self.sync_refs[sim.next_ref] = (action.member, action.generation)
            obs = sim.send_raw(name, request)
        elif action.kind == "leave":
            obs = sim.send_raw(
                name, LeaveGroupRequest(GROUP, (MemberIdentity(self.ids.get(action.member, "")),))
            )
        elif action.kind == "timer":
            group = self._group()
            timers = {} if group is None else group.timers
            deadline = min(t.deadline for k, t in timers.items() if k in ("join", "initial"))
            obs = sim.advance(deadline - sim.now)
        elif action.kind == "failover":
            obs = sim.failover()
        else:
            raise ValueError(f"unknown action {action.kind!r}")
        self.steps += 1
        self.answers = [
            (*self.sync_refs[d.ref], _partitions(d.response.assignment))
            for d in obs.deliveries
            if d.ref in self.sync_refs
            and isinstance(d.response, SyncGroupResponse)
            and d.response.error == ErrorCode.NONE
        ]
        found = self.checker.check(obs, self.steps)
        sim.note_checks(
            obs,
            self.checker.last_checked,
            [(v.invariant, v.message) for v in found],
            self.checker.last_sometimes,
        )
        self.violations += found

    # ---------------------------------------------------------------- reading the model
    def _port_state(self) -> Any:
        return self.sim.port.state  # type: ignore[attr-defined]

    def _group(self) -> Any:
        return self._port_state().groups.get(GROUP)

    def _member_ids(self) -> set[str]:
        group = self._group()
        return set() if group is None else set(group.members)

    def _present_slots(self) -> set[int]:
        ids = self._member_ids()
        return {slot for slot, mid in self.ids.items() if mid in ids}

    def stored(self) -> tuple[tuple[frozenset[int], ...], tuple[frozenset[int], ...]]:
        """Per slot, the partitions the coordinator stores and those of the last GroupMetadata."""
        group, last = self._group(), None
        for rec in self.sim.port.durable:  # type: ignore[attr-defined]
            if isinstance(rec, GroupMetadataRecord) and rec.group_id == GROUP:
                last = rec
        live = {} if group is None else {mid: m.assignment for mid, m in group.members.items()}
        kept = {} if last is None else {m.member_id: m.assignment for m in last.members}
        slots = [self.ids.get(i) for i in range(self.members)]
        return (
            tuple(_partitions(live.get(mid or "", b"")) for mid in slots),
            tuple(_partitions(kept.get(mid or "", b"")) for mid in slots),
        )

    def abstract(self) -> ConcreteGroup:
        """The model's group in the encoding's terms."""
        n = self.members
        group = self._group()
        last = None
        for rec in self.sim.port.durable:  # type: ignore[attr-defined]
            if isinstance(rec, GroupMetadataRecord) and rec.group_id == GROUP:
                last = rec
        pmembers = tuple(
            last is not None and self.ids.get(i) in {m.member_id for m in last.members} for i in range(n)
        )
        pleader = NO_LEADER if last is None or not last.members else self.slot_of(last.leader)
        persisted = (last is not None, 0 if last is None else last.generation, pmembers, pleader)
        if group is None:
            return ConcreteGroup(0, EMPTY, False, False, NO_LEADER, (False,) * n, (False,) * n, *persisted)
        present = tuple(self.ids.get(i) in group.members for i in range(n))
        joined = tuple(present[i] and group.members[self.ids[i]].awaiting_join is not None for i in range(n))
        state = STATES[group.state]
        initial = state == PREPARING and group.previous_state == GroupState.EMPTY
        added = initial and bool(group.new_member_added)
        leader = self.slot_of(group.leader) if group.leader is not None else NO_LEADER
        return ConcreteGroup(group.generation, state, initial, added, leader, present, joined, *persisted)


def _partitions(data: bytes) -> frozenset[int]:
    return frozenset(p for t, p in decode_assignment(data).partitions if t == TOPIC) if data else frozenset()


def new_driver(members: int, variant: dict[str, str], seed: int = 0) -> Driver:
    variants = {"mutant": "stale-sync"} if variant.get("sync_generation_check") == "false" else {}
    clients = [{"name": f"c{i}", "topics": [TOPIC]} for i in range(members)]
    sim = make_classic_sim({TOPIC: 2}, clients, {}, variants, seed=seed, where="prove")
    return Driver(sim, members)


def same(model: ConcreteGroup, solver: ConcreteGroup) -> bool:
    """Equal, except the initial-delay flag, which only matters during an initial rebalance."""
    a, b = model, solver
    keys = ["gen", "state", "leader", "present", "joined", "pexists", "pgen", "pmembers", "pleader"]
    if a.state == PREPARING:
        keys.append("initial")
        if a.initial:
            keys.append("added")
    return all(getattr(a, k) == getattr(b, k) for k in keys)


def trace_of(driver: Driver, invariant_id: str) -> Trace:
    return proof_trace(to_trace, driver.sim, invariant_id, driver.violations)
