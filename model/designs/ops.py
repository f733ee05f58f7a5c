"""The design-neutral workload: what happens to a group, in words every design understands.

A workload is a list of ops; every design (and the shipped protocol) interprets the same list, so
one counterexample replays on all of them. Ops name consumer processes, brokers' metadata, the
network and the clock, never a design's messages. `Settle` is the liveness checkpoint: perturbations
stop, time runs ``ms`` and the group must have converged by then (bounded liveness, design §3).
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any

MAX_MS = 3_600_000
#: the liveness bound: a `Settle` of at least this long is a checkpoint (five session timeouts of
#: the common timing, `model.designs.engine.Timing`); a shorter one is only time passing
LIVENESS_MS = 30_000
MAX_NAME = 40
MAX_PARTITIONS = 10_000


class OpError(ValueError):
    """An op that does not decode: the message names the field."""


@dataclass(frozen=True)
class Join:
    """A consumer process starts and subscribes (``regex``: a pattern matching every topic)."""

    member: str
    topics: tuple[str, ...] = ("t",)
    regex: bool = False
    version: int = 1


@dataclass(frozen=True)
class Leave:
    """The consumer closes cleanly."""

    member: str


@dataclass(frozen=True)
class Crash:
    """The consumer process dies without a word."""

    member: str


@dataclass(frozen=True)
class Pause:
    """A soft failure (a long GC): the process neither acts nor hears until `Resume`."""

    member: str


@dataclass(frozen=True)
class Resume:
    member: str


@dataclass(frozen=True)
class Advance:
    """Time passes; every running process and coordinator acts on its timers and messages."""

    ms: int


@dataclass(frozen=True)
class Settle:
    """The liveness checkpoint: time passes undisturbed, then every subscribed partition must be owned
    (only if ``ms`` is at least `LIVENESS_MS`, the bound every design is given)."""

    ms: int


@dataclass(frozen=True)
class SetTopic:
    """The brokers' metadata changes: ``topic`` is created with, or grown to, ``partitions``
    partitions (a smaller count changes nothing: partitions are never removed, seed 001 section 2)."""

    topic: str
    partitions: int


@dataclass(frozen=True)
class StaleMetadata:
    """The broker ``member`` asks for metadata keeps answering ``partitions`` for ``topic`` (a lagging
    broker, seed 000 'Metadata') until `Refresh`."""

    member: str
    topic: str
    partitions: int


@dataclass(frozen=True)
class Refresh:
    """``member``'s metadata source is current again."""

    member: str


@dataclass(frozen=True)
class LoseSocket:
    """The coordinator's side of ``member``'s connection is gone while the member's side stays open
    (a half-open TCP connection: the member hears no close)."""

    member: str


@dataclass(frozen=True)
class LoseResponse:
    """The next response addressed to ``member`` is lost after the coordinator applied the request."""

    member: str


@dataclass(frozen=True)
class Failover:
    """The group's coordinator moves to another broker (the old one dies)."""


@dataclass(frozen=True)
class Upgrade:
    """The process restarts running assignment-strategy ``version`` (it supports the older ones too)."""

    member: str
    version: int


Op = (
    Join
    | Leave
    | Crash
    | Pause
    | Resume
    | Advance
    | Settle
    | SetTopic
    | StaleMetadata
    | Refresh
    | LoseSocket
    | LoseResponse
    | Failover
    | Upgrade
)
OP_TYPES: dict[str, type] = {
    cls.__name__.lower(): cls
    for cls in (
        Join,
        Leave,
        Crash,
        Pause,
        Resume,
        Advance,
        Settle,
        SetTopic,
        StaleMetadata,
        Refresh,
        LoseSocket,
        LoseResponse,
        Failover,
        Upgrade,
    )
}
#: assignment strategy of each version: version v supports strategies v, v-1, ..., 1 (newest first)
STRATEGIES = {1: "range", 2: "roundrobin"}


def strategies_of(version: int) -> tuple[str, ...]:
    """The strategies a process of ``version`` offers, preferred first (seed 000 'Rolling Upgrades')."""
    return tuple(STRATEGIES[v] for v in sorted(STRATEGIES, reverse=True) if v <= version)


def op_name(op: Any) -> str:
    return type(op).__name__.lower()


def to_dict(op: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"op": op_name(op)}
    for key, value in asdict(op).items():
        out[key] = list(value) if isinstance(value, tuple) else value
    return out


def _check_name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_NAME or not value.isprintable():
        raise OpError(f"field {field!r}: expected a name of 1-{MAX_NAME} printable characters")
    return value


def _check_int(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise OpError(f"field {field!r}: expected an integer in [{low}, {high}], got {value!r}")
    return value


def from_dict(data: Any) -> Any:
    """Decode one op through the fixed registry; bad input raises `OpError` naming the field."""
    if not isinstance(data, dict):
        raise OpError("an op must be a mapping")
    name = data.get("op")
    cls = OP_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise OpError(f"field 'op': unknown op {name!r} (known: {', '.join(sorted(OP_TYPES))})")
    known = {f.name for f in fields(cls)}
    extra = sorted(set(data) - known - {"op"})
    if extra:
        raise OpError(f"op {name}: unknown field(s) {extra}")
    args: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in data:
            if f.default is MISSING:
                raise OpError(f"op {name}: missing field {f.name!r}")
            continue
        value = data[f.name]
        if f.name in ("member", "topic"):
            args[f.name] = _check_name(value, f.name)
        elif f.name == "topics":
            if not isinstance(value, list | tuple) or not 1 <= len(value) <= 64:
                raise OpError(f"op {name}: field 'topics' must be a list of 1-64 names")
            args[f.name] = tuple(_check_name(v, "topics") for v in value)
        elif f.name == "regex":
            if not isinstance(value, bool):
                raise OpError(f"op {name}: field 'regex' must be true or false")
            args[f.name] = value
        elif f.name == "ms":
            args[f.name] = _check_int(value, "ms", 0, MAX_MS)
        elif f.name == "partitions":
            args[f.name] = _check_int(value, "partitions", 0, MAX_PARTITIONS)
        elif f.name == "version":
            args[f.name] = _check_int(value, "version", 1, max(STRATEGIES))
    return cls(**args)
