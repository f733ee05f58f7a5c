"""The classic simulator's snapshots, keeping what did not change as the same object.

An invariant that declares what it reads is not run again while those parts of the observation
are the very objects it last saw (`conformance.engine.reuse`); so a part of the world equal to the
previous snapshot's is replaced by that snapshot's object. Equal frozen values: the invariants
see the same world either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from model.classic.client import ClassicClient
from model.classic.world import ClassicWorld, ClientSnap, Delivered
from model.embedded import TopicPartition, decode_assignment

#: the parts of a `ClassicWorld` worth comparing (the others are plain values or rebuilt each step)
SHARED = ("group", "persisted", "topics", "deviations", "assignment_topics", "delivered")


def client_snaps(
    clients: Mapping[str, ClassicClient],
    cache: dict[str, tuple[tuple[Any, ...], ClientSnap]],
    prev: ClassicWorld | None,
) -> tuple[ClientSnap, ...]:
    """The consumer view of ``clients`` (by name); ``cache`` holds each client's last fields and
    snapshot, reused while the fields stay equal; ``prev``'s tuple is reused if equal."""
    out = []
    for name, c in sorted(clients.items()):
        key = (
            c.member_id,
            c.config.instance_id,
            c.generation,
            c.phase.value,
            c.owned,
            c.config.topics,
            c.cooperative,
            c.stale_subscription,
            c.stale_kept,
            c.stale_regained,
        )
        hit = cache.get(name)
        if hit is None or hit[0] != key:
            snap = ClientSnap(name, *key[:4], frozenset(c.owned), frozenset(c.config.topics), *key[6:])
            hit = cache[name] = (key, snap)
        out.append(hit[1])
    snaps = tuple(out)
    return prev.clients if prev is not None and prev.clients == snaps else snaps


def kept(prev: ClassicWorld | None, world: ClassicWorld) -> ClassicWorld:
    """``world`` with each part in `SHARED` equal to ``prev``'s replaced by ``prev``'s object."""
    if prev is None:
        return world
    for name in SHARED:
        old, new = getattr(prev, name), getattr(world, name)
        if old is not new and old == new:
            object.__setattr__(world, name, old)  # a fresh frozen snapshot nobody has seen yet
    return world


assert set(SHARED) <= {f.name for f in fields(ClassicWorld)}


def with_delivery(
    delivered: Delivered, name: str, generation: int, assignment: bytes, keep: int
) -> Delivered:
    """``delivered`` after ``name`` was handed ``assignment`` in ``generation`` (the ``keep`` most
    recent generations)."""
    try:
        parts: frozenset[TopicPartition] = (
            frozenset(decode_assignment(assignment).partitions) if assignment else frozenset()
        )
    except ValueError:
        parts = frozenset()
    table = dict(delivered)
    row = dict(table.get(generation, ()))
    row[name] = parts
    table[generation] = tuple(sorted(row.items()))
    return tuple((g, table[g]) for g in sorted(table)[-keep:])
