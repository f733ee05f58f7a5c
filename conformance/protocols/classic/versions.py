"""Per-member request versions of the classic group APIs: the machine's draws and the ranges.

A real group mixes client releases, so each member draws its own version of every group API.
The ranges are what the reference model answers as Kafka does (model/classic/coordinator.py);
on a real target the port moves a version the target does not advertise to the nearest one it
does (`conformance.wire.connection.Capabilities.nearest`), so one seed adapts to Kafka 0.9 (v0
only) and to a Kafka 4.x that dropped old versions (KIP-896).

Which version adds what (Kafka's ``clients/src/main/resources/common/message/*Request.json``,
``validVersions`` and their comments): JoinGroup v1 the rebalance timeout (v0: the session timeout
serves as both), v4 MEMBER_ID_REQUIRED (KIP-394), v5 the group instance id (KIP-345), v7 the
protocol type and name in the answer, v8 the reason (KIP-800), v9 skip assignment (KIP-814);
SyncGroup v3, Heartbeat v3, LeaveGroup v3 (batched members) and OffsetCommit v7 the group
instance id (KIP-345); SyncGroup v5 the protocol type and name (KIP-559).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from conformance.wire.codec import (
    API_HEARTBEAT,
    API_JOIN_GROUP,
    API_LEAVE_GROUP,
    API_OFFSET_COMMIT,
    API_SYNC_GROUP,
)

#: the versions the model answers, per API key. OffsetCommit v0 carries no generation and v1 a
#: per-partition commit timestamp: neither is modelled, so commits start at v2.
MODEL_VERSIONS: dict[int, tuple[int, int]] = {
    API_JOIN_GROUP: (0, 9),
    API_SYNC_GROUP: (0, 5),
    API_HEARTBEAT: (0, 4),
    API_LEAVE_GROUP: (0, 5),
    API_OFFSET_COMMIT: (2, 8),
}

#: the lowest version of each API that carries the group instance id (KIP-345)
STATIC_FLOOR: dict[int, int] = {
    API_JOIN_GROUP: 5,
    API_SYNC_GROUP: 3,
    API_HEARTBEAT: 3,
    API_LEAVE_GROUP: 3,
    API_OFFSET_COMMIT: 7,
}

_ORDER = (API_JOIN_GROUP, API_SYNC_GROUP, API_HEARTBEAT, API_LEAVE_GROUP, API_OFFSET_COMMIT)


@dataclass(frozen=True)
class MemberVersions:
    """The versions one member sends."""

    join: int = 9
    sync: int = 5
    heartbeat: int = 4
    leave: int = 5
    commit: int = 8

    def as_spec(self) -> dict[str, int]:
        return {
            "join_version": self.join,
            "sync_version": self.sync,
            "heartbeat_version": self.heartbeat,
            "leave_version": self.leave,
            "commit_version": self.commit,
        }

    def short(self) -> str:
        return f"j{self.join}s{self.sync}h{self.heartbeat}l{self.leave}c{self.commit}"


def member_versions() -> st.SearchStrategy[tuple[int, ...]]:
    """One member's draw: a version of each API across the model's whole range."""
    return st.tuples(*(st.integers(*MODEL_VERSIONS[k]) for k in _ORDER))


def resolve(drawn: tuple[int, ...], static: bool) -> MemberVersions:
    """The member's versions; a static member needs the group instance id in every request, so
    its versions are raised to those carrying it (a v<5 JoinGroup cannot be static)."""
    out = []
    for key, v in zip(_ORDER, drawn, strict=True):
        lo, hi = MODEL_VERSIONS[key]
        v = min(max(v, lo), hi)
        out.append(max(v, STATIC_FLOOR[key]) if static else v)
    return MemberVersions(*out)


def exercisable(advertised: dict[int, tuple[int, int]], supported: dict[int, tuple[int, int]]) -> set[Any]:
    """The (api key, version) pairs both the target advertises and the model and codec speak."""
    pairs = set()
    for key, (mlo, mhi) in MODEL_VERSIONS.items():
        if key not in advertised or key not in supported:
            continue
        lo = max(mlo, advertised[key][0], supported[key][0])
        hi = min(mhi, advertised[key][1], supported[key][1])
        pairs |= {(key, v) for v in range(lo, hi + 1)}
    return pairs
