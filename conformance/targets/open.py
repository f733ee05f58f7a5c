"""Adapters: how the suite reaches a coordinator (docs/real-targets.md#adapter).

``open_target(spec)`` turns a ``--target`` value into a `TargetHandle`: ``model`` (the reference model
in process, always available), ``mutant:NAME`` (the model with one named fault, in process; its
handle carries the ``mutant`` variant), a launcher name from `conformance.targets` (provisioned, started and
stopped around the run), ``host:port`` (a coordinator someone else runs), or the name of a
third-party adapter registered under the entry-point group ``groupcheck.adapters`` (its object is
called with the spec and returns a `TargetHandle`). Nothing outside this package knows about a
particular target, and nothing here knows a protocol: a handle carries the connection and its
session (`conformance.wire.session.TargetSession`); the kits build their ports on it
(`ProtocolKit.real_setup`).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from conformance.errors import TargetError, UsageError
from conformance.formats.trace_file import groupcheck_version
from conformance.mutants import get_mutant
from conformance.targets.settings import model_fields

ENTRY_POINT_GROUP = "groupcheck.adapters"
HOST_PORT = re.compile(r"^[A-Za-z0-9_.\-]+:\d{1,5}$")
#: Partition counts a run may use (machine topics grow up to this); seeded at start where needed.
MAX_PARTITIONS = 8
TOPIC_NAMES = ("t", "u")
#: ``mutant:NAME``: the reference model with one named fault, in process (docs/mutants.md)
MUTANT_PREFIX = "mutant:"
SERVED_PREFIX = "served-model:"  # the model served over the wire with a coordinator mutant


def in_process(spec: str) -> bool:
    """True for targets the suite runs in this process (the model and its mutants), no oracle."""
    return spec == "model" or spec.startswith(MUTANT_PREFIX)


@dataclass
class TargetHandle:
    """A coordinator under test: its name, version, how to reach it, and the model settings it matches."""

    name: str
    version: str
    kind: str  # model | kafka | plugin
    bootstrap: str | None = None
    model_config: dict[str, int] = field(default_factory=dict)
    launcher: Any = None
    session: Any = None
    notes: list[str] = field(default_factory=list)
    capabilities: Any = None
    startup_s: float = 0.0
    #: model variants an in-process target is made of (``mutant:NAME`` -> {"mutant": NAME})
    variants: dict[str, str] = field(default_factory=dict)
    #: the group settings the oracle uses, each with its origin (`conformance.targets.settings`)
    settings: Any = None
    #: what the user stated (``--target-config``), applied when the target is connected
    given: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        if self.session is not None:
            self.session.adapter.close()
        if self.launcher is not None:
            from conformance.targets import TargetError as LauncherError

            try:
                self.launcher.stop(60)
            except LauncherError as e:
                raise TargetError(str(e)) from e


def mutant_handle(name: str) -> TargetHandle:
    """The target ``mutant:NAME`` (`conformance.targets.mutant`): the model with its variant
    ``mutant=NAME``; a usage error naming the known mutants when there is none."""
    mutant = get_mutant(name)
    handle = TargetHandle(
        f"{MUTANT_PREFIX}{name}",
        f"groupcheck {groupcheck_version()} with mutant {name}",
        "model",
        model_config={},
        variants={"mutant": name},
    )
    handle.notes.append(f"mutant {name} ({mutant.protocol}): {mutant.fault}")
    if mutant.coordinator is None and mutant.port is None:
        handle.notes.append(f"mutant {name} is client-side: the coordinator is the reference model")
    return handle


#: What the model assumes for a setting a target was not started with (its own value is unknown):
#: the test-friendly values every configurable target gets (conformance/protocols/build.py TEST_CONFIG).
ASSUMED = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 500,
    "group.max.session.timeout.ms": 1_800_000,
    # the other launched coordinators compute a target in the heartbeat that bumps the epoch
    "group.consumer.assignment.interval.ms": 0,
}
#: the classic model's fields by Kafka setting (`conformance.targets.settings.MODEL_FIELDS`)
_MODEL_KEYS = model_fields("classic")


def _model_config_from(settings: dict[str, Any], notes: list[str] | None = None) -> dict[str, int]:
    """The model's broker settings that match what a target was started with (reference, top section)."""
    out = {}
    for key, model_key in _MODEL_KEYS.items():
        if key not in ASSUMED and key not in settings:
            continue
        if key in settings:
            out[model_key] = int(settings[key])
        else:
            out[model_key] = ASSUMED[key]
            if notes is not None:
                notes.append(f"{key} is not settable on this target; the model assumes {ASSUMED[key]}")
    return out


def _launcher_error(e: Exception) -> TargetError:
    return TargetError(str(e))


def _seed_topics(run_id: str) -> dict[str, int]:
    return {f"gc-{run_id}-{n}-{p}": p for n in TOPIC_NAMES for p in range(1, MAX_PARTITIONS + 1)}


def classic_model_config(settings: Any) -> dict[str, int]:
    """The classic model's broker settings from learned `TargetSettings`."""
    return {model_key: settings.int(key) for key, model_key in _MODEL_KEYS.items()}


def launched_settings(settings: dict[str, Any]) -> Any:
    """`TargetSettings` of a target a launcher starts with ``settings`` (what it does not set: `ASSUMED`)."""
    from conformance.targets.settings import learn

    return learn({**ASSUMED, **settings}, {}, {})


def _learn_settings(handle: TargetHandle) -> None:
    """The settings the oracle uses (`conformance.targets.settings.learn`): the launcher's, what the
    target answers to DescribeConfigs (a target we did not start), what the user gave, Kafka's defaults."""
    from conformance.targets.settings import ask, learn

    started: dict[str, Any] | None = None
    asked: dict[str, str | None] = {}
    launcher = handle.launcher
    if launcher is not None:  # what it does not set is ASSUMED, unless it runs Kafka's own defaults
        unset = {} if getattr(launcher, "kafka_defaults", False) else ASSUMED
        started = {**unset, **(getattr(launcher, "settings", {}) or {})}
    if handle.session is not None and (launcher is None or getattr(launcher, "kafka_defaults", False)):
        adapter = handle.session.adapter
        asked, why = ask(adapter.host, adapter.port, handle.capabilities, 10.0)
        if why is not None:
            handle.notes.append(why)
    handle.settings = learn(started, asked, handle.given)
    handle.model_config = classic_model_config(handle.settings)


@contextlib.contextmanager
def open_target(
    spec: str,
    *,
    start_timeout_s: float = 120.0,
    provision_timeout_s: float = 900.0,
    given: dict[str, Any] | None = None,
) -> Iterator[TargetHandle]:
    """The target named by ``spec``, ready for a run; stopped again afterwards when we started it.
    ``given``: the settings the user states (``--target-config``, `conformance.targets.settings`)."""
    if spec == "model":
        yield TargetHandle("model", "reference model", "model", model_config={})
        return
    if spec.startswith(MUTANT_PREFIX):  # a mutant coordinator in process (conformance/mutants)
        yield mutant_handle(spec[len(MUTANT_PREFIX) :])
        return
    from conformance.targets import TARGETS

    if spec in TARGETS:
        handle = _start_launcher(spec, start_timeout_s, provision_timeout_s)
    elif spec.startswith(SERVED_PREFIX) and len(spec) > len(SERVED_PREFIX):  # the model with a mutant, served
        handle = _start_launcher(
            "served-model", start_timeout_s, provision_timeout_s, mutant=spec[len(SERVED_PREFIX) :]
        )
        handle.name = spec
    elif HOST_PORT.match(spec):
        handle = TargetHandle(
            spec,
            "unknown",
            "kafka",
            bootstrap=spec,
        )
    else:
        plugin = _plugin(spec)
        if plugin is None:
            raise UsageError(
                f"unknown target {spec!r} (use model, mutant:NAME, served-model:NAME, host:port, one of {', '.join(TARGETS)}, "
                f"or an adapter registered under the {ENTRY_POINT_GROUP!r} entry point)"
            )
        handle = plugin(spec)
    handle.given = dict(given or {})
    try:
        if handle.kind == "kafka":
            _connect(handle)
            _learn_settings(handle)
        yield handle
    finally:
        handle.close()


def _plugin(spec: str) -> Callable[[str], TargetHandle] | None:
    name = spec.split(":", 1)[0]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            obj = ep.load()
            return obj  # type: ignore[no-any-return]
    return None


def _start_launcher(
    name: str, start_timeout_s: float, provision_timeout_s: float, **options: Any
) -> TargetHandle:
    from conformance.targets import TargetError as LauncherError
    from conformance.targets import get_target

    run_id = f"{os.getpid() % 100000}{int(time.time()) % 100000}"
    launcher = get_target(name, **options)
    if "create_topics" not in launcher.capabilities and "seed_topics" in launcher.capabilities:
        launcher.topics = _seed_topics(run_id)
    try:
        launcher.provision(provision_timeout_s)
        t0 = time.monotonic()
        bootstrap = launcher.start(start_timeout_s)
        startup = time.monotonic() - t0
    except LauncherError as e:
        with contextlib.suppress(Exception):
            launcher.stop(30)
        raise _launcher_error(e) from e
    notes: list[str] = []
    handle = TargetHandle(
        name,
        launcher.version(),
        "kafka",
        bootstrap=bootstrap,
        model_config=_model_config_from(launcher.settings, notes),
        launcher=launcher,
        startup_s=startup,
        notes=notes,
    )
    handle.notes.append(f"run id {run_id}")
    handle.session_run_id = run_id  # type: ignore[attr-defined]
    return handle


def _connect(handle: TargetHandle) -> None:
    """ApiVersions, FindCoordinator (waiting for the offsets topic), and the run's shared session."""
    from conformance.wire.connection import KafkaAdapter
    from conformance.wire.session import TargetSession

    assert handle.bootstrap is not None
    # a fresh suffix: two sessions on one coordinator within a second must not share group names
    run_id = getattr(handle, "session_run_id", None) or (
        f"{os.getpid() % 100000}{int(time.time()) % 100000}{uuid.uuid4().hex[:4]}"
    )
    adapter = KafkaAdapter(handle.bootstrap)
    if os.environ.get("GROUPCHECK_PROXY", "on") != "off":  # member traffic through the fault proxy
        from conformance.wire.proxy import FaultProxy

        adapter.proxy = FaultProxy()
        handle.notes.append("member connections go through the fault proxy (conformance/wire/proxy.py)")
    if handle.launcher is None or "restart" not in getattr(handle.launcher, "capabilities", ()):
        handle.notes.append("restart (coordinator failover): absent, the Failover rule is off on this target")
    caps = adapter.connect()
    handle.capabilities = caps
    handle.notes.extend(adapter.notes)
    adapter.find_coordinator(f"gc-{run_id}-probe", deadline_s=60)
    launcher = handle.launcher
    created: set[str] = set()

    def ensure_topic(real: str) -> None:
        if real in created:
            return
        partitions = int(real.rsplit("-", 1)[1])
        if launcher is not None and launcher.topics.get(real) == partitions:
            created.add(real)
            return
        try:
            if launcher is not None:
                launcher.create_topic(real, partitions, 60)
            else:
                from conformance.targets import create_topic

                create_topic(handle.bootstrap or "", real, partitions, 60)
        except Exception as e:  # noqa: BLE001 - any launcher failure is a target error
            raise TargetError(f"{handle.name}: cannot create topic {real}: {e}") from e
        created.add(real)

    handle.session = TargetSession(adapter, run_id, ensure_topic, launcher)


_TOPICS = threading.Lock()


def group_handle(handle: TargetHandle, group: int) -> TargetHandle:
    """``--groups N``: a copy of an opened ``handle`` for group ``group``, with a session of its own
    (its own connections, fault proxy, counters and findings; group names tagged ``-<random>x<group>``, fresh per session)
    beside the same target, launcher and topics (topic creation serialised between groups)."""
    import copy

    from conformance.wire.connection import KafkaAdapter
    from conformance.wire.session import TargetSession

    base = handle.session
    assert base is not None and handle.bootstrap is not None
    adapter = KafkaAdapter(handle.bootstrap)
    if base.adapter.proxy is not None:
        from conformance.wire.proxy import FaultProxy

        adapter.proxy = FaultProxy()
    adapter.connect()

    launcher = None if base.launcher is None else _Forked(base.launcher)
    created: set[str] = set()

    def ensure_topic(real: str) -> None:
        """``base.ensure_topic`` without the launcher's liveness check (`_Forked`): the launcher's own
        way of making a topic, or a plain CreateTopics for a target someone else runs."""
        with _TOPICS:
            partitions = int(real.rsplit("-", 1)[1])
            if real in created or (launcher is not None and launcher.topics.get(real) == partitions):
                return
            if launcher is not None:
                launcher.create_topic(real, partitions, 60)
            else:
                from conformance.targets import create_topic

                create_topic(handle.bootstrap or "", real, partitions, 60)
            created.add(real)

    session = TargetSession(adapter, base.run_id, ensure_topic, launcher, base.timing)
    # a fresh tag per session (made in the group's own process): a later run on the same target
    # never reuses an earlier run's groups
    session.group_tag = f"-{uuid.uuid4().hex[:6]}x{group}"
    session.max_restarts = 0  # a restart would fail every other group's requests at once
    out = copy.copy(handle)
    out.session = session
    out.notes = handle.notes
    return out


def prepare_groups(handle: TargetHandle) -> None:
    """Before ``--groups`` forks: every topic a group may name exists, so no group process needs
    the launcher to create one (`_Forked`); every wire payload class is built, so no group
    process builds its own (`conformance.wire.codec.preload`)."""
    from conformance.wire.codec import preload

    preload()
    session = handle.session
    if session is None:
        return
    for name in TOPIC_NAMES:
        for partitions in range(1, MAX_PARTITIONS + 1):
            session.ensure_topic(session.real_topic(name, partitions))


class _Forked:
    """The launcher as a group's process sees it: the same settings and capabilities, but no
    liveness check, since the target is the parent's child (waiting on it from a forked process
    reads as "exited with status 0"). The parent checks the target after the groups end."""

    def __init__(self, launcher: Any) -> None:
        self._launcher = launcher

    def __getattr__(self, name: str) -> Any:
        return getattr(self._launcher, name)

    def check_alive(self) -> None:
        return None

    def create_topic(self, name: str, partitions: int = 1, timeout_s: float = 30.0) -> None:
        from conformance.targets.process import Deadline

        self._launcher._create_topic(name, partitions, Deadline(timeout_s))
