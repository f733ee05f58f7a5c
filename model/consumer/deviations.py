"""Known deviation of Apache Kafka in the KIP-848 protocol: a late heartbeat copy's unheard answer
(reports/findings/stale-heartbeat-copy.md; model.deviations).

Kafka sends a member its assignment only when the request is a full one or the assignment changed
at this request (`GroupMetadataManager.consumerGroupHeartbeat`, Apache Kafka 4.4.0). When a late
copy of a member's incremental heartbeat is the request at which its assignment changes, the answer
that carries the new assignment goes to a connection the client no longer reads; every later
heartbeat is answered without an assignment, so the member stays assigned partitions its client
never owns. The simulator tags the member when such a copy's answer carries an assignment
(`unheard_copy`) and drops the tag when the client hears an assignment covering all it owns, or
restarts.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from model.consumer.messages import ConsumerGroupHeartbeatResponse
from model.consumer.world import ConsumerWorld
from model.deviations import known_deviation, tagged
from model.errors import ErrorCode
from model.observation import Observation

STALE_COPY = "stale-heartbeat-copy"


def unheard_copy(tags: set[tuple[str, str]], name: str, ref: int, deliveries: object) -> None:
    """A copy of ``name``'s heartbeat was answered to nobody: tag it if the answer carried an assignment."""
    for d in getattr(deliveries, "deliveries", ()):
        r = d.response
        if d.ref == ref and isinstance(r, ConsumerGroupHeartbeatResponse) and r.assignment is not None:
            if r.error_code == ErrorCode.NONE:
                tags.add((STALE_COPY, name))


def heard(
    tags: set[tuple[str, str]],
    name: str,
    response: ConsumerGroupHeartbeatResponse | None,
    owned: frozenset[tuple[str, int]] = frozenset(),
) -> None:
    """``name``'s client heard its complete assignment (or is a new process): the tag is void, unless
    the client still owns partitions outside it, which the coordinator gave away while it believed
    them released (a slow revocation keeps them until its callback ends)."""
    assigned = None if response is None else response.assigned()
    if response is None or (assigned is not None and owned <= assigned):
        tags.discard((STALE_COPY, name))


@known_deviation(
    STALE_COPY,
    "consumer.eventual_convergence",
    "a late copy of a heartbeat takes the answer that carried the member's new assignment; the "
    "client never learns of the partitions it was given or must give up",
    (
        "GroupMetadataManager.consumerGroupHeartbeat, Apache Kafka 4.4.0 (assignment sent only on "
        "a full request or a changed assignment)",
        "KIP-848 (a repeated heartbeat is meant to be harmless)",
    ),
    "reports/findings/stale-heartbeat-copy.md",
    also=("consumer.no_double_client_assignment", "consumer.valid_member_epoch"),
)
def stale_copy_explains(obs: Observation[ConsumerWorld]) -> bool:
    """Every promise it breaks holds once each tagged client has heard its assignment: the member
    assigned what the client owns where it owns less (convergence), the client owning nothing its
    member is not assigned (the partitions a copy's answer took away, reports/thorough-model.md)."""
    from model.consumer.progress_invariants import (
        eventual_convergence,
        no_double_client_assignment,
        valid_member_epoch,
    )

    world = obs.after
    names = tagged(world, STALE_COPY)
    groups = dict(world.groups)
    clients = []
    for c in world.clients:
        g = groups.get(c.group_id)
        m = g.members.get(c.member_id) if g is not None and c.name in names else None
        if g is not None and m is not None and not c.owned <= m.assigned:
            c = replace(c, owned=c.owned & m.assigned)  # a stalled client too: it still owns them
        clients.append(c)
        if g is None or m is None or not c.active or not c.owned < m.assigned:
            continue
        members = dict(g.members)
        members[c.member_id] = replace(m, assigned=c.owned)
        groups[c.group_id] = replace(g, members=MappingProxyType(members))
    repaired = replace(obs, after=replace(world, groups=MappingProxyType(groups), clients=tuple(clients)))
    return not any(
        p(repaired) for p in (eventual_convergence, no_double_client_assignment, valid_member_epoch)
    )
