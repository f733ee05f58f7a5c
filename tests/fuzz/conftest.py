"""Fixtures of the fuzz suite (tests/fuzz/support.py holds the peer and the profiles)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from .support import HostilePeer


@pytest.fixture
def hostile_peer() -> Iterator[Callable[..., HostilePeer]]:
    peers: list[HostilePeer] = []

    def make(mode: str, **kw: object) -> HostilePeer:
        peer = HostilePeer(mode, **kw)  # type: ignore[arg-type]
        peers.append(peer)
        return peer

    yield make
    for p in peers:
        p.close()
