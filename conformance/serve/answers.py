"""The answers that need no group rule: ApiVersions, Metadata, FindCoordinator, OffsetFetch,
ListOffsets and Fetch, as plain values for `conformance.serve.codec.encode_response`.

The served cluster is one broker (node 0, this server) that leads every partition of the configured
topics; every log is empty (offsets 0..0), so a consumer can join, poll and commit but never reads
a record. Field meanings: Kafka's message schemas (``clients/src/main/resources/common/message``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from conformance.serve.codec import SERVED
from conformance.serve.port import MixedModelPort

UNKNOWN_TOPIC_OR_PARTITION = 3
OFFSET_OUT_OF_RANGE = 1
UNSUPPORTED_VERSION = 35
CLUSTER_ID = "groupcheck-serve"


def topic_id(name: str) -> uuid.UUID:
    """A stable topic id per name (KIP-516 ids are random on Kafka; here they only need to be fixed)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"groupcheck-serve/{name}")


@dataclass(frozen=True)
class Cluster:
    host: str
    port: int
    topics: dict[str, int]  # name -> partitions

    def api_versions(self, served: bool) -> dict[str, Any]:
        keys = [
            {"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in sorted(SERVED.items())
        ]
        return {"error_code": 0 if served else UNSUPPORTED_VERSION, "api_keys": keys, "throttle_time": 0}

    def _topic(self, name: str | None, tid: uuid.UUID | None) -> dict[str, Any]:
        if name is None and tid is not None:
            name = next((n for n in self.topics if topic_id(n) == tid), None)
        if name is None or name not in self.topics:
            return {"error_code": UNKNOWN_TOPIC_OR_PARTITION, "name": name, "topic_id": tid, "partitions": []}
        parts = [
            {
                "error_code": 0,
                "partition_index": p,
                "leader_id": 0,
                "leader_epoch": -1,
                "replica_nodes": [0],
                "isr_nodes": [0],
                "offline_replicas": [],
            }
            for p in range(self.topics[name])
        ]
        return {"error_code": 0, "name": name, "topic_id": topic_id(name), "partitions": parts}

    def metadata(self, body: Any) -> dict[str, Any]:
        wanted = body.topics
        if wanted is None:
            topics = [self._topic(n, None) for n in sorted(self.topics)]
        else:
            topics = [
                self._topic(None if t.name is None else str(t.name), getattr(t, "topic_id", None))
                for t in wanted[:1000]
            ]
        return {
            "throttle_time": 0,
            "brokers": [{"node_id": 0, "host": self.host, "port": self.port, "rack": None}],
            "cluster_id": CLUSTER_ID,
            "controller_id": 0,
            "topics": topics,
        }

    def find_coordinator(self, body: Any, version: int) -> dict[str, Any]:
        here = {"node_id": 0, "host": self.host, "port": self.port, "error_code": 0, "error_message": None}
        if version < 4:
            return {"throttle_time": 0, **here}
        keys = [str(k) for k in body.coordinator_keys[:1000]]
        return {"throttle_time": 0, "coordinators": [{"key": k, **here} for k in keys]}

    def list_offsets(self, body: Any) -> dict[str, Any]:
        topics = []
        for t in body.topics[:1000]:
            known = self.topics.get(str(t.name), 0)
            parts = [
                {
                    "partition_index": int(p.partition_index),
                    "error_code": 0 if int(p.partition_index) < known else UNKNOWN_TOPIC_OR_PARTITION,
                    "timestamp": -1,
                    "offset": 0,
                    "leader_epoch": -1,
                }
                for p in t.partitions[:10_000]
            ]
            topics.append({"name": str(t.name), "partitions": parts})
        return {"throttle_time": 0, "topics": topics}

    def fetch(self, body: Any) -> dict[str, Any]:
        """Every log is empty: offset 0 waits (no records), any other offset is out of range."""
        responses = []
        for t in body.topics[:1000]:
            known = self.topics.get(str(t.topic), 0)
            parts = []
            for p in t.partitions[:10_000]:
                index = int(p.partition)
                error = 0 if int(p.fetch_offset) == 0 else OFFSET_OUT_OF_RANGE
                if index >= known:
                    error = UNKNOWN_TOPIC_OR_PARTITION
                parts.append(
                    {
                        "partition_index": index,
                        "error_code": error,
                        "high_watermark": 0,
                        "last_stable_offset": 0,
                        "log_start_offset": 0,
                        "aborted_transactions": None,
                        "preferred_read_replica": -1,
                        "records": None,
                    }
                )
            responses.append({"topic": str(t.topic), "partitions": parts})
        return {"throttle_time": 0, "error_code": 0, "session_id": 0, "responses": responses}


def _fetched_topics(port: MixedModelPort, group: str, topics: Any) -> list[dict[str, Any]]:
    """Committed offsets of the named partitions (or of every committed one when ``topics`` is null)."""
    wanted: list[tuple[str, list[int]]]
    if topics is None:
        found: dict[str, list[int]] = {}
        for g, t, p in sorted(port.state.classic.offsets):
            if g == group:
                found.setdefault(t, []).append(p)
        for t, p in sorted(port.state.consumer.offsets.get(group, {})):
            found.setdefault(t, []).append(p)
        wanted = sorted((t, sorted(set(ps))) for t, ps in found.items())
    else:
        wanted = [(str(t.name), [int(i) for i in t.partition_indexes[:10_000]]) for t in topics[:1000]]
    out = []
    for name, indexes in wanted:
        parts = []
        for index in indexes:
            got = port.committed(group, name, index)
            offset, meta = got if got is not None else (-1, "")
            parts.append(
                {
                    "partition_index": index,
                    "committed_offset": offset,
                    "committed_leader_epoch": -1,
                    "metadata": meta,
                    "error_code": 0,
                }
            )
        out.append({"name": name, "partitions": parts})
    return out


def offset_fetch(port: MixedModelPort, body: Any, version: int) -> dict[str, Any]:
    """OffsetFetch (v8+ batches groups, KIP-709). Read from the model's committed offsets."""
    if version < 8:
        return {
            "throttle_time": 0,
            "topics": _fetched_topics(port, str(body.group_id), body.topics),
            "error_code": 0,
        }
    groups = [
        {
            "group_id": str(g.group_id),
            "topics": _fetched_topics(port, str(g.group_id), g.topics),
            "error_code": 0,
        }
        for g in body.groups[:100]
    ]
    return {"throttle_time": 0, "groups": groups}


def describe_groups(port: MixedModelPort, body: Any) -> dict[str, Any]:
    """DescribeGroups as Apache Kafka's group coordinator answers it (GroupMetadataManager
    ``describeGroups``, apache/kafka@1eb7644 L716-757): a classic group with its state and members,
    their metadata and assignment only when Stable; any other id (no group, or a KIP-848 group) is
    described as Dead with no members and no error."""
    groups = []
    for raw in body.groups[:100]:
        group_id = str(raw)
        group = port.state.classic.groups.get(group_id)
        if group is None:
            groups.append({"error_code": 0, "group_id": group_id, "group_state": "Dead", "protocol_type": "",
                           "protocol_data": "", "members": []})  # fmt: skip
            continue
        stable = group.state.value == "Stable" and group.protocol is not None
        members = [
            {
                "member_id": m.member_id,
                "group_instance_id": m.instance_id,
                "client_id": m.client_id,
                "client_host": "/127.0.0.1",
                "member_metadata": dict(m.protocols).get(group.protocol or "", b"") if stable else b"",
                "member_assignment": m.assignment if stable else b"",
            }
            for m in group.members.values()
        ]
        groups.append(
            {
                "error_code": 0,
                "group_id": group_id,
                "group_state": group.state.value,
                "protocol_type": group.protocol_type or "",
                "protocol_data": (group.protocol or "") if stable else "",
                "members": members,
            }
        )
    return {"throttle_time": 0, "groups": groups}
