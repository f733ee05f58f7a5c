"""Messages, bytes and round trips of a first join under KIP-848, shipped and with a server-issued id.

KIP-848 has no rebalance round: a member joins with ConsumerGroupHeartbeat and the others learn of
the new target on their next regular heartbeat, the same in both designs. What the two differ in is
the joining member's own exchange until the coordinator adds it (the answer that carries an epoch
above 0): with KIP-1082's client-generated id it is one heartbeat (KIP-1082 'Proposed Changes');
with the rejected server-issued id (KIP-1082 'Rejected Alternatives' 2) it is a first heartbeat
without id, answered with an id, epoch 0 and interval 0, then the full join. Sizes come from
`model.designs.kip848` (ConsumerGroupHeartbeat v1), built from the requests the model's client
sends; the ids are the ones the engines use (a 22-character Uuid string; ``server-id-N``).
"""

from __future__ import annotations

from dataclasses import dataclass

from model.consumer.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from model.designs.kip848 import heartbeat_size, response_size

UUID_CHARS = 22
JOIN_COST_DESIGNS = ("shipped-kip848", "kip1082-server-id")
REBALANCE_TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class JoinCost:
    design: str
    members: int
    topics: int
    messages: int
    bytes: int
    round_trips: int


def _join(member_id: str, topics: tuple[str, ...]) -> ConsumerGroupHeartbeatRequest:
    """The full join the model's client sends (state JOINING: every field, owned set empty)."""
    return ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id=member_id,
        member_epoch=0,
        rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
        subscribed_topic_names=topics,
        topic_partitions=(),
    )


def first_join(design: str, members: int, topics: int) -> JoinCost:
    """The ``members``-th member's heartbeats until it is in the group, ``topics`` topics subscribed."""
    if design not in JOIN_COST_DESIGNS:
        raise ValueError(f"no first-join cost for {design}")
    if members < 2 or members > 100_000 or topics < 1 or topics > 10_000:
        raise ValueError("members must be 2..100000 and topics 1..10000")
    names = tuple(sorted(f"topic-{j}" for j in range(topics)))
    exchanges: list[tuple[ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse]] = []
    if design == "kip1082-server-id":
        issued = f"server-id-{members}"  # the front has issued one id per member before this one
        exchanges.append((_join("", names), ConsumerGroupHeartbeatResponse(member_id=issued, member_epoch=0)))
        member_id = issued
    else:
        member_id = "x" * UUID_CHARS
    # the join answer: an epoch above 0 and an empty assignment (the partitions are still owned)
    exchanges.append(
        (_join(member_id, names), ConsumerGroupHeartbeatResponse(member_id=member_id, member_epoch=2))
    )
    size = sum(heartbeat_size(q) + response_size(a) for q, a in exchanges)
    return JoinCost(design, members, topics, 2 * len(exchanges), size, len(exchanges))
