"""The consumer of seed 001 (sections 7, 10, 11) and the engine of the broker-side design.

The consumer finds the coordinator with a ClusterMetadataRequest to its bootstrap brokers in turn,
registers on a new connection and then only answers the coordinator: Ping, StopFetcher (stop
fetching), StartFetcher (fetch these partitions). If it hears nothing for a session timeout it
stops its fetchers, closes the connection and starts over; it checks that every third of the
session timeout (seed 001 section 8, item 5: it 'will disconnect ... within 1/3*session_timeout').
A close it hears also sends it back to discovery. Seed 001 has no leave request: a consumer that
shuts down stops fetching, reports its final offsets in the next ping answer, waits for the ping
after that (which shows the answer arrived, section 11 handlePingRequest 1.2) and closes its
connection. Ownership carries no generation, so the view's token is None.

Consumption is time: a partition's position advances one unit per millisecond the consumer fetches
it (not while paused). Ping and StopFetcher answers carry the positions (auto_commit), StartFetcher
the offsets to start from; the engine counts what a new owner reads again (`reread_ms`).
"""

from __future__ import annotations

from typing import Any

from model.designs import broker_wire as bw
from model.designs import ops as o
from model.designs.broker_coordinator import BrokerCoordinator, Config
from model.designs.engine import MemberActor, NetEngine, Timing
from model.designs.net import DesignError, Msg
from model.designs.ops import Join
from model.embedded import TopicPartition

MAX_THREADS = 64
MIN_COMMIT_MS = 100


class BrokerConsumer(MemberActor):
    def __init__(self, engine: BrokerEngine, op: Join) -> None:
        super().__init__()
        self.engine, self.timing = engine, engine.timing
        self.name, self.topics, self.regex, self.version = op.member, op.topics, op.regex, op.version
        self.phase, self.conn, self.coordinator, self.last_heard, self.turn = "discover", 0, "", 0, 0
        self.held: tuple[TopicPartition, ...] = ()
        self.threads = engine.threads
        #: ms fetched before ``since`` (the clock positions advance with); ``since`` None: paused
        self.fetched_ms = 0
        self.since: int | None = 0
        #: per held partition: the offset it started from and the clock then
        self.base: dict[TopicPartition, tuple[int, int]] = {}
        #: a shutdown under way: the final offsets, and whether a ping answer carried them yet
        self.final: tuple[tuple[TopicPartition, ...], tuple[int, ...]] = ((), ())
        self.final_sent, self.leave_at = False, 0

    def holds(self) -> frozenset[TopicPartition]:
        return frozenset(self.held)

    def token(self) -> int | None:
        return None

    def _subscribed(self) -> tuple[str, ...]:
        return tuple(sorted(self.engine.brokers.truth)) if self.regex else self.topics

    # ------------------------------------------------------------ consumption
    def _clock(self, now: int) -> int:
        return self.fetched_ms + (now - self.since if self.since is not None else 0)

    def positions(self, now: int) -> tuple[int, ...]:
        clock = self._clock(now)
        return tuple(self.base[tp][0] + clock - self.base[tp][1] for tp in self.held)

    def freeze(self, now: int) -> None:
        if self.since is not None:
            self.fetched_ms = self._clock(now)
            self.since = None

    def thaw(self, now: int) -> None:
        if self.since is None:
            self.since = now

    def fetch(self, parts: tuple[TopicPartition, ...], offsets: tuple[int, ...], now: int) -> None:
        self.stop_fetching(now)
        offsets = offsets or (0,) * len(parts)
        self.held = parts
        self.base = {tp: (off, self._clock(now)) for tp, off in zip(parts, offsets, strict=True)}
        for tp, off in self.base.items():
            self.engine.started(tp, off[0])

    def stop_fetching(self, now: int) -> tuple[tuple[TopicPartition, ...], tuple[int, ...]]:
        """Stop every fetcher; the positions reached (also told to the engine)."""
        parts, offsets = self.held, self.positions(now)
        for tp, pos in zip(parts, offsets, strict=True):
            self.engine.reached(tp, pos)
        self.held, self.base = (), {}
        return parts, offsets

    # ------------------------------------------------------------ protocol
    def start(self, now: int) -> list[Msg]:
        self.arm("check", now + self.timing.session_timeout_ms // 3)
        return self._discover(now)

    def leave(self, now: int) -> list[Msg]:
        if self.phase != "registered":
            self.stop_fetching(now)
            self.phase = "left"
            self.timers.clear()
            return []
        self.final, self.final_sent = self.stop_fetching(now), False
        self.phase, self.leave_at = "leaving", now
        return []

    def _close(self) -> list[Msg]:
        self.phase = "left"
        self.timers.clear()
        return [bw.msg(self.name, self.coordinator, bw.Close(), self.conn)]

    def _discover(self, now: int) -> list[Msg]:
        self.stop_fetching(now)
        self.phase = "discover"
        self.conn = self.engine.net.new_conn()
        target = bw.BROKERS[self.turn % len(bw.BROKERS)]
        self.turn += 1
        self.arm("request", now + self.timing.request_timeout_ms)
        return [bw.msg(self.name, target, bw.MetadataReq(), self.conn)]

    def on_message(self, m: Msg, now: int) -> list[Msg]:
        body = m.body
        if self.phase == "left" or m.conn != self.conn:
            return []
        if isinstance(body, bw.MetadataResp) and self.phase == "discover":
            self.disarm("request")
            if not body.coordinator:
                self.arm("retry", now + self.timing.retry_backoff_ms)
                return []
            self.coordinator, self.phase = body.coordinator, "registering"
            self.conn = self.engine.net.new_conn()
            self.arm("request", now + self.timing.request_timeout_ms)
            req = bw.RegisterReq(self.name, self._subscribed(), self.timing.session_timeout_ms, self.threads)
            return [bw.msg(self.name, self.coordinator, req, self.conn)]
        self.last_heard = now
        if isinstance(body, bw.RegisterResp):
            self.disarm("request")
            if body.error != "NONE":
                self.arm("retry", now + self.timing.retry_backoff_ms)
                self.phase = "discover"
                return []
            self.phase = "registered"
            if body.ownership is not None:
                self.fetch(body.ownership, body.offsets, now)
            return []
        if isinstance(body, bw.Close):  # the coordinator closed the socket: stop and start over
            if self.phase == "leaving":
                self.phase = "left"
                self.timers.clear()
                return []
            return self._discover(now)
        leaving = self.phase == "leaving"
        reply: Any = None
        if isinstance(body, bw.Ping) and leaving:
            if self.final_sent:  # the answer with the final offsets has arrived: close
                return self._close()
            self.final_sent = True
            reply = bw.PingResp(self.name, body.seq, *self.final)
        elif isinstance(body, bw.Ping):
            reply = bw.PingResp(self.name, body.seq, self.held, self.positions(now))
        elif isinstance(body, bw.StopFetcher):
            reply = bw.StopFetcherResp(self.name, body.round, *self.stop_fetching(now))
        elif isinstance(body, bw.StartFetcher):
            if not leaving:
                self.fetch(body.ownership, body.offsets, now)
            reply = bw.StartFetcherResp(self.name, body.round)
        return [bw.msg(self.name, m.src, reply, self.conn)] if reply is not None else []

    def on_timer(self, key: str, now: int) -> list[Msg]:
        if key == "check":
            self.arm("check", now + self.timing.session_timeout_ms // 3)
            if self.phase == "leaving" and now - self.leave_at >= self.timing.session_timeout_ms:
                return self._close()  # no ping came: the coordinator is gone
            if self.phase == "registered" and now - self.last_heard >= self.timing.session_timeout_ms:
                closing = bw.msg(self.name, self.coordinator, bw.Close(), self.conn)
                return [closing, *self._discover(now)]  # seed 001 section 10: suspect the coordinator
            return []
        if key in ("request", "retry") and self.phase in ("discover", "registering"):
            return self._discover(now)
        return []


class BrokerEngine(NetEngine):
    design = "broker-coordinator"
    rebalance_kinds = bw.REBALANCE_KINDS

    def __init__(
        self, topics: dict[str, int], timing: Timing | None = None, options: dict[str, str] | None = None
    ) -> None:
        super().__init__(topics, timing, options)
        try:
            self.cfg = Config(
                max_ping_retries=int(self.options.get("max_ping_retries", "1")),
                sockets=self.options.get("rebalance", "fetchers") == "sockets",
                strategy=self.options.get("strategy", "range"),
                startup_wait_ms=self.timing.session_timeout_ms,
                commit_ms=int(self.options.get("commit_ms", "10000")),
            )
            self.zk_session_ms = int(self.options.get("zk_session_ms", "6000"))
            self.threads = int(self.options.get("threads", "1"))
            self.zombie_ms = int(self.options.get("zombie_ms", "20000"))
        except ValueError as exc:
            raise DesignError(f"broker-coordinator: {exc}") from None
        if not 1 <= self.threads <= MAX_THREADS:
            raise DesignError(f"broker-coordinator: threads must be 1..{MAX_THREADS}")
        if self.cfg.commit_ms < MIN_COMMIT_MS:
            raise DesignError(f"broker-coordinator: commit_ms must be at least {MIN_COMMIT_MS}")
        if self.options.get("rebalance", "fetchers") not in ("fetchers", "sockets"):
            raise DesignError("broker-coordinator: rebalance must be fetchers or sockets")
        self.zombie = self.options.get("failover", "crash") == "zombie"
        self.zk: dict[str, Any] = {"log": [], "owner": ""}
        self.past = 0
        #: the highest position any consumer reached per partition, and what new owners read again
        self.high: dict[TopicPartition, int] = {}
        self.reread_ms = 0
        for name in bw.BROKERS:
            self.net.add(BrokerCoordinator(name, self.cfg, self.brokers.truth, self.zk))
        self.net.send(self._active_or(bw.BROKERS[0]).elect(0))

    def reached(self, tp: TopicPartition, position: int) -> None:
        self.high[tp] = max(self.high.get(tp, 0), position)

    def started(self, tp: TopicPartition, offset: int) -> None:
        self.reread_ms += max(0, self.high.get(tp, 0) - offset)

    def apply(self, op: Any) -> None:
        """Consumption stops with the process (a crash, a restart) and halts while it is paused."""
        m = self.members.get(getattr(op, "member", ""))
        if isinstance(m, BrokerConsumer) and self._alive(m.name):
            if isinstance(op, o.Crash | o.Upgrade):
                m.stop_fetching(self.net.now)
            elif isinstance(op, o.Pause):
                m.freeze(self.net.now)
            elif isinstance(op, o.Resume):
                m.thaw(self.net.now)
        super().apply(op)

    def _active_or(self, name: str) -> BrokerCoordinator:
        actor = self.net.actors[self.zk.get("owner") or name]
        assert isinstance(actor, BrokerCoordinator)
        return actor

    def make_member(self, op: Join, incarnation: int) -> MemberActor:
        return BrokerConsumer(self, op)

    def generation(self) -> int | None:
        return None

    def strategy(self) -> str:
        return self.cfg.strategy if self.zk.get("owner") else ""

    def rebalances(self) -> int:
        return self.past + sum(
            a.s.rebalances + a.retired for a in self.net.actors.values() if isinstance(a, BrokerCoordinator)
        )

    def coordinator_entries(self) -> int:
        owner = self.zk.get("owner")
        return len(self.net.actors[owner].s.consumers) if owner else -1  # type: ignore[attr-defined]

    def failover(self) -> None:
        """The coordinator's broker dies; its ZooKeeper session expires after ``zk_session_ms`` and
        the other broker's elector wins (seed 001 section 10). The dead broker comes back as a
        standby with empty memory (handleNewSession). ``failover=zombie``: the broker does not die,
        only its ZooKeeper session expires; it goes on pinging and rebalancing the consumers it
        knows until its client reconnects, ``zombie_ms`` later, and learns of the expiry."""
        owner = self.zk.get("owner")
        if not owner:
            return
        old = self.net.actors[owner]
        assert isinstance(old, BrokerCoordinator)
        standby = next(b for b in bw.BROKERS if b != owner)
        if self.zombie:
            old.depose(self.net.now + self.zombie_ms)
            self.zk["owner"] = ""
            self.net.actors[standby].arm("elect", self.net.now + self.zk_session_ms)
            return
        self.past += old.s.rebalances + old.retired
        self.net.kill(owner)
        self.zk["owner"] = ""
        self.net.actors[standby].arm("elect", self.net.now + self.zk_session_ms)
        self.net.add(BrokerCoordinator(owner, self.cfg, self.brokers.truth, self.zk))

    def lose_socket(self, member: str) -> None:
        """Half-open: the coordinator's socket server loses the connection, the consumer hears nothing."""
        consumer = self.members[member]
        assert isinstance(consumer, BrokerConsumer)
        if consumer.phase != "registered" or not self.zk.get("owner"):
            return
        self.net.lost_conns.add(consumer.conn)
        self.net.send(self._active_or(bw.BROKERS[0]).conn_lost(consumer.conn, self.net.now))

    def on_topic_change(self, topic: str) -> None:
        if self.zk.get("owner"):
            self.net.send(self._active_or(bw.BROKERS[0]).topic_changed(self.net.now))
