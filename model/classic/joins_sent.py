"""The harness's record of the JoinGroup requests it sent, by ref, until they are answered.

The leader's member list must carry each member's metadata as that member sent it
(`classic.leader_gets_metadata_as_sent`); the coordinator's own stored copy cannot tell, so the
simulator keeps what went on the wire and hands each step the requests its JoinGroup answers answer.
"""

from __future__ import annotations

from model.classic.messages import JoinGroupRequest, JoinGroupResponse, Request
from model.result import Delivery

#: (ref, protocols) pairs
Joins = tuple[tuple[int, tuple[tuple[str, bytes], ...]], ...]
#: refs never answered (a closed connection) are forgotten, oldest first, beyond this many
KEEP = 1024


def record_join(table: dict[int, tuple[tuple[str, bytes], ...]], ref: int, request: Request) -> None:
    """Remember a JoinGroup's protocols under its ref."""
    if isinstance(request, JoinGroupRequest):
        if len(table) >= KEEP:
            del table[min(table)]
        table[ref] = request.protocols


def take_joins(table: dict[int, tuple[tuple[str, bytes], ...]], deliveries: list[Delivery]) -> Joins:
    """The requests this step's JoinGroup answers answer, taken out of ``table``."""
    return tuple(
        (d.ref, table.pop(d.ref))
        for d in deliveries
        if isinstance(d.response, JoinGroupResponse) and d.ref in table
    )
