"""Messages and bytes of one rebalance of the classic protocol with KIP-341's rejected local marker.

The round is the shipped one (``model.designs.cost.shipped``); the assignor is the sticky one with
the marker (``model.designs.local_marker``): members that hold partitions report their claim and
its marker in the subscription's user data, and every assignment carries the new marker. The
shipped KIP-341 sends the group generation in the same place (KIP-341, 'Proposed Changes'), so the
bytes compare the two encodings of the same claim.
"""

from __future__ import annotations

from model.classic.messages import (
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.designs import wire as w
from model.designs.local_marker import LocalMarkerSticky
from model.embedded import Subscription, encode_assignment, encode_subscription
from model.errors import ErrorCode

UUID_CHARS = 36


def local_marker(n: int, t: int, partitions: int, marker: int = 1) -> tuple[int, int]:
    """(messages, bytes) when the n-th member joins n - 1 members that hold a marked claim."""
    topics = tuple(sorted(f"topic-{j}" for j in range(t)))
    names = [f"m{i}" for i in range(n)]
    ids = [f"{m}-{'x' * UUID_CHARS}" for m in names]
    assignor = LocalMarkerSticky()
    counts = {x: partitions for x in topics}
    before = assignor.assign(counts, {m: assignor.subscription(topics, (), -1) for m in ids[:-1]})
    subs = {m: assignor.subscription(topics, before[m].partitions, marker) for m in ids[:-1]}
    subs[ids[-1]] = assignor.subscription(topics, (), -1)
    meta = {m: encode_subscription(Subscription(s.topics, s.user_data)) for m, s in subs.items()}
    count = size = 0

    def add(msg: object) -> None:
        nonlocal count, size
        count += 1
        size += w.classic_size(msg)

    add(JoinGroupRequest("g", "", "consumer", (("sticky", meta[ids[-1]]),), client_id=names[-1]))
    add(JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=ids[-1]))
    for mid, name in zip(ids, names, strict=True):
        add(JoinGroupRequest("g", mid, "consumer", (("sticky", meta[mid]),), client_id=name))
    members = tuple(JoinGroupMember(mid, None, meta[mid]) for mid in ids)
    add(JoinGroupResponse(ErrorCode.NONE, 2, "consumer", "sticky", ids[0], False, ids[0], members))
    for mid in ids[1:]:
        add(JoinGroupResponse(ErrorCode.NONE, 2, "consumer", "sticky", ids[0], False, mid))
    after = {m: encode_assignment(a) for m, a in assignor.assign(counts, subs).items()}
    add(SyncGroupRequest("g", 2, ids[0], tuple(after.items()), None, "consumer", "sticky"))
    for mid in ids[1:]:
        add(SyncGroupRequest("g", 2, mid, (), None, "consumer", "sticky"))
    for mid in ids:
        add(SyncGroupResponse(ErrorCode.NONE, "consumer", "sticky", after[mid]))
    return count, size
