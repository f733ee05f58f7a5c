"""What the KIP-848 simulator is told: one recorded call (`Action`, as traces write it) and how to
(re)create a virtual consumer (`ClientSpec`). Kept apart from `model.consumer.sim` so that trace
readers and machine builders need not import the simulator."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Action:
    """One simulator call, as written to a trace: ``name`` is the method, ``args`` its arguments."""

    name: str
    args: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class ClientSpec:
    """How to (re)create one virtual consumer (a restart makes a new process from the same spec)."""

    name: str
    topics: tuple[str, ...] = ("t",)
    instance_id: str | None = None
    version: int = 1
    rebalance_timeout_ms: int = 1500
    server_assignor: str | None = None
    regex: str | None = None
