"""Design 7, seed 001: a broker-side coordinator that assigns and pushes ownership to consumers.

Seed 001 sections 2, 5, 8, 9 and 10: consumers register (RegisterConsumer); the elected broker pings
each every 1/3 of its session timeout and waits 2/3 of it for the answer, declaring the consumer
dead after more than ``max_ping_retries`` failed pings (it drops the registration and closes the
socket); a rebalance computes ownership with the broker's own strategy and, if it differs from the
stored one, sends StopFetcher to every consumer, waits for all answers (or a 2/3-session timeout,
then backs off and retries), sends StartFetcher with each consumer's partitions, waits again and
stores the ownership. Variant ``rebalance=sockets`` (seed 001 section 2 step 5): the coordinator
closes every consumer's socket and hands out ownership in the RegisterConsumer answers once all
alive consumers re-registered. On election a broker loads registrations and ownership from the
store and waits one session timeout for known consumers to re-register. Handlers return
(messages, records); state changes only through `apply`; registrations and ownership persist.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from model.assignors import get_assignor
from model.designs import broker_wire as bw
from model.designs.broker_state import (
    Acked,
    Activated,
    BState,
    CommitterArmed,
    ConnLost,
    Consumed,
    Dirty,
    OffsetsStored,
    Ownership,
    OwnershipStored,
    PhaseSet,
    PingState,
    Reg,
    Registered,
    Unregistered,
    apply,
    load,
)
from model.designs.net import Actor, Msg
from model.embedded import Subscription, TopicPartition


@dataclass
class Config:
    max_ping_retries: int = 1
    backoff_ms: int = 2_000
    max_rebalance_retries: int = 4
    min_session_timeout_ms: int = 500
    sockets: bool = False
    strategy: str = "range"
    #: how long a new coordinator waits for known consumers to re-register (their session timeout)
    startup_wait_ms: int = 6_000
    #: the committer's period (seed 001 §4 'Offset committing (to ZK) interval'; the seed gives no value)
    commit_ms: int = 10_000


class Tx:
    def __init__(self, s: BState, me: str, now: int) -> None:
        self.s, self.me, self.now = s, me, now
        self.out: list[Msg] = []
        self.records: list[Any] = []

    def emit(self, rec: Any) -> None:
        apply(self.s, rec)
        self.records.append(rec)

    def send(self, reg: Reg, body: object) -> None:
        self.out.append(bw.msg(self.me, reg.name, body, reg.conn))


Plan = dict[str, tuple[TopicPartition, ...]]


def plan(s: BState, topics: dict[str, int], strategy: str) -> tuple[Plan, dict[str, Ownership]]:
    """Ownership by the broker's own strategy (the old consumer's range, per topic), computed over
    consumer threads (seed 001 §9 step 1.2); per consumer the union, and the threads that got any."""
    threads = {f"{c}-{k}": c for c in sorted(s.consumers) for k in range(max(1, s.consumers[c].threads))}
    subs = {
        tid: Subscription(tuple(t for t in s.consumers[c].topics if t in topics))
        for tid, c in threads.items()
    }
    wanted = {t for sub in subs.values() for t in sub.topics}
    result = get_assignor(strategy).assign({t: topics[t] for t in wanted}, subs)
    union: Plan = {c: () for c in sorted(s.consumers)}
    split: dict[str, list[tuple[str, tuple[TopicPartition, ...]]]] = {c: [] for c in union}
    for tid, c in threads.items():
        parts = result[tid].partitions
        union[c] = tuple(sorted((*union[c], *parts)))
        if parts and s.consumers[c].threads > 1:
            split[c].append((tid, parts))
    return union, {c: tuple(v) for c, v in split.items() if v}


def _offsets(s: BState, parts: tuple[TopicPartition, ...]) -> tuple[int, ...]:
    return tuple(s.committed.get(tp, 0) for tp in parts)


def fail_consumer(tx: Tx, cid: str, cfg: Config, topics: dict[str, int]) -> None:
    """Seed 001 handleConsumerFailure: forget it, close its socket, fail a running rebalance, rebalance."""
    reg = tx.s.consumers.get(cid)
    if reg is None:
        return
    tx.send(reg, bw.Close())
    tx.emit(ConnLost(reg.conn))
    tx.emit(Unregistered(cid))
    tx.emit(Dirty(True))
    if tx.s.phase in ("stopping", "starting"):
        tx.emit(PhaseSet("idle", tx.s.round))
    elif tx.s.phase == "waiting":
        if not tx.s.pending:
            phase_done(tx, cfg, topics)
        return
    maybe_rebalance(tx, cfg, topics)


def maybe_rebalance(tx: Tx, cfg: Config, topics: dict[str, int]) -> None:
    s = tx.s
    if not s.active or s.phase != "idle" or not s.dirty or (s.backoff is not None and s.backoff > tx.now):
        return
    tx.emit(Dirty(False))
    if not s.consumers:
        return
    target, split = plan(s, topics, cfg.strategy)
    if target == {c: s.ownership.get(c, ()) for c in s.consumers} and set(s.ownership) <= set(s.consumers):
        return  # seed 001 step 3: ownership already as computed, no rebalance needed
    session = min(r.session_timeout_ms for r in s.consumers.values())
    rnd = s.round + 1
    if cfg.sockets:  # close every socket; ownership goes out with the re-registrations
        for reg in list(s.consumers.values()):
            tx.send(reg, bw.Close())
            tx.emit(ConnLost(reg.conn))
        tx.emit(PhaseSet("waiting", rnd, frozenset(s.consumers), (), tx.now + session, s.retries))
        return
    tx.emit(
        PhaseSet(
            "stopping",
            rnd,
            frozenset(s.consumers),
            tuple(sorted(target.items())),
            tx.now + 2 * session // 3,
            s.retries,
            split=tuple(sorted(split.items())),
        )
    )
    for cid in sorted(s.consumers):
        tx.send(s.consumers[cid], bw.StopFetcher(cid, rnd))


def phase_done(tx: Tx, cfg: Config, topics: dict[str, int]) -> None:
    """Every answer of the current step is in: start fetchers, then store the ownership."""
    s = tx.s
    if s.phase == "stopping":
        session = min(r.session_timeout_ms for r in s.consumers.values())
        tx.emit(OffsetsStored(tuple(sorted(s.committed.items()))))  # step 4.3: commit before starting
        tx.emit(
            PhaseSet(
                "starting",
                s.round,
                frozenset(s.plan) & frozenset(s.consumers),
                tuple(sorted(s.plan.items())),
                tx.now + 2 * session // 3,
                s.retries,
                split=tuple(sorted(s.split.items())),
            )
        )
        for cid in sorted(s.pending):
            parts = s.plan[cid]
            start = bw.StartFetcher(cid, s.round, parts, _offsets(s, parts), s.split.get(cid, ()))
            tx.send(s.consumers[cid], start)
    elif s.phase == "starting":
        tx.emit(OwnershipStored(tuple(sorted(s.plan.items()))))
        tx.emit(PhaseSet("idle", s.round))
        maybe_rebalance(tx, cfg, topics)
    elif s.phase == "waiting":  # sockets variant / election: everyone alive has re-registered
        if not s.consumers:
            tx.emit(PhaseSet("idle", s.round))
            return
        target, _ = plan(s, topics, cfg.strategy)
        for cid in sorted(s.consumers):
            tx.send(s.consumers[cid], bw.RegisterResp("NONE", target[cid], _offsets(s, target[cid])))
        tx.emit(OwnershipStored(tuple(sorted(target.items()))))
        tx.emit(PhaseSet("idle", s.round))
        maybe_rebalance(tx, cfg, topics)


class BrokerCoordinator(Actor):
    """A broker's coordinator object: active once elected; a standby answers only metadata requests."""

    def __init__(self, name: str, cfg: Config, topics: dict[str, int], zk: dict[str, Any]) -> None:
        super().__init__()
        self.name, self.cfg, self.topics, self.zk = name, cfg, topics, zk
        self.s = BState()
        #: lost its ZooKeeper session but does not know yet (a zombie): it acts on its old state
        #: over the connections it has, and its ZooKeeper writes fail
        self.deposed = False
        #: rebalances done before a session reset cleared the state
        self.retired = 0

    def _take(self, tx: Tx) -> list[Msg]:
        if not self.deposed:
            self.zk["log"].extend(r for r in tx.records if getattr(r, "durable", False))
        s = self.s
        self.timers = {k: v for k, v in self.timers.items() if k in ("elect", "session")}
        if not s.active:
            return tx.out
        for cid, r in s.consumers.items():
            self.timers[f"ping:{cid}"] = r.next_ping
            if r.watch is not None:
                self.timers[f"watch:{cid}"] = r.watch
        if s.deadline is not None and s.phase != "idle":
            self.timers["phase"] = s.deadline
        if s.backoff is not None and s.phase == "idle" and s.dirty:
            self.timers["backoff"] = s.backoff
        if s.next_commit is not None:
            self.timers["commit"] = s.next_commit
        return tx.out

    def elect(self, now: int) -> list[Msg]:
        """Won the election: load the store, wait one session timeout for known consumers (seed 001 §2)."""
        self.s = load(self.zk["log"])
        tx = Tx(self.s, self.name, now)
        tx.emit(Activated())
        tx.emit(CommitterArmed(now + self.cfg.commit_ms))
        known = frozenset(self.s.consumers)
        for cid in sorted(known):
            tx.emit(Unregistered(cid))  # known, but their sockets were with the old coordinator
        tx.emit(PhaseSet("waiting", self.s.round + 1, known, (), now + self.cfg.startup_wait_ms))
        self.zk["owner"] = self.name
        return self._take(tx)

    def on_message(self, m: Msg, now: int) -> list[Msg]:
        body, s, tx = m.body, self.s, Tx(self.s, self.name, now)
        if isinstance(body, bw.MetadataReq):
            return [bw.msg(self.name, m.src, bw.MetadataResp(self.zk.get("owner", "")), m.conn)]
        if not s.active or (m.conn and m.conn in s.lost):
            return []
        if isinstance(body, bw.RegisterReq):
            self._register(tx, m, body)
        elif isinstance(body, bw.Close):  # the consumer closed its side: sends on it fail from now on
            tx.emit(ConnLost(m.conn))
        elif isinstance(body, bw.PingResp):
            r = s.consumers.get(body.consumer_id)
            if r is not None and r.conn == m.conn and body.seq == r.seq:
                tx.emit(PingState(r.consumer_id, 0, r.seq, r.next_ping, None))
                if body.owned:  # seed 001 §11 handlePingResponse: record the offsets
                    tx.emit(Consumed(tuple(zip(body.owned, body.offsets, strict=True))))
        elif isinstance(body, bw.StopFetcherResp | bw.StartFetcherResp):
            wanted = "stopping" if isinstance(body, bw.StopFetcherResp) else "starting"
            if s.phase == wanted and body.round == s.round and body.consumer_id in s.pending:
                if isinstance(body, bw.StopFetcherResp) and body.owned:
                    tx.emit(Consumed(tuple(zip(body.owned, body.offsets, strict=True))))
                tx.emit(Acked(body.consumer_id))
                if not s.pending:
                    phase_done(tx, self.cfg, self.topics)
        return self._take(tx)

    def _register(self, tx: Tx, m: Msg, req: bw.RegisterReq) -> None:
        s = tx.s
        old = s.consumers.get(req.consumer_id)
        if old is not None and old.conn not in s.lost and old.conn != m.conn:
            tx.out.append(bw.msg(self.name, m.src, bw.RegisterResp("CONSUMER_ID_IN_USE"), m.conn))
            return
        if req.session_timeout_ms < self.cfg.min_session_timeout_ms:
            tx.out.append(bw.msg(self.name, m.src, bw.RegisterResp("INVALID_SESSION_TIMEOUT"), m.conn))
            return
        tx.emit(
            Registered(
                req.consumer_id,
                m.src,
                req.topics,
                req.session_timeout_ms,
                m.conn,
                tx.now + req.session_timeout_ms // 3,
                threads=req.threads,
            )
        )
        if s.phase == "waiting":
            tx.emit(Acked(req.consumer_id))
            if not s.pending:
                phase_done(tx, self.cfg, self.topics)
            return
        tx.out.append(bw.msg(self.name, m.src, bw.RegisterResp("NONE"), m.conn))
        tx.emit(Dirty(True))
        maybe_rebalance(tx, self.cfg, self.topics)

    def on_timer(self, key: str, now: int) -> list[Msg]:
        s, tx = self.s, Tx(self.s, self.name, now)
        if key == "elect":
            owner = self.zk.get("owner")
            return self.elect(now) if not owner or owner == self.name else []
        if key == "session":
            return self.new_session(now)
        kind, _, cid = key.partition(":")
        r = s.consumers.get(cid)
        if kind == "ping" and r is not None:
            third = r.session_timeout_ms // 3
            if r.conn in s.lost:  # the channel is gone: the send fails at once
                tx.emit(PingState(cid, r.failures, r.seq, now + third, None))
                self._failed(tx, r)
            else:
                watch = (
                    r.watch if r.watch is not None else now + 2 * third
                )  # one watcher per outstanding ping
                tx.emit(PingState(cid, r.failures, r.seq + (r.watch is None), now + third, watch))
                tx.send(r, bw.Ping(cid, r.seq))
        elif kind == "watch" and r is not None:
            tx.emit(PingState(cid, r.failures, r.seq, r.next_ping, None))
            self._failed(tx, r)
        elif key == "phase" and s.phase == "waiting":
            for gone in sorted(s.pending):  # known consumers that did not come back in time
                if gone in s.consumers and s.consumers[gone].conn in s.lost:
                    tx.emit(Unregistered(gone))
            phase_done(tx, self.cfg, self.topics)
        elif key == "phase":  # stop/start answers missing: back off and retry (seed 001 step 5)
            retries = s.retries + 1
            failed = retries > self.cfg.max_rebalance_retries
            tx.emit(
                PhaseSet(
                    "idle",
                    s.round,
                    retries=0 if failed else retries,
                    backoff=None if failed else now + self.cfg.backoff_ms,
                )
            )
            tx.emit(Dirty(not failed))
        elif key == "backoff":
            maybe_rebalance(tx, self.cfg, self.topics)
        elif key == "commit":  # the committer thread (seed 001 §5 item 7)
            tx.emit(OffsetsStored(tuple(sorted(s.committed.items()))))
            tx.emit(CommitterArmed(now + self.cfg.commit_ms))
        return self._take(tx)

    def _failed(self, tx: Tx, r: Reg) -> None:
        failures = r.failures + 1
        if failures > self.cfg.max_ping_retries:
            fail_consumer(tx, r.consumer_id, self.cfg, self.topics)
        else:
            tx.emit(PingState(r.consumer_id, failures, r.seq, r.next_ping, None))

    def depose(self, reconnect_at: int) -> None:
        """Its ZooKeeper session expired (a long pause, a partition from ZooKeeper) while the broker
        runs on: nothing tells it until its client reconnects at ``reconnect_at`` (seed 001 §10)."""
        self.deposed = True
        self.arm("session", reconnect_at)

    def new_session(self, now: int) -> list[Msg]:
        """Seed 001 §10 handleNewSession: clear the in-memory state, then try to be elected again."""
        self.retired += self.s.rebalances
        self.s, self.deposed = BState(), False
        self.timers.clear()
        return self.elect(now) if not self.zk.get("owner") else []

    def conn_lost(self, conn: int, now: int) -> list[Msg]:
        """The socket server lost this connection (the consumer's side may not know)."""
        tx = Tx(self.s, self.name, now)
        if self.s.active:
            tx.emit(ConnLost(conn))
        return self._take(tx)

    def topic_changed(self, now: int) -> list[Msg]:
        """A watched topic changed (seed 001 section 6): rebalance the group."""
        tx = Tx(self.s, self.name, now)
        if self.s.active:
            tx.emit(Dirty(True))
            maybe_rebalance(tx, self.cfg, self.topics)
        return self._take(tx)
