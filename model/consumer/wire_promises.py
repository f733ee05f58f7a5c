"""KIP-848 promises about what goes on the wire, stated from the protocol documents (docs/invariants.md#nature).

One is the coordinator's: a heartbeat to a consumer group is answered with one of the errors
ConsumerGroupHeartbeatResponse documents, never UNKNOWN_SERVER_ERROR. Two are the consumer's, judged
against the harness's record of what each consumer put on the wire (`model.consumer.owned_reports`),
since a consumer's own bookkeeping would agree with itself: it sends a full heartbeat when it joins
and after a heartbeat of its failed, and it reports released partitions at once, not at its next
heartbeat interval.
"""

from __future__ import annotations

from collections.abc import Iterator

from model.consumer.messages import ConsumerGroupHeartbeatRequest
from model.consumer.owned_reports import JOIN
from model.consumer.world import ConsumerWorld, HeartbeatEvent, heartbeat_response
from model.errors import ErrorCode
from model.invariant_gates import on
from model.invariants import invariant
from model.observation import Observation

Obs = Observation[ConsumerWorld]


@invariant("consumer.no_unexpected_heartbeat_error", "transition", "consumer", when=on(HeartbeatEvent))
def no_unexpected_heartbeat_error(obs: Obs) -> Iterator[str]:
    """A ConsumerGroupHeartbeat to an existing consumer group is never answered UNKNOWN_SERVER_ERROR: it is not among the errors the response documents, and every legal subscription, one that matches no existing topic included, has an assignment (ConsumerGroupHeartbeatResponse.json; KIP-848).

    A promise a client relies on (docs/invariants.md#nature): the Java consumer treats an error the
    response does not document as fatal, so an unexpected failure of the coordinator ends the consumer.
    """
    ev, b = obs.event, obs.before
    r = heartbeat_response(obs)
    if r is None or b is None or r.error_code != ErrorCode.UNKNOWN_SERVER_ERROR:
        return
    assert isinstance(ev, HeartbeatEvent)
    if b.group(ev.request.group_id) is None:
        return  # no consumer group yet (a mixed group's classic side has its own rules)
    yield (
        f"{ev.client or ev.request.member_id}'s heartbeat (epoch {ev.request.member_epoch}) to "
        f"{ev.request.group_id} answered UNKNOWN_SERVER_ERROR: {r.error_message}"
    )


def missing_fields(request: ConsumerGroupHeartbeatRequest, join: bool) -> list[str]:
    """What a full heartbeat lacks: the rebalance timeout, the subscription (topic names or regex) and
    the owned partitions (empty on a join)."""
    missing = []
    if request.rebalance_timeout_ms == -1:
        missing.append("no rebalance timeout")
    if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
        missing.append("no subscribed topic names or regex")
    if request.topic_partitions is None:
        missing.append("no owned partitions")
    elif join and request.topic_partitions:
        missing.append("owned partitions on a join")
    return missing


@invariant("consumer.full_heartbeat_when_due", "transition", "consumer", reads=("after.full_due",))
def full_heartbeat_when_due(obs: Obs) -> Iterator[str]:
    """A consumer sends a full heartbeat (rebalance timeout, subscribed topic names or regex, owned partitions) when it joins or rejoins with epoch 0 (an empty owned set) and in its first heartbeat after one that failed (no answer, or an error answer), which the coordinator may or may not have applied (ConsumerGroupHeartbeatRequest.json; KIP-848; the Java consumer's heartbeat state reset).

    A promise the coordinator relies on (docs/invariants.md#nature): a join without them is refused
    INVALID_REQUEST, and a retry that omits unchanged fields leaves the coordinator believing a lost
    answer delivered. Judged against the harness's record of each consumer's requests
    (`model.consumer.owned_reports`).
    """
    for name, why, request in obs.after.full_due:
        missing = missing_fields(request, why == JOIN)
        if missing:
            yield f"{name}'s heartbeat with epoch {request.member_epoch} ({why}) is not full: {', '.join(missing)}"


@invariant("consumer.release_reported_at_once", "transition", "consumer", reads=("after.silences",))
def release_reported_at_once(obs: Obs) -> Iterator[str]:
    """A running consumer that has released partitions it held and reported in its last heartbeat does not let a turn to send pass without a heartbeat: the acknowledgement goes out at once, not at its next heartbeat interval (KIP-848; the Java consumer heartbeats without waiting for the interval while ACKNOWLEDGING).

    A promise the other members rely on (docs/invariants.md#nature): a partition reported owned cannot
    be given to its next owner, so each late acknowledgement stalls the rebalance. Judged against the
    harness's record (`model.consumer.owned_reports`): a turn counts only for a process that is not
    stalled and has no heartbeat in flight.
    """
    for name, held, released in obs.after.silences:
        yield (
            f"{name} had its turn and sent nothing, though it released {sorted(map(str, released))} "
            f"since its last heartbeat reported them (it holds {len(held)} partitions)"
        )
