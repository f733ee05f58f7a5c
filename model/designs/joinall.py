"""The coordinator of seed 000's first client-side design: JoinGroup hands every member everyone's metadata.

Seed 000 'Protocol' (the proposal before the two-phase protocol): members send JoinGroup with their
protocols and metadata, the coordinator waits for every expected member, picks a protocol all
support (each member votes for its first common one), bumps the generation and answers every member
with the full member list and metadata; each member then computes the whole assignment itself.
Heartbeats tell members of a rebalance; sessions expire; LeaveGroup removes a member. Handlers are
pure: (responses, records); the state changes only by `apply`; `GenerationFormed` is what a
coordinator persists, so a failover reloads the last generation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from model.designs import wire as w
from model.designs.net import Actor, Msg

COORDINATOR = "coordinator"
GROUP = "g"
NONE, UNKNOWN, REBALANCING, ILLEGAL, INCONSISTENT = (
    "NONE",
    "UNKNOWN_MEMBER_ID",
    "REBALANCE_IN_PROGRESS",
    "ILLEGAL_GENERATION",
    "INCONSISTENT_GROUP_PROTOCOL",
)
Protocols = tuple[tuple[str, bytes], ...]


# ---------------------------------------------------------------------- messages
@dataclass(frozen=True)
class JoinReq:
    member_id: str
    protocols: Protocols
    session_timeout_ms: int


@dataclass(frozen=True)
class JoinResp:
    error: str
    generation: int = -1
    protocol: str = ""
    leader: str = ""
    member_id: str = ""
    members: Protocols = ()


@dataclass(frozen=True)
class HeartbeatReq:
    member_id: str
    generation: int


@dataclass(frozen=True)
class LeaveReq:
    member_id: str


@dataclass(frozen=True)
class Ack:
    error: str


def size(body: Any) -> int:
    """Seed 000's JoinGroup schema (GroupId, SessionTimeout, MemberId, ProtocolType, GroupProtocols;
    response ErrorCode, GenerationId, GroupProtocol, LeaderId, MemberId, Members)."""
    if isinstance(body, JoinReq):
        protos = w.arr(w.s(n) + w.b(m) for n, m in body.protocols)
        return w.request(w.s(GROUP) + w.I32 + w.s(body.member_id) + w.s("consumer") + protos)
    if isinstance(body, JoinResp):
        members = w.arr(w.s(mid) + w.b(m) for mid, m in body.members)
        return w.response(
            w.I16 + w.I32 + w.s(body.protocol) + w.s(body.leader) + w.s(body.member_id) + members
        )
    if isinstance(body, HeartbeatReq):
        return w.request(w.s(GROUP) + w.I32 + w.s(body.member_id))
    if isinstance(body, LeaveReq):
        return w.request(w.s(GROUP) + w.s(body.member_id))
    return w.response(w.I16)


KIND = {
    JoinReq: "JoinGroup",
    JoinResp: "JoinGroupResponse",
    HeartbeatReq: "Heartbeat",
    LeaveReq: "LeaveGroup",
}
REBALANCE_KINDS = frozenset({"JoinGroup", "JoinGroupResponse"})


def msg(src: str, dst: str, body: Any, reply_to: str = "") -> Msg:
    kind = KIND.get(type(body)) or f"{reply_to}Response"
    return Msg(src, dst, kind, body, size(body))


# ---------------------------------------------------------------------- state and records
@dataclass
class Entry:
    member_id: str
    name: str
    protocols: Protocols
    session_timeout_ms: int
    deadline: int = 0
    parked: bool = False


@dataclass
class JoinAllState:
    generation: int = 0
    phase: str = "Empty"  # Empty | Joining | Stable
    members: dict[str, Entry] = field(default_factory=dict)
    protocol: str = ""
    leader: str = ""
    join_deadline: int | None = None
    next_id: int = 0
    rebalances: int = 0


@dataclass(frozen=True)
class MemberUpserted:
    member_id: str
    name: str
    protocols: Protocols
    session_timeout_ms: int


@dataclass(frozen=True)
class Parked:
    member_id: str
    parked: bool


@dataclass(frozen=True)
class SessionSet:
    member_id: str
    deadline: int


@dataclass(frozen=True)
class MemberRemoved:
    member_id: str


@dataclass(frozen=True)
class PhaseSet:
    phase: str
    join_deadline: int | None


@dataclass(frozen=True)
class IdIssued:
    next_id: int


@dataclass(frozen=True)
class GenerationFormed:
    generation: int
    protocol: str
    leader: str
    members: tuple[tuple[str, str, Protocols, int], ...]
    durable: bool = True


def apply(state: JoinAllState, rec: Any, now: int = 0) -> None:
    if isinstance(rec, MemberUpserted):
        old = state.members.get(rec.member_id)
        e = Entry(rec.member_id, rec.name, rec.protocols, rec.session_timeout_ms)
        if old is not None:
            e.deadline, e.parked = old.deadline, old.parked
        state.members[rec.member_id] = e
    elif isinstance(rec, Parked):
        state.members[rec.member_id].parked = rec.parked
    elif isinstance(rec, SessionSet):
        state.members[rec.member_id].deadline = rec.deadline
    elif isinstance(rec, MemberRemoved):
        state.members.pop(rec.member_id, None)
        if state.leader == rec.member_id:
            state.leader = ""
    elif isinstance(rec, PhaseSet):
        state.phase, state.join_deadline = rec.phase, rec.join_deadline
    elif isinstance(rec, IdIssued):
        state.next_id = rec.next_id
    elif isinstance(rec, GenerationFormed):
        state.generation, state.protocol, state.leader = rec.generation, rec.protocol, rec.leader
        state.phase, state.join_deadline = "Stable", None
        state.rebalances += 1
        for mid, name, protos, session in rec.members:
            e = state.members.get(mid) or Entry(mid, name, protos, session)
            e.parked = False
            e.deadline = max(e.deadline, now + session)
            state.members[mid] = e
    else:
        raise TypeError(f"unknown record {type(rec).__name__}")


def load(durable: list[Any], now: int) -> JoinAllState:
    """A new coordinator's state: the last persisted generation, every member's session fresh."""
    state = JoinAllState()
    for rec in durable:
        if isinstance(rec, GenerationFormed):
            state.members = {}
            apply(state, rec, now)
    state.rebalances = 0
    return state


class Txn:
    """Records applied as they are emitted, and the responses of one handler call."""

    def __init__(self, state: JoinAllState, now: int) -> None:
        self.state, self.now = state, now
        self.out: list[Msg] = []
        self.records: list[Any] = []

    def emit(self, rec: Any) -> None:
        apply(self.state, rec, self.now)
        self.records.append(rec)

    def reply(self, dst: str, body: Any, reply_to: str) -> None:
        self.out.append(msg(COORDINATOR, dst, body, reply_to))


# ---------------------------------------------------------------------- handlers
def select_protocol(entries: list[Entry]) -> str | None:
    """A protocol every member supports: each votes for its first common one; most votes, then name."""
    common = set(n for n, _ in entries[0].protocols)
    for e in entries[1:]:
        common &= {n for n, _ in e.protocols}
    if not common:
        return None
    votes: dict[str, int] = {}
    for e in entries:
        first = next(n for n, _ in e.protocols if n in common)
        votes[first] = votes.get(first, 0) + 1
    return min(votes, key=lambda n: (-votes[n], n))


def handle_join(state: JoinAllState, src: str, req: JoinReq, now: int) -> tuple[list[Msg], list[Any]]:
    tx = Txn(state, now)
    mid = req.member_id
    if mid and mid not in state.members:
        tx.reply(src, JoinResp(UNKNOWN), "JoinGroup")
        return tx.out, tx.records
    if state.members and select_protocol([*state.members.values(), Entry("", src, req.protocols, 0)]) is None:
        tx.reply(src, JoinResp(INCONSISTENT), "JoinGroup")
        return tx.out, tx.records
    if not mid:
        mid = f"{src}-{state.next_id}"
        tx.emit(IdIssued(state.next_id + 1))
    tx.emit(MemberUpserted(mid, src, req.protocols, req.session_timeout_ms))
    tx.emit(Parked(mid, True))
    tx.emit(SessionSet(mid, now + req.session_timeout_ms))
    if state.phase != "Joining":
        tx.emit(PhaseSet("Joining", now + max(e.session_timeout_ms for e in state.members.values())))
    _maybe_complete(tx)
    return tx.out, tx.records


def _maybe_complete(tx: Txn, force: bool = False) -> None:
    state = tx.state
    if state.phase != "Joining":
        return
    if not force and not all(e.parked for e in state.members.values()):
        return
    for e in [e for e in state.members.values() if not e.parked]:
        tx.emit(MemberRemoved(e.member_id))  # did not rejoin in time
    entries = list(state.members.values())
    if not entries:
        tx.emit(PhaseSet("Empty", None))
        return
    protocol = select_protocol(entries) or entries[0].protocols[0][0]
    leader = state.leader if state.leader in state.members else entries[0].member_id
    generation = state.generation + 1
    tx.emit(
        GenerationFormed(
            generation,
            protocol,
            leader,
            tuple((e.member_id, e.name, e.protocols, e.session_timeout_ms) for e in entries),
        )
    )
    listed = tuple((e.member_id, dict(e.protocols)[protocol]) for e in entries)
    for e in entries:
        tx.reply(e.name, JoinResp(NONE, generation, protocol, leader, e.member_id, listed), "JoinGroup")


def handle_heartbeat(
    state: JoinAllState, src: str, req: HeartbeatReq, now: int
) -> tuple[list[Msg], list[Any]]:
    tx = Txn(state, now)
    e = state.members.get(req.member_id)
    if e is None:
        error = UNKNOWN
    elif state.phase == "Joining":
        error = REBALANCING
    elif req.generation != state.generation:
        error = ILLEGAL
    else:
        error = NONE
        tx.emit(SessionSet(e.member_id, now + e.session_timeout_ms))
    tx.reply(src, Ack(error), "Heartbeat")
    return tx.out, tx.records


def _remove(tx: Txn, member_id: str) -> None:
    tx.emit(MemberRemoved(member_id))
    state = tx.state
    if not state.members:
        tx.emit(PhaseSet("Empty", None))
    elif state.phase != "Joining":
        tx.emit(PhaseSet("Joining", tx.now + max(e.session_timeout_ms for e in state.members.values())))
    else:
        _maybe_complete(tx)


def handle_leave(state: JoinAllState, src: str, req: LeaveReq, now: int) -> tuple[list[Msg], list[Any]]:
    tx = Txn(state, now)
    if req.member_id in state.members:
        _remove(tx, req.member_id)
        tx.reply(src, Ack(NONE), "LeaveGroup")
    else:
        tx.reply(src, Ack(UNKNOWN), "LeaveGroup")
    return tx.out, tx.records


def handle_timer(state: JoinAllState, key: str, now: int) -> tuple[list[Msg], list[Any]]:
    tx = Txn(state, now)
    if key == "join":
        _maybe_complete(tx, force=True)
    elif key.startswith("session:"):
        mid = key.split(":", 1)[1]
        e = state.members.get(mid)
        if e is not None and not e.parked and e.deadline <= now:
            _remove(tx, mid)
    return tx.out, tx.records


class JoinAllCoordinator(Actor):
    """The coordinator process: dispatches to the pure handlers, keeps the log, derives its timers."""

    name = COORDINATOR

    def __init__(self, state: JoinAllState | None = None) -> None:
        super().__init__()
        self.state = state or JoinAllState()
        self.durable: list[Any] = []
        self._sync()

    def _take(self, step: tuple[list[Msg], list[Any]]) -> list[Msg]:
        out, records = step
        self.durable += [r for r in records if getattr(r, "durable", False)]
        self._sync()
        return out

    def _sync(self) -> None:
        self.timers = {f"session:{m}": e.deadline for m, e in self.state.members.items() if not e.parked}
        if self.state.join_deadline is not None:
            self.timers["join"] = self.state.join_deadline

    def on_message(self, m: Msg, now: int) -> list[Msg]:
        body = m.body
        if isinstance(body, JoinReq):
            return self._take(handle_join(self.state, m.src, body, now))
        if isinstance(body, HeartbeatReq):
            return self._take(handle_heartbeat(self.state, m.src, body, now))
        if isinstance(body, LeaveReq):
            return self._take(handle_leave(self.state, m.src, body, now))
        return []

    def on_timer(self, key: str, now: int) -> list[Msg]:
        return self._take(handle_timer(self.state, key, now))
