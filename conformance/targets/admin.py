"""Topic administration on a running target over the Kafka wire (CreateTopics, Metadata)."""

from __future__ import annotations

import time

from conformance.targets.process import Deadline, TargetError
from conformance.wire import requests as _wire


def create_topic_wire(
    target_name: str,
    bootstrap: str,
    name: str,
    partitions: int,
    deadline: Deadline,
    info: _wire.ApiVersionsInfo | None = None,
) -> None:
    """CreateTopics (replication factor 1) over the wire, then wait for every partition's leader."""
    host, port = _wire.split_bootstrap(bootstrap)
    try:
        if info is None:
            info = _wire.api_versions(host, port, max(0.1, min(5.0, deadline.remaining())))
        version = info.best_version(_wire.API_CREATE_TOPICS)
        if version is None:
            raise TargetError(
                f"{target_name}: does not support CreateTopics (ApiVersions) for topic {name!r}"
            )
        code, message = _wire.create_topics(
            host, port, name, partitions, max(0.5, deadline.remaining()), version
        )
    except (_wire.WireRetry, _wire.WireGarbage) as e:
        raise TargetError(f"{target_name}: CreateTopics {name!r} failed: {e}") from e
    if code not in (0, 36):  # 36 TOPIC_ALREADY_EXISTS: fine if the partition count matches (checked below)
        raise TargetError(
            f"{target_name}: CreateTopics {name!r} answered {_wire.error_name(code)}{': ' + message if message else ''}"
        )
    wait_for_topic(target_name, bootstrap, name, partitions, deadline, info)


def _metadata_version(info: _wire.ApiVersionsInfo | None) -> int | None:
    """The Metadata version used to look at topics: the highest non-flexible one (v8 at most).

    Non-flexible because the librdkafka 2.16 mock appends a stray byte to its flexible (v9+)
    Metadata answers; v8 carries everything needed here (partitions and their leaders).
    """
    if info is None:
        return 0
    if _wire.API_METADATA not in info.api_versions:
        return None
    lo, hi = info.api_versions[_wire.API_METADATA]
    if lo <= 8:
        return min(hi, 8)
    return info.best_version(_wire.API_METADATA)


def wait_for_topic(
    target_name: str,
    bootstrap: str,
    name: str,
    partitions: int,
    deadline: Deadline,
    info: _wire.ApiVersionsInfo | None,
) -> None:
    """Poll Metadata until the topic has ``partitions`` partitions, each with a leader."""
    host, port = _wire.split_bootstrap(bootstrap)
    version = _metadata_version(info)
    if version is None:
        raise TargetError(f"{target_name}: no Metadata version in common with kio")
    last = "not listed yet"
    while True:
        try:
            resp = _wire.metadata(host, port, [name], max(0.1, min(2.0, deadline.remaining())), version)
            topic = next((t for t in resp.topics if t.name == name), None)
            if topic is None:
                last = "not listed yet"
            elif int(topic.error_code.value) != 0:
                last = _wire.error_name(int(topic.error_code.value))
            elif len(topic.partitions) != partitions:
                if len(topic.partitions) > 0 and not any(int(p.leader_id) < 0 for p in topic.partitions):
                    raise TargetError(
                        f"{target_name}: topic {name!r} exists with {len(topic.partitions)} partitions, not {partitions}"
                    )
                last = f"{len(topic.partitions)}/{partitions} partitions"
            elif all(int(p.leader_id) >= 0 and int(p.error_code.value) == 0 for p in topic.partitions):
                return
            else:
                last = "partitions without leader"
        except _wire.WireRetry as e:
            last = str(e)
        except _wire.WireGarbage as e:
            raise TargetError(f"{target_name}: Metadata v{version} answer is garbage: {e}") from e
        if deadline.expired():
            raise TargetError(
                f"{target_name}: topic {name!r} not ready within {deadline.seconds:g}s ({last})"
            )
        time.sleep(min(0.1, deadline.remaining()))
