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
import ctypes
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from conformance.wire import requests as _wire

CACHE_ENV = "GROUPCHECK_CACHE"
LOOPBACK = "127.0.0.1"
KEEP_LOGS = 20

DEFAULT_PROVISION_TIMEOUT_S = 900.0
DEFAULT_START_TIMEOUT_S = 120.0
DEFAULT_STOP_TIMEOUT_S = 60.0


class TargetError(Exception):
    """A real target could not be provisioned, started, probed or stopped (a tool error).

    The message is one line and names the target.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class TargetCrashed(TargetError):
    """A target's process exited on its own (crash, abort, fatal error)."""

    def __init__(self, message: str, *, returncode: int | None = None, stderr_tail: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr_tail = stderr_tail


def cache_root() -> Path:
    """Where targets are cached: ``$GROUPCHECK_CACHE/targets`` or ``~/.cache/groupcheck/targets``."""
    env = os.environ.get(CACHE_ENV)
    base = Path(env).expanduser() if env else Path.home() / ".cache" / "groupcheck"
    return base / "targets"


class Deadline:
    """A point in (monotonic) time; every wait in this package is bounded by one."""

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)
        self.end = time.monotonic() + self.seconds

    def remaining(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.end


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def describe_status(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    if returncode > 128:
        try:
            return f"exit status {returncode} ({signal.Signals(returncode - 128).name}?)"
        except ValueError:
            pass
    return f"exit status {returncode}"


_INTERESTING = re.compile(r"(error|exception|fatal|panic|abort|assert|failed|cannot|could not)", re.I)


def log_tail(path: Path | None, max_len: int = 300) -> str:
    """The most telling line near the end of a log: the last error-looking line, else the last line."""
    if path is None or not path.exists():
        return ""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            lines = [ln.strip() for ln in f.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    if not lines:
        return ""
    pick = next((ln for ln in reversed(lines[-40:]) if _INTERESTING.search(ln)), lines[-1])
    pick = " ".join(pick.split())
    return pick if len(pick) <= max_len else pick[: max_len - 3] + "..."


# ----------------------------------------------------------------------------------------------
# Processes
# ----------------------------------------------------------------------------------------------


def _proc_stat(pid: int) -> tuple[str, int, str] | None:
    """(state, pgrp, start time in ticks) of a live process, or None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    except OSError:
        return None
    rest = raw[raw.rfind(")") + 2 :].split()
    # rest[0] = state (field 3), rest[2] = pgrp (field 5), rest[19] = starttime (field 22)
    try:
        return rest[0], int(rest[2]), rest[19]
    except (IndexError, ValueError):
        return None


def pid_alive(pid: int, start_ticks: str | None = None) -> bool:
    """True if ``pid`` is a live (non-zombie) process, and the same one when ``start_ticks`` is given."""
    st = _proc_stat(pid)
    if st is None or st[0] in ("Z", "X"):
        return False
    return start_ticks is None or st[2] == start_ticks


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        st = _proc_stat(int(entry.name))
        if st is not None and st[1] == pgid and st[0] not in ("Z", "X"):
            out.append(int(entry.name))
    return out


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except Exception:
        pass


@dataclass
class Proc:
    """One process a target started; it leads its own process group (pgid == pid)."""

    role: str
    pid: int
    start_ticks: str | None
    popen: subprocess.Popen[bytes] | None = None
    expected_exit: bool = False
    log_path: Path | None = None

    def returncode(self) -> int | None:
        if self.popen is not None:
            return self.popen.poll()
        return None

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        return pid_alive(self.pid, self.start_ticks)

    def group_alive(self) -> bool:
        if self.popen is not None:
            self.popen.poll()  # reap the leader so it does not linger as a zombie
        return self.alive() or bool(group_members(self.pid))

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "pid": self.pid, "start_ticks": self.start_ticks}


def spawn(
    role: str,
    argv: Sequence[str],
    *,
    log_path: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin_pipe: bool = False,
    stdout_pipe: bool = False,
    detach: bool = False,
) -> Proc:
    """Start ``argv`` as the leader of a new process group, stderr (and stdout unless piped) to a log."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("ab")
    try:
        die_with_parent = not detach and threading.current_thread() is threading.main_thread()
        popen = subprocess.Popen(
            list(argv),
            cwd=str(cwd) if cwd else None,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout_pipe else log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            preexec_fn=_die_with_parent if die_with_parent else None,
        )
    except OSError as e:
        raise TargetError(f"cannot run {argv[0]}: {e.strerror or e}") from e
    finally:
        log.close()
    st = _proc_stat(popen.pid)
    return Proc(role, popen.pid, st[2] if st else None, popen, log_path=log_path)


def read_line(proc: Proc, deadline: Deadline, what: str) -> str:
    """The first line a process prints on its (piped) stdout, within the deadline."""
    import selectors

    assert proc.popen is not None and proc.popen.stdout is not None
    fd = proc.popen.stdout.fileno()
    buf = b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while b"\n" not in buf:
            left = deadline.remaining()
            if left <= 0:
                raise TimeoutError(f"did not print {what} within {deadline.seconds:g}s")
            if not sel.select(timeout=min(left, 0.2)):
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                proc.popen.wait(timeout=max(0.1, min(2.0, deadline.remaining())))
                raise EOFError(f"exited before printing {what}")
            buf += chunk
    return buf.split(b"\n", 1)[0].decode("utf-8", "replace").strip()


def terminate(proc: Proc, deadline: Deadline, grace_s: float, *, crash: bool = False) -> None:
    """SIGTERM the process group, wait ``grace_s``, then SIGKILL; wait until the group is empty.

    ``crash``: SIGKILL at once (no shutdown hooks: a JVM writes no clean-shutdown marker, a
    KRaft broker skips its controlled shutdown), the way a machine or process crash looks."""
    proc.expected_exit = True

    def signal_group(sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)

    if not proc.group_alive():
        _close_pipes(proc)
        return
    if crash:
        grace_s = 0.0
    else:
        # Closing stdin first lets the programs that serve until stdin closes exit on their own.
        _close_pipes(proc, stdin_only=True)
        signal_group(signal.SIGTERM)
    grace_end = min(deadline.end, time.monotonic() + grace_s)
    while time.monotonic() < grace_end and proc.group_alive():
        time.sleep(0.05)
    if proc.group_alive():
        signal_group(signal.SIGKILL)
        while not deadline.expired() and proc.group_alive():
            time.sleep(0.05)
    _close_pipes(proc)
    if proc.group_alive():
        raise TimeoutError(f"{proc.role} (pid {proc.pid}) still running after SIGKILL")


def _close_pipes(proc: Proc, stdin_only: bool = False) -> None:
    if proc.popen is None:
        return
    streams = [proc.popen.stdin] if stdin_only else [proc.popen.stdin, proc.popen.stdout]
    for stream in streams:
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def run_tool(
    argv: Sequence[str],
    *,
    deadline: Deadline,
    log_path: Path,
    what: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run a provisioning command to completion within the deadline; returns its stdout.

    Raises TargetError (one line: what failed, exit status, the telling line of its output).
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        shown = " ".join(a if len(a) <= 200 else a[:60] + "..." + a[-40:] for a in argv)
        log.write(f"\n$ {shown}\n".encode())
    if deadline.expired():
        raise TargetError(f"{what}: no time left (deadline {deadline.seconds:g}s)")
    try:
        popen = subprocess.Popen(
            list(argv),
            cwd=str(cwd) if cwd else None,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as e:
        raise TargetError(f"{what}: cannot run {argv[0]}: {e.strerror or e}") from e
    try:
        out, _ = popen.communicate(timeout=deadline.remaining())
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)
        out, _ = popen.communicate()
        _append(log_path, out)
        raise TargetError(f"{what}: timed out after {deadline.seconds:g}s (log: {log_path})") from None
    _append(log_path, out)
    text = out.decode("utf-8", "replace")
    if popen.returncode != 0:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        pick = next((ln for ln in reversed(lines) if _INTERESTING.search(ln)), lines[-1] if lines else "")
        raise TargetError(
            f"{what} failed ({describe_status(popen.returncode)}): {pick[:300]} (log: {log_path})"
        )
    return text


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as f:
        f.write(data)


@contextlib.contextmanager
def file_lock(path: Path, deadline: Deadline, what: str) -> Iterator[None]:
    """An exclusive lock on ``path`` (flock), waited for until the deadline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if deadline.expired():
                    raise TargetError(f"{what}: lock {path} still held after {deadline.seconds:g}s") from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def digest(*parts: str | bytes | Path) -> str:
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, Path):
            h.update(p.read_bytes())
        elif isinstance(p, str):
            h.update(p.encode())
        else:
            h.update(p)
        h.update(b"\0")
    return h.hexdigest()[:16]


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


@dataclass
class Running:
    """A started instance: its processes, bootstrap address, run folder and log."""

    bootstrap: str
    procs: list[Proc]
    run_dir: Path
    log_path: Path
    detached: bool
    started_at: float = field(default_factory=time.time)
    startup_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class Target:
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

    @property
    def stamp_path(self) -> Path:
        return self.cache_dir / "provisioned.json"

    @property
    def pid_file(self) -> Path:
        return self.cache_dir / "run" / "target.json"

    @property
    def provision_log(self) -> Path:
        return self.cache_dir / "provision.log"

    def _read_stamp(self) -> dict[str, Any] | None:
        try:
            stamp = json.loads(self.stamp_path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(stamp, dict) or stamp.get("key") != self.provision_key():
            return None
        return stamp if self._provisioned_ok(stamp) else None

    def is_provisioned(self) -> bool:
        return self._read_stamp() is not None

    def provision(self, timeout_s: float = DEFAULT_PROVISION_TIMEOUT_S) -> None:
        """Fetch and build the target into its cache folder; a no-op when already cached."""
        self._provision_within(Deadline(timeout_s))

    def _provision_within(self, deadline: Deadline) -> dict[str, Any]:
        stamp = self._read_stamp()
        if stamp is not None:
            return stamp
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with file_lock(self.cache_dir / ".provision.lock", deadline, f"{self.name}: provisioning"):
            stamp = self._read_stamp()
            if stamp is not None:
                return stamp
            t0 = time.monotonic()
            try:
                facts = self._provision(deadline, self.provision_log)
            except TargetError as e:
                raise TargetError(f"{self.name}: provisioning failed: {e}") from e
            except TimeoutError as e:
                raise TargetError(f"{self.name}: provisioning timed out: {e}") from e
            stamp = {
                "key": self.provision_key(),
                "name": self.name,
                "provisioned_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "provision_s": round(time.monotonic() - t0, 2),
                **facts,
            }
            tmp = self.stamp_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(stamp, indent=2, sort_keys=True))
            tmp.replace(self.stamp_path)
            return stamp

    def version(self) -> str:
        """The provisioned target's version (the pinned one if not provisioned yet)."""
        stamp = self._read_stamp()
        if stamp and stamp.get("version"):
            return str(stamp["version"])
        return self.pinned_version()

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

    def _write_pid_file(self) -> None:
        running = self._running
        assert running is not None
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "name": self.name,
            "bootstrap": running.bootstrap,
            "run_dir": str(running.run_dir),
            "log_path": str(running.log_path),
            "started_at": running.started_at,
            "startup_s": running.startup_s,
            "procs": [p.to_json() for p in running.procs],
            "extra": running.extra,
        }
        tmp = self.pid_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2))
        tmp.replace(self.pid_file)
        for p in running.procs:  # we are done with the pipes; the processes carry on
            _close_pipes(p)
            p.popen = None

    def _load_pid_file(self) -> Running | None:
        try:
            data = json.loads(self.pid_file.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise TargetError(f"{self.name}: unreadable pid file {self.pid_file}: {e}") from e
        procs = [
            Proc(p["role"], int(p["pid"]), p.get("start_ticks"), None, log_path=Path(data["log_path"]))
            for p in data.get("procs", [])
        ]
        return Running(
            data["bootstrap"],
            procs,
            Path(data["run_dir"]),
            Path(data["log_path"]),
            True,
            started_at=data.get("started_at", 0.0),
            startup_s=data.get("startup_s", 0.0),
            extra=data.get("extra", {}),
        )

    def detached_bootstrap(self) -> str | None:
        """Bootstrap of a detached instance still running (per the pid file), else None."""
        running = self._load_pid_file()
        if running and any(pid_alive(p.pid, p.start_ticks) for p in running.procs):
            return running.bootstrap
        return None

    def _check_no_detached_instance(self) -> None:
        running = self._load_pid_file()
        if running is None:
            return
        if any(pid_alive(p.pid, p.start_ticks) for p in running.procs):
            raise TargetError(
                f"{self.name}: already running at {running.bootstrap} (pid file {self.pid_file}); stop it first"
            )
        with contextlib.suppress(FileNotFoundError):
            self.pid_file.unlink()  # stale
        shutil.rmtree(running.run_dir, ignore_errors=True)

    def _prune_runs(self) -> None:
        """Remove run folders left by processes that died without stopping their target."""
        keep = None
        with contextlib.suppress(TargetError):
            running = self._load_pid_file()
            keep = running.run_dir if running else None
        for run in (self.cache_dir / "runs").glob("*-*-*-*"):
            try:
                owner = int(run.name.split("-")[2])
            except (IndexError, ValueError):
                continue
            if run != keep and owner != os.getpid() and not pid_alive(owner):
                shutil.rmtree(run, ignore_errors=True)

    def _prune_logs(self) -> None:
        logs = sorted((self.cache_dir / "logs").glob("*.log"), key=lambda p: p.stat().st_mtime)
        for old in logs[:-KEEP_LOGS]:
            with contextlib.suppress(OSError):
                old.unlink()

    # -- helpers for subclasses --------------------------------------------------------------

    def _spawn(self, role: str, argv: Sequence[str], log_path: Path, **kw: Any) -> Proc:
        proc = spawn(role, argv, log_path=log_path, detach=self._detach_now, **kw)
        self._launching.append(proc)
        return proc

    def _child_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for target processes: ours, minus settings that could point them elsewhere."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("KAFKA_", "OTEL_", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"))
            and k not in ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE", "CLUSTER_ID")
        }
        env.update(extra or {})
        return env


def create_topic_wire(
    target_name: str,
    bootstrap: str,
    name: str,
    partitions: int,
    deadline: Deadline,
    info: _wire.ApiVersionsInfo | None = None,
) -> None:
    """CreateTopics (replication factor 1) over the wire, then wait for every partition's leader."""
    host, port = _wire.split_bootstrap(bootstrap)
    try:
        if info is None:
            info = _wire.api_versions(host, port, max(0.1, min(5.0, deadline.remaining())))
        version = info.best_version(_wire.API_CREATE_TOPICS)
        if version is None:
            raise TargetError(
                f"{target_name}: does not support CreateTopics (ApiVersions) for topic {name!r}"
            )
        code, message = _wire.create_topics(
            host, port, name, partitions, max(0.5, deadline.remaining()), version
        )
    except (_wire.WireRetry, _wire.WireGarbage) as e:
        raise TargetError(f"{target_name}: CreateTopics {name!r} failed: {e}") from e
    if code not in (0, 36):  # 36 TOPIC_ALREADY_EXISTS: fine if the partition count matches (checked below)
        raise TargetError(
            f"{target_name}: CreateTopics {name!r} answered {_wire.error_name(code)}{': ' + message if message else ''}"
        )
    wait_for_topic(target_name, bootstrap, name, partitions, deadline, info)


def _metadata_version(info: _wire.ApiVersionsInfo | None) -> int | None:
    """The Metadata version used to look at topics: the highest non-flexible one (v8 at most).

    Non-flexible because the librdkafka 2.16 mock appends a stray byte to its flexible (v9+)
    Metadata answers; v8 carries everything needed here (partitions and their leaders).
    """
    if info is None:
        return 0
    if _wire.API_METADATA not in info.api_versions:
        return None
    lo, hi = info.api_versions[_wire.API_METADATA]
    if lo <= 8:
        return min(hi, 8)
    return info.best_version(_wire.API_METADATA)


def wait_for_topic(
    target_name: str,
    bootstrap: str,
    name: str,
    partitions: int,
    deadline: Deadline,
    info: _wire.ApiVersionsInfo | None,
) -> None:
    """Poll Metadata until the topic has ``partitions`` partitions, each with a leader."""
    host, port = _wire.split_bootstrap(bootstrap)
    version = _metadata_version(info)
    if version is None:
        raise TargetError(f"{target_name}: no Metadata version in common with kio")
    last = "not listed yet"
    while True:
        try:
            resp = _wire.metadata(host, port, [name], max(0.1, min(2.0, deadline.remaining())), version)
            topic = next((t for t in resp.topics if t.name == name), None)
            if topic is None:
                last = "not listed yet"
            elif int(topic.error_code.value) != 0:
                last = _wire.error_name(int(topic.error_code.value))
            elif len(topic.partitions) != partitions:
                if len(topic.partitions) > 0 and not any(int(p.leader_id) < 0 for p in topic.partitions):
                    raise TargetError(
                        f"{target_name}: topic {name!r} exists with {len(topic.partitions)} partitions, not {partitions}"
                    )
                last = f"{len(topic.partitions)}/{partitions} partitions"
            elif all(int(p.leader_id) >= 0 and int(p.error_code.value) == 0 for p in topic.partitions):
                return
            else:
                last = "partitions without leader"
        except _wire.WireRetry as e:
            last = str(e)
        except _wire.WireGarbage as e:
            raise TargetError(f"{target_name}: Metadata v{version} answer is garbage: {e}") from e
        if deadline.expired():
            raise TargetError(
                f"{target_name}: topic {name!r} not ready within {deadline.seconds:g}s ({last})"
            )
        time.sleep(min(0.1, deadline.remaining()))


def java_bin() -> str:
    """The JVM to run Java targets with: $GROUPCHECK_JAVA, else $JAVA_HOME/bin/java, else java on PATH."""
    explicit = os.environ.get("GROUPCHECK_JAVA")
    if explicit:
        return explicit
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise TargetError("java not found on PATH (set JAVA_HOME or GROUPCHECK_JAVA)")
    return found


def require_tool(tool: str, hint: str) -> str:
    found = shutil.which(tool)
    if not found:
        raise TargetError(f"{tool} not found on PATH ({hint})")
    return found
