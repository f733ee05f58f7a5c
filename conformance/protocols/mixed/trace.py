"""Recording and replaying mixed-group runs (docs/protocol-reference.md#b13; the mixed twin of `conformance.protocols.consumer.trace`).

`TracedMixedRun` logs each call of `MixedRun`'s driver API as an op (``topic``, ``add_classic``,
``add_consumer``, ``stop``, ``crash``, ``run_for``, ``failover``; the wire faults ``lose_response``,
``cut_connection``, ``duplicate_request``, ``delay_request``, ``release``) and pairs it with the observations
it produced: the op's own step line carries the first, ``{"op": "cont"}`` lines the rest; an op
that observed nothing (a client started, a crash) still gets its line. The header's set-up names
the migration policy, the coordinator's seed and the tick; ``mixed_mutant`` is a variant. Replay
re-runs the ops on a coordinator rebuilt from the header and compares every event and response.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from conformance.errors import SpecError, UsageError
from conformance.formats.trace_file import CheckedLog, LogEntry, Trace, trace_of_log
from model.choice import SeededChooser
from model.mixed.consumer_group import MixedConfig
from model.mixed.coordinator import MixedCoordinator
from model.mixed.state import MigrationPolicy
from model.mixed.world import MixedRun, MixedWorld
from model.observation import Observation

OPS = ("topic", "add_classic", "add_consumer", "stop", "crash", "run_for", "failover") + (
    "lose_response",
    "cut_connection",
    "duplicate_request",
    "delay_request",
    "release",
)
#: client settings given as tuples (JSON arrays in the trace)
TUPLE_FIELDS = ("topics", "assignors")


@dataclass
class TracedMixedRun(CheckedLog, MixedRun):
    """A `MixedRun` whose ``log`` is the run's trace (the machine, scenarios, replay)."""

    log: list[LogEntry] = field(default_factory=list)
    setup: dict[str, Any] = field(default_factory=dict)
    variants: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    _open: LogEntry | None = None

    def _op(self, op: dict[str, Any]) -> None:
        entry = LogEntry({k: list(v) if isinstance(v, tuple) else v for k, v in op.items()}, None, self.now)
        self.log.append(entry)
        self._open = entry

    def topic(self, name: str, partitions: int) -> None:
        self._op({"op": "topic", "name": name, "partitions": partitions})
        super().topic(name, partitions)

    def add_classic(self, name: str, **config: object) -> Any:
        self._op({"op": "add_classic", "name": name, **config})
        return super().add_classic(name, **config)

    def add_consumer(self, name: str, group_id: str = "g", **kw: object) -> Any:
        self._op({"op": "add_consumer", "name": name, "group_id": group_id, **kw})
        return super().add_consumer(name, group_id, **kw)

    def stop(self, name: str) -> None:
        self._op({"op": "stop", "name": name})
        super().stop(name)

    def crash(self, name: str) -> None:
        self._op({"op": "crash", "name": name})
        super().crash(name)

    def run_for(self, ms: int) -> None:
        self._op({"op": "run_for", "ms": ms})
        super().run_for(ms)

    def failover(self) -> None:
        self._op({"op": "failover"})
        super().failover()

    def lose_response(self, name: str) -> None:
        self._op({"op": "lose_response", "name": name})
        super().lose_response(name)

    def cut_connection(self, name: str) -> None:
        self._op({"op": "cut_connection", "name": name})
        super().cut_connection(name)

    def duplicate_request(self, name: str) -> None:
        self._op({"op": "duplicate_request", "name": name})
        super().duplicate_request(name)

    def delay_request(self, name: str) -> None:
        self._op({"op": "delay_request", "name": name})
        super().delay_request(name)

    def release(self, name: str) -> None:
        self._op({"op": "release", "name": name})
        super().release(name)

    def _step(self, event: object, call: Any) -> None:
        super()._step(event, call)
        if self._open is not None:
            self._open.obs, self._open.now = self.last, self.now
            self._open = None
        else:
            self.log.append(LogEntry({"op": "cont"}, self.last, self.now))

    def step_of(self, obs: Observation[Any]) -> int:
        """The trace step number of ``obs`` (its line's ``n``)."""
        for n in range(len(self.log), 0, -1):
            if self.log[n - 1].obs is obs:
                return n
        raise KeyError("observation not in the log")


#: the set-up keys of a mixed run; the size limits are optional (absent: Kafka's default, no limit)
SETUP_KEYS = ("policy", "seed", "tick_ms", "classic_max_size", "consumer_max_size")


def _limit(setup: dict[str, Any], key: str, where: str) -> int:
    value = setup[key]
    if type(value) is not int or not 1 <= value <= 1_000:
        raise SpecError(f"{where}: set-up key {key} must be an integer from 1 to 1000, not {value!r}")
    return value


def _config(policy: MigrationPolicy, limits: dict[str, int]) -> MixedConfig:
    """``classic_max_size`` is the model's group.max.size of classic groups (the downgrade limit),
    ``consumer_max_size`` group.consumer.max.size (the upgrade limit): `MixedConfig`."""
    config = MixedConfig(policy=policy)
    if "classic_max_size" in limits:
        config = replace(config, classic=replace(config.classic, max_size=limits["classic_max_size"]))
    if "consumer_max_size" in limits:
        config = replace(config, consumer=replace(config.consumer, max_size=limits["consumer_max_size"]))
    return config


def make_mixed_run(setup: dict[str, Any], variants: dict[str, str], where: str) -> TracedMixedRun:
    """A run on the mixed coordinator (or ``variants['mixed_mutant']``) described by ``setup``:
    ``policy`` (group.consumer.migration.policy), ``seed`` (the coordinator's chooser), ``tick_ms``."""
    from conformance.mutants.heldout2_consumer import HELDOUT2_MIXED_MUTANTS
    from conformance.mutants.heldout3_consumer import HELDOUT3_MIXED_MUTANTS
    from conformance.mutants.heldout_mixed import HELDOUT_MIXED_MUTANTS
    from conformance.mutants.infection import probed
    from conformance.mutants.mixed import MIXED_MUTANTS as FIRST

    MIXED_MUTANTS = {**FIRST, **HELDOUT_MIXED_MUTANTS, **HELDOUT2_MIXED_MUTANTS, **HELDOUT3_MIXED_MUTANTS}

    unknown = set(setup) - set(SETUP_KEYS)
    if unknown:
        raise SpecError(
            f"{where}: unknown mixed set-up key(s) {sorted(unknown)} (known: {', '.join(SETUP_KEYS)})"
        )
    limits = {
        key: _limit(setup, key, where) for key in ("classic_max_size", "consumer_max_size") if key in setup
    }
    policy_name = str(variants.get("migration_policy", setup.get("policy", "bidirectional")))
    try:
        policy = MigrationPolicy(policy_name)
    except ValueError:
        known = ", ".join(p.value for p in MigrationPolicy)
        raise SpecError(f"{where}: unknown migration policy {policy_name!r} (known: {known})") from None
    mutant = variants.get("mixed_mutant")
    if mutant is not None and mutant not in MIXED_MUTANTS:
        raise SpecError(
            f"{where}: unknown mixed mutant {mutant!r} (known: {', '.join(sorted(MIXED_MUTANTS))})"
        )
    cls = probed(MIXED_MUTANTS[mutant]) if mutant else MixedCoordinator
    seed = int(setup.get("seed", 0))
    run = TracedMixedRun(
        cls(_config(policy, limits), SeededChooser(seed)),
        (),
        tick_ms=int(setup.get("tick_ms", 1_000)),
        keep_observations=True,
    )
    run.setup = {"policy": policy.value, "seed": seed, "tick_ms": run.tick_ms, **limits}
    run.variants, run.seed = dict(variants), seed
    return run


def apply_op(run: TracedMixedRun, op: dict[str, Any], where: str) -> None:
    """Do one recorded op again (replay); a malformed op is a usage error naming ``where``."""
    kind = op.get("op")
    if kind not in OPS:
        raise UsageError(f"{where}: unknown mixed op {kind!r} (known: {', '.join(OPS)})")
    args = {
        k: tuple(v) if k in TUPLE_FIELDS and isinstance(v, list) else v for k, v in op.items() if k != "op"
    }
    try:
        getattr(run, str(kind))(**args)
    except TypeError as exc:
        raise UsageError(f"{where}: op {kind!r}: {exc}") from None


def state_summary(world: MixedWorld | None) -> dict[str, Any] | None:
    """The group's type and, per protocol side, its state and generation or epochs."""
    if world is None:
        return None
    out: dict[str, Any] = {}
    for gid, snap in sorted(world.classic_snaps.items()):
        out[gid] = {"type": "classic", "state": snap.state.value, "generation": snap.generation}
    for gid, g in sorted(world.groups.items()):
        out[gid] = {
            "type": "consumer",
            "state": g.state.value if hasattr(g.state, "value") else str(g.state),
            "group_epoch": g.group_epoch,
            "assignment_epoch": g.assignment_epoch,
            "members": sorted(g.members),
        }
    return {"groups": out}


def to_trace(
    sim: TracedMixedRun,
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
        protocol="mixed",
        target=target,
        target_version=target_version,
        origin=origin,
        violations=violations,
    )
