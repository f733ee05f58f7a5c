"""A classic coordinator driven request by request, and a consumer settled in a Stable group, for
the mutant scripts of the bug catalogues (tests/test_heldout_mutants.py, tests/test_heldout2_*.py)."""

from __future__ import annotations

from typing import Any

from model.classic.client import ClassicClient, ClientConfig, Phase
from model.classic.coordinator import ClassicCoordinator
from model.classic.messages import JoinGroupRequest
from model.classic.state import ClassicConfig, ClassicState

PROTOCOLS = (("range", b"sub"),)


class Script:
    """One coordinator and its state, with topic t of two partitions; requests numbered; every
    answer and record kept."""

    def __init__(self, cls: type[ClassicCoordinator], **config: Any) -> None:
        self.coord = cls(ClassicConfig(**config))
        self.state = ClassicState()
        self.coord.create_topic(self.state, "t", 2)
        self.ref = 0
        self.answers: dict[int, Any] = {}
        self.records: list[Any] = []

    def send(self, request: Any, now: int) -> int:
        self.ref += 1
        self._take(self.coord.handle(self.state, request, self.ref, now))
        return self.ref

    def advance(self, to: int) -> None:
        self._take(self.coord.advance(self.state, to))

    def cleanup(self) -> None:
        self._take(self.coord.cleanup_group_metadata(self.state))

    def _take(self, result: Any) -> None:
        self.answers.update({d.ref: d.response for d in result.deliveries})
        self.records.extend(result.records)

    @property
    def group(self) -> Any:
        return self.state.groups["g"]

    def member_id(self, ref: int) -> str:
        member_id: str = self.answers[ref].member_id
        return member_id


def join(member: str = "", version: int = 3, **kw: Any) -> JoinGroupRequest:
    return JoinGroupRequest("g", member, "consumer", PROTOCOLS, version=version, **kw)


def stable_client(cls: type[ClassicClient], cooperative: bool = False) -> ClassicClient:
    """Consumer c1 (member m1, generation 3) of a Stable group, owning t-0, with the range or
    cooperative-sticky assignor."""
    assignors = ("cooperative-sticky",) if cooperative else ("range",)
    client = cls("c1", ClientConfig(assignors=assignors))
    client.member_id, client.generation, client.phase = "m1", 3, Phase.STABLE
    client.needs_rejoin, client.owned = False, (("t", 0),)
    return client
