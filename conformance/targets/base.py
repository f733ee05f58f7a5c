"""What every real-target launcher shares: errors, cache, processes, readiness, pid files.

A target is provisioned once from a package registry into ``<cache>/<name>/`` (``<cache>`` is
``$GROUPCHECK_CACHE/targets`` or ``~/.cache/groupcheck/targets``), started on 127.0.0.1, probed with
a raw Kafka request until it answers, and stopped by its own process id: every process a target
starts is the leader of its own process group, and stopping signals that group (SIGTERM, then
SIGKILL) and waits until no process of the group is left.

A target started with ``detach=True`` (the ``python -m conformance.targets start`` command) outlives
the Python process that started it; its processes are recorded in ``<cache>/<name>/run/target.json``
and a later ``stop()`` in any process reads them from there. Otherwise the target is tied to the
process that started it: its processes get SIGTERM when that process dies (Linux parent-death
signal, or stdin EOF for the programs that wait on stdin), and are stopped at interpreter exit.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import threading
import time
import uuid
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from conformance.targets.admin import create_topic_wire
from conformance.targets.cache import ProvisionedMixin, cache_root
from conformance.targets.detached import DetachedMixin, Running
from conformance.targets.process import (
    DEFAULT_START_TIMEOUT_S,
    DEFAULT_STOP_TIMEOUT_S,
    Deadline,
    Proc,
    TargetCrashed,
    TargetError,
    describe_status,
    log_tail,
    pid_alive,
    terminate,
)
from conformance.wire import requests as _wire

# ----------------------------------------------------------------------------------------------
# Processes
# ----------------------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------------
# Targets
# ----------------------------------------------------------------------------------------------

_LIVE: set[Target] = set()  # attached targets still running, stopped at interpreter exit
_BY_BOOTSTRAP: dict[str, weakref.ref[Target]] = {}


@atexit.register
def _stop_all_at_exit() -> None:
    for t in list(_LIVE):
        with contextlib.suppress(Exception):
            t.stop(15)


def target_for_bootstrap(bootstrap: str) -> Target | None:
    ref = _BY_BOOTSTRAP.get(bootstrap)
    return ref() if ref else None


class Target(ProvisionedMixin, DetachedMixin):
    """A real coordinator this suite can provision, start and stop.

    Subclasses set ``name``, ``capabilities`` and ``probe`` and implement ``_provision``,
    ``_launch`` and ``_version``. Use as a context manager to provision, start and stop::

        with get_target("kfake") as t:
            bootstrap = t.bootstrap
    """

    name: ClassVar[str] = ""
    capabilities: ClassVar[frozenset[str]] = frozenset()
    probe: ClassVar[str] = "api_versions"  # or "metadata_v0"
    description: ClassVar[str] = ""
    # How long SIGTERM may take before SIGKILL (per process).
    stop_grace_s: ClassVar[float] = 10.0

    def __init__(
        self,
        *,
        cache_dir: Path | None = None,
        topics: Mapping[str, int] | None = None,
        settings: Mapping[str, Any] | None = None,
        detach: bool = False,
    ) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir else cache_root() / self.name
        self.topics: dict[str, int] = dict(topics or {})
        self.settings: dict[str, Any] = {**self.default_settings(), **(settings or {})}
        self.detach = detach
        self._running: Running | None = None
        self._lock = threading.RLock()
        self.api_versions: _wire.ApiVersionsInfo | None = None
        self.last_log_path: Path | None = None
        self._launching: list[Proc] = []
        self._detach_now = detach

    # -- overridables ------------------------------------------------------------------------

    def default_settings(self) -> dict[str, Any]:
        """The group settings this target is started with (name -> value, as the target spells it)."""
        return {}

    def provision_key(self) -> str:
        """Changes whenever provisioning inputs change (pinned versions, our files)."""
        raise NotImplementedError

    def _provision(self, deadline: Deadline, log_path: Path) -> dict[str, Any]:
        """Fetch/build into ``self.cache_dir``; returns facts to record (must include ``version``)."""
        raise NotImplementedError

    def _provisioned_ok(self, stamp: Mapping[str, Any]) -> bool:
        """Cheap check that the cached files are still there."""
        return True

    def _launch(
        self, run_dir: Path, log_path: Path, deadline: Deadline
    ) -> tuple[list[Proc], str, dict[str, Any]]:
        """Start the processes; returns them, the bootstrap address and extra facts.

        Raise TargetError (or let spawn/read_line errors through) when it cannot start. The base
        class then probes the bootstrap address until it answers.
        """
        raise NotImplementedError

    def _create_topic(self, name: str, partitions: int, deadline: Deadline) -> None:
        assert self._running is not None
        create_topic_wire(self.name, self._running.bootstrap, name, partitions, deadline, self.api_versions)

    def pinned_version(self) -> str:
        return ""

    # -- cache -------------------------------------------------------------------------------

    # -- life cycle --------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str | None:
        return self._running.bootstrap if self._running else None

    @property
    def log_path(self) -> Path | None:
        """The log of the running (or last) instance."""
        if self._running:
            return self._running.log_path
        return self.last_log_path

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._running.procs] if self._running else []

    @property
    def startup_s(self) -> float | None:
        """Seconds from launching the processes to the first good probe answer."""
        return self._running.startup_s if self._running else None

    def start(self, timeout_s: float = DEFAULT_START_TIMEOUT_S, *, detach: bool | None = None) -> str:
        """Start the target and return its bootstrap address once it answers a probe request.

        Provisions first if the cache is empty (within the same deadline).
        """
        deadline = Deadline(timeout_s)
        detach = self.detach if detach is None else detach
        with self._lock:
            if self._running is not None:
                raise TargetError(f"{self.name}: already started at {self._running.bootstrap}")
            if detach:
                self._check_no_detached_instance()
            self._provision_within(deadline)
            run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
            run_dir = self.cache_dir / "runs" / run_id
            run_dir.mkdir(parents=True)
            log_path = self.cache_dir / "logs" / f"{run_id}.log"
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.touch()
            self.last_log_path = log_path
            self._prune_logs()
            self._prune_runs()
            self._detach_now = detach
            self._launching = []
            t0 = time.monotonic()
            try:
                procs, bootstrap, extra = self._launch_guarded(run_dir, log_path, deadline)
                self._running = Running(bootstrap, procs, run_dir, log_path, detach, extra=extra)
                self._wait_ready(deadline)
                self._running.startup_s = round(time.monotonic() - t0, 3)
                for topic, partitions in self.topics.items():
                    if "seed_topics" not in self.capabilities:
                        self._create_topic(topic, partitions, deadline)
            except BaseException:
                self._cleanup_failed_start(self._launching, run_dir)
                raise
            finally:
                self._launching = []
            if detach:
                self._write_pid_file()
            else:
                _LIVE.add(self)
            _BY_BOOTSTRAP[bootstrap] = weakref.ref(self)
            return bootstrap

    def _launch_guarded(
        self, run_dir: Path, log_path: Path, deadline: Deadline
    ) -> tuple[list[Proc], str, dict[str, Any]]:
        try:
            launched, bootstrap, extra = self._launch(run_dir, log_path, deadline)
        except TargetError as e:
            if isinstance(e, TargetCrashed):
                raise TargetCrashed(
                    f"{self.name}: {e}", returncode=e.returncode, stderr_tail=e.stderr_tail
                ) from e
            raise TargetError(f"{self.name}: {e}") from e
        except (TimeoutError, EOFError) as e:
            raise self._failure(str(e), log_path) from e
        return launched, bootstrap, extra

    def _failure(self, reason: str, log_path: Path | None) -> TargetError:
        """A TargetError (or TargetCrashed if one of our processes died) naming the target."""
        running = self._running
        procs = running.procs if running else []
        for p in procs + [p for p in self._launching if p not in procs]:
            rc = p.returncode()
            if rc is not None and not p.expected_exit:
                tail = log_tail(p.log_path or log_path)
                return TargetCrashed(
                    f"{self.name}: {p.role} {describe_status(rc)} ({reason}){': ' + tail if tail else ''}"
                    f" (log: {p.log_path or log_path})",
                    returncode=rc,
                    stderr_tail=tail,
                )
        tail = log_tail(log_path)
        return TargetError(
            f"{self.name}: {reason}{'; last log line: ' + tail if tail else ''} (log: {log_path})"
        )

    def _cleanup_failed_start(self, procs: list[Proc], run_dir: Path) -> None:
        cleanup = Deadline(30)
        for p in reversed(procs):
            with contextlib.suppress(Exception):
                terminate(p, cleanup, grace_s=2.0)
        self._running = None
        shutil.rmtree(run_dir, ignore_errors=True)

    def _check_crashed(self) -> None:
        running = self._running
        if running is None:
            return
        for p in running.procs:
            if p.expected_exit:
                continue
            if p.popen is not None:
                rc = p.popen.poll()
                if rc is not None:
                    raise self._failure(f"{p.role} is no longer running", running.log_path)
            elif not pid_alive(p.pid, p.start_ticks):
                raise TargetCrashed(
                    f"{self.name}: {p.role} (pid {p.pid}) is no longer running"
                    f"{': ' + log_tail(running.log_path) if log_tail(running.log_path) else ''}",
                    stderr_tail=log_tail(running.log_path),
                )

    def check_alive(self) -> None:
        """Raise TargetCrashed if a process of the running target has exited on its own."""
        with self._lock:
            self._check_crashed()

    def _wait_ready(self, deadline: Deadline) -> None:
        running = self._running
        assert running is not None
        host, port = _wire.split_bootstrap(running.bootstrap)
        last = "no answer yet"
        what = "Metadata v0" if self.probe == "metadata_v0" else "ApiVersions"
        while True:
            self._check_crashed()
            try:
                step = max(0.05, min(2.0, deadline.remaining()))
                if self.probe == "metadata_v0":
                    resp = _wire.metadata(host, port, None, step, version=0)
                    if not resp.brokers:
                        raise _wire.WireRetry("Metadata v0 lists no broker yet")
                    self.api_versions = None
                else:
                    self.api_versions = _wire.api_versions(host, port, step)
                return
            except _wire.WireRetry as e:
                last = str(e)
            except _wire.WireGarbage as e:
                raise self._failure(
                    f"answered {what} on {running.bootstrap} with garbage: {e}", running.log_path
                ) from e
            if deadline.expired():
                raise self._failure(
                    f"no valid {what} answer on {running.bootstrap} within {deadline.seconds:g}s ({last})",
                    running.log_path,
                )
            time.sleep(min(0.1, deadline.remaining()))

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        """Stop the running target (or the detached one recorded in the pid file) and wait for it.

        Raises TargetCrashed if a process had already exited on its own before stop was asked,
        TargetError if a process is still there when the deadline passes.
        """
        deadline = Deadline(timeout_s)
        with self._lock:
            running = self._running
            if running is None:
                running = self._load_pid_file()
                if running is None:
                    return
            self._running = running
            crashed: TargetCrashed | None = None
            try:
                self._check_crashed()
            except TargetCrashed as e:
                crashed = e
            except TargetError:
                pass
            errors = []
            for p in self._stop_order(running.procs):
                try:
                    terminate(p, deadline, grace_s=self.stop_grace_s)
                except (TimeoutError, OSError) as e:
                    errors.append(str(e))
            self._running = None
            _LIVE.discard(self)
            _BY_BOOTSTRAP.pop(running.bootstrap, None)
            if not errors:
                shutil.rmtree(running.run_dir, ignore_errors=True)
                if running.detached:
                    with contextlib.suppress(FileNotFoundError):
                        self.pid_file.unlink()
            self.last_log_path = running.log_path
            if errors:
                raise TargetError(
                    f"{self.name}: stop did not finish within {deadline.seconds:g}s: {'; '.join(errors)}"
                )
            if crashed is not None:
                raise crashed

    def restart(self, timeout_s: float = DEFAULT_START_TIMEOUT_S, *, signal_name: str = "term") -> str:
        """Stop the running target's processes and start them again on the same state and ports.

        A coordinator failover for targets that persist their state (capability ``restart``; the
        subclass implements ``_relaunch``). ``signal_name``: ``term`` stops them cleanly (SIGTERM,
        SIGKILL after the grace period), ``kill`` crashes them (SIGKILL at once). Returns the
        bootstrap address once it answers a probe.
        """
        if signal_name not in ("term", "kill"):
            raise TargetError(f"{self.name}: restart signal {signal_name!r} (known: term, kill)")
        if "restart" not in self.capabilities:
            raise TargetError(f"{self.name}: cannot be restarted on its own state (no restart capability)")
        deadline = Deadline(timeout_s)
        with self._lock:
            running = self._running
            if running is None:
                raise TargetError(f"{self.name}: not started")
            self._check_crashed()
            for p in self._stop_order(running.procs):
                try:
                    terminate(p, deadline, grace_s=self.stop_grace_s, crash=signal_name == "kill")
                except (TimeoutError, OSError) as e:
                    raise TargetError(f"{self.name}: restart could not stop {p.role}: {e}") from e
            self._detach_now = running.detached
            self._launching = []
            t0 = time.monotonic()
            try:
                running.procs = self._relaunch(running.run_dir, running.log_path, deadline, running.extra)
                self._wait_ready(deadline)
            except TargetError:
                self._cleanup_failed_start(self._launching, running.run_dir)
                raise
            except (TimeoutError, EOFError) as e:
                self._cleanup_failed_start(self._launching, running.run_dir)
                raise self._failure(f"restart: {e}", running.log_path) from e
            finally:
                self._launching = []
            running.startup_s = round(time.monotonic() - t0, 3)
            if running.detached:
                self._write_pid_file()
            return running.bootstrap

    def _relaunch(
        self, run_dir: Path, log_path: Path, deadline: Deadline, extra: Mapping[str, Any]
    ) -> list[Proc]:
        """Start the processes again on ``run_dir``'s state (targets with the restart capability)."""
        raise TargetError(f"{self.name}: cannot be restarted on its own state")

    def _stop_order(self, procs: list[Proc]) -> list[Proc]:
        """Processes in the order they are stopped (default: the reverse of start order)."""
        return list(reversed(procs))

    def create_topic(self, name: str, partitions: int = 1, timeout_s: float = 30.0) -> None:
        """Create a topic (replication factor 1) and wait until all its partitions have a leader."""
        with self._lock:
            if self._running is None:
                raise TargetError(f"{self.name}: not started")
            self._check_crashed()
            self._create_topic(name, partitions, Deadline(timeout_s))

    def __enter__(self) -> Target:
        if not self.is_provisioned():
            self.provision()
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running at {self.bootstrap}" if self._running else "stopped"
        return f"<{type(self).__name__} {self.name} {state}>"

    # -- detached instances ------------------------------------------------------------------

    # -- helpers for subclasses --------------------------------------------------------------
