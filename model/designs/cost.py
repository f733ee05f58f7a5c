"""Messages and bytes of one rebalance, built from the designs' own encoded messages.

The rebalance measured: a member joins a stable group of ``n - 1`` members, all subscribing to the
same ``topics`` topics of ``partitions`` partitions each (``n`` unless given); every member goes
through one round.
Each function builds the messages that round sends (with the ids and metadata the running design
uses) and sizes them with the design's own size function, so the totals equal what a simulated run
counts (tests compare them at small sizes) while scaling to thousands of members: the member list
that everyone receives in a join-all response is sized once and multiplied, never materialised per
member. Only the rebalance's own messages count (the kinds each engine lists in
``rebalance_kinds``): heartbeats and pings are steady traffic.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from model.assignors import get_assignor
from model.classic.messages import (
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.designs import broker_wire as bw
from model.designs import joinall as ja
from model.designs import sync_join as sj
from model.designs import wire as w
from model.designs.cost_marker import local_marker
from model.designs.metadata import metadata_hash, subscription_hash
from model.embedded import Assignment, Subscription, encode_assignment, encode_subscription
from model.errors import ErrorCode

UUID_CHARS = 36
COST_DESIGNS = (
    "shipped",
    "independent-hash",
    "consistent-hash",
    "hashed-subgroups",
    "compressed",
    "sync-in-join",
    "broker-coordinator",
    "kip341-local-marker",
)


@dataclass(frozen=True)
class Cost:
    design: str
    members: int
    topics: int
    messages: int
    bytes: int


def names(n: int) -> list[str]:
    return [f"m{i}" for i in range(n)]


def topic_names(t: int) -> tuple[str, ...]:
    return tuple(f"topic-{j}" for j in range(t))


def _range(
    ids: list[str], topics: tuple[str, ...], partitions: int
) -> dict[str, tuple[tuple[str, int], ...]]:
    subs = {m: Subscription(topics) for m in ids}
    result = get_assignor("range").assign({t: partitions for t in topics}, subs)
    return {m: a.partitions for m, a in result.items()}


def shipped(n: int, t: int, partitions: int) -> Cost:
    """JoinGroup v9 (the new member's first join answered MEMBER_ID_REQUIRED), SyncGroup v5."""
    topics = topic_names(t)
    ids = [f"{m}-{'x' * UUID_CHARS}" for m in names(n)]
    meta = encode_subscription(Subscription(tuple(sorted(topics))))
    protos = (("range", meta),)
    count = size = 0

    def add(msg: object, times: int = 1) -> None:
        nonlocal count, size
        count += times
        size += times * w.classic_size(msg)

    add(JoinGroupRequest("g", "", "consumer", protos, client_id=names(n)[-1]))
    add(JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=ids[-1]))
    for mid, name in zip(ids, names(n), strict=True):
        add(JoinGroupRequest("g", mid, "consumer", protos, client_id=name))
    members = tuple(JoinGroupMember(mid, None, meta) for mid in ids)
    add(JoinGroupResponse(ErrorCode.NONE, 2, "consumer", "range", ids[0], False, ids[0], members))
    for mid in ids[1:]:
        add(JoinGroupResponse(ErrorCode.NONE, 2, "consumer", "range", ids[0], False, mid))
    assignment = {m: encode_assignment(Assignment(p)) for m, p in _range(ids, topics, partitions).items()}
    add(SyncGroupRequest("g", 2, ids[0], tuple(assignment.items()), None, "consumer", "range"))
    for mid in ids[1:]:
        add(SyncGroupRequest("g", 2, mid, (), None, "consumer", "range"))
    for mid in ids:
        add(SyncGroupResponse(ErrorCode.NONE, "consumer", "range", assignment[mid]))
    return Cost("shipped", n, t, count, size)


def _join_all(design: str, n: int, t: int, meta: bytes, compress: bool = False) -> Cost:
    """Seed 000's first proposal: every JoinGroup answer carries every member's metadata."""
    ids = [f"{m}-{i}" for i, m in enumerate(names(n))]
    count = size = 0
    for k, mid in enumerate(ids):
        size += ja.size(ja.JoinReq(mid if k < n - 1 else "", (("range", meta),), 6000))
    listing = w.arr(w.s(mid) + w.b(meta) for mid in ids)
    if compress:  # the whole member list as one compressed blob (seed 000 'Compression')
        raw = b"".join(mid.encode() + meta for mid in ids)
        listing = w.b(zlib.compress(raw, 6))
    for mid in ids:
        size += w.response(w.I16 + w.I32 + w.s("range") + w.s(ids[0]) + w.s(mid)) + listing
    count += 2 * n
    return Cost(design, n, t, count, size)


def independent(n: int, t: int, partitions: int) -> Cost:
    topics = topic_names(t)
    meta = encode_subscription(
        Subscription(topics, user_data=b"\x00" + metadata_hash({x: partitions for x in topics}, topics))
    )
    return _join_all("independent-hash", n, t, meta)


def consistent(n: int, t: int, partitions: int) -> Cost:
    return _join_all(
        "consistent-hash", n, t, encode_subscription(Subscription(topic_names(t), user_data=b"\x00"))
    )


def subgroups(n: int, t: int, partitions: int) -> Cost:
    topics = topic_names(t)
    meta = subscription_hash(topics, False) + metadata_hash({x: partitions for x in topics}, topics)
    return _join_all("hashed-subgroups", n, t, meta)


def compressed(n: int, t: int, partitions: int) -> Cost:
    topics = topic_names(t)
    meta = encode_subscription(
        Subscription(topics, user_data=b"\x00" + metadata_hash({x: partitions for x in topics}, topics))
    )
    return _join_all("compressed", n, t, meta, compress=True)


def sync_in_join(n: int, t: int, partitions: int) -> Cost:
    topics = topic_names(t)
    ids = [f"{m}-{i + 1}" for i, m in enumerate(names(n))]
    meta = (1).to_bytes(2, "big") + encode_subscription(Subscription(topics, user_data=b"\x00"))
    size = sum(sj.size(sj.SJoin(mid if k < n - 1 else "", meta, 6000)) for k, mid in enumerate(ids))
    chosen = ids[-1]  # the synchronizer: the newest member (choice=newest; the choice moves a few id bytes)
    size += sj.size(sj.SResp("NONE", 1, chosen, "synchronize", tuple((mid, meta) for mid in ids)))
    states = {m: encode_assignment(Assignment(p)) for m, p in _range(ids, topics, partitions).items()}
    size += sj.size(sj.SSynced(chosen, 1, "NONE", tuple(states.items())))
    group = w.arr(w.s(mid) for mid in ids)
    for mid in ids:
        size += w.response(w.I16 + w.I32 + w.s(mid) + 1 + w.b(states[mid])) + group
    return Cost("sync-in-join", n, t, 2 * n + 2, size)


def _threads(members: list[str], threads: int, topics: tuple[str, ...], partitions: int) -> dict[str, Any]:
    """Range over consumer threads ``<id>-<k>`` (seed 001 §9 step 1.2); per consumer its threads' shares."""
    ids = [f"{m}-{k}" for m in members for k in range(threads)]
    per_thread = _range(ids, topics, partitions)
    return {m: [(tid, per_thread[tid]) for tid in ids if tid.rsplit("-", 1)[0] == m] for m in members}


def broker(n: int, t: int, partitions: int, threads: int = 1) -> Cost:
    """RegisterConsumer of the new one, then StopFetcher and StartFetcher (each answered) to all;
    ``threads`` fetcher threads per consumer: StartFetcher lists the threads that got partitions."""
    topics = topic_names(t)
    old = _threads(names(n)[:-1], threads, topics, partitions)
    new = _threads(names(n), threads, topics, partitions)
    size = bw.size(bw.RegisterReq(names(n)[-1], topics, 6000, threads)) + bw.size(bw.RegisterResp("NONE"))
    owned = {m: sorted(tp for _, parts in shares for tp in parts) for m, shares in old.items()}
    if all(sorted(tp for _, parts in new[m] for tp in parts) == owned.get(m, []) for m in names(n)):
        return Cost("broker-coordinator", n, t, 2, size)  # seed 001 §9 step 3: nothing moves, no rebalance
    for m in names(n):
        held = tuple(sorted(tp for _, parts in old.get(m, []) for tp in parts))
        size += bw.size(bw.StopFetcher(m, 1)) + bw.size(bw.StopFetcherResp(m, 1, held))
        union = tuple(sorted(tp for _, parts in new[m] for tp in parts))
        split = tuple((tid, parts) for tid, parts in new[m] if parts) if threads > 1 else ()
        size += bw.size(bw.StartFetcher(m, 1, union, split=split)) + bw.size(bw.StartFetcherResp(m, 1))
    return Cost("broker-coordinator", n, t, 2 + 4 * n, size)


def marker(n: int, t: int, partitions: int) -> Cost:
    """The shipped round with the sticky assignor's local marker (``model.designs.cost_marker``)."""
    return Cost("kip341-local-marker", n, t, *local_marker(n, t, partitions))


FORMULAS = {
    "shipped": shipped,
    "independent-hash": independent,
    "consistent-hash": consistent,
    "hashed-subgroups": subgroups,
    "compressed": compressed,
    "sync-in-join": sync_in_join,
    "broker-coordinator": broker,
    "kip341-local-marker": marker,
}


def cost(design: str, members: int, topics: int, partitions: int | None = None) -> Cost:
    """One rebalance; ``partitions`` per topic defaults to ``members``, so that the join moves
    partitions in every design (seed 001's coordinator skips a rebalance that would change nothing)."""
    if members < 2 or members > 100_000 or topics < 1 or topics > 10_000:
        raise ValueError("members must be 2..100000 and topics 1..10000")
    return FORMULAS[design](members, topics, members if partitions is None else partitions)
