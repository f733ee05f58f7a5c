"""The member of the join-all designs: joins, computes its own share, heartbeats, rejoins.

Behaves like the classic Java consumer where the seed is silent (eager: it gives up everything
before rejoining; it rejoins on REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID);
what differs between the designs of seed 000 is its `Strategy`: which metadata it sends, how it
reads everyone's metadata into its own partitions (or decides to refetch and rejoin), and what a
metadata change it notices on a periodic refresh makes it do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from model.designs.engine import MemberActor, Timing
from model.designs.joinall import (
    COORDINATOR,
    ILLEGAL,
    INCONSISTENT,
    NONE,
    REBALANCING,
    UNKNOWN,
    Ack,
    HeartbeatReq,
    JoinReq,
    JoinResp,
    LeaveReq,
    msg,
)
from model.designs.net import Msg
from model.designs.ops import strategies_of
from model.embedded import TopicPartition

Fetch = Callable[[str], dict[str, int]]


class Strategy(Protocol):
    def metadata(self, member: JoinAllMember, protocol: str) -> bytes:
        """What ``member`` sends for ``protocol`` in JoinGroup."""
        ...

    def decide(self, member: JoinAllMember, resp: JoinResp) -> frozenset[TopicPartition] | None:
        """The member's partitions for this generation, or None: refetch metadata and rejoin."""
        ...

    def on_refresh(self, member: JoinAllMember, old: dict[str, int]) -> str:
        """After a periodic metadata fetch changed the view: "rejoin", "recompute" or "none"."""
        ...


class JoinAllMember(MemberActor):
    def __init__(
        self,
        name: str,
        topics: tuple[str, ...],
        regex: bool,
        version: int,
        strategy: Strategy,
        fetch: Fetch,
        timing: Timing,
    ) -> None:
        super().__init__()
        self.name, self.topics, self.regex, self.version = name, topics, regex, version
        self.strategy, self.fetch, self.timing = strategy, fetch, timing
        self.member_id = ""
        self.generation = -1
        self.phase = "unjoined"
        self.held: frozenset[TopicPartition] = frozenset()
        self.view: dict[str, int] = {}
        self.last: JoinResp | None = None
        self.rejoins = 0

    # ------------------------------------------------------------ engine side
    def holds(self) -> frozenset[TopicPartition]:
        return self.held

    def token(self) -> int | None:
        return self.generation

    def fatal(self) -> bool:
        return self.phase == "fatal"

    def start(self, now: int) -> list[Msg]:
        self.view = self.fetch(self.name)
        self.arm("metadata", now + self.timing.metadata_refresh_ms)
        return self._join(now)

    def leave(self, now: int) -> list[Msg]:
        self.held = frozenset()
        self.phase = "left"
        self.timers.clear()
        return [msg(self.name, COORDINATOR, LeaveReq(self.member_id))] if self.member_id else []

    # ------------------------------------------------------------ protocol
    def _join(self, now: int) -> list[Msg]:
        self.held = frozenset()  # eager: everything is given up before rejoining
        self.phase = "joining"
        self.disarm("heartbeat")
        self.disarm("rejoin")
        self.arm("request", now + self.timing.request_timeout_ms)
        protocols = tuple((p, self.strategy.metadata(self, p)) for p in strategies_of(self.version))
        return [
            msg(self.name, COORDINATOR, JoinReq(self.member_id, protocols, self.timing.session_timeout_ms))
        ]

    def _rejoin_later(self, now: int, reset_id: bool = False) -> list[Msg]:
        if reset_id:
            self.member_id, self.generation = "", -1
        self.held = frozenset()
        self.phase = "joining"
        self.disarm("heartbeat")
        self.disarm("request")
        self.arm("rejoin", now + self.timing.retry_backoff_ms)
        return []

    def on_message(self, m: Msg, now: int) -> list[Msg]:
        body = m.body
        if self.phase in ("left", "fatal"):
            return []
        if isinstance(body, JoinResp) and self.phase == "joining":
            self.disarm("request")
            if body.error == NONE:
                self.member_id, self.generation, self.last = body.member_id, body.generation, body
                decided = self.strategy.decide(self, body)
                if decided is None:  # the seed: refetch metadata and rejoin
                    self.rejoins += 1
                    self.view = self.fetch(self.name)
                    return self._rejoin_later(now)
                self.held, self.phase = decided, "stable"
                self.arm("heartbeat", now + self.timing.heartbeat_ms)
                return []
            if body.error == INCONSISTENT:
                self.phase, self.held = "fatal", frozenset()
                self.timers.clear()
                return []
            return self._rejoin_later(now, reset_id=body.error == UNKNOWN)
        if isinstance(body, Ack) and m.kind == "HeartbeatResponse" and self.phase == "stable":
            self.disarm("request")
            if body.error == NONE:
                self.arm("heartbeat", now + self.timing.heartbeat_ms)
                return []
            if body.error in (REBALANCING, ILLEGAL):
                return self._join(now)
            return self._rejoin_later(now, reset_id=True)
        return []

    def on_timer(self, key: str, now: int) -> list[Msg]:
        if key in ("heartbeat", "request") and self.phase == "stable":
            self.arm("request", now + self.timing.request_timeout_ms)
            return [msg(self.name, COORDINATOR, HeartbeatReq(self.member_id, self.generation))]
        if key in ("rejoin", "request") and self.phase == "joining":
            return self._join(now)
        if key == "metadata":
            self.arm("metadata", now + self.timing.metadata_refresh_ms)
            old, self.view = self.view, self.fetch(self.name)
            if old == self.view or self.phase != "stable":
                return []
            action = self.strategy.on_refresh(self, old)
            if action == "rejoin":
                return self._join(now)
            if action == "recompute" and self.last is not None:
                decided = self.strategy.decide(self, self.last)
                self.held = decided if decided is not None else self.held
        return []

    def coordinator_lost(self, now: int) -> list[Msg]:
        """The coordinator's broker died: the connection closes, an in-flight join is retried."""
        if self.phase == "joining":
            return self._rejoin_later(now)
        return []
