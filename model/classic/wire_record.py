"""The harness's record of what it sent the coordinator, kept to judge the answers against.

Two promises compare an answer with requests other members sent: the leader's member list carries
each member's metadata as that member's JoinGroup sent it (`classic.leader_gets_metadata_as_sent`),
and a member's SyncGroup answer carries what the generation's leader sent for it
(`classic.sync_gives_leader_assignment`). The coordinator's own stored copies cannot tell either, so
the simulator keeps what went on the wire (and the leader each JoinGroup answer named) and hands each
step the requests its answers answer.
Every table is bounded: what was never answered (a closed connection) goes first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from model.classic.messages import (
    JoinGroupRequest,
    JoinGroupResponse,
    Request,
    SyncGroupRequest,
    SyncGroupResponse,
)
from model.errors import ErrorCode
from model.result import Delivery

Protocols = tuple[tuple[str, bytes], ...]
#: (ref, protocols) of the JoinGroups this step's JoinGroup answers answer
Joins = tuple[tuple[int, Protocols], ...]
#: what one leader's SyncGroup gave: (member id, its group.instance.id if known, assignment)
Listing = tuple[tuple[str, str | None, bytes], ...]
#: requests by ref, and member ids by instance, are forgotten oldest first beyond this many
KEEP = 1024
#: the leaders' assignments of this many most recent generations are kept
KEEP_GENERATIONS = 64


@dataclass(frozen=True)
class SyncAsked:
    """A SyncGroup this step answers: who asked, for which generation, and every assignment list a
    leader of that generation sent (the harness's record; empty if none was sent)."""

    ref: int
    member_id: str
    instance_id: str | None
    generation: int
    listings: tuple[Listing, ...]
    #: a JoinGroup answer named the generation's leader (so its SyncGroup must come first)
    leader_known: bool = False


Syncs = tuple[SyncAsked, ...]


def _bounded_put(table: dict, key: object, value: object) -> None:  # type: ignore[type-arg]
    if key not in table and len(table) >= KEEP:
        del table[next(iter(table))]
    table[key] = value


@dataclass
class WireRecord:
    #: ref -> the protocols of the JoinGroup sent under it, and its group.instance.id
    joins: dict[int, tuple[Protocols, str | None]] = field(default_factory=dict)
    #: ref -> (member id, generation) of a SyncGroup
    syncs: dict[int, tuple[str, int]] = field(default_factory=dict)
    #: generation -> the distinct assignment lists its leader's SyncGroups sent (and any other
    #: SyncGroup that carried one)
    leaders: dict[int, tuple[tuple[tuple[str, bytes], ...], ...]] = field(default_factory=dict)
    #: generation -> the member ids JoinGroup answers named its leader
    led: dict[int, frozenset[str]] = field(default_factory=dict)
    #: member id -> the group.instance.id it was seen with (requests, join answers, member lists)
    instances: dict[str, str] = field(default_factory=dict)

    def record(self, ref: int, request: Request) -> None:
        """Remember what a request sent under ``ref`` tells the promises."""
        if isinstance(request, JoinGroupRequest):
            _bounded_put(self.joins, ref, (request.protocols, request.group_instance_id))
        elif isinstance(request, SyncGroupRequest):
            _bounded_put(self.syncs, ref, (request.member_id, request.generation_id))
            gen = request.generation_id
            if request.assignments or request.member_id in self.led.get(gen, ()):
                seen = self.leaders.get(gen, ())
                if request.assignments not in seen:
                    self.leaders[gen] = seen + (request.assignments,)
                    if len(self.leaders) > KEEP_GENERATIONS:
                        del self.leaders[min(self.leaders)]
        instance = getattr(request, "group_instance_id", None)
        member_id = getattr(request, "member_id", "")
        if instance is not None and member_id:
            _bounded_put(self.instances, member_id, instance)

    def take(self, deliveries: list[Delivery]) -> tuple[Joins, Syncs]:
        """The requests this step's JoinGroup and SyncGroup answers answer, taken out of the record."""
        joins: list[tuple[int, Protocols]] = []
        syncs: list[SyncAsked] = []
        for d in deliveries:
            r = d.response
            if isinstance(r, JoinGroupResponse):
                if r.error == ErrorCode.NONE and r.leader:
                    self.led[r.generation_id] = self.led.get(r.generation_id, frozenset()) | {r.leader}
                    if len(self.led) > KEEP_GENERATIONS:
                        del self.led[min(self.led)]
                sent = self.joins.pop(d.ref, None)
                if sent is None:
                    continue
                joins.append((d.ref, sent[0]))
                if sent[1] is not None and r.member_id:
                    _bounded_put(self.instances, r.member_id, sent[1])
                for m in r.members:
                    if m.group_instance_id is not None:
                        _bounded_put(self.instances, m.member_id, m.group_instance_id)
            elif isinstance(r, SyncGroupResponse):
                asked = self.syncs.pop(d.ref, None)
                if asked is None or r.error != ErrorCode.NONE:
                    continue
                member_id, generation = asked
                listings = tuple(
                    tuple((mid, self.instances.get(mid), a) for mid, a in listing)
                    for listing in self.leaders.get(generation, ())
                )
                instance = self.instances.get(member_id)
                known = generation in self.led
                syncs.append(SyncAsked(d.ref, member_id, instance, generation, listings, known))
        return tuple(joins), tuple(syncs)

    def forget_generations(self) -> None:
        """The group is gone: its generations start over, so what their leaders sent no longer applies."""
        self.leaders.clear()
        self.led.clear()

    def copy(self) -> WireRecord:
        return WireRecord(
            dict(self.joins), dict(self.syncs), dict(self.leaders), dict(self.led), dict(self.instances)
        )
