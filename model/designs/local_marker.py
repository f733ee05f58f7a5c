"""Design 8: KIP-341's rejected alternative, a generation marker local to the sticky assignor.

KIP-341 (seed 002, 'Rejected Alternatives'): instead of the group generation, the sticky assignor
would number its own assignments. Here the leader writes a marker into every assignment's user
data, one above the highest marker any member reports with its claim, or 0 when no member reports
one; members send their claim back with the marker it came with, and the leader resolves claims by
marker as KIP-341's V1 resolves them by generation (`model.assignors.sticky.sticky_core`). Runs on
the shipped protocol's simulator: only the assignor and the client's memory of its claim differ.
The view's group generation is the marker: that is what this design orders assignments by.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from model.assignors.base import EAGER, eager_subscription, to_assignments
from model.assignors.sticky import sticky_core
from model.classic.client import Phase
from model.classic.messages import SyncGroupResponse
from model.designs.shipped import LaggingClient, ShippedEngine
from model.designs.view import DesignView
from model.embedded import (
    DEFAULT_GENERATION,
    Assignment,
    Subscription,
    TopicPartition,
    decode_assignment,
    decode_sticky_user_data,
    encode_sticky_user_data,
)
from model.errors import ErrorCode


def marker_of(assignment: bytes) -> int:
    if not assignment:
        return DEFAULT_GENERATION
    data = decode_assignment(assignment).user_data
    return int.from_bytes(data, "big", signed=True) if data else DEFAULT_GENERATION


class LocalMarkerSticky:
    """The sticky assignor with a local marker in place of the group generation."""

    name = "sticky"
    rebalance_protocols: tuple[str, ...] = (EAGER,)

    def subscription(
        self, topics: Sequence[str], owned: Sequence[TopicPartition], generation: int
    ) -> Subscription:
        """``generation`` is the marker of the claim here; the GenerationId field stays unset."""
        if generation < 0 and not owned:
            return eager_subscription(topics, DEFAULT_GENERATION)
        return eager_subscription(topics, DEFAULT_GENERATION, encode_sticky_user_data(owned, generation))

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        claims = {}
        for m, sub in subscriptions.items():
            parts, marker = decode_sticky_user_data(sub.user_data)
            claims[m] = (parts, DEFAULT_GENERATION if marker is None else marker)
        reported = [marker for parts, marker in claims.values() if parts]
        marker = max(reported) + 1 if reported else 0  # KIP-341: it resets when nobody reports one
        result = sticky_core(partitions_per_topic, subscriptions, claims)
        stamped = marker.to_bytes(4, "big", signed=True)
        return {
            m: Assignment(a.partitions, stamped) for m, a in to_assignments(result, subscriptions).items()
        }


class MarkerClient(LaggingClient):
    """A classic consumer that keeps its claim with the marker it came with."""

    def _assignor(self, name: str) -> Any:
        return LocalMarkerSticky() if name == "sticky" else super()._assignor(name)

    def _on_sync(self, resp: SyncGroupResponse) -> None:
        super()._on_sync(resp)
        if resp.error == ErrorCode.NONE:
            self.claim_generation = marker_of(resp.assignment)


class LocalMarkerEngine(ShippedEngine):
    design = "kip341-local-marker"
    client_class = MarkerClient

    def assignors(self, version: int) -> tuple[str, ...]:
        return ("sticky",)

    latest: tuple[int, int] = (-1, DEFAULT_GENERATION)

    def view(self, checkpoint: bool = False) -> DesignView:
        """Members still hold under the group generation (commits are fenced by it); the group's
        generation shown is the marker of the newest assignment: what this design orders claims by."""
        base = super().view(checkpoint)
        for name, c in self.sim.clients.items():
            if self._running(name) and c.phase == Phase.STABLE and c.generation > self.latest[0]:
                self.latest = (c.generation, c.claim_generation)
        group = self.latest[1] if self.latest[1] >= 0 else None
        return DesignView(**{**base.__dict__, "generation": group})
