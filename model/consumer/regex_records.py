"""The ConsumerGroupRegularExpression record and its tombstone (KAFKA-17593, Kafka 4.0+).

Kafka writes one record per resolved regex of a group (key: group id and regex; value: the matched
topics, the metadata version and the time of the resolution) and deletes it when no member
subscribes to the regex any more (GroupCoordinatorRecordHelpers
``newConsumerGroupRegularExpressionRecord`` / ``...Tombstone`` in Apache Kafka 4.4.0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class RegexResolvedRecord:
    """ConsumerGroupRegularExpression: what ``regex`` resolved to."""

    durable: ClassVar[bool] = True
    group_id: str
    regex: str
    topics: tuple[str, ...]
    timestamp: int
    version: int


@dataclass(frozen=True)
class RegexResolvedTombstone:
    durable: ClassVar[bool] = True
    group_id: str
    regex: str
