"""Messages of seed 001's broker-side coordinator and their sizes in the seed's own layouts.

Seed 001 sections 7 and 11 list the fields: every message starts with a size (int32) and a
request type id (int16); strings carry an int16 length. Ownership in StartFetcherRequest lists one
entry per consumer thread that gets partitions, each with topic, partition (a string in the seed)
and offset, followed by the broker list. A closed socket is a message of size 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from model.designs import wire as w
from model.designs.net import Msg
from model.embedded import TopicPartition

BROKERS = ("b1", "b2")
HEAD = 4 + w.I16  # size + request_type_id


def _broker_list() -> int:
    return w.I16 + sum(w.I32 + w.s(f"{b}.example") + w.I32 for b in BROKERS)


def _offsets(parts: tuple[TopicPartition, ...]) -> int:
    return w.I16 + sum(w.s(t) + w.s(str(p)) + w.I64 for t, p in parts)


@dataclass(frozen=True)
class MetadataReq:
    pass


@dataclass(frozen=True)
class MetadataResp:
    coordinator: str  # "" = none elected yet


@dataclass(frozen=True)
class RegisterReq:
    consumer_id: str
    topics: tuple[str, ...]
    session_timeout_ms: int
    #: streams (fetcher threads) per topic, the topic_count's numbers
    threads: int = 1


@dataclass(frozen=True)
class RegisterResp:
    error: str
    #: the sockets variant (seed 001 section 2): ownership comes back in the registration answer
    ownership: tuple[TopicPartition, ...] | None = None
    #: the offset to start each of them from
    offsets: tuple[int, ...] = ()


@dataclass(frozen=True)
class Ping:
    consumer_id: str
    seq: int


@dataclass(frozen=True)
class PingResp:
    consumer_id: str
    seq: int
    owned: tuple[TopicPartition, ...] = ()
    #: the consumed offset of each (seed 001 §11 offset_info, sent with auto_commit)
    offsets: tuple[int, ...] = ()


@dataclass(frozen=True)
class StopFetcher:
    consumer_id: str
    round: int


@dataclass(frozen=True)
class StopFetcherResp:
    consumer_id: str
    round: int
    owned: tuple[TopicPartition, ...] = ()
    offsets: tuple[int, ...] = ()


@dataclass(frozen=True)
class StartFetcher:
    consumer_id: str
    round: int
    ownership: tuple[TopicPartition, ...]
    #: the starting offset of each partition (from the StopFetcher answers, seed 001 §11)
    offsets: tuple[int, ...] = ()
    #: ownership per consumer thread that gets partitions; () = one thread ``<id>-0`` holds all
    split: tuple[tuple[str, tuple[TopicPartition, ...]], ...] = ()


@dataclass(frozen=True)
class StartFetcherResp:
    consumer_id: str
    round: int


@dataclass(frozen=True)
class Close:
    """The sender closes the connection (a FIN the other side notices, unless the link is gone)."""


def size(body: object) -> int:
    if isinstance(body, MetadataReq):
        return HEAD
    if isinstance(body, MetadataResp):
        return HEAD + w.I16 + w.I32 + _broker_list()
    if isinstance(body, RegisterReq):
        topic_count = "{" + ",".join(f'"{t}":{body.threads}' for t in body.topics) + "}"
        body_size = w.s("g") + w.s(body.consumer_id) + w.s(topic_count) + 1 + w.s("largest") + w.I32
        return HEAD + body_size
    if isinstance(body, RegisterResp):
        extra = 0 if body.ownership is None else _offsets(body.ownership)
        return HEAD + w.I16 + extra
    if isinstance(body, Ping):
        return HEAD + w.s(body.consumer_id) + w.I32
    if isinstance(body, PingResp | StopFetcherResp):
        return HEAD + w.I16 + w.s(body.consumer_id) + _offsets(body.owned)
    if isinstance(body, StopFetcher):
        return HEAD + w.s(body.consumer_id)
    if isinstance(body, StartFetcher):
        split = body.split or ((f"{body.consumer_id}-0", body.ownership),)
        threads = sum(w.s(tid) + _offsets(parts) for tid, parts in split)
        return HEAD + w.s(body.consumer_id) + w.I16 + threads + _broker_list()
    if isinstance(body, StartFetcherResp):
        return HEAD + w.I16 + w.s(body.consumer_id)
    if isinstance(body, Close):
        return 0
    raise TypeError(f"no size for {type(body).__name__}")


KINDS = {
    MetadataReq: "ClusterMetadata",
    MetadataResp: "ClusterMetadataResponse",
    RegisterReq: "RegisterConsumer",
    RegisterResp: "RegisterConsumerResponse",
    Ping: "Ping",
    PingResp: "PingResponse",
    StopFetcher: "StopFetcher",
    StopFetcherResp: "StopFetcherResponse",
    StartFetcher: "StartFetcher",
    StartFetcherResp: "StartFetcherResponse",
    Close: "Close",
}
REBALANCE_KINDS = frozenset(
    {
        "StopFetcher",
        "StopFetcherResponse",
        "StartFetcher",
        "StartFetcherResponse",
        "RegisterConsumer",
        "RegisterConsumerResponse",
        "Close",
    }
)


def msg(src: str, dst: str, body: object, conn: int = 0) -> Msg:
    return Msg(src, dst, KINDS[type(body)], body, size(body), conn)
