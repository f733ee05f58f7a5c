"""Views of one KIP-848 observation that several invariant modules read: group pairs before and
after a step, the heartbeat request of the step, what a member reported owning, active clients.
"""

from __future__ import annotations

from collections.abc import Iterator

from model.consumer import client_invariants as _client_invariants  # noqa: E402, F401
from model.consumer.client import ClientView
from model.consumer.messages import ConsumerGroupHeartbeatRequest, TopicPartition
from model.consumer.world import (
    ConsumerWorld,
    GroupView,
    HeartbeatEvent,
)
from model.observation import Observation

Obs = Observation[ConsumerWorld]


_EMPTY: frozenset[TopicPartition] = frozenset()
#: what `_pairs` reads of an observation (`model.invariant_reads`)
PAIRS = ("after.groups", "before", "before.groups")
#: what `_groups` reads
GROUPS = ("after.groups",)
#: the consumer views before and after
CLIENTS = ("after.clients", "before.clients")
#: what `ConsumerWorld.regex_view` and `member_subscribes` need of the world after
SUBSCRIBES = ("after.regex_resolution", "after.topic_describe_denied")


def _pairs(obs: Obs) -> Iterator[tuple[str, GroupView | None, GroupView]]:
    """(group id, group before or None, group after) for every group after the step."""
    for gid in sorted(obs.after.groups):
        before = None if obs.before is None else obs.before.groups.get(gid)
        yield gid, before, obs.after.groups[gid]


def _groups(obs: Obs) -> Iterator[tuple[str, GroupView]]:
    """(group id, group after) for every group after the step: `_pairs` without the before."""
    for gid in sorted(obs.after.groups):
        yield gid, obs.after.groups[gid]


def _heartbeat_request(obs: Obs) -> ConsumerGroupHeartbeatRequest | None:
    return obs.event.request if isinstance(obs.event, HeartbeatEvent) else None


def _reported_owned(
    obs: Obs, request: ConsumerGroupHeartbeatRequest | None, group_id: str, member_id: str
) -> frozenset[TopicPartition] | None:
    """The owned set the step's request reported for ``member_id``: a heartbeat's TopicPartitions,
    or what another event says (a classic JoinGroup's subscription in a mixed group, docs/protocol-reference.md#b13)."""
    if request is not None and request.group_id == group_id and request.member_id == member_id:
        return request.owned()
    reported = getattr(obs.event, "reported_owned", None)
    if callable(reported):
        result: frozenset[TopicPartition] | None = reported(group_id, member_id)
        return result
    return None


def _active_clients(world: ConsumerWorld, group_id: str) -> list[ClientView]:
    return [c for c in world.clients if c.group_id == group_id and c.active]
