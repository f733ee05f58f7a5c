"""Recording and replaying classic runs: `TracedClassicSim` logs every driver action as an op.

An op is what the driver did (a member's next step, a raw request, time passing, a fault, a
client-side change such as a restart); replaying the ops on a simulator built from the header's
set-up re-runs the same run, exactly on the model (everything there is seeded) and as closely as
the target allows elsewhere (the virtual members answer whatever the target says).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.errors import UsageError
from conformance.formats.codec import decode, encode
from conformance.formats.trace_file import CheckedLog, LogEntry, Trace, trace_of_log
from conformance.protocols.classic.settle import converge
from model.classic.sim import ClassicSim
from model.classic.world import ClassicWorld
from model.observation import Observation

#: ops that only change a client, with no request and no observation
CLIENT_OPS = ("restart", "subscribe", "protocols", "rejoin", "stale_subscription")


class TracedClassicSim(CheckedLog, ClassicSim):
    """A `ClassicSim` that records what the driver does (the Hypothesis machine, scenarios, replay)."""

    setup: dict[str, Any]
    #: replay: a converge cut short by a violation was replayed (`_not_after_cut`)
    ended_by_violation = False
    variants: dict[str, str]
    seed: int
    log: list[LogEntry]

    def __post_init__(self) -> None:
        self.log = []
        self.setup = {}
        self.variants = {}
        self.seed = 0
        super().__post_init__()

    # ------------------------------------------------------------ recorded actions
    def client_step(self, name: str) -> Observation[ClassicWorld] | None:
        return self._record({"op": "step", "client": name}, super().client_step(name))

    def commit(self, name: str, offset: int) -> Observation[ClassicWorld] | None:
        return self._record({"op": "commit", "client": name, "offset": offset}, super().commit(name, offset))

    def leave(self, name: str) -> Observation[ClassicWorld] | None:
        return self._record({"op": "leave", "client": name}, super().leave(name))

    def send_raw(self, name: str, request: Any) -> Observation[ClassicWorld]:
        op = {"op": "send", "client": name, "request": encode(request)}
        obs = super().send_raw(name, request)
        self._record(op, obs)
        return obs

    def advance(self, ms: int) -> Observation[ClassicWorld]:
        obs = super().advance(ms)
        self._record({"op": "advance", "ms": ms}, obs)
        return obs

    def failover(self) -> Observation[ClassicWorld]:
        obs = super().failover()
        self._record({"op": "failover"}, obs)
        return obs

    def create_topic(self, topic: str, partitions: int) -> Observation[ClassicWorld]:
        obs = super().create_topic(topic, partitions)
        self._record({"op": "create_topic", "topic": topic, "partitions": partitions}, obs)
        return obs

    def append_failure(self) -> Observation[ClassicWorld]:
        obs = super().append_failure()
        self._record({"op": "append_failure"}, obs)
        return obs

    def stall(self, name: str, stalled: bool = True) -> Observation[ClassicWorld]:
        obs = super().stall(name, stalled)
        self._record({"op": "stall" if stalled else "resume", "client": name}, obs)
        return obs

    def lose_response(self, name: str) -> Observation[ClassicWorld]:
        obs = super().lose_response(name)
        self._record({"op": "lose_response", "client": name}, obs)
        return obs

    def cut_connection(self, name: str) -> Observation[ClassicWorld]:
        obs = super().cut_connection(name)
        self._record({"op": "cut_connection", "client": name}, obs)
        return obs

    def duplicate_request(self, name: str) -> Observation[ClassicWorld]:
        obs = super().duplicate_request(name)
        self._record({"op": "duplicate_request", "client": name}, obs)
        return obs

    def delay_request(self, name: str) -> Observation[ClassicWorld]:
        obs = super().delay_request(name)
        self._record({"op": "delay_request", "client": name}, obs)
        return obs

    def release(self, name: str) -> Observation[ClassicWorld] | None:
        obs = super().release(name)
        self._record({"op": "release", "client": name}, obs)
        return obs

    def grow_topic(self, topic: str, partitions: int) -> Observation[ClassicWorld]:
        """The topic gets more partitions and the leader notices (Java: the leader's metadata
        snapshot no longer matches its assignment snapshot, `ConsumerCoordinator`
        ``rejoinNeededOrPending``), as one recorded op: a minimised trace never keeps the growth
        and drops the leader's rejoin."""
        self._silent = True
        try:
            obs = self.create_topic(topic, partitions)
        finally:
            self._silent = False
        for c in self.clients.values():
            if c.member_id and c.member_id == c.leader:
                c.needs_rejoin = True
        self._record({"op": "grow_topic", "topic": topic, "partitions": partitions}, obs)
        return obs

    def converge(self, observe: Any = None, limit: int | None = None) -> list[Observation[ClassicWorld]]:
        """Perturbations stop and the group must converge (`settle.converge`): one recorded op, so
        a minimised trace keeps or drops the whole convergence, never half of it; its first
        observation is the op's step, the others ``cont`` steps (as a consumer ``settle``).
        ``observe`` sees each observation as it happens: a violation raised there ends the op, and
        the op records how many observations it made (``observations``), so replay stops there too;
        ``limit`` is that count on replay."""
        seen: list[Observation[ClassicWorld]] = []
        start = len(self.log)

        def take(obs: Observation[ClassicWorld]) -> None:
            self.log.append(LogEntry({"op": "cont"} if seen else {"op": "converge"}, obs, obs.now))
            seen.append(obs)
            if observe is not None:
                observe(obs)
            if limit is not None and len(seen) >= limit:
                raise _CutShort

        self._silent = True
        try:
            converge(self, sorted(self.clients), take)
        except _CutShort:
            self._cut_short(start, len(seen))
        except BaseException:
            self._cut_short(start, len(seen))
            raise
        finally:
            self._silent = False
        return seen

    def _cut_short(self, start: int, count: int) -> None:
        """The converge op at ``start`` of the log ended after ``count`` observations."""
        if count and start < len(self.log):
            first = self.log[start]
            self.log[start] = replace(first, op={"op": "converge", "observations": count})

    def unsubscribe(self, name: str) -> Observation[ClassicWorld] | None:
        return self._record({"op": "unsubscribe", "client": name}, super().unsubscribe(name))

    # ------------------------------------------------------------ client-only changes
    def restart(self, name: str, timeouts: tuple[int, int] | None = None) -> None:
        """The process restarts: a fresh consumer with the same config (a static one replaces itself);
        with ``timeouts``, a redeploy whose session and rebalance timeouts (ms) changed."""
        old = self.clients[name]
        config = old.config
        if timeouts is not None:
            config = replace(config, session_timeout_ms=timeouts[0], rebalance_timeout_ms=timeouts[1])
        self.clients[name] = type(old)(name, config)  # a mutant client stays a mutant
        self.drop_held(name)  # the old process's connection closed with it
        self.awaiting.pop(name, None)
        self.stalled.discard(name)
        if self.world is not None:  # the next observation starts from the new process (an answer
            # to the old one then reaches a client that never was its member)
            self.world = replace(self.world, clients=self.client_snaps())
        op: dict[str, Any] = {"op": "restart", "client": name}
        if timeouts is not None:
            op["session_timeout_ms"], op["rebalance_timeout_ms"] = timeouts
        self._record(op, None, always=True)

    def subscribe(self, name: str, topics: tuple[str, ...]) -> None:
        c = self.clients[name]
        c.config = replace(c.config, topics=tuple(topics))
        c.needs_rejoin = True
        self._record({"op": "subscribe", "client": name, "topics": list(topics)}, None, always=True)

    def set_protocols(self, name: str, assignors: tuple[str, ...]) -> None:
        c = self.clients[name]
        c.config = replace(c.config, assignors=tuple(assignors))
        c.needs_rejoin = True
        self._record({"op": "protocols", "client": name, "assignors": list(assignors)}, None, always=True)

    def rejoin(self, name: str) -> None:
        self.clients[name].needs_rejoin = True
        self._record({"op": "rejoin", "client": name}, None, always=True)

    def stale_subscription(self, name: str) -> None:
        """Fault: the client's next fall-out leaves its owned partitions in place (`ClassicClient.stale_subscription`)."""
        self.clients[name].stale_subscription = True
        self._record({"op": "stale_subscription", "client": name}, None, always=True)

    # ------------------------------------------------------------ plumbing
    def _record(
        self, op: dict[str, Any], obs: Observation[ClassicWorld] | None, *, always: bool = False
    ) -> Any:
        if getattr(self, "_silent", False):
            return obs  # a step of `converge`: recorded with it
        if obs is not None or always:
            self.log.append(LogEntry(op, obs, self.now))
        return obs


class _CutShort(Exception):
    """Replay reached the number of observations a cut-short ``converge`` recorded."""


def _converge_limit(op: dict[str, Any], where: str) -> int | None:
    """How many observations a recorded ``converge`` made before a violation ended it (None: all)."""
    count = op.get("observations")
    if count is None:
        return None
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise UsageError(f"{where}: converge field 'observations' must be a positive integer")
    return count


def _not_after_cut(sim: TracedClassicSim, op: dict[str, Any], where: str) -> None:
    """A converge cut short by a violation ended its example: no run records an op after it, and a
    minimiser candidate that puts one there replays a world no run can reach."""
    if getattr(sim, "ended_by_violation", False):
        raise UsageError(f"{where}: op {op.get('op')!r} after a converge cut short by a violation")


def apply_ops(sim: TracedClassicSim, op: dict[str, Any], where: str) -> list[Observation[ClassicWorld]]:
    """Every observation one recorded op makes (``converge`` makes many)."""
    if op.get("op") == "converge":
        _not_after_cut(sim, op, where)
        limit = _converge_limit(op, where)
        seen = sim.converge(limit=limit)
        sim.ended_by_violation = limit is not None and len(seen) >= limit
        return seen
    obs = apply_op(sim, op, where)
    return [] if obs is None else [obs]


def apply_op(sim: TracedClassicSim, op: dict[str, Any], where: str) -> Observation[ClassicWorld] | None:
    """Do one recorded op on ``sim`` (replay); a malformed op is a usage error naming ``where``
    (``converge``: its last observation; `apply_ops` gives them all)."""
    kind = op.get("op")
    client = op.get("client")
    _not_after_cut(sim, op, where)
    if client is not None and client not in sim.clients:
        raise UsageError(f"{where}: unknown client {client!r}")
    try:
        if kind == "step":
            return sim.client_step(client)
        if kind == "commit":
            return sim.commit(client, int(op["offset"]))
        if kind == "leave":
            return sim.leave(client)
        if kind == "send":
            return sim.send_raw(client, decode(op["request"]))
        if kind == "advance":
            return sim.advance(int(op["ms"]))
        if kind == "failover":
            return sim.failover()
        if kind == "create_topic":
            return sim.create_topic(str(op["topic"]), int(op["partitions"]))
        if kind == "append_failure":
            return sim.append_failure()
        if kind == "grow_topic":
            return sim.grow_topic(str(op["topic"]), int(op["partitions"]))
        if kind in ("stall", "resume"):
            return sim.stall(client, kind == "stall")
        if kind == "lose_response":
            return sim.lose_response(client)
        if kind == "cut_connection":
            return sim.cut_connection(client)
        if kind == "duplicate_request":
            return sim.duplicate_request(client)
        if kind == "delay_request":
            return sim.delay_request(client)
        if kind == "release":
            return sim.release(client)
        if kind == "unsubscribe":
            return sim.unsubscribe(client)
        if kind == "converge":
            seen = apply_ops(sim, op, where)
            return seen[-1] if seen else None
        if kind == "restart":
            sim.restart(client, _redeployed(op, where))
        elif kind == "subscribe":
            sim.subscribe(client, tuple(op["topics"]))
        elif kind == "protocols":
            sim.set_protocols(client, tuple(op["assignors"]))
        elif kind == "rejoin":
            sim.rejoin(client)
        elif kind == "stale_subscription":
            sim.stale_subscription(client)
        else:
            raise UsageError(f"{where}: unknown op {kind!r}")
    except KeyError as exc:
        raise UsageError(f"{where}: op {kind!r} lacks field {exc.args[0]!r}") from None
    return None


#: a redeploy's timeouts as a replayed op may give them (ms): a positive 32-bit int
_TIMEOUT_RANGE = (1, 2**31 - 1)


def _redeployed(op: dict[str, Any], where: str) -> tuple[int, int] | None:
    """The new session and rebalance timeouts of a redeploying restart, or None (same config)."""
    fields = ("session_timeout_ms", "rebalance_timeout_ms")
    if not any(f in op for f in fields):
        return None
    values = []
    for f in fields:
        v = op.get(f)
        if type(v) is not int or not _TIMEOUT_RANGE[0] <= v <= _TIMEOUT_RANGE[1]:
            raise UsageError(f"{where}: restart field {f!r} must be an integer in {list(_TIMEOUT_RANGE)}")
        values.append(v)
    return values[0], values[1]


def state_summary(world: ClassicWorld | None) -> dict[str, Any] | None:
    """What a reader needs beside each step: the group's state, generation, leader and members,
    and each client's member id, generation, phase and owned partitions."""
    if world is None:
        return None
    g = world.group
    return {
        "group": None
        if g is None
        else {
            "state": g.state.value,
            "generation": g.generation,
            "protocol": g.protocol,
            "leader": g.leader,
            "members": sorted(m.member_id for m in g.members),
        },
        "clients": {
            c.name: {
                "member_id": c.member_id,
                "generation": c.generation,
                "phase": c.phase,
                "owned": sorted(f"{t}-{p}" for t, p in c.owned),
            }
            for c in world.clients
        },
    }


def to_trace(
    sim: TracedClassicSim,
    *,
    target: str,
    target_version: str,
    origin: dict[str, Any],
    violations: list[tuple[str, str, int]],
) -> Trace:
    """The trace of everything ``sim`` recorded, with the driver's verdict."""
    return trace_of_log(
        sim,
        state_summary,
        protocol="classic",
        target=target,
        target_version=target_version,
        origin=origin,
        violations=violations,
    )
