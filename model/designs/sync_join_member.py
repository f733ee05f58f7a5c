"""The member of design 5 (seed 000 'Single Client Assignor') and its engine.

Metadata is the seed's embedded format: a version (int16) and the subscription. A member chosen as
synchronizer reads every member's metadata; a version newer than its own is unreadable unless the
option ``compat=both`` says formats are forward compatible (the seed: in general both directions
are needed, since the coordinator may pick an old or a new synchronizer). It assigns with its own
strategy (no group vote: 'there's no need for group to actually agree on the assignment strategy'),
spending ``assign_ms`` of virtual time, then answers. Eager like the other designs.
"""

from __future__ import annotations

from model.assignors import get_assignor
from model.designs import sync_join as sj
from model.designs.engine import MemberActor, NetEngine, Timing
from model.designs.joinall import COORDINATOR, NONE, REBALANCING, UNKNOWN, Ack, HeartbeatReq, LeaveReq
from model.designs.metadata import topics_of
from model.designs.net import DesignError, Msg
from model.designs.ops import STRATEGIES, Join
from model.embedded import (
    Assignment,
    Subscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

FATAL_ERRORS = frozenset({sj.METADATA_UNREADABLE})


class SyncJoinMember(MemberActor):
    def __init__(self, engine: SyncJoinEngine, op: Join) -> None:
        super().__init__()
        self.engine, self.timing = engine, engine.timing
        self.name, self.topics, self.regex, self.version = op.member, op.topics, op.regex, op.version
        self.member_id, self.generation, self.phase = "", -1, "unjoined"
        self.held: frozenset[TopicPartition] = frozenset()
        self.pending: sj.SSynced | None = None
        self.view: dict[str, int] = {}

    def holds(self) -> frozenset[TopicPartition]:
        return self.held

    def token(self) -> int | None:
        return self.generation

    def fatal(self) -> bool:
        return self.phase == "fatal"

    @property
    def strategy(self) -> str:
        return STRATEGIES[self.version]

    def metadata(self) -> bytes:
        topics = () if self.regex else self.topics
        sub = encode_subscription(Subscription(topics, user_data=bytes([1 if self.regex else 0])))
        return self.version.to_bytes(2, "big") + sub

    def _subscribed_view(self) -> dict[str, int]:
        view = self.engine.brokers.fetch(self.name)
        return {t: n for t, n in view.items() if self.regex or t in self.topics}

    def start(self, now: int) -> list[Msg]:
        self.view = self._subscribed_view()
        return self._join(now)

    def leave(self, now: int) -> list[Msg]:
        self.held, self.phase = frozenset(), "left"
        self.timers.clear()
        return [sj.msg(self.name, COORDINATOR, LeaveReq(self.member_id))] if self.member_id else []

    def _join(self, now: int) -> list[Msg]:
        self.held, self.phase, self.pending = frozenset(), "joining", None
        self.timers.clear()
        self.arm("metadata", now + self.timing.metadata_refresh_ms)
        # the seed: the client's own join timeout covers a whole join (phase join .. joined)
        self.arm("request", now + self.timing.request_timeout_ms + self.engine.sync_timeout_ms)
        return [
            sj.msg(
                self.name,
                COORDINATOR,
                sj.SJoin(self.member_id, self.metadata(), self.timing.session_timeout_ms),
            )
        ]

    def _later(self, now: int, reset: bool = False) -> list[Msg]:
        if reset:
            self.member_id, self.generation = "", -1
        self.held, self.phase = frozenset(), "joining"
        self.timers.clear()
        self.arm("rejoin", now + self.timing.retry_backoff_ms)
        return []

    def _assign(self, resp: sj.SResp) -> sj.SSynced:
        """The synchronizer's work: read every member's metadata, assign with its own strategy."""
        view = self.engine.brokers.fetch(self.name)
        subs = {}
        for mid, meta in resp.members:
            if sj.version_of(meta) > self.version and self.engine.compat != "both":
                return sj.SSynced(self.member_id, resp.generation, sj.METADATA_UNREADABLE)
            sub = decode_subscription(meta[2:])
            regex = (sub.user_data or b"\x00")[0] == 1
            subs[mid] = Subscription(topics_of(sub.topics, regex, view))
        wanted = {t for s in subs.values() for t in s.topics}
        result = get_assignor(self.strategy).assign({t: n for t, n in view.items() if t in wanted}, subs)
        states = tuple((mid, encode_assignment(Assignment(a.partitions))) for mid, a in result.items())
        return sj.SSynced(self.member_id, resp.generation, NONE, states, self.strategy)

    def on_message(self, m: Msg, now: int) -> list[Msg]:
        body = m.body
        if self.phase in ("left", "fatal"):
            return []
        if isinstance(body, sj.SResp) and self.phase == "joining":
            self.disarm("request")
            if body.member_id and body.error != UNKNOWN:
                self.member_id = body.member_id  # an error answer names the member id too
            if body.error == NONE and body.phase == "synchronize":
                self.member_id = body.member_id
                self.pending = self._assign(body)
                self.arm("compute", now + self.engine.assign_ms)
                return []
            if body.error == NONE and body.phase == "joined":
                self.member_id, self.generation, self.phase = body.member_id, body.generation, "stable"
                self.held = frozenset(decode_assignment(body.state).partitions) if body.state else frozenset()
                self.arm("heartbeat", now + self.timing.heartbeat_ms)
                self.arm("metadata", now + self.timing.metadata_refresh_ms)
                return []
            if body.error in FATAL_ERRORS:  # the seed: raise it to the user, rejoining will not help
                self.phase, self.held = "fatal", frozenset()
                self.timers.clear()
                return []
            return self._later(now, reset=body.error == UNKNOWN)
        if isinstance(body, Ack) and m.kind == "HeartbeatResponse" and self.phase == "stable":
            self.disarm("request")
            if body.error == NONE:
                self.arm("heartbeat", now + self.timing.heartbeat_ms)
                return []
            if body.error == REBALANCING:
                return self._join(now)
            return self._later(now, reset=body.error == UNKNOWN)
        return []

    def on_timer(self, key: str, now: int) -> list[Msg]:
        if key == "metadata":  # a member whose subscribed topics changed asks for a new generation
            self.arm("metadata", now + self.timing.metadata_refresh_ms)
            old, self.view = self.view, self._subscribed_view()
            return self._join(now) if old != self.view and self.phase == "stable" else []
        if key == "compute" and self.pending is not None and self.phase == "joining":
            synced, self.pending = self.pending, None
            self.arm("request", now + self.timing.request_timeout_ms + self.engine.sync_timeout_ms)
            return [sj.msg(self.name, COORDINATOR, synced)]
        if key in ("heartbeat", "request") and self.phase == "stable":
            self.arm("request", now + self.timing.request_timeout_ms)
            return [sj.msg(self.name, COORDINATOR, HeartbeatReq(self.member_id, self.generation))]
        if key in ("rejoin", "request") and self.phase == "joining":
            return self._join(now)
        return []


class SyncJoinEngine(NetEngine):
    design = "sync-in-join"
    rebalance_kinds = sj.REBALANCE_KINDS

    def __init__(
        self, topics: dict[str, int], timing: Timing | None = None, options: dict[str, str] | None = None
    ) -> None:
        super().__init__(topics, timing, options)
        try:
            self.sync_timeout_ms = int(self.options.get("sync_timeout_ms", "5000"))
            self.assign_ms = int(self.options.get("assign_ms", "0"))
        except ValueError as exc:
            raise DesignError(f"sync-in-join: {exc}") from None
        self.compat = self.options.get("compat", "backward")
        if self.compat not in ("backward", "both"):
            raise DesignError("sync-in-join: compat must be backward or both")
        self.coordinator = sj.SyncJoinCoordinator(self.options.get("choice", "random"), self.sync_timeout_ms)
        self.net.add(self.coordinator)
        self.past = 0

    def make_member(self, op: Join, incarnation: int) -> MemberActor:
        return SyncJoinMember(self, op)

    def generation(self) -> int | None:
        return self.coordinator.state.generation

    def strategy(self) -> str:
        return self.coordinator.state.strategy

    def rebalances(self) -> int:
        return self.past + self.coordinator.state.rebalances

    def coordinator_entries(self) -> int:
        return len(self.coordinator.state.members)

    def failover(self) -> None:
        old = self.coordinator
        self.past += old.state.rebalances
        self.coordinator = sj.SyncJoinCoordinator(old.how, old.sync_ms, sj.load(old.durable, self.net.now))
        self.coordinator.durable = list(old.durable)
        self.net.add(self.coordinator)
        self.net.drop_where(lambda m: COORDINATOR in (m.src, m.dst))
        for name in sorted(self.members):
            m = self.members[name]
            if self._alive(name) and isinstance(m, SyncJoinMember) and m.phase == "joining":
                self.net.send(m._later(self.net.now))

    def lose_socket(self, member: str) -> None:
        self.net.drop_where(lambda m: m.dst == member)
