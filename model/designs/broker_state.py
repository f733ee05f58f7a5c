"""The state of seed 001's broker-side coordinator and the records that change it.

A coordinator's handlers (`model.designs.broker_coordinator`) return messages and records; `apply`
is the only place state changes. Records marked ``durable`` are what the coordinator writes to
ZooKeeper (registrations, ownership, committed offsets; seed 001 sections 4 and 9); `load` is what a
newly elected coordinator reads back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from model.embedded import TopicPartition

Ownership = tuple[tuple[str, tuple[TopicPartition, ...]], ...]
#: per consumer, the consumer threads that get partitions and theirs (seed 001 StartFetcher ownership_info)
Split = tuple[tuple[str, Ownership], ...]
Offsets = tuple[tuple[TopicPartition, int], ...]


@dataclass
class Reg:
    consumer_id: str
    name: str
    topics: tuple[str, ...]
    session_timeout_ms: int
    conn: int
    failures: int = 0
    seq: int = 0
    next_ping: int = 0
    watch: int | None = None
    threads: int = 1


@dataclass
class BState:
    active: bool = False
    consumers: dict[str, Reg] = field(default_factory=dict)
    ownership: dict[str, tuple[TopicPartition, ...]] = field(default_factory=dict)
    phase: str = "idle"  # idle | stopping | starting | waiting
    round: int = 0
    pending: frozenset[str] = frozenset()
    plan: dict[str, tuple[TopicPartition, ...]] = field(default_factory=dict)
    deadline: int | None = None
    retries: int = 0
    backoff: int | None = None
    dirty: bool = False
    lost: frozenset[int] = frozenset()
    rebalances: int = 0
    split: dict[str, Ownership] = field(default_factory=dict)
    #: consumed offsets the coordinator holds (from ping and StopFetcher answers, seed 001 §11)
    committed: dict[TopicPartition, int] = field(default_factory=dict)
    #: when the committer next writes them to ZooKeeper (seed 001 §5 item 7)
    next_commit: int | None = None


# ---------------------------------------------------------------------- records
@dataclass(frozen=True)
class Registered:
    consumer_id: str
    name: str
    topics: tuple[str, ...]
    session_timeout_ms: int
    conn: int
    next_ping: int
    durable: bool = True
    threads: int = 1


@dataclass(frozen=True)
class Unregistered:
    consumer_id: str
    durable: bool = True


@dataclass(frozen=True)
class PingState:
    consumer_id: str
    failures: int
    seq: int
    next_ping: int
    watch: int | None


@dataclass(frozen=True)
class PhaseSet:
    phase: str
    round: int
    pending: frozenset[str] = frozenset()
    plan: Ownership = ()
    deadline: int | None = None
    retries: int = 0
    backoff: int | None = None
    split: Split = ()


@dataclass(frozen=True)
class Acked:
    consumer_id: str


@dataclass(frozen=True)
class Dirty:
    dirty: bool


@dataclass(frozen=True)
class OwnershipStored:
    ownership: Ownership
    durable: bool = True


@dataclass(frozen=True)
class Activated:
    pass


@dataclass(frozen=True)
class ConnLost:
    conn: int


@dataclass(frozen=True)
class Consumed:
    """Offsets a consumer reported in a ping or StopFetcher answer, kept in memory."""

    offsets: Offsets


@dataclass(frozen=True)
class OffsetsStored:
    """The committer (or a rebalance, seed 001 §9 step 4.3) wrote the offsets to ZooKeeper."""

    offsets: Offsets
    durable: bool = True


@dataclass(frozen=True)
class CommitterArmed:
    at: int


def apply(s: BState, rec: Any) -> None:
    if isinstance(rec, Registered):
        s.consumers[rec.consumer_id] = Reg(
            rec.consumer_id,
            rec.name,
            rec.topics,
            rec.session_timeout_ms,
            rec.conn,
            next_ping=rec.next_ping,
            threads=rec.threads,
        )
        s.ownership.pop(rec.consumer_id, None)  # a consumer registers with its fetchers stopped
    elif isinstance(rec, Unregistered):
        s.consumers.pop(rec.consumer_id, None)
        s.ownership.pop(rec.consumer_id, None)
        s.pending = s.pending - {rec.consumer_id}
    elif isinstance(rec, PingState):
        r = s.consumers[rec.consumer_id]
        r.failures, r.seq, r.next_ping, r.watch = rec.failures, rec.seq, rec.next_ping, rec.watch
    elif isinstance(rec, PhaseSet):
        s.phase, s.round, s.pending, s.plan = rec.phase, rec.round, rec.pending, dict(rec.plan)
        s.deadline, s.retries, s.backoff = rec.deadline, rec.retries, rec.backoff
        s.split = dict(rec.split)
    elif isinstance(rec, Acked):
        s.pending = s.pending - {rec.consumer_id}
    elif isinstance(rec, Dirty):
        s.dirty = rec.dirty
    elif isinstance(rec, OwnershipStored):
        s.ownership = {c: parts for c, parts in rec.ownership}
        s.rebalances += 1
    elif isinstance(rec, Activated):
        s.active = True
    elif isinstance(rec, ConnLost):
        s.lost = s.lost | {rec.conn}
    elif isinstance(rec, Consumed | OffsetsStored):
        s.committed.update(rec.offsets)
    elif isinstance(rec, CommitterArmed):
        s.next_commit = rec.at
    else:
        raise TypeError(f"unknown record {type(rec).__name__}")


def load(durable: list[Any]) -> BState:
    """What a newly elected coordinator reads from the store: registrations, ownership, offsets."""
    s = BState()
    for rec in durable:
        if isinstance(rec, Registered | Unregistered | OwnershipStored | OffsetsStored):
            apply(s, rec)
    s.rebalances = 0
    return s
