"""Topic metadata as the brokers hold it and as each member has last fetched it (seed 000 'Metadata').

A member sees the truth when it fetches, unless the broker it asks lags (`StaleMetadata`): that
broker keeps answering an old partition count for a topic until the member's source is current
again. The metadata hash covers the topics of a subscription and their partition counts, or every
topic in the cluster for a regex subscription, as the seed specifies.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

HASH_BYTES = 16


@dataclass
class Brokers:
    truth: dict[str, int] = field(default_factory=dict)
    #: member -> topic -> the count a lagging broker keeps answering
    lagging: dict[str, dict[str, int]] = field(default_factory=dict)

    def fetch(self, member: str) -> dict[str, int]:
        """What ``member`` learns when it fetches metadata now (every topic of the cluster)."""
        view = dict(self.truth)
        for topic, count in self.lagging.get(member, {}).items():
            view[topic] = count
        return {t: n for t, n in sorted(view.items()) if n > 0}

    def lag(self, member: str, topic: str, partitions: int) -> None:
        self.lagging.setdefault(member, {})[topic] = partitions

    def catch_up(self, member: str) -> None:
        self.lagging.pop(member, None)


def topics_of(subscription: Iterable[str], regex: bool, view: Mapping[str, int]) -> tuple[str, ...]:
    """The topics a subscription covers in a metadata view (a regex here matches every topic)."""
    if regex:
        return tuple(sorted(view))
    return tuple(sorted(t for t in set(subscription) if t in view))


def metadata_hash(view: Mapping[str, int], topics: Iterable[str]) -> bytes:
    """The seed's MetadataHash: the listed topics and their partition counts, hashed."""
    text = ";".join(f"{t}={view.get(t, 0)}" for t in sorted(set(topics)))
    return hashlib.sha256(text.encode()).digest()[:HASH_BYTES]


def subscription_hash(topics: Iterable[str], regex: bool) -> bytes:
    """The seed's SubscriptionHash ('Dropping Topic Lists'): the subscription itself, hashed."""
    text = ("regex:" if regex else "") + ",".join(sorted(set(topics)))
    return hashlib.sha256(text.encode()).digest()[:HASH_BYTES]
