"""A virtual classic consumer that behaves like the Java consumer (docs/protocol-reference.md#c1, #c5; CC, AbstractCoordinator).

Pure state machine: `next_request` says what it would send now, `on_response` takes the answer.
It joins (KIP-394 round trip on v4+), the leader runs the client-side assignor on the member list,
every member syncs, then heartbeats; it rejoins on REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION and
UNKNOWN_MEMBER_ID (resetting the member id only for the latter), and stops on fatal errors.
Eager members revoke everything before rejoining; cooperative members (KIP-429) keep what they
own, give up what a new assignment drops and immediately rejoin to have it reassigned.

`owned` is the consumer view (what it consumes now); `claim`/`claim_generation` is the sticky
assignor's memory written into user data (StickyAssignor keeps it across revocation, SA L211).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache

from model.assignors import get_assignor
from model.classic.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    Request,
    Response,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.embedded import (
    EmbeddedDecodeError,
    Subscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from model.errors import ErrorCode

E = ErrorCode
#: errors the Java consumer raises to the application instead of retrying (INVALID_SESSION_TIMEOUT:
#: AbstractCoordinator.JoinGroupResponseHandler, apache/kafka@1eb7644 L704-708)
FATAL = frozenset(
    {E.FENCED_INSTANCE_ID, E.INCONSISTENT_GROUP_PROTOCOL, E.GROUP_MAX_SIZE_REACHED, E.INVALID_SESSION_TIMEOUT}
)
RETRIABLE = frozenset({E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS})


class Phase(Enum):
    UNJOINED = "unjoined"
    JOINING = "joining"
    SYNCING = "syncing"
    STABLE = "stable"
    FATAL = "fatal"
    LEFT = "left"


@dataclass
class ClientConfig:
    group_id: str = "g"
    client_id: str = "consumer"
    instance_id: str | None = None
    topics: tuple[str, ...] = ("t",)
    assignors: tuple[str, ...] = ("range",)
    #: (assignor name, option, value): e.g. ("sticky", "user_data_version", 0)
    assignor_options: tuple[tuple[str, str, object], ...] = ()
    join_version: int = 9
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = 30_000
    sync_version: int = 5
    heartbeat_version: int = 4
    leave_version: int = 5
    commit_version: int = 8
    #: commit with the generation of the last JoinGroup answer even before SyncGroup completes (the
    #: coordinator answers REBALANCE_IN_PROGRESS in CompletingRebalance, which dpkp/kafka-python
    #: PR #2614 handles); False: Java's `generationIfStable()`, no commit outside Stable
    commit_joined_generation: bool = False


@lru_cache(maxsize=64)
def _cooperative(name: str, options: tuple[tuple[str, str, object], ...], _types: tuple[type, ...]) -> bool:
    """Whether assignor ``name`` (with its ``options``) prefers COOPERATIVE: asked on every
    snapshot, and an assignor's protocols depend on its name and options only."""
    chosen = {k: v for a, k, v in options if a == name}
    return "COOPERATIVE" in get_assignor(name, **chosen).rebalance_protocols


@dataclass
class ClassicClient:
    name: str
    config: ClientConfig
    member_id: str = ""
    generation: int = -1
    protocol: str | None = None
    leader: str = ""
    phase: Phase = Phase.UNJOINED
    owned: tuple[TopicPartition, ...] = ()
    claim: tuple[TopicPartition, ...] = ()
    claim_generation: int = -1
    pending_assignments: tuple[tuple[str, bytes], ...] = ()
    inflight: str | None = None
    needs_rejoin: bool = True
    fatal_error: ErrorCode | None = None
    last_error: ErrorCode = E.NONE
    assignor_failed: str | None = None
    leader_input: tuple[tuple[str, Subscription], ...] = field(default=())
    leader_output: tuple[tuple[str, tuple[TopicPartition, ...]], ...] = field(default=())
    #: Fault (off by default): the next time this consumer falls out of the group its
    #: SubscriptionState is not updated, so it rejoins still claiming the partitions it lost (at the
    #: reset generation -1): the ConsumerCoordinator failure apache/kafka PR #10985 (KAFKA-12984) describes as
    #: "seen in the wild" feeding invalid ownedPartitions to the leader's assignor.
    stale_subscription: bool = False
    #: the fault fired: the partitions it kept are held until the next assignment arrives
    stale_kept: bool = False
    #: what the assignments since then handed back of the partitions it claimed only through the
    #: fault and has held ever since: a leader cannot tell such a claim from a true one, so they are
    #: held on the fault's account (docs/invariants.md#stale-claims)
    stale_regained: frozenset[TopicPartition] = frozenset()

    @property
    def cooperative(self) -> bool:
        assignors, options = self.config.assignors, self.config.assignor_options
        last = self.__dict__.get("_cooperative")  # (assignors, options, answer), not a field
        if last is not None and last[0] is assignors and last[1] is options:
            return bool(last[2])
        try:  # the value types are part of the key: True and 1 are equal but not the same option
            answer = _cooperative(assignors[0], options, tuple(type(v) for _a, _k, v in options))
        except TypeError:  # an unhashable option value: no cache
            answer = _cooperative.__wrapped__(assignors[0], options, ())
        self.__dict__["_cooperative"] = (assignors, options, answer)
        return answer

    def _assignor(self, name: str):  # type: ignore[no-untyped-def]
        options = {k: v for a, k, v in self.config.assignor_options if a == name}
        return get_assignor(name, **options)

    # ------------------------------------------------------------------ requests
    def next_request(self, topics: dict[str, int]) -> Request | None:
        """What the consumer sends next, or None while a request is in flight or it has stopped."""
        if self.inflight is not None or self.phase in (Phase.FATAL, Phase.LEFT):
            return None
        if self.needs_rejoin or self.phase == Phase.UNJOINED:
            return self._join_request()
        if self.phase == Phase.SYNCING:
            self.inflight = "sync"
            cfg = self.config
            return SyncGroupRequest(
                cfg.group_id,
                self.generation,
                self.member_id,
                self.pending_assignments,
                cfg.instance_id,
                "consumer" if cfg.sync_version >= 5 else None,
                self.protocol if cfg.sync_version >= 5 else None,
                cfg.sync_version,
            )
        self.inflight = "heartbeat"
        return HeartbeatRequest(
            self.config.group_id,
            self.generation,
            self.member_id,
            self.config.instance_id,
            self.config.heartbeat_version,
        )

    def join_protocols(self) -> tuple[tuple[str, bytes], ...]:
        """The (assignor, subscription) pairs a JoinGroup of this consumer carries, as it stands now
        (a retried or duplicated JoinGroup carries the same)."""
        cfg = self.config
        protocols = []
        for name in cfg.assignors:
            if self.cooperative:
                sub = self._assignor(name).subscription(cfg.topics, self.owned, self.generation)
            else:
                sub = self._assignor(name).subscription(cfg.topics, self.claim, self.claim_generation)
            protocols.append((name, encode_subscription(sub)))
        return tuple(protocols)

    def _join_request(self) -> JoinGroupRequest:
        cfg = self.config
        if not self.cooperative:
            self.owned = ()  # eager: onPartitionsRevoked before every JoinGroup (CC onJoinPrepare)
        else:  # cooperative: those of topics no longer subscribed (ConsumerCoordinator@1eb7644 L795-809)
            self.owned = tuple(tp for tp in self.owned if tp[0] in cfg.topics)
        protocols = self.join_protocols()
        self.inflight = "join"
        self.needs_rejoin = False
        self.phase = Phase.JOINING
        return JoinGroupRequest(
            cfg.group_id,
            self.member_id,
            "consumer",
            protocols,
            cfg.session_timeout_ms,
            cfg.rebalance_timeout_ms if cfg.join_version >= 1 else -1,  # v0: the session timeout
            cfg.instance_id,
            None,
            cfg.client_id,
            cfg.join_version,
        )

    def commit_request(self, offset: int) -> OffsetCommitRequest | None:
        """Commit one offset for every owned partition (Java commitSync with the current generation).

        A consumer that is not part of an active group (its generation reset to -1) fails the commit
        itself and sends nothing: ConsumerCoordinator.sendOffsetCommitRequest, `generationIfStable()`
        null -> CommitFailedException / RebalanceInProgressException. Matters under the
        `stale_subscription` fault, which keeps the owned partitions across the reset."""
        phases = (Phase.STABLE, Phase.SYNCING) if self.config.commit_joined_generation else (Phase.STABLE,)
        if self.inflight is not None or self.phase not in phases or not self.owned or self.generation < 0:
            return None
        self.inflight = "commit"
        parts = tuple(OffsetCommitPartition(t, p, offset) for t, p in self.owned)
        return OffsetCommitRequest(
            self.config.group_id,
            self.generation,
            self.member_id,
            parts,
            self.config.instance_id,
            self.config.commit_version,
        )

    def leave_request(self) -> LeaveGroupRequest | None:
        """Dynamic members leave on close; static members do not (KIP-345)."""
        if self.inflight is not None or not self.member_id or self.config.instance_id is not None:
            return None
        self.inflight = "leave"
        return LeaveGroupRequest(
            self.config.group_id, (MemberIdentity(self.member_id),), self.config.leave_version
        )

    def unsubscribe(self) -> bool:
        """A static member's ``unsubscribe()`` with the LeaveGroup suppressed, then the application
        subscribes again to the same topics; True if it applied (a static member with a member id).

        Java classic consumer: `ConsumerCoordinator.onLeavePrepare` revokes the owned partitions and
        `AbstractCoordinator.maybeLeaveGroup` sends LeaveGroup only for a dynamic member (KIP-345),
        then `resetGenerationOnLeaveGroup` resets the generation and asks for a rejoin. Since
        KAFKA-20983 / KAFKA-20985 (apache/kafka PRs #23265, #23266) the member id is kept when no
        LeaveGroup was sent, so the coordinator, which still holds the member, sees the rejoin as
        that member's, not as a new process claiming the group.instance.id. A request in flight is
        abandoned (the consumer no longer waits for it). A dynamic member's unsubscribe is `leave`.
        """
        if self.config.instance_id is None or not self.member_id or self.phase in (Phase.FATAL, Phase.LEFT):
            return False
        self.inflight = None
        self.owned = ()
        self._forget_membership()
        self.generation = -1
        self._request_rejoin()
        return True

    def _forget_membership(self) -> None:
        """What the suppressed leave clears besides the generation: nothing (KAFKA-20983 fix); the
        row-15 mutant clears the member id here."""

    # ------------------------------------------------------------------ responses
    def on_response(self, response: Response, topics: dict[str, int]) -> None:
        kind, self.inflight = self.inflight, None
        if isinstance(response, JoinGroupResponse) and kind == "join":
            self._on_join(response, topics)
        elif isinstance(response, SyncGroupResponse) and kind == "sync":
            self._on_sync(response)
        elif isinstance(response, HeartbeatResponse) and kind == "heartbeat":
            self._on_error(response.error)
        elif isinstance(response, OffsetCommitResponse) and kind == "commit":
            errors = {e for _, _, e in response.partitions if e != E.NONE}
            self._on_error(min(errors) if errors else E.NONE)
        elif isinstance(response, LeaveGroupResponse) and kind == "leave":
            self._reset(member_id=True)
            self.owned = ()
            self.phase = Phase.LEFT
        else:
            self.inflight = kind  # not the answer we wait for

    def on_timeout(self) -> None:
        """No answer within the request timeout: give up the request and rejoin (Java's disconnect path)."""
        if self.inflight is None:
            return
        self.inflight = None
        self._request_rejoin()

    def _on_join(self, resp: JoinGroupResponse, topics: dict[str, int]) -> None:
        self.last_error = resp.error
        if resp.error == E.MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
            self._request_rejoin()
        elif resp.error == E.NONE:
            self.member_id = resp.member_id
            self.generation = resp.generation_id
            self.protocol = resp.protocol_name
            self.leader = resp.leader
            self.pending_assignments = ()
            if resp.leader == resp.member_id and not resp.skip_assignment and resp.members:
                self._run_assignor(resp, topics)
            self.phase = Phase.SYNCING
        else:
            self._on_error(resp.error)

    def _run_assignor(self, resp: JoinGroupResponse, topics: dict[str, int]) -> None:
        """Leader: decode every member's subscription and assign (AbstractCoordinator onLeaderElected)."""
        subs: dict[str, Subscription] = {}
        try:
            for m in resp.members:
                subs[m.member_id] = decode_subscription(m.metadata)
        except EmbeddedDecodeError as exc:
            self.assignor_failed = str(exc)
            return
        self.assignor_failed = None
        name = resp.protocol_name or self.config.assignors[0]
        wanted = {t for s in subs.values() for t in s.topics}
        known = {t: n for t, n in topics.items() if t in wanted}
        result = self._assignor(name).assign(known, subs)
        self.leader_input = tuple(subs.items())
        self.leader_output = tuple((mid, a.partitions) for mid, a in result.items())
        self.pending_assignments = tuple((mid, encode_assignment(a)) for mid, a in result.items())

    def _on_sync(self, resp: SyncGroupResponse) -> None:
        self.last_error = resp.error
        if resp.error != E.NONE:
            self._on_error(resp.error)
            return
        try:
            assigned = decode_assignment(resp.assignment).partitions if resp.assignment else ()
        except EmbeddedDecodeError:
            assigned = ()
        self.phase = Phase.STABLE
        claimed = set(self.owned) if self.stale_kept else self.stale_regained.intersection(self.owned)
        self.stale_regained = frozenset(tp for tp in assigned if tp in claimed)
        self.stale_kept = False
        if self.cooperative:
            revoked = [tp for tp in self.owned if tp not in assigned]
            kept = tuple(tp for tp in self.owned if tp in assigned)
            added = tuple(tp for tp in assigned if tp not in self.owned)
            self.owned = kept + added
            if revoked:
                self._request_rejoin()  # KIP-429: revoke, then rejoin at once (CC L382-408)
        else:
            self.owned = tuple(assigned)
        self.claim = tuple(assigned)
        self.claim_generation = self.generation

    def _on_error(self, error: ErrorCode) -> None:
        self.last_error = error
        if error == E.NONE:
            return
        if error in FATAL:
            self.fatal_error = error
            self.phase = Phase.FATAL
            self.owned = ()
        elif error == E.UNKNOWN_MEMBER_ID:
            self._reset(member_id=True)
        elif error == E.ILLEGAL_GENERATION:
            self._reset(member_id=False)
        elif error in (E.REBALANCE_IN_PROGRESS, *RETRIABLE):
            self._request_rejoin()
        else:
            self._request_rejoin()

    def _reset(self, *, member_id: bool) -> None:
        """`resetStateAndGeneration`: cooperative members lose their partitions (onPartitionsLost).

        Under the `stale_subscription` fault (one shot) the owned partitions survive the reset.
        """
        self.generation = -1
        if member_id:
            self.member_id = ""
        if self.stale_subscription:
            self.stale_subscription = False
            self.stale_kept = bool(self.owned)
        elif self.cooperative:
            self.owned = ()
        self._request_rejoin()

    def _request_rejoin(self) -> None:
        self.needs_rejoin = True
        if self.phase not in (Phase.FATAL, Phase.LEFT):
            self.phase = Phase.UNJOINED if not self.member_id else self.phase
