"""Design 5 of seed 000: a single client assignor, with the synchronization folded into JoinGroup.

Seed 000 'Single Client Assignor': every member sends JoinGroup(phase join); when all have joined,
the coordinator answers only the synchronizer it chose (phase synchronize, everyone's metadata);
the synchronizer assigns and sends JoinGroup(phase synchronized) with every member's state, which
the coordinator hands to each parked member (phase joined) as the new generation. Failures the seed
names: a synchronizer that dies (hard failure: a synchronization timeout fails the generation and
members rejoin) and one that cannot read a member's metadata (soft failure: its error goes to every
member, which raises it: rejoining would not help). Options: ``choice`` of the synchronizer
(``random``, ``last`` to join, ``newest`` member, ``max-version`` of metadata) and
``sync_timeout_ms``. Handlers are pure (responses, records); `GenerationSynced` is what persists.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from model.designs import wire as w
from model.designs.joinall import (
    COORDINATOR,
    GROUP,
    ILLEGAL,
    NONE,
    REBALANCING,
    UNKNOWN,
    Ack,
    HeartbeatReq,
    LeaveReq,
)
from model.designs.net import Actor, DesignError, Msg

CHOICES = ("random", "last", "newest", "max-version")
SYNC_TIMEOUT, METADATA_UNREADABLE = "SYNCHRONIZATION_TIMEOUT", "INCONSISTENT_GROUP_METADATA"


@dataclass(frozen=True)
class SJoin:
    member_id: str
    metadata: bytes
    session_timeout_ms: int


@dataclass(frozen=True)
class SSynced:
    member_id: str
    round: int
    error: str
    states: tuple[tuple[str, bytes], ...] = ()
    #: not on the wire: the strategy the synchronizer ran, shown in the view
    strategy: str = ""


@dataclass(frozen=True)
class SResp:
    error: str
    generation: int = -1
    member_id: str = ""
    phase: str = ""  # synchronize | joined
    members: tuple[tuple[str, bytes], ...] = ()
    state: bytes = b""
    group: tuple[str, ...] = ()


def size(body: Any) -> int:
    """Seed 000's sketch: JoinGroupRequest GroupId ProtocolType Phase (Join: SessionTimeout MemberId
    MemberMetadata | Synchronized: ErrorCode [MemberId SyncedMemberState]); JoinGroupResponse
    ErrorCode GroupGenerationId MemberId Phase (Synchronize: [MemberId MemberMetadata] | Joined:
    SyncedMemberState GroupMembers [MemberId]). The phase tag is one byte."""
    head = w.s(GROUP) + w.s("consumer") + 1
    if isinstance(body, SJoin):
        return w.request(head + w.I32 + w.s(body.member_id) + w.b(body.metadata))
    if isinstance(body, SSynced):
        return w.request(head + w.I16 + w.arr(w.s(m) + w.b(st) for m, st in body.states))
    if isinstance(body, SResp):
        base = w.I16 + w.I32 + w.s(body.member_id) + 1
        if body.phase == "synchronize":
            return w.response(base + w.arr(w.s(m) + w.b(meta) for m, meta in body.members))
        return w.response(base + w.b(body.state) + w.arr(w.s(m) for m in body.group))
    if isinstance(body, HeartbeatReq):
        return w.request(w.s(GROUP) + w.I32 + w.s(body.member_id))
    if isinstance(body, LeaveReq):
        return w.request(w.s(GROUP) + w.s(body.member_id))
    return w.response(w.I16)


KIND = {
    SJoin: "JoinGroup",
    SSynced: "JoinGroupSynchronized",
    HeartbeatReq: "Heartbeat",
    LeaveReq: "LeaveGroup",
}
REBALANCE_KINDS = frozenset({"JoinGroup", "JoinGroupSynchronized", "JoinGroupResponse"})


def msg(src: str, dst: str, body: Any, reply_to: str = "JoinGroup") -> Msg:
    return Msg(src, dst, KIND.get(type(body)) or f"{reply_to}Response", body, size(body))


def version_of(metadata: bytes) -> int:
    return int.from_bytes(metadata[:2], "big", signed=True) if len(metadata) >= 2 else 0


# ---------------------------------------------------------------------- state and records
@dataclass
class SEntry:
    member_id: str
    name: str
    metadata: bytes
    session_timeout_ms: int
    first: int
    deadline: int = 0
    parked: bool = False
    arrival: int = 0


@dataclass
class SyncJoinState:
    generation: int = 0
    round: int = 0
    phase: str = "Empty"  # Empty | Joining | Synchronizing | Stable
    members: dict[str, SEntry] = field(default_factory=dict)
    synchronizer: str = ""
    join_deadline: int | None = None
    sync_deadline: int | None = None
    next_id: int = 0
    arrivals: int = 0
    strategy: str = ""
    rebalances: int = 0


@dataclass(frozen=True)
class Upserted:
    member_id: str
    name: str
    metadata: bytes
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
class Removed:
    member_id: str


@dataclass(frozen=True)
class PhaseSet:
    phase: str
    join_deadline: int | None = None
    sync_deadline: int | None = None
    synchronizer: str = ""
    round: int = 0


@dataclass(frozen=True)
class GenerationSynced:
    generation: int
    strategy: str
    members: tuple[tuple[str, str, bytes, int], ...]
    durable: bool = True


def apply(state: SyncJoinState, rec: Any, now: int = 0) -> None:
    if isinstance(rec, Upserted):
        old = state.members.get(rec.member_id)
        if old is None:
            state.next_id += 1
            old = SEntry(rec.member_id, rec.name, rec.metadata, rec.session_timeout_ms, state.next_id)
        old.metadata, old.session_timeout_ms = rec.metadata, rec.session_timeout_ms
        state.members[rec.member_id] = old
    elif isinstance(rec, Parked):
        e = state.members[rec.member_id]
        e.parked = rec.parked
        if rec.parked:
            state.arrivals += 1
            e.arrival = state.arrivals
    elif isinstance(rec, SessionSet):
        state.members[rec.member_id].deadline = rec.deadline
    elif isinstance(rec, Removed):
        state.members.pop(rec.member_id, None)
    elif isinstance(rec, PhaseSet):
        state.phase, state.join_deadline, state.sync_deadline = (
            rec.phase,
            rec.join_deadline,
            rec.sync_deadline,
        )
        state.synchronizer, state.round = rec.synchronizer, rec.round or state.round
    elif isinstance(rec, GenerationSynced):
        state.generation, state.strategy, state.phase = rec.generation, rec.strategy, "Stable"
        state.join_deadline = state.sync_deadline = None
        state.synchronizer = ""
        state.rebalances += 1
        for mid, name, meta, session in rec.members:
            e = state.members.get(mid) or SEntry(mid, name, meta, session, 0)
            e.parked, e.deadline = False, max(e.deadline, now + session)
            state.members[mid] = e
    else:
        raise TypeError(f"unknown record {type(rec).__name__}")


def load(durable: list[Any], now: int) -> SyncJoinState:
    state = SyncJoinState()
    for rec in durable:
        if isinstance(rec, GenerationSynced):
            state.members = {}
            apply(state, rec, now)
    state.rebalances = 0
    state.next_id = 1_000  # ids of the old coordinator stay unique
    return state


def choose(state: SyncJoinState, how: str) -> str:
    """The synchronizer among the parked members (seed 000: the simplest is random; last to join,
    newest member and largest metadata version are the heuristics it weighs)."""
    entries = sorted(state.members.values(), key=lambda e: e.member_id)
    if how == "last":
        return max(entries, key=lambda e: e.arrival).member_id
    if how == "newest":
        return max(entries, key=lambda e: e.first).member_id
    if how == "max-version":
        return max(entries, key=lambda e: (version_of(e.metadata), e.arrival)).member_id
    digest = hashlib.sha256(f"{state.round}:{','.join(e.member_id for e in entries)}".encode()).digest()
    return entries[int.from_bytes(digest[:4], "big") % len(entries)].member_id


# ---------------------------------------------------------------------- handlers
class Tx:
    def __init__(self, state: SyncJoinState, now: int) -> None:
        self.state, self.now, self.out, self.records = state, now, [], []  # type: ignore[var-annotated]

    def emit(self, rec: Any) -> None:
        apply(self.state, rec, self.now)
        self.records.append(rec)

    def reply(self, dst: str, body: Any, reply_to: str = "JoinGroup") -> None:
        self.out.append(msg(COORDINATOR, dst, body, reply_to))


def _join_deadline(state: SyncJoinState, now: int) -> int:
    return now + max(e.session_timeout_ms for e in state.members.values())


def _fail_parked(tx: Tx, error: str) -> None:
    for e in list(tx.state.members.values()):
        if e.parked or e.member_id == tx.state.synchronizer:
            tx.emit(Parked(e.member_id, False))
            tx.reply(e.name, SResp(error, member_id=e.member_id))


def _start_round(tx: Tx) -> None:
    state = tx.state
    tx.emit(PhaseSet("Joining", _join_deadline(state, tx.now), None, "", state.round + 1))


def _maybe_complete(tx: Tx, how: str, sync_timeout_ms: int, force: bool = False) -> None:
    state = tx.state
    if state.phase != "Joining" or (not force and not all(e.parked for e in state.members.values())):
        return
    for e in [e for e in state.members.values() if not e.parked]:
        tx.emit(Removed(e.member_id))
    if not state.members:
        tx.emit(PhaseSet("Empty"))
        return
    chosen = choose(state, how)
    tx.emit(PhaseSet("Synchronizing", None, tx.now + sync_timeout_ms, chosen, state.round))
    tx.emit(Parked(chosen, False))
    e = state.members[chosen]
    tx.emit(SessionSet(chosen, tx.now + e.session_timeout_ms))
    members = tuple(
        (m.member_id, m.metadata) for m in sorted(state.members.values(), key=lambda m: m.member_id)
    )
    tx.reply(e.name, SResp(NONE, state.round, chosen, "synchronize", members))


def handle_join(
    state: SyncJoinState, src: str, req: SJoin, now: int, how: str, sync_ms: int
) -> tuple[list[Msg], list[Any]]:
    tx = Tx(state, now)
    mid = req.member_id
    if mid and mid not in state.members:
        tx.reply(src, SResp(UNKNOWN))
        return tx.out, tx.records
    if not mid:
        mid = f"{src}-{state.next_id + 1}"
    if state.phase == "Synchronizing":  # seed 000: a join aborts the synchronization in progress
        _fail_parked(tx, REBALANCING)
    tx.emit(Upserted(mid, src, req.metadata, req.session_timeout_ms))
    tx.emit(Parked(mid, True))
    if state.phase != "Joining":
        _start_round(tx)
    _maybe_complete(tx, how, sync_ms)
    return tx.out, tx.records


def handle_synced(state: SyncJoinState, src: str, req: SSynced, now: int) -> tuple[list[Msg], list[Any]]:
    tx = Tx(state, now)
    if state.phase != "Synchronizing" or req.member_id != state.synchronizer or req.round != state.round:
        tx.reply(src, SResp(ILLEGAL, member_id=req.member_id))
        return tx.out, tx.records
    if req.error != NONE:  # soft failure: every member gets the synchronizer's error
        _fail_parked(tx, req.error)
        for mid in list(state.members):
            tx.emit(Removed(mid))
        tx.emit(PhaseSet("Empty"))
        return tx.out, tx.records
    given = dict(req.states)
    generation = state.generation + 1
    strategy = req.strategy
    entries = sorted(state.members.values(), key=lambda m: m.member_id)
    tx.emit(
        GenerationSynced(
            generation,
            strategy,
            tuple((e.member_id, e.name, e.metadata, e.session_timeout_ms) for e in entries),
        )
    )
    ids = tuple(e.member_id for e in entries)
    for e in entries:
        tx.reply(
            e.name,
            SResp(NONE, generation, e.member_id, "joined", state=given.get(e.member_id, b""), group=ids),
        )
    return tx.out, tx.records


def handle_heartbeat(
    state: SyncJoinState, src: str, req: HeartbeatReq, now: int
) -> tuple[list[Msg], list[Any]]:
    tx = Tx(state, now)
    e = state.members.get(req.member_id)
    error = (
        UNKNOWN
        if e is None
        else REBALANCING
        if state.phase != "Stable"
        else ILLEGAL
        if req.generation != state.generation
        else NONE
    )
    if e is not None and error == NONE:
        tx.emit(SessionSet(e.member_id, now + e.session_timeout_ms))
    tx.reply(src, Ack(error), "Heartbeat")
    return tx.out, tx.records


def remove(tx: Tx, mid: str, how: str, sync_ms: int) -> None:
    state = tx.state
    was_synchronizer = state.phase == "Synchronizing" and mid == state.synchronizer
    tx.emit(Removed(mid))
    if not state.members:
        tx.emit(PhaseSet("Empty"))
    elif was_synchronizer or state.phase in ("Stable", "Synchronizing"):
        _fail_parked(tx, REBALANCING)
        _start_round(tx)
    else:
        _maybe_complete(tx, how, sync_ms)


def handle_timer(
    state: SyncJoinState, key: str, now: int, how: str, sync_ms: int
) -> tuple[list[Msg], list[Any]]:
    tx = Tx(state, now)
    if key == "join":
        _maybe_complete(tx, how, sync_ms, force=True)
    elif key == "sync" and state.phase == "Synchronizing":  # hard failure: fail the generation
        _fail_parked(tx, SYNC_TIMEOUT)
        _start_round(tx)
    elif key.startswith("session:"):
        mid = key.split(":", 1)[1]
        e = state.members.get(mid)
        if e is not None and not e.parked and e.deadline <= now:
            remove(tx, mid, how, sync_ms)
    return tx.out, tx.records


class SyncJoinCoordinator(Actor):
    name = COORDINATOR

    def __init__(self, how: str, sync_timeout_ms: int, state: SyncJoinState | None = None) -> None:
        super().__init__()
        if how not in CHOICES:
            raise DesignError(f"sync-in-join: choice must be one of {', '.join(CHOICES)}")
        self.how, self.sync_ms = how, sync_timeout_ms
        self.state = state or SyncJoinState()
        self.durable: list[Any] = []
        self._sync()

    def _take(self, step: tuple[list[Msg], list[Any]]) -> list[Msg]:
        out, records = step
        self.durable += [r for r in records if getattr(r, "durable", False)]
        self._sync()
        return out

    def _sync(self) -> None:
        s = self.state
        # the synchronization timeout, not its session, bounds the synchronizer while it works
        busy = s.synchronizer if s.phase == "Synchronizing" else None
        self.timers = {
            f"session:{m}": e.deadline
            for m, e in s.members.items()
            if not e.parked and e.deadline and m != busy
        }
        if s.join_deadline is not None and s.phase == "Joining":
            self.timers["join"] = s.join_deadline
        if s.sync_deadline is not None and s.phase == "Synchronizing":
            self.timers["sync"] = s.sync_deadline

    def on_message(self, m: Msg, now: int) -> list[Msg]:
        body = m.body
        if isinstance(body, SJoin):
            return self._take(handle_join(self.state, m.src, body, now, self.how, self.sync_ms))
        if isinstance(body, SSynced):
            return self._take(handle_synced(self.state, m.src, body, now))
        if isinstance(body, HeartbeatReq):
            return self._take(handle_heartbeat(self.state, m.src, body, now))
        if isinstance(body, LeaveReq):
            tx = Tx(self.state, now)
            if body.member_id in self.state.members:
                remove(tx, body.member_id, self.how, self.sync_ms)
                tx.reply(m.src, Ack(NONE), "LeaveGroup")
            else:
                tx.reply(m.src, Ack(UNKNOWN), "LeaveGroup")
            return self._take((tx.out, tx.records))
        return []

    def on_timer(self, key: str, now: int) -> list[Msg]:
        return self._take(handle_timer(self.state, key, now, self.how, self.sync_ms))
