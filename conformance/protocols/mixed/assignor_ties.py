"""The server assignor's other legal tie-breaks as hypotheses of the mixed oracle (docs/oracle.md#tie-breaks).

Kafka's uniform assignor for homogeneous subscriptions meets the members in the order of
``GroupSpec.memberIds()``, a hash map's iteration order (group-coordinator
``assignor/UniformHomogeneousAssignmentBuilder.java``; docs/protocol-reference.md#f lists it as a variance point):
which of several tied members gets an extra partition, and which free partition goes to whom, is
arbitrary. The model fixes one order (member id, `model.consumer.assignors`). A consumer-protocol
member's heartbeat shows its partitions, so the oracle adopts the target's choice when it differs
(`MixedAdoption._adopt_assignment`). A classic member's target stays hidden: its SyncGroup shows only
the partitions it may already own, and its Heartbeat one bit. Kafka 4.4.0 answers a classic member
REBALANCE_IN_PROGRESS when its member epoch is behind the assignment epoch, when it must revoke, or
when it waits for partitions that are now all free (``GroupMetadataManager
.classicGroupHeartbeatToConsumerGroup``, kafka-group-coordinator-4.4.0.jar, GroupMetadataManager.java
L8631-8634; ``ConsumerGroup.waitingOnUnreleasedPartition`` L1373-1383). Whether its partitions are
free depends on WHICH partitions the hidden target holds, so one order of requests (another member
releasing partitions between the target's computation and that Heartbeat) shows the tie-break.

Seen on Apache Kafka 4.4.0 (`reports/conformance/faults/apache-kafka.mixed.all-seed0-classic-heartbeat
-none.ndjson`, only under load, where the requests of a tick interleave that way): the model gave the
extra partition to consumer member k2 and c3 the partition c1 was revoking; Kafka gave it to c1 and c3
the partition k2 was revoking, so c3's Heartbeat right after c1's rejoin was NONE (k2 still held it)
where the model said REBALANCE_IN_PROGRESS.

So when a request runs the uniform assignor, the oracle also keeps the outcomes of the model's own
assignor under every other member order (every tie-break a hash order can give; all are legal,
balanced and sticky) whose answer to this request matches the target's. Later answers decide
between them. The model's own order stays first (`MHypo.adoptions` ranks the others after it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from itertools import permutations
from typing import Any

from model.consumer.assignors import AssignmentMember, GroupAssignment

#: up to this many members every order is tried (4! = 24); beyond it only the rotations of the id order
ALL_ORDERS_UP_TO = 4

#: the kafka-compat note a hypothesis with another tie-break carries (reported if it is the one followed)
NOTE = (
    "the uniform assignor broke a tie between members another way than the model's member-id order "
    "(a hash-map order; legal, docs/protocol-reference.md#f): that tie-break is followed"
)

Run = Callable[[dict[str, AssignmentMember]], GroupAssignment]


def member_orders(ids: list[str]) -> Iterator[tuple[str, ...]]:
    """The member orders whose tie-breaks are tried (bounded: see ``ALL_ORDERS_UP_TO``)."""
    ids = sorted(ids)
    if len(ids) <= ALL_ORDERS_UP_TO:
        yield from permutations(ids)
        return
    for k in range(len(ids)):
        yield tuple(ids[k:] + ids[:k])


def tie_breaks(
    run: Run, name: str, members: Mapping[str, AssignmentMember], homogeneous: bool
) -> list[GroupAssignment]:
    """The distinct assignments ``run`` (the model's assignor) gives when members tie in each order of
    `member_orders`; empty unless the uniform assignor runs on a homogeneous group of two or more."""
    if name != "uniform" or not homogeneous or len(members) < 2:
        return []
    out: list[GroupAssignment] = []
    for order in member_orders(list(members)):
        alias = {m: f"{i:06d}" for i, m in enumerate(order)}  # sorts in ``order``
        back = {a: m for m, a in alias.items()}
        got = run({alias[m]: dataclasses.replace(spec, member_id=alias[m]) for m, spec in members.items()})
        result = {back[a]: frozenset(ps) for a, ps in got.items()}
        if result not in out:
            out.append(result)
    return out


def _assignment_epoch(h: Any, group_id: str) -> int:
    g = h.state.consumer.groups.get(group_id)
    return -1 if g is None else int(g.assignment_epoch)


def recorded_assignor_run(port: Any, h: Any, request: Any, ref: int, at: int) -> tuple[Any, ...] | None:
    """Run ``request`` on a copy of ``h`` and return the first assignor call it makes as (name,
    members, topics, homogeneous, result), or None (no call, or the model refuses to run it)."""
    from conformance.protocols.consumer.adoption import NoLegal

    engine = port.coords[h.origin].consumer
    method = type(engine).run_assignor
    calls: list[tuple[Any, ...]] = []

    def record(name: str, members: Any, topics: Any, homogeneous: bool) -> GroupAssignment:
        result = method(engine, name, members, topics, homogeneous)
        calls.append((name, dict(members), dict(topics), homogeneous, result))
        return result  # type: ignore[no-any-return]

    engine.run_assignor = record
    try:
        port._run(h.copy(), request, ref, at, port._t_ans)
    except NoLegal:
        return None
    finally:
        del engine.run_assignor
    return calls[0] if calls else None


def apply_with_ties(
    port: Any, c: Any, request: Any, ref: int, at: int, target: Any, prior: Any
) -> list[tuple[Any, str | None]]:
    """``port._apply`` on ``c``, plus a hypothesis for each other legal tie-break of the uniform
    assignor run by this request whose answer matches ``target`` (module docstring)."""
    from conformance.protocols.consumer.adoption import NoLegal

    group_id = getattr(request, "group_id", None)
    snapshot = c.copy()
    out = port._apply(c, request, ref, at, target, prior)
    if group_id is None or _assignment_epoch(snapshot, group_id) == _assignment_epoch(c, group_id):
        return out  # no new target assignment was computed
    call = recorded_assignor_run(port, snapshot, request, ref, at)
    if call is None:
        return out
    name, members, topics, homogeneous, chosen = call
    engine = port.coords[snapshot.origin].consumer
    method = type(engine).run_assignor

    def run(aliased: dict[str, AssignmentMember]) -> GroupAssignment:
        return method(engine, name, aliased, topics, homogeneous)  # type: ignore[no-any-return]

    for alternative in tie_breaks(run, name, members, homogeneous):
        if alternative == chosen:
            continue
        d = snapshot.copy()
        engine.adopt, engine.adopt_pins = alternative, {}
        try:
            forked = port._apply(d, request, ref, at, target, prior)
        except NoLegal:
            continue
        finally:
            engine.adopt = None
        for x, why in forked:
            if why is None and x.adoptions == snapshot.adoptions:  # explained with no further adoption
                x.adoptions += 1
                x.notes = x.notes + (NOTE,)
                out.append((x, None))
    return out


__all__ = ["apply_with_ties", "member_orders", "recorded_assignor_run", "tie_breaks"]
