"""KIP-848 invariants on response shape and on the virtual consumers, added by the kill matrix (docs/mutants.md#added-invariants).

The client-side rows of the bug catalogue are bugs of consumers, not coordinators: the suite catches
them as invariants over the consumer view (the virtual consumers must behave like the Java consumer)
and over what the coordinator sends them (responses a robust client can trust).
"""

from __future__ import annotations

from collections.abc import Iterator

from model.consumer.messages import ConsumerGroupHeartbeatResponse
from model.consumer.state import LEAVE_GROUP_MEMBER_EPOCH
from model.consumer.world import ConsumerWorld, HeartbeatEvent
from model.errors import ErrorCode
from model.invariant_gates import delivered, on
from model.invariants import invariant
from model.observation import Observation

Obs = Observation[ConsumerWorld]


@invariant("consumer.responses_well_formed", "transition", "consumer", when=delivered)
def responses_well_formed(obs: Obs) -> Iterator[str]:
    """A successful heartbeat response names each topic and partition once and carries a non-negative epoch unless it answers a leave.

    docs/protocol-reference.md#d, #b10; franz-go kfake group848 sweep tests D1/D2 (docs/bug-catalogue.md#row-19).
    """
    ev = obs.event
    leave = isinstance(ev, HeartbeatEvent) and ev.request.member_epoch < 0
    for d in obs.deliveries:
        r = d.response
        if not isinstance(r, ConsumerGroupHeartbeatResponse) or r.error_code != ErrorCode.NONE:
            continue
        answers_leave = leave and isinstance(ev, HeartbeatEvent) and d.ref == ev.ref
        if r.member_epoch < 0 and not answers_leave:
            yield f"ref {d.ref}: success response with member epoch {r.member_epoch}"
        topics = [e.topic for e in r.assignment or ()]
        if len(topics) != len(set(topics)):
            yield f"ref {d.ref}: assignment names a topic twice: {sorted(topics)}"
        for e in r.assignment or ():
            if len(e.partitions) != len(set(e.partitions)) or any(p < 0 for p in e.partitions):
                yield f"ref {d.ref}: assignment of {e.topic} lists {list(e.partitions)}"


@invariant("consumer.fenced_member_releases_first", "safety", "consumer", reads=("after.clients",))
def fenced_member_releases_first(obs: Obs) -> Iterator[str]:
    """A consumer that is (re)joining owns no partitions: a fenced member releases everything before it heartbeats again.

    docs/protocol-reference.md#b2 (a rejoin reports an empty owned set); KAFKA-16251 / PR #15392; Java
    ConsumerMembershipManager transitionToJoining (docs/bug-catalogue.md#row-9).
    """
    for c in obs.after.clients:
        if c.state == "JOINING" and c.owned:
            yield f"{c.name} is rejoining while it still owns {sorted(c.owned)}"


@invariant("consumer.static_close_is_temporary", "transition", "consumer", when=on(HeartbeatEvent))
def static_close_is_temporary(obs: Obs) -> Iterator[str]:
    """A static consumer closes with epoch -2 (a temporary leave that keeps its assignment), never -1.

    docs/protocol-reference.md#b7; Java ConsumerMembershipManager leaveGroupEpoch; thomhurst/Dekaf#1348 (docs/bug-catalogue.md#row-20).
    A property of the consumers: hand-written requests (no client) are not checked, since the
    coordinator must accept a static -1 as a permanent leave.
    """
    ev = obs.event
    if isinstance(ev, HeartbeatEvent) and ev.client is not None:  # sent by a virtual consumer
        r = ev.request
        if r.instance_id is not None and r.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            yield f"{ev.client} (static, instance {r.instance_id}) left with epoch -1"
